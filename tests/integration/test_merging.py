"""S4 step 7: key, acronym and near-duplicate merges; every occurrence kept; safe under concurrency."""

import threading

import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.lsh import BANDS
from contextos.models import BASE_TRUST, MemoryCandidate, Provenance
from contextos.normalization import norm_key

from tests.memory_writer import add_memories, new_document


@pytest.fixture
def store(configured):
    return container.stores()


def candidates(embedder, specs: list[tuple[str, str, str]], related: dict[str, list[str]] | None = None):
    """(label, definition, type) → MemoryCandidates embedded with the real local model."""
    vectors = embedder.embed([f"{label}: {definition}" for label, definition, _ in specs])
    return [
        MemoryCandidate(
            norm_key=norm_key(label, ["system", "method"]),
            label=label,
            definition=definition,
            type=type_,
            importance=6,
            related_keys=[norm_key(r, ["system", "method"]) for r in (related or {}).get(label, [])],
            embedding=vector,
            decay_rate=decay_rate(6, type_, get_settings().decay),
            provenance=Provenance.user_upload,
            base_trust=BASE_TRUST[Provenance.user_upload],
        )
        for (label, definition, type_), vector in zip(specs, vectors, strict=True)
    ]


def store_concepts(store, tenant, cands):
    return store.admission.store_document_concepts(
        tenant, new_document(store, tenant), cands, embedder_id="local", source_type="text", domain="general", counts={}
    )


