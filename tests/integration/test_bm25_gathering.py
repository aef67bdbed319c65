"""The BM25 text search's bounded gathering (migration 0027) on real PostgreSQL: "at least m of n
lexemes" finds exactly the memories a count by hand finds, the bounded ranking is the one 0016's
function gave, and a large scope is ranked over its own matches (never another owner's)."""

import itertools
import random
from datetime import UTC, datetime

import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.models import BASE_TRUST, MemoryCandidate, Provenance
from contextos.ports.reads import BM25Params
from contextos.scopes import ScopeFilter
from contextos.store.history import HistoricalReads
from contextos.store.scoped_reads import ScopedHistoricalReads, ScopedReads
from contextos.store.text_search import bm25_call

from tests.memory_writer import add_memories

WORDS = ["zebra", "walrus", "heron", "badger", "otter", "falcon", "lynx", "bison"]


def add(tenant: str, texts: list[str]) -> list:
    """Memories whose label and definition are ``texts`` (one fixed vector: only the text matters)."""
    vector = [1.0] + [0.0] * (get_settings().embedding_dimensions - 1)
    rate = decay_rate(5, "fact", get_settings().decay)
    return add_memories(
        container.stores(),
        tenant,
        [
            MemoryCandidate(
                norm_key=f"m{i} {text}",
                label=f"Note {i}",
                definition=text,
                type="fact",
                importance=5,
                embedding=vector,
                decay_rate=rate,
                provenance=Provenance.user_upload,
                base_trust=BASE_TRUST[Provenance.user_upload],
            )
            for i, text in enumerate(texts)
        ],
        embedder_id="test",
        at=[datetime.now(UTC)] * len(texts),
    )


