"""The contradiction gate's update links (S5, S6, S7): a newer statement that reports a change to
the same subject, without a contradiction verdict, supersedes nothing; it links the older memory
(hot, or a cold stub) to itself, flags the pair with a ``contradicts`` edge and an audit entry, and
the read path then ranks the update first while still showing the older memory."""

from datetime import UTC, datetime, timedelta

from contextos import container
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.models import BASE_TRUST, LifecycleReport, MemoryCandidate, Provenance

from tests.helpers import call_api
from tests.memory_writer import add_memories

STALE = ("Maria's flat", "Maria lives in Lisbon, in a flat near the river.")
CURRENT = ("Maria's new city", "Maria moved and now lives in Porto, close to her new office.")
QUERY = "Which city does Maria live in?"


def remember(tenant: str, label: str, definition: str) -> dict:
    status, body = call_api("POST", "/v1/memories", tenant, {"label": label, "definition": definition})
    assert status == 201, body
    return body


def rows(tenant: str) -> dict[str, dict]:
    with container.database().tenant_tx(tenant) as conn:
        found = conn.execute("SELECT id, label, state, tier, updated_by, superseded_by FROM memories").fetchall()
    return {r["label"]: r for r in found}


def edges(tenant: str) -> set[tuple]:
    with container.database().tenant_tx(tenant) as conn:
        return {(r["src_id"], r["dst_id"], r["type"]) for r in conn.execute("SELECT * FROM relationships")}


def audit(tenant: str) -> list[tuple]:
    with container.database().tenant_tx(tenant) as conn:
        return [(r["action"], r["memory_id"]) for r in conn.execute("SELECT * FROM audit_log ORDER BY chain_seq")]


def ranked_labels(tenant: str, query: str) -> list[str]:
    status, body = call_api("POST", "/v1/context", tenant, {"query": query, "dry_run": True})
    assert status == 200, body
    return [m["label"] for m in body["memories"]]


def test_an_update_links_the_older_memory_and_supersedes_nothing(configured, tenant):
    old = remember(tenant, *STALE)
    new = remember(tenant, *CURRENT)
    assert new["superseded"] == [] and new["corroborated"] == []
    found = rows(tenant)
    stale, current = found[STALE[0]], found[CURRENT[0]]
    assert stale["state"] == current["state"] == "active"  # nothing hidden
    assert str(stale["updated_by"]) == new["memory_id"] and current["updated_by"] is None
    assert (current["id"], stale["id"], "contradicts") in edges(tenant)  # the governance report's conflict
    assert ("update_linked", stale["id"]) in audit(tenant)
    assert str(stale["id"]) == old["memory_id"]


def test_the_read_path_ranks_the_update_above_what_it_updates(configured, tenant):
    remember(tenant, *STALE)
    remember(tenant, *CURRENT)
    labels = ranked_labels(tenant, QUERY)
    assert CURRENT[0] in labels and STALE[0] in labels  # the older state is still there to read
    assert labels.index(CURRENT[0]) < labels.index(STALE[0])


def test_a_change_reported_about_another_subject_links_nothing(configured, tenant):
    remember(tenant, "Payments timeout", "The payments service times out after 30 seconds.")
    remember(tenant, "Search timeout", "The search service now times out after 60 seconds.")
    remember(tenant, "Alice's team", "Alice works on the billing team.")
    remember(tenant, "Bob's team", "Bob now works on the billing team.")
    assert all(r["updated_by"] is None for r in rows(tenant).values())
    assert not [e for e in edges(tenant) if e[2] == "contradicts"]
    assert "update_linked" not in {a for a, _ in audit(tenant)}


def test_a_statement_without_a_change_cue_links_nothing(configured, tenant):
    remember(tenant, *STALE)
    remember(tenant, "Maria's office", "Maria lives in Lisbon and works in an office near the river.")
    assert all(r["updated_by"] is None for r in rows(tenant).values())


def test_an_update_reaches_a_cold_stub_that_decay_archived(configured, tenant, local_embedder):
    settings = get_settings()
    (vector,) = local_embedder.embed([f"{STALE[0]}: {STALE[1]}"])
    add_memories(
        container.stores(),
        tenant,
        [
            MemoryCandidate(
                norm_key="maria flat",
                label=STALE[0],
                definition=STALE[1],
                type="fact",
                importance=5,
                embedding=vector,
                decay_rate=decay_rate(5, "fact", settings.decay),
                provenance=Provenance.user_turn,
                base_trust=BASE_TRUST[Provenance.user_turn],
            )
        ],
        embedder_id="test",
        at=[datetime.now(UTC) - timedelta(days=120)],
    )
    container.lifecycle().scan_tenant(tenant, LifecycleReport())
    assert rows(tenant)[STALE[0]]["tier"] == "cold"
    new = remember(tenant, *CURRENT)
    stale = rows(tenant)[STALE[0]]
    assert str(stale["updated_by"]) == new["memory_id"] and stale["tier"] == "cold"
    assert ("update_linked", stale["id"]) in audit(tenant)
    labels = ranked_labels(tenant, QUERY)
    assert labels[0] == CURRENT[0]
    if STALE[0] in labels:  # brought back as evidence, it ranks after its update
        assert labels.index(STALE[0]) > labels.index(CURRENT[0])