def active_memories(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute(
            "SELECT id, label, norm_key, access_count, acronyms, initials FROM memories WHERE state = 'active'"
        ).fetchall()


def items_of(tenant: str, memory_id) -> int:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute("SELECT count(*) AS n FROM memory_items WHERE memory_id = %s", [memory_id]).fetchone()["n"]


GRPO = (
    "Group Relative Policy Optimization",
    "Group Relative Policy Optimization (GRPO) is a reinforcement learning algorithm that compares groups of "
    "sampled answers to estimate advantages without a critic.",
    "fact",
)


def test_an_acronym_joins_the_memory_of_its_long_form(store, tenant, local_embedder):
    store_concepts(store, tenant, candidates(local_embedder, [GRPO]))
    result = store_concepts(
        store,
        tenant,
        candidates(
            local_embedder,
            [
                ("GRPO", "Training with GRPO needs several completions per prompt to form a group.", "fact"),
            ],
        ),
    )
    assert (result.created, result.merged) == (0, 1)
    [memory] = active_memories(tenant)
    assert memory["label"] == "Group Relative Policy Optimization"
    assert memory["access_count"] == 1 and "grpo" in memory["acronyms"]
    assert items_of(tenant, memory["id"]) == 2


def test_a_long_form_joins_the_memory_of_its_acronym(store, tenant, local_embedder):
    store_concepts(
        store,
        tenant,
        candidates(
            local_embedder,
            [("RAG", "RAG (retrieval-augmented generation) grounds a model's answer in given documents.", "fact")],
        ),
    )
    result = store_concepts(
        store,
        tenant,
        candidates(
            local_embedder,
            [
                (
                    "Retrieval Augmented Generation",
                    "Answers are generated from retrieved passages, which reduces hallucination.",
                    "fact",
                )
            ],
        ),
    )
    assert result.merged == 1 and len(active_memories(tenant)) == 1


def test_a_near_duplicate_of_the_same_type_merges_and_one_of_another_type_does_not(store, tenant, local_embedder):
    base = (
        "Blue-green deployment",
        "Blue-green deployment keeps two identical production environments and switches traffic between them.",
        "decision",
    )
    store_concepts(store, tenant, candidates(local_embedder, [base]))
    same_type = ("Blue green deployments strategy", base[1], "decision")
    other_type = ("Blue green deploy", base[1], "problem")
    result = store_concepts(store, tenant, candidates(local_embedder, [same_type, other_type]))
    assert (result.created, result.merged) == (1, 1)
    labels = sorted(m["label"] for m in active_memories(tenant))
    assert labels == ["Blue green deploy", "Blue-green deployment"]


def test_near_duplicates_naming_other_identifiers_stand_alone(store, tenant, local_embedder):
    """The two labels the MCP snippet test once saw merge (cosine 0.9345 with the local model):
    the same sentence around two ids. The same sentence around one id still merges."""
    first = ("Pasted 03495a0d", "The pasted snippet 03495a0d reaches the stack.", "fact")
    store_concepts(store, tenant, candidates(local_embedder, [first]))
    other = ("Pasted e564697a", "The pasted snippet e564697a reaches the stack.", "fact")
    same = ("Pasted snippet 03495a0d", "The pasted snippet 03495a0d reaches the stack.", "fact")
    a, b = local_embedder.embed([f"{label}: {definition}" for label, definition, _ in (first, other)])
    assert sum(x * y for x, y in zip(a, b, strict=True)) >= 0.93  # near duplicates by the cosine alone
    result = store_concepts(store, tenant, candidates(local_embedder, [other]))
    assert (result.created, result.merged) == (1, 0)
    result = store_concepts(store, tenant, candidates(local_embedder, [same]))
    assert (result.created, result.merged) == (0, 1)
    assert sorted(m["label"] for m in active_memories(tenant)) == ["Pasted 03495a0d", "Pasted e564697a"]


def _rewrite_signatures(tenant: str, expression: str, prefix_expression: str) -> None:
    """Rewrite the band rows' signatures and the 64-bit prefixes their index entries carry."""
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(f"UPDATE memory_vector_bands SET signature = {expression}, signature64 = {prefix_expression}")


def test_band_matches_whose_signature_is_far_never_reach_the_vector_check(store, tenant, local_embedder):
    base = (
        "Blue-green deployment",
        "Blue-green deployment keeps two identical production environments and switches traffic between them.",
        "decision",
    )
    store_concepts(store, tenant, candidates(local_embedder, [base]))
    _rewrite_signatures(tenant, "~signature", "~signature64")  # the bands still match; the signature says "unrelated"
    twin = ("Blue green deployments strategy", base[1], "decision")
    result = store_concepts(store, tenant, candidates(local_embedder, [twin]))
    assert (result.created, result.merged) == (1, 0)


def test_band_rows_written_before_signatures_existed_still_find_near_duplicates(store, tenant, local_embedder):
    base = (
        "Blue-green deployment",
        "Blue-green deployment keeps two identical production environments and switches traffic between them.",
        "decision",
    )
    store_concepts(store, tenant, candidates(local_embedder, [base]))
    _rewrite_signatures(tenant, "NULL", "NULL")
    twin = ("Blue green deployments strategy", base[1], "decision")
    result = store_concepts(store, tenant, candidates(local_embedder, [twin]))
    assert (result.created, result.merged) == (0, 1)


def test_unrelated_concepts_do_not_merge(store, tenant, local_embedder):
    store_concepts(store, tenant, candidates(local_embedder, [GRPO]))
    result = store_concepts(
        store,
        tenant,
        candidates(
            local_embedder,
            [("Sourdough starter", "A culture of wild yeast and bacteria that leavens bread dough.", "fact")],
        ),
    )
    assert result.created == 1 and len(active_memories(tenant)) == 2


def test_two_candidates_that_land_on_one_memory_keep_both_occurrences_and_related_edges_follow(
    store, tenant, local_embedder
):
    store_concepts(store, tenant, candidates(local_embedder, [GRPO]))
    batch = candidates(
        local_embedder,
        [
            ("GRPO", "GRPO normalizes rewards within a group of samples for the same prompt.", "fact"),
            (
                "Group relative policy optimizations",
                "The group-relative baseline replaces a learned value function.",
                "fact",
            ),
            ("Reward model", "A reward model scores sampled answers so GRPO can rank them.", "fact"),
        ],
        related={"Reward model": ["GRPO"]},
    )
    result = store_concepts(store, tenant, batch)
    memories = {m["label"]: m for m in active_memories(tenant)}
    grpo = memories["Group Relative Policy Optimization"]
    assert items_of(tenant, grpo["id"]) == 3
    assert result.items == 3 and result.created == 1
    with container.database().tenant_tx(tenant) as conn:
        edge = conn.execute("SELECT src_id, dst_id FROM relationships WHERE type = 'related'").fetchone()
    assert (edge["src_id"], edge["dst_id"]) == (memories["Reward model"]["id"], grpo["id"])


def test_two_concurrent_ingests_of_overlapping_documents_lose_nothing_and_duplicate_nothing(
    store, tenant, local_embedder
):
    shared = [
        ("Circuit breaker", "Stops calling a failing dependency so failures do not cascade.", "fact"),
        ("Exponential backoff", "Waits twice as long after each failed retry to let a service recover.", "fact"),
        ("Idempotency key", "Lets a client retry a request without applying it twice.", "fact"),
    ]
    doc_a = candidates(
        local_embedder,
        [*shared, ("Bulkhead", "Isolates resources per caller so one slow caller cannot starve the rest.", "fact")],
    )
    doc_b = candidates(
        local_embedder,
        [*shared, ("Rate limiter", "Caps requests per client per second to protect a shared service.", "fact")],
    )
    errors: list[BaseException] = []
    rounds = 8
    barrier = threading.Barrier(2)

    def ingest(cands):
        try:
            for _ in range(rounds):
                barrier.wait()
                store_concepts(store, tenant, cands)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=ingest, args=(c,)) for c in (doc_a, doc_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    memories = active_memories(tenant)
    assert sorted(m["label"] for m in memories) == sorted(
        ["Circuit breaker", "Exponential backoff", "Idempotency key", "Bulkhead", "Rate limiter"]
    )
    with container.database().tenant_tx(tenant) as conn:
        total_items = conn.execute("SELECT count(*) AS n FROM memory_items").fetchone()["n"]
        hot = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant]).fetchone()
    assert total_items == rounds * (len(doc_a) + len(doc_b))
    assert hot["hot_memories"] == 5
    by_label = {m["label"]: m for m in memories}
    assert by_label["Circuit breaker"]["access_count"] == 2 * rounds - 1


