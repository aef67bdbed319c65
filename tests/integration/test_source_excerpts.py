"""What a document says stays reachable: source excerpts are kept per occurrence, searchable by the
BM25 text search with the memory's label and definition, merged once per passage when a concept
recurs, and the context block shows the excerpt that matches the query (migration 0024)."""

import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.models import ContextRequest
from contextos.ports.reads import BM25Params
from contextos.services.retrieval import RetrievalService

from tests.integration.test_merging import candidates, store_concepts

# The excerpt a block shows is what these tests read: they ask with no relevance floor, which in a
# tenant of a few memories (BM25's idf is small there) cuts even the right one (docs/decisions.md).

ORBIT = (
    "Orbit scheduler",
    "The orbit scheduler places batch jobs on the cluster's idle nodes overnight.",
    "fact",
)
ORBIT_EXCERPTS = [
    "Jobs that miss their window are retried with a quokka backoff of five minutes.",
    "The scheduler writes its placement log to the ledger bucket every hour.",
]
OTHER = [
    ("Ledger bucket", "The ledger bucket keeps the finance team's nightly exports for a year.", "fact"),
    ("Cluster upgrade", "The cluster upgrade moves every node to the new kernel on Sundays.", "decision"),
]


def _with_excerpts(embedder, spec, excerpts):
    (candidate,) = candidates(embedder, [spec])
    return candidate.model_copy(update={"excerpts": excerpts})


@pytest.fixture
def seeded(configured, tenant, local_embedder):
    store = container.stores()
    store_concepts(
        store, tenant, [_with_excerpts(local_embedder, ORBIT, ORBIT_EXCERPTS), *candidates(local_embedder, OTHER)]
    )
    return tenant


def _bm25_labels(tenant: str, query: str) -> list[str]:
    store = container.stores()
    cfg = get_settings().retrieval
    params = BM25Params(k1=cfg.bm25_k1, b=cfg.bm25_b, extra_weight=cfg.bm25_extra_weight, df_live_max=1000)
    rows = store.reads.text_rank(tenant, query, [], [], k=10, cap=100, params=params)
    with container.database().tenant_tx(tenant) as conn:
        names = {r["id"]: r["label"] for r in conn.execute("SELECT id, label FROM memories")}
    return [names[r["id"]] for r in rows]


def test_a_word_only_an_excerpt_holds_is_found_by_the_text_search(seeded):
    assert _bm25_labels(seeded, "quokka backoff") == ["Orbit scheduler"]


def test_each_occurrence_keeps_its_excerpts_and_the_memory_its_searchable_text(seeded):
    with container.database().tenant_tx(seeded) as conn:
        row = conn.execute(
            """SELECT m.source_text, i.excerpts FROM memories m JOIN memory_items i ON i.memory_id = m.id
               WHERE m.label = 'Orbit scheduler'"""
        ).fetchone()
    assert row["excerpts"] == ORBIT_EXCERPTS
    assert row["source_text"] == "\n".join(ORBIT_EXCERPTS)


def test_a_recurring_concept_gains_the_new_sources_text_once(seeded, local_embedder):
    store = container.stores()
    again = _with_excerpts(
        local_embedder,
        ("Orbit scheduler", "The orbit scheduler places batch jobs on idle nodes.", "fact"),
        [ORBIT_EXCERPTS[0], "Placement honours the wombat affinity labels set on each job."],
    )
    store_concepts(store, seeded, [again])
    with container.database().tenant_tx(seeded) as conn:
        text = conn.execute("SELECT source_text FROM memories WHERE label = 'Orbit scheduler'").fetchone()[
            "source_text"
        ]
    # the shorter definition is not kept as the definition: it joins the searchable text
    assert "idle nodes." in text and "wombat affinity" in text
    assert _bm25_labels(seeded, "wombat affinity") == ["Orbit scheduler"]


def test_the_block_shows_the_excerpt_that_matches_the_query(seeded, local_embedder):
    service = RetrievalService(settings=get_settings(), store=container.reads(), embedder=local_embedder)
    result = service.context(
        seeded, ContextRequest(query="How often is the placement log written?", dry_run=True, min_relevance=0)
    )
    orbit = next(m for m in result.memories if m.label == "Orbit scheduler")
    assert orbit.tier_used == "L2"
    assert orbit.excerpts[0] == ORBIT_EXCERPTS[1]
    assert ORBIT_EXCERPTS[1] in result.context


def test_the_write_path_stores_each_excerpts_stems_and_the_read_path_reads_them(seeded, monkeypatch, local_embedder):
    from contextos import evidence

    with container.database().tenant_tx(seeded) as conn:
        row = conn.execute(
            "SELECT excerpt_stems, definition_stems FROM memory_items i JOIN memories m ON m.id = i.memory_id"
            " WHERE m.label = 'Orbit scheduler'"
        ).fetchone()
    assert row["excerpt_stems"] == [evidence.stem_key(e) for e in ORBIT_EXCERPTS]
    assert "schedul" in row["definition_stems"].split()
    # The read path compares the stored forms: it stems only the query, never a candidate's excerpts.
    stemmed: list[str] = []
    real = evidence.stems
    monkeypatch.setattr(evidence, "stems", lambda text: stemmed.append(text) or real(text))
    service = RetrievalService(settings=get_settings(), store=container.reads(), embedder=local_embedder)
    query = "How often is the placement log written?"
    result = service.context(seeded, ContextRequest(query=query, dry_run=True, min_relevance=0))
    assert next(m for m in result.memories if m.label == "Orbit scheduler").excerpts[0] == ORBIT_EXCERPTS[1]
    assert stemmed == [query]


def test_a_memory_with_more_excerpts_than_are_read_brings_the_one_that_answers(configured, tenant, local_embedder):
    # More passages than the read path reads per candidate; the answer is the last of them.
    pool = get_settings().retrieval.l2_excerpt_pool
    filler = [f"Section {n} of the orbit scheduler notes covers node draining rule {n}." for n in range(pool + 4)]
    answer = "The placement log is written to the ledger bucket every hour."
    store_concepts(container.stores(), tenant, [_with_excerpts(local_embedder, ORBIT, [*filler, answer])])
    service = RetrievalService(settings=get_settings(), store=container.reads(), embedder=local_embedder)
    result = service.context(
        tenant, ContextRequest(query="How often is the placement log written?", dry_run=True, min_relevance=0)
    )
    orbit = next(m for m in result.memories if m.label == "Orbit scheduler")
    assert orbit.excerpts[0] == answer
    assert answer in result.context
