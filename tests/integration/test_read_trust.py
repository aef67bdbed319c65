"""Composite trust at read time (S7): in every score breakdown, and a filter with ``min_trust``."""

import pytest
from contextos import container

from tests.helpers import call_api


def remember(tenant: str, label: str, definition: str, provenance: str | None = None, **kw) -> dict:
    payload = {"label": label, "definition": definition} | ({"provenance": provenance} if provenance else {})
    status, body = call_api("POST", "/v1/memories", tenant, payload, **kw)
    assert status in (201, 202), body
    return body


def promote_all(tenant: str) -> None:
    status, page = call_api("GET", "/v1/review", tenant)
    for item in page["items"]:
        status, _ = call_api("POST", f"/v1/review/{item['id']}/promote", tenant, {"reason": "verified by hand"})
        assert status == 200


def trust_by_label(tenant: str, query: str, **extra) -> dict[str, float]:
    status, result = call_api("POST", "/v1/search", tenant, {"query": query, **extra})
    assert status == 200, result
    return {m["label"]: m["score"]["trust"] for m in result["memories"]}


@pytest.fixture
def mixed_trust(configured, tenant):
    remember(tenant, "Canary release", "A canary release sends a small share of traffic to the new version first.")
    remember(
        tenant,
        "Canary traffic share",
        "A web article says a canary release should start with five percent of traffic.",
        provenance="web_content",
    )  # held: web content
    promote_all(tenant)  # admitted by a user, but still web content: base trust 0.3
    remember(
        tenant,
        "Agent canary note",
        "The deploy agent observed that canary releases roll back automatically on errors.",
        principal="agent",
        ceiling="agent_turn",
    )
    return tenant


def test_each_memory_reports_its_composite_trust(mixed_trust):
    trust = trust_by_label(mixed_trust, "canary release traffic")
    assert trust["Canary release"] == pytest.approx(1.0)  # user_turn
    assert trust["Canary traffic share"] == pytest.approx(0.3)  # web_content, promoted: provenance kept
    assert trust["Agent canary note"] == pytest.approx(0.7)  # agent_turn


def test_min_trust_filters_search_and_context(mixed_trust):
    assert set(trust_by_label(mixed_trust, "canary release traffic", min_trust=0.5)) == {
        "Canary release",
        "Agent canary note",
    }
    assert set(trust_by_label(mixed_trust, "canary release traffic", min_trust=0.9)) == {"Canary release"}
    status, result = call_api(
        "POST", "/v1/context", mixed_trust, {"query": "canary release traffic", "min_trust": 0.9, "dry_run": True}
    )
    assert status == 200 and {m["label"] for m in result["memories"]} == {"Canary release"}
    status, _ = call_api("POST", "/v1/search", mixed_trust, {"query": "canary", "min_trust": 1.5})
    assert status == 422


def test_corroboration_raises_trust_by_the_configured_step(configured, tenant):
    remember(
        tenant,
        "Staging database engine",
        "The staging database runs PostgreSQL on a single node in Frankfurt with nightly backups.",
        principal="agent",
        ceiling="agent_turn",
    )
    before = trust_by_label(tenant, "staging database PostgreSQL")["Staging database engine"]
    _, body = call_api(
        "POST",
        "/v1/memories",
        tenant,
        {
            "label": "Staging engine",
            "definition": "The staging database runs PostgreSQL on a single node.",
            "type": "entity",
        },
    )
    assert body["corroborated"]
    after = trust_by_label(tenant, "staging database PostgreSQL")
    assert before == pytest.approx(0.7)
    assert after["Staging database engine"] == pytest.approx(0.75)
    assert after["Staging engine"] == pytest.approx(1.0)  # 1.0 + 0.05, clamped


def test_overused_stale_memories_lose_trust(configured, tenant):
    body = remember(tenant, "Legacy queue", "The legacy queue drains nightly into the archive bucket.")
    with container.database().tenant_tx(tenant) as conn:  # used four times, then left to fade
        conn.execute("UPDATE memories SET access_count = 4, strength_anchor = 0.2 WHERE id = %s", [body["memory_id"]])
    _, result = call_api("POST", "/v1/search", tenant, {"query": "legacy queue archive"})
    (memory,) = [m for m in result["memories"] if m["id"] == body["memory_id"]]
    assert memory["score"]["trust"] == pytest.approx(0.9)