def corpus(n: int, seed: int) -> list[str]:
    """Texts of 2-5 of the animal words, some repeated (tf > 1): many memories share each word."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(2, 5))) for _ in range(n)]


def test_at_least_m_of_n_lexemes_finds_what_a_count_finds(configured, tenant):
    texts = corpus(60, seed=1)
    ids = add(tenant, texts)
    lexemes = ["zebra", "walrus", "heron", "badger", "otter"]
    held = {i: {w for w in text.split()} for i, text in zip(ids, texts, strict=True)}
    with container.database().tenant_tx(tenant) as conn:
        for m in range(1, len(lexemes) + 1):
            found = {
                r["id"]
                for r in conn.execute(
                    "SELECT id FROM memories WHERE search_tsv @@ contextos_at_least_query(%s, %s)::tsquery",
                    [lexemes, m],
                )
            }
            assert found == {i for i, words in held.items() if len(words & set(lexemes)) >= m}, m
        assert conn.execute("SELECT contextos_at_least_query(%s, 0) AS q", [lexemes]).fetchone()["q"] is None


def walk_from_the_top(tenant: str, query: str, cap: int) -> tuple[set, set]:
    """What the level walk from the top gathers, counted by hand: the gathering lexemes are the
    query's rarest six that the tenant holds; walking down from all of them, the first level with
    at least ``cap`` matches ends the walk. Returns (every match of the level above it, that
    level's matches): the candidates are all of the first and ``cap`` of the second. When no level
    is full, both are the lowest level's matches (every match gathered)."""
    with container.database().tenant_tx(tenant) as conn:

        def holding(lexemes: list[str], m: int) -> set:
            rows = conn.execute(
                "SELECT id FROM memories WHERE tenant_id = %s AND state = 'active' AND tier = 'hot'"
                " AND search_tsv @@ contextos_at_least_query(%s, %s)::tsquery",
                [tenant, lexemes, m],
            )
            return {r["id"] for r in rows}

        lexemes = [r["lexeme"] for r in conn.execute("SELECT lexeme FROM unnest(to_tsvector('english', %s))", [query])]
        df = {x: len(holding([x], 1)) for x in lexemes}
        gather = sorted((x for x in lexemes if df[x] > 0), key=lambda x: (df[x], x))[:6]
        assert gather, query
        levels = {m: holding(gather, m) for m in range(1, len(gather) + 1)} | {len(gather) + 1: set()}
    full = [m for m in range(len(gather), 0, -1) if len(levels[m]) >= cap]
    if not full:
        return levels[1], levels[1]
    return levels[full[0] + 1], levels[full[0]]


def assert_gathered_as_from_the_top(tenant: str, query: str, cap: int, k: int) -> None:
    """The bounded ranking scores what the walk from the top gathers (every candidate, with k above
    their number), each with its exact score, and its top k is that set's."""
    above, level = walk_from_the_top(tenant, query, cap)
    assert len(level) >= cap  # the corpus is dense enough that some level is full: the levels are walked
    params = BM25Params()
    db = container.database()
    exact = {
        r["id"]: r["score"] for r in db.tenant_read(tenant, bm25_call(query, [], k=100_000, cap=None, params=params))
    }
    gathered = db.tenant_read(tenant, bm25_call(query, [], k=100_000, cap=cap, params=params))
    ids = {r["id"] for r in gathered}
    assert above <= ids <= level
    assert len(ids) == len(gathered)  # each memory once
    assert len(ids - above) <= cap and len(ids) >= cap
    assert all(r["score"] == exact[r["id"]] for r in gathered)
    ranked = db.tenant_read(tenant, bm25_call(query, [], k=k, cap=cap, params=params))
    in_order = sorted(gathered, key=lambda r: (-r["score"], str(r["id"])))[:k]
    assert [(r["id"], r["score"]) for r in ranked] == [(r["id"], r["score"]) for r in in_order]


@pytest.mark.parametrize("query", ["zebra walrus heron", "badger otter falcon lynx bison", "zebra", "heron lynx"])
def test_the_bounded_ranking_is_the_walk_from_the_tops(configured, tenant, query):
    add(tenant, corpus(400, seed=2))
    cap = 12  # 400 memories and postings far above 4 x cap: the levels are walked
    assert_gathered_as_from_the_top(tenant, query, cap, k=10)
    params = BM25Params()
    db = container.database()
    ranked = db.tenant_read(tenant, bm25_call(query, [], k=10, cap=cap, params=params))
    exact = db.tenant_read(tenant, bm25_call(query, [], k=10, cap=None, params=params))
    assert len(ranked) == 10
    assert exact[0]["score"] >= ranked[0]["score"]  # the bound never scores above the exact ranking


@pytest.mark.parametrize(
    ("query", "cap"),
    [
        ("badger otter falcon lynx bison", 90),  # the start level (3 of 5) is short: down one level
        ("zebra walrus heron badger otter falcon lynx bison", 90),  # 3 of the rarest 6 is full: up one
        ("zebra walrus heron badger otter falcon lynx bison", 8),  # up to the first short level
        ("zebra walrus", 20),  # up to the top level, which is full
    ],
)
def test_the_level_walk_from_the_middle_gathers_what_the_walk_from_the_top_would(configured, tenant, query, cap):
    """The walk starts at half the gathering lexemes and moves down while a level is short, up while
    it is full. Up or down from the middle, the level that ends it is the one a walk from the top
    ends at: the same candidates. (A tenant of at most 12.5·cap memories is ranked exactly from its
    own rows: this one is larger.)"""
    add(tenant, corpus(max(400, 13 * cap), seed=3))
    assert_gathered_as_from_the_top(tenant, query, cap, k=20)


def test_a_large_scope_is_ranked_over_its_own_matches(configured, tenant):
    # ana's zebra notes are shorter and repeat the word: the tenant's top 4k by BM25 are all hers
    ana = add(tenant, ["zebra zebra"] * 60)
    bo = add(tenant, [f"zebra walrus heron badger otter {w}" for w in itertools.islice(itertools.cycle(WORDS), 12)])
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("UPDATE memories SET user_id = 'ana' WHERE id = ANY(%s)", [ana])
        conn.execute("UPDATE memories SET user_id = 'bo', tags = '{night}' WHERE id = ANY(%s)", [bo])
    store = container.stores()
    params = BM25Params()
    tenant_wide = store.reads.text_rank(tenant, "zebra", [], [], k=40, cap=200, params=params)
    assert {r["id"] for r in tenant_wide} <= set(ana)  # what widening the tenant's ranking would have kept
    for scope in (ScopeFilter(user_id="bo"), ScopeFilter(tags=["night"])):
        reads = ScopedReads(store.reads, scope, exact_scan_max_rows=5)  # bo's 12 rows count as a large scope
        rows = reads.text_rank(tenant, "zebra", [], [], k=10, cap=200, params=params)
        assert len(rows) == 10 and {r["id"] for r in rows} <= set(bo), scope
        then = ScopedHistoricalReads(HistoricalReads(container.database(), datetime.now(UTC)), scope, 5)
        rows = then.text_rank(tenant, "zebra", [], [], k=10, cap=200, params=params)  # as of now: the same
        assert len(rows) == 10 and {r["id"] for r in rows} <= set(bo), scope
    assert (
        ScopedReads(store.reads, ScopeFilter(user_id="cy"), exact_scan_max_rows=0).text_rank(
            tenant, "zebra", [], [], k=10, cap=200, params=params
        )
        == []
    )


@pytest.mark.parametrize("query", ["zebra walrus heron", "badger otter falcon lynx bison", "heron lynx"])
def test_a_scopes_ranking_is_the_tenants_ranking_of_its_memories(configured, tenant, query):
    """One BM25 for every scope (migration 0032): a small scope's every match is scored with the
    tenant's statistics, so its top k is the tenant's exact ranking filtered to the scope; a scope
    gathered by levels scores each row it returns exactly as the tenant's ranking does."""
    texts = corpus(400, seed=3)
    ids = add(tenant, texts)
    ana, bo = ids[:30], ids[30:]
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("UPDATE memories SET user_id = 'ana', agent_id = 'a1' WHERE id = ANY(%s)", [ana])
        conn.execute("UPDATE memories SET user_id = 'bo', tags = '{night}' WHERE id = ANY(%s)", [bo[::2]])
    db = container.database()
    params = BM25Params()
    tenant_exact = db.tenant_read(tenant, bm25_call(query, [], k=len(ids), cap=None, params=params))
    score = {r["id"]: r["score"] for r in tenant_exact}
    assert len(score) > 100  # the query matches far beyond ana's 30 memories

    small = ScopeFilter(user_id="ana")
    expected = [(r["id"], r["score"]) for r in tenant_exact if r["id"] in set(ana)][:10]
    for reads in (
        ScopedReads(container.reads(), small),
        ScopedHistoricalReads(HistoricalReads(db, datetime.now(UTC)), small),
    ):
        # cap 12: the tenant (400) and the query's postings are far above 4 x cap, ana's matches below
        got = reads.text_rank(tenant, query, [], [], k=10, cap=12, params=params)
        assert [(r["id"], r["score"]) for r in got] == expected, type(reads).__name__

    large = ScopeFilter(tags=["night"])  # 185 rows: with cap 12 the levels are walked within the scope
    got = db.tenant_read(tenant, bm25_call(query, [], k=10, cap=12, params=params, scope=large))
    assert len(got) == 10 and {r["id"] for r in got} <= set(bo[::2])
    assert all(r["score"] == score[r["id"]] for r in got)
    every = db.tenant_read(tenant, bm25_call(query, [], k=10, cap=None, params=params, scope=large))
    assert [(r["id"], r["score"]) for r in every] == [
        (r["id"], r["score"]) for r in tenant_exact if r["id"] in set(bo[::2])
    ][:10]


@pytest.mark.parametrize("query", ["zebra walrus heron", "badger otter", "lynx"])
def test_a_cold_stub_scores_as_its_text_does_when_hot(configured, tenant, query):
    """The cold branch scores stubs with the hot memories' formula and statistics: each text stored
    twice, one copy moved cold (its stub the same lexical form), scores alike in both branches."""
    texts = corpus(80, seed=4)
    hot = add(tenant, texts)
    twins = add(tenant, [f"{t} " for t in texts])  # the same lexemes under another norm_key
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(
            "UPDATE memories SET tier = 'cold', stub_tsv = search_tsv, cold_object_key = 'cold/' || id"
            " WHERE id = ANY(%s)",
            [twins[:50]],
        )
    ranked = container.database().tenant_read(
        tenant, bm25_call(query, [], k=200, cap=None, params=BM25Params(), with_cold=True)
    )
    by_id = {r["id"]: r for r in ranked}
    cold = [r for r in ranked if r["cold"]]
    assert cold and {r["id"] for r in cold} <= set(twins[:50])
    twin_of = dict(zip(twins, hot, strict=True))
    for r in cold:
        warm = by_id[twin_of[r["id"]]]
        assert not warm["cold"] and (r["score"], r["matched"]) == (warm["score"], warm["matched"])
    assert [r["score"] for r in cold] == sorted((r["score"] for r in cold), reverse=True)


def test_a_small_tenant_is_ranked_exactly_from_its_own_rows_beside_a_large_one(configured, tenant):
    """A tenant of at most 12.5·cap memories reads its own rows through its btree, never the text
    index's posting lists (which hold every tenant's rows): its bounded ranking is its exact one,
    and no other tenant's memory is in it."""
    other = f"{tenant}-crowd"
    add(other, corpus(600, seed=5))  # the same words, many more rows, another tenant
    ids = set(add(tenant, corpus(120, seed=6)))
    store = container.stores().reads
    params = BM25Params()
    for query in ("zebra walrus heron", "badger otter falcon lynx bison", "heron"):
        bounded = store.text_rank(tenant, query, [], [], k=20, cap=10, params=params)  # 120 <= 12.5 x 10: small
        exact = store.text_rank(tenant, query, [], [], k=20, cap=None, params=params)
        assert [(r["id"], r["score"]) for r in bounded] == [(r["id"], r["score"]) for r in exact]
        assert bounded and {r["id"] for r in bounded} <= ids
