"""S6.5-6.8: recipes per call, L0/L1/L2 tiers, always_load first, and /v1/search without side effects."""

import pytest
from contextos import container

from tests.helpers import call_api
from tests.integration.test_merging import candidates, store_concepts

CANARY_V1 = ("Canary release", "A canary release sends a small share of traffic to the new version first.", "fact")
CANARY_V2 = ("Canary releases", "Canary releases catch regressions early because only a few users see them.", "fact")
RULE = ("Never deploy on Fridays", "Deploys are frozen on Fridays so that nobody is paged over the weekend.", "rule")
OTHER = [
    ("Blue-green deployment", "Blue-green deployment keeps two production environments and switches traffic.", "fact"),
    ("Feature flags", "Feature flags let a team disable a change without a deploy.", "fact"),
    ("Rollback plan", "A rollback plan lists the steps to return to the previous release.", "fact"),
]


@pytest.fixture
def memories(configured, tenant, local_embedder):
    store = container.stores()
    store_concepts(store, tenant, candidates(local_embedder, [CANARY_V1, *OTHER]))
    store_concepts(store, tenant, candidates(local_embedder, [CANARY_V2]))  # a second source: an excerpt
    store_concepts(store, tenant, candidates(local_embedder, [RULE]))
    return tenant


def snapshot(tenant):
    with container.database().tenant_tx(tenant) as conn:
        memories = conn.execute("SELECT id, strength_anchor, access_count FROM memories ORDER BY id").fetchall()
        logs = conn.execute("SELECT count(*) AS n FROM context_log").fetchone()["n"]
    return memories, logs


def test_the_best_memory_gets_its_source_excerpts_at_l2_when_the_budget_allows(memories):
    _, result = call_api("POST", "/v1/context", memories, {"query": "canary release", "dry_run": True})
    canary = next(m for m in result["memories"] if m["label"] == "Canary release")
    assert canary["tier_used"] == "L2"
    # The merge kept the longer definition; the other source's words come back as the excerpt.
    assert canary["definition"] == CANARY_V2[1]
    assert canary["excerpts"] == [CANARY_V1[1]]
    assert CANARY_V1[1] in result["context"]


def test_under_a_tight_budget_tiers_only_step_down_and_the_rest_is_the_l0_index(memories):
    _, result = call_api(
        "POST", "/v1/context", memories, {"query": "canary release", "dry_run": True, "token_budget": 45}
    )
    tiers = [m["tier_used"] for m in result["memories"]]
    assert tiers == sorted(tiers, key=["L2", "L1", "L0"].index)
    assert "L0" in tiers and result["tokens_used"] <= 45
    assert result["index"] == [m["label"] for m in result["memories"] if m["tier_used"] == "L0"]


def test_always_load_memories_come_first_whatever_the_query(memories):
    with container.database().tenant_tx(memories) as conn:
        conn.execute("UPDATE memories SET always_load = true WHERE label = 'Feature flags'")
    _, result = call_api(
        "POST", "/v1/context", memories, {"query": "canary release", "dry_run": True, "format": "plain"}
    )
    assert result["memories"][0]["label"] == "Feature flags" and result["memories"][0]["always_load"]
    lines = result["context"].splitlines()
    assert lines[0].startswith("Feature flags") or lines[1].startswith("Feature flags")
    assert any(line.startswith("Never deploy on Fridays") for line in lines[:2])


def test_a_recipe_is_chosen_per_call_and_an_unknown_one_is_a_clear_400(memories):
    _, standard = call_api("POST", "/v1/context", memories, {"query": "canary release", "dry_run": True})
    _, adaptive = call_api(
        "POST", "/v1/context", memories, {"query": "canary release", "dry_run": True, "recipe": "intent_adaptive"}
    )
    assert {m["score"]["recipe"] for m in standard["memories"]} == {"relevance"}  # the default
    assert {m["score"]["recipe"] for m in adaptive["memories"]} == {"intent_adaptive"}
    status, error = call_api("POST", "/v1/context", memories, {"query": "x", "recipe": "nope"})
    assert status == 400 and error["error"]["code"] == "unknown_recipe"


def test_search_ranks_with_every_component_and_changes_nothing(memories):
    before = snapshot(memories)
    status, result = call_api("POST", "/v1/search", memories, {"query": "how do we roll back?", "limit": 3})
    assert status == 200 and len(result["memories"]) == 3
    assert {"vector", "text", "graph", "strength", "recency", "relevance", "probability"} <= set(
        result["memories"][0]["score"]
    )
    assert snapshot(memories) == before