def test_a_new_memory_is_searchable_before_and_after_its_vector_joins_the_ann_index(store, tenant, local_embedder):
    store_concepts(store, tenant, candidates(local_embedder, [GRPO]))
    query = local_embedder.embed(["group relative policy optimization"])[0]
    with container.database().tenant_tx(tenant) as conn:
        assert conn.execute("SELECT bool_or(indexed) AS any FROM memory_vectors").fetchone()["any"] is False
        assert conn.execute("SELECT count(*) AS n FROM memory_vector_bands").fetchone()["n"] == BANDS
    fresh = store.reads.vector_search(tenant, query, k=5, ef_search=40)
    assert store.admission.settle_vectors(tenant, limit=10) == 1
    settled = store.reads.vector_search(tenant, query, k=5, ef_search=40)
    labels = {r["id"]: r["label"] for r in active_memories(tenant)}
    assert (
        [labels[r["id"]] for r in fresh] == [labels[r["id"]] for r in settled] == ["Group Relative Policy Optimization"]
    )
    assert fresh[0]["vector_sim"] == pytest.approx(settled[0]["vector_sim"], abs=1e-6)
    assert store.admission.settle_vectors(tenant, limit=10) == 0


def test_the_lifecycle_scan_settles_fresh_vectors(store, tenant, local_embedder):
    store_concepts(store, tenant, candidates(local_embedder, [GRPO]))
    report = container.lifecycle().run(tenants=[tenant])
    assert report.vectors_indexed >= 1
    with container.database().tenant_tx(tenant) as conn:
        assert conn.execute("SELECT bool_and(indexed) AS all FROM memory_vectors").fetchone()["all"] is True


def test_add_memories_stores_each_candidate_as_given_with_its_time_and_session(store, tenant, local_embedder):
    from datetime import UTC, datetime, timedelta

    turns = candidates(
        local_embedder,
        [
            ("Turn D1:1", "Caroline went to a support group yesterday and found it moving.", "event"),
            ("Turn D1:2", "Melanie is painting a sunrise over the lake for her kids.", "event"),
        ],
    )
    said = [datetime.now(UTC) - timedelta(days=3), datetime.now(UTC) - timedelta(days=3, minutes=-1)]
    ids = add_memories(store, tenant, turns, embedder_id="local", at=said, session_id="conv-1", message_seqs=[1, 2])
    assert len(ids) == 2
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute(
            """SELECT m.id, m.label, m.created_at, m.last_accessed_at, i.session_id, i.message_from, v.indexed
               FROM memories m JOIN memory_items i ON i.memory_id = m.id JOIN memory_vectors v ON v.memory_id = m.id
               ORDER BY i.message_from"""
        ).fetchall()
    assert [r["label"] for r in rows] == ["Turn D1:1", "Turn D1:2"]
    assert [r["created_at"] for r in rows] == said and [r["last_accessed_at"] for r in rows] == said
    assert [(r["session_id"], r["message_from"]) for r in rows] == [("conv-1", 1), ("conv-1", 2)]
    hits = store.reads.vector_search(tenant, local_embedder.embed(["painting a sunrise"])[0], k=1, ef_search=10)
    assert [r["id"] for r in rows if r["label"] == "Turn D1:2"] == [hits[0]["id"]]


