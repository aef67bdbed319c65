"""POST /v1/context: vector search → S6.4 scores → budgets → a block with each memory's breakdown."""

import math

import pytest
from contextos import container

from tests.helpers import call_api, run_queue
from tests.integration.test_ingest_pipeline import RUNBOOK

COOKING = """# Kitchen notes

Sourdough starter needs daily feeding with flour and water. A healthy sourdough starter doubles in six hours.
Cast iron skillet seasoning builds a polymerized oil layer. The cast iron skillet should never soak in water.
"""


@pytest.fixture
def ingested(configured, tenant, sqs, local_aws, drain_ingest_queue):
    for text in (RUNBOOK, COOKING):
        call_api("POST", "/v1/documents", tenant, {"text": text})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    return tenant


def snapshot(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute(
            "SELECT id, strength_anchor, strength_anchor_at, access_count, last_accessed_at FROM memories ORDER BY id"
        ).fetchall()


def context_log_rows(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute("SELECT intent, budget, tokens_used, memory_ids FROM context_log").fetchall()


def test_a_context_names_the_relevant_concepts_with_their_score_breakdowns(ingested):
    status, result = call_api(  # the seed formula (S6.4), checked by hand below
        "POST",
        "/v1/context",
        ingested,
        # a paraphrase with weak evidence (best calibrated relevance ~0.4): the default floor would
        # abstain; the ranking and its breakdown are what this test reads
        {"query": "how do we undo a bad release quickly?", "dry_run": True, "recipe": "standard", "min_relevance": 0},
    )
    assert status == 200
    labels = [m["label"].lower() for m in result["memories"]]
    concepts = [label for label in labels if not label.startswith("passage ")]  # the runbook's own words aside
    assert concepts[0] in {"rollback", "blue-green deployment", "canary release"}
    assert "blue-green deployment" in result["context"].lower()
    top = result["memories"][0]["score"]
    semantic = 0.5 * top["vector"] + 0.3 * top["text"] + 0.2 * top["graph"]
    expected = 0.4 * semantic + 0.3 * top["strength"] + 0.3 * top["recency"] + top["bonus"]
    assert top["relevance"] == pytest.approx(expected)
    assert top["bonus"] == pytest.approx(0.05 * (len(top["methods"]) - 1))
    assert "vector" in top["methods"]
    assert (
        sum(m["score"]["probability"] for m in result["memories"]) == pytest.approx(1.0, abs=1e-6)
        or len(result["memories"]) < 20
    )
    relevances = [m["score"]["relevance"] for m in result["memories"]]
    assert relevances == sorted(relevances, reverse=True)
    assert result["tokens_used"] <= result["token_budget"]


def test_a_dry_run_changes_nothing(ingested):
    before = snapshot(ingested)
    status, _ = call_api("POST", "/v1/context", ingested, {"query": "sourdough feeding", "dry_run": True})
    assert status == 200
    assert snapshot(ingested) == before
    assert context_log_rows(ingested) == []


def test_a_real_query_reinforces_exactly_the_injected_memories_and_logs_once(ingested):
    before = {r["id"]: r for r in snapshot(ingested)}
    status, result = call_api(  # no floor: the cap, not the floor, decides what four are injected
        "POST", "/v1/context", ingested, {"query": "cast iron care", "max_memories": 4, "min_relevance": 0}
    )
    assert status == 200
    injected = {m["id"] for m in result["memories"]}
    assert len(injected) == 4  # two per source: the 60 % cap of 4
    after = {r["id"]: r for r in snapshot(ingested)}
    for memory_id, row in after.items():
        if str(memory_id) in injected:
            old = before[memory_id]
            days = (row["strength_anchor_at"] - old["strength_anchor_at"]).total_seconds() / 86400
            assert row["access_count"] == old["access_count"] + 1
            assert row["strength_anchor"] <= 1.0
            assert row["strength_anchor"] >= 0.7 * old["strength_anchor"] * 0.8**days + 0.3 - 1e-9
        else:
            assert row == before[memory_id]
    logs = context_log_rows(ingested)
    assert len(logs) == 1
    assert {str(i) for i in logs[0]["memory_ids"]} == injected
    assert logs[0]["tokens_used"] == result["tokens_used"]


def test_reinforcement_restores_a_decayed_memory_by_the_spec_formula(ingested):
    with container.database().tenant_tx(ingested) as conn:
        conn.execute(
            "UPDATE memories SET strength_anchor = 1.0, strength_anchor_at = now() - interval '10 days',"
            " decay_rate = 0.15 WHERE label ILIKE 'sourdough starter'"
        )
    _, result = call_api("POST", "/v1/context", ingested, {"query": "sourdough starter"})
    sourdough = next(m for m in result["memories"] if m["label"].lower() == "sourdough starter")
    decayed = 0.85**10  # critical band, still injected: its similarity is above the relevance floor
    assert sourdough["band"] == "critical"
    assert sourdough["score"]["strength"] == pytest.approx(decayed, rel=1e-3)
    with container.database().tenant_tx(ingested) as conn:
        row = conn.execute("SELECT strength_anchor FROM memories WHERE label ILIKE 'sourdough starter'").fetchone()
    assert row["strength_anchor"] == pytest.approx(0.7 * decayed + 0.3, rel=1e-3)


def test_the_forgetting_budget_and_the_token_budget_are_respected(ingested):
    _, few = call_api(  # no floor: the budgets alone decide (only one source's memories clear the floor)
        "POST", "/v1/context", ingested, {"query": "deployment", "max_memories": 2, "dry_run": True, "min_relevance": 0}
    )
    assert len(few["memories"]) == 2
    _, tight = call_api("POST", "/v1/context", ingested, {"query": "deployment", "token_budget": 60, "dry_run": True})
    assert tight["tokens_used"] <= 60
    tiers = [m["tier_used"] for m in tight["memories"]]
    assert "L0" in tiers and tiers == sorted(tiers, key=lambda t: t != "L1")
    assert tight["index"] == [m["label"] for m in tight["memories"] if m["tier_used"] == "L0"]


def test_no_single_source_fills_more_than_its_share(ingested):
    _, result = call_api("POST", "/v1/context", ingested, {"query": "deployment", "max_memories": 5, "dry_run": True})
    per_source: dict[str, int] = {}
    for m in result["memories"]:
        per_source[m["source_ids"][0]] = per_source.get(m["source_ids"][0], 0) + 1
    assert max(per_source.values()) <= math.floor(5 * 0.6)


def test_a_forgotten_memory_comes_back_only_when_it_is_among_the_best_evidence(ingested):
    with container.database().tenant_tx(ingested) as conn:
        conn.execute("UPDATE memories SET strength_anchor = 0.05 WHERE label ILIKE 'cast iron skillet'")
    _, result = call_api("POST", "/v1/context", ingested, {"query": "cast iron skillet", "dry_run": True})
    skillet = [m for m in result["memories"] if m["label"].lower() == "cast iron skillet"]
    assert skillet and skillet[0]["band"] == "forgotten"  # S5: forgetting demotes, never loses
    _, other = call_api("POST", "/v1/context", ingested, {"query": "how do we undo a bad release?", "dry_run": True})
    assert "cast iron skillet" not in [m["label"].lower() for m in other["memories"]]


@pytest.mark.parametrize("fmt", ["markdown", "json", "plain"])
def test_each_format_renders(ingested, fmt):
    status, result = call_api("POST", "/v1/context", ingested, {"query": "rollback", "format": fmt, "dry_run": True})
    assert status == 200 and result["format"] == fmt and "Rollback" in result["context"]


def test_a_small_tenant_beside_a_large_one_still_gets_k_results(configured, tenant, local_embedder):
    """pgvector 0.6 filters ANN results after the index scan; the store must not lose rows."""
    from contextos.models import MemoryCandidate, Provenance

    store = container.stores()
    big = "big-" + tenant
    texts = [f"topic number {i} about distributed systems and caching layer {i % 37}" for i in range(600)]
    vectors = local_embedder.embed(texts)

    def candidates(prefix: str, n: int):
        return [
            MemoryCandidate(
                norm_key=f"{prefix}{i}",
                label=f"{prefix} {i}",
                definition=texts[i],
                type="fact",
                importance=5,
                embedding=vectors[i],
                decay_rate=0.15,
                provenance=Provenance.user_upload,
                base_trust=0.9,
            )
            for i in range(n)
        ]

    for owner, n in ((big, 600), (tenant, 25)):
        accepted = container.documents().create_document(
            owner, content_hash=owner, filename=None, content_type=None, provenance="user_upload", size_bytes=1
        )[0]
        store.admission.store_document_concepts(
            owner,
            accepted.id,
            candidates(owner, n),
            embedder_id="local",
            source_type="text",
            domain="general",
            counts={},
        )
    with container.database().system_tx() as conn:
        conn.execute("RESET ROLE")
        conn.execute("ANALYZE memories")
    query = local_embedder.embed(["caching layer"])[0]
    for exact_up_to in (0, 20_000):  # the ANN pass with its exact re-ask, and the exact pass up front
        rows = store.reads.vector_search(tenant, query, k=20, ef_search=20, exact_scan_max_rows=exact_up_to)
        assert len(rows) == 20
    assert len(rows) == 20
    with container.database().tenant_tx(tenant) as conn:
        own = {r["id"] for r in conn.execute("SELECT id FROM memories WHERE tenant_id = %s", [tenant])}
    assert {r["id"] for r in rows} <= own