def test_band_keys_computed_in_sql_are_the_ones_python_computes(configured):
    import numpy as np
    from contextos.lsh import band_key_sql, bands_sql, sketch

    expected = sketch(np.random.default_rng(9).standard_normal((3, 384)).tolist())
    with container.database().system_tx() as conn:
        for keys, bits in zip(expected.band_keys, expected.signatures, strict=True):
            row = conn.execute(
                f"SELECT array_agg({band_key_sql('%(bits)s::text', 'g')} ORDER BY g) AS keys FROM {bands_sql()} AS g",
                {"bits": bits},
            ).fetchone()
            assert row["keys"] == keys


def test_a_rule_written_by_hand_is_never_merged_into_an_acronym_entity(configured, tenant):
    # #41: "Never log secrets" spells N-L-S; the tenant's entity "NLS" (native language support) is
    # another thing, and a rule joined to it would decay as an entity and be forgotten.
    from tests.helpers import call_api

    status, nls = call_api(
        "POST",
        "/v1/memories",
        tenant,
        {
            "label": "NLS",
            "definition": "Native language support: translations of the user interface.",
            "type": "entity",
        },
    )
    assert status == 201 and nls["status"] == "admitted", nls
    status, rule = call_api(
        "POST",
        "/v1/memories",
        tenant,
        {
            "label": "Never log secrets",
            "definition": "Never write secrets or tokens to a log.",
            "type": "rule",
            "importance": 9,
        },
    )
    assert status == 201 and rule["status"] == "admitted", rule
    labels = {m["label"]: m for m in active_memories(tenant)}
    assert {"NLS", "Never log secrets"} <= set(labels)


def test_an_acronym_joins_its_long_form_only_when_one_of_them_says_so(configured, tenant):
    # #41, drawn from two installed packages' READMEs: "AWS CLI" spells A-W-S, and Amazon Web
    # Services is not its command line tool; "AI" is not "Attrs instances". Nothing in either text
    # ties the letters to the words, so each stays a memory of its own.
    from tests.helpers import call_api

    def post(label: str, definition: str) -> None:
        status, body = call_api("POST", "/v1/memories", tenant, {"label": label, "definition": definition})
        assert status == 201 and body["status"] == "admitted", body

    post("Amazon Web Services", "Boto3 is maintained and published by Amazon Web Services.")
    post("AWS CLI", "The botocore package is the foundation for the AWS CLI as well as boto3.")
    post("AI", "Everything ships in one package with two interfaces for AI agents.")
    post("Attrs instances", "It is now possible to pass attrs instances in addition to attrs classes.")
    labels = sorted(m["label"] for m in active_memories(tenant))
    assert labels == ["AI", "AWS CLI", "Amazon Web Services", "Attrs instances"]


def test_a_common_noun_merges_by_key_only_within_its_source_and_a_name_across_sources(store, tenant):
    # #41, as two installed packages' READMEs say it: each has its own "Installation", and both
    # mean the one FastAPI. Before, the second "Installation" joined the first's memory by key.
    from contextos.models import Concept
    from contextos.sources import DocumentSource

    admission = container.admission()
    readmes = {
        "tqdm": ("pip install tqdm, or conda install -c conda-forge tqdm.", "Works with apps using FastAPI."),
        "rich": ("Install with pip: python -m pip install rich.", "Sebastián Ramírez, creator of FastAPI, uses it."),
    }
    for install, fastapi in readmes.values():
        concepts = [
            Concept(label="Installation", definition=install, type="fact"),
            Concept(label="FastAPI", definition=fastapi, type="entity"),
        ]
        source = DocumentSource(document_id=new_document(store, tenant), provenance=Provenance.user_upload)
        admission.admit(tenant, concepts, source)
    labels = sorted(m["label"] for m in active_memories(tenant))
    assert labels == ["FastAPI", "Installation", "Installation"]
    fastapi = next(m for m in active_memories(tenant) if m["label"] == "FastAPI")
    assert items_of(tenant, fastapi["id"]) == 2
