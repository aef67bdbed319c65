"""S5 in the database: both decay policies exactly as the pure module computes them, per tenant;
band transitions; one reminder per entry into the critical band; scratch memories expiring."""

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from contextos import container
from contextos.config import DecaySettings
from contextos.decay import StrengthState, next_transition_at, weibull_scale

from tests.helpers import call_api
from tests.integration.test_merging import candidates, store_concepts
from tests.memory_writer import add_memories

D = DecaySettings()
SPECS = [
    ("Canary release", "A canary release sends a small share of traffic to the new version first.", "decision"),
    ("Feature flags", "Feature flags let the team disable a risky change without a deploy.", "decision"),
    ("Blue-green deployment", "Two identical production environments; the router picks one.", "fact"),
]


def age(tenant: str, label: str, *, days: float, anchor: float = 1.0) -> None:
    """Move a memory's anchor ``days`` into the past and make it due, as if the scan had been away."""
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(
            """UPDATE memories SET strength_anchor = %s, strength_anchor_at = now() - make_interval(secs => %s),
                      next_transition_at = now() - interval '1 second'
               WHERE label = %s""",
            [anchor, days * 86400, label],
        )


def memory(tenant: str, label: str) -> dict:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute(
            """SELECT id, strength, band, decay_policy, decay_rate, decay_scale, decay_shape, strength_anchor,
                      strength_anchor_at, strength_materialized_at, next_transition_at, tier, state, access_count
               FROM memories WHERE label = %s""",
            [label],
        ).fetchone()


def open_reminders(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute(
            "SELECT r.memory_id, m.label FROM reminders r JOIN memories m ON m.id = r.memory_id"
            " WHERE r.acknowledged_at IS NULL"
        ).fetchall()


@pytest.mark.parametrize(
    ("policy", "anchor", "days", "rate", "scale"),
    list(itertools.product(["exponential", "weibull"], [1.0, 0.55], [0.0, 0.4, 3.0, 9.5, 30.0], [0.15], [7.0, 17.5])),
)
def test_sql_strength_and_next_transition_equal_the_pure_module(configured, tenant, policy, anchor, days, rate, scale):
    """The SQL the store runs and contextos.decay are one arithmetic: checked over a grid of states."""
    from contextos.store.sql import band_case, current_strength, next_transition

    with container.database().tenant_tx(tenant) as conn:
        row = conn.execute(
            f"""SELECT now() AS now, {current_strength("m")} AS strength,
                       {band_case(current_strength("m"), D)} AS band,
                       {
                next_transition("m.strength_anchor", "m.strength_anchor_at", "m.decay_rate", current_strength("m"), D)
            } AS next
                FROM (SELECT %(anchor)s::float8 AS strength_anchor, now() - make_interval(secs => %(secs)s)
                             AS strength_anchor_at, %(policy)s::text AS decay_policy, %(rate)s::float8 AS decay_rate,
                             %(scale)s::float8 AS decay_scale, 0.8::float8 AS decay_shape) m""",
            {"anchor": anchor, "secs": days * 86400, "policy": policy, "rate": rate, "scale": scale},
        ).fetchone()
    from contextos.decay import band_of

    state = StrengthState(
        anchor=anchor, anchor_at=row["now"] - timedelta(days=days), policy=policy, rate=rate, scale_days=scale
    )
    assert row["strength"] == pytest.approx(state.at(row["now"]), rel=1e-9)
    assert row["band"] == band_of(state.at(row["now"]), D, policy).value
    expected = next_transition_at(state, row["now"], D)
    if expected is None:
        assert row["next"] is None
    else:
        assert abs((row["next"] - expected).total_seconds()) < 1e-3


def test_each_tenant_decays_by_its_configured_policy(configured, tenant, local_embedder, monkeypatch):
    other = f"{tenant}-x"
    monkeypatch.setenv("CONTEXTOS_DECAY__TENANT_POLICIES", f'{{"{tenant}": "weibull"}}')
    container.reset()
    store = container.stores()
    store_concepts(store, tenant, candidates(local_embedder, SPECS))
    store_concepts(store, other, candidates(local_embedder, SPECS))
    fresh = memory(tenant, "Canary release")
    assert (fresh["decay_policy"], fresh["decay_scale"], fresh["decay_shape"]) == ("weibull", 7.0, 0.8)
    assert memory(other, "Canary release")["decay_policy"] == "exponential"

    # 10 days unused: Weibull exp(−(10/7)^0.8) = 0.264420 (critical); exponential 0.85^10 = 0.196874 (critical)
    # A fact 16 days unused: Weibull exp(−(16/7)^0.8) = 0.137 < 0.15 (forgotten, archived); exponential
    # (λ = 0.15 · 0.5 for facts) 0.925^16 = 0.287 (critical).
    for t in (tenant, other):
        age(t, "Canary release", days=10)
        age(t, "Blue-green deployment", days=16)
    report = container.lifecycle().run(tenants=[tenant, other])
    assert not report.failed_tenants
    weibull, exponential = memory(tenant, "Canary release"), memory(other, "Canary release")
    assert weibull["strength"] == pytest.approx(0.2644199, rel=1e-4) and weibull["band"] == "critical"
    assert exponential["strength"] == pytest.approx(0.85**10, rel=1e-4) and exponential["band"] == "critical"
    forgotten, kept = memory(tenant, "Blue-green deployment"), memory(other, "Blue-green deployment")
    assert forgotten["band"] == "forgotten" and forgotten["tier"] == "cold"
    assert kept["strength"] == pytest.approx(0.925**16, rel=1e-4) and (kept["band"], kept["tier"]) == (
        "critical",
        "hot",
    )


def test_reinforcement_reanchors_and_stretches_the_weibull_scale(configured, tenant, local_embedder, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_DECAY__POLICY", "weibull")
    container.reset()
    store = container.stores()
    store_concepts(store, tenant, candidates(local_embedder, SPECS))
    age(tenant, "Canary release", days=7)  # exp(−1) = 0.367879
    before = memory(tenant, "Canary release")
    store.reads.reinforce_and_log(tenant, [before["id"]], intent="default", budget=100, tokens_used=10)
    after = memory(tenant, "Canary release")
    # S ← 0.7 · e^−1 + 0.3 = 0.557516; access_count 0 → 1, so η = 7 · 1.5 = 10.5 days
    assert after["strength_anchor"] == pytest.approx(0.7 * 0.36787944 + 0.3, rel=1e-5)
    assert after["band"] == "fading" and after["decay_scale"] == pytest.approx(weibull_scale(1, D.weibull))
    state = StrengthState(
        anchor=after["strength_anchor"],
        anchor_at=after["strength_anchor_at"],
        policy="weibull",
        scale_days=after["decay_scale"],
    )
    assert after["next_transition_at"] == pytest.approx(
        next_transition_at(state, after["strength_anchor_at"], D), abs=timedelta(milliseconds=1)
    )


def test_a_memory_imported_already_critical_gets_its_reminder_at_the_next_scan(configured, tenant):
    """Imported with an old anchor (a workspace restored from a backup), a memory is born in the
    critical band: it never *enters* it, yet it is as close to being forgotten as one that did, so
    the next scan opens the same reminder."""
    from contextos.models import MemoryType
    from contextos.workspace.format import render_file
    from contextos.workspace.model import Strength, WorkspaceMemory

    memory = WorkspaceMemory(
        id=uuid.uuid4(),
        type=MemoryType.fact,
        l0="Pager rotation",
        l1="The pager rotation hands over on Mondays at 10:00.",
        strength=Strength(anchor=0.3, anchored=datetime.now(UTC) - timedelta(hours=1), rate=0.05),
    )
    status, report = call_api(
        "POST", "/v1/import", tenant, {"files": [{"path": "pager.md", "content": render_file(memory)}]}
    )
    assert status == 200, report
    with container.database().tenant_tx(tenant) as conn:
        band = conn.execute("SELECT band FROM memories WHERE label = 'Pager rotation'").fetchone()["band"]
    assert band == "critical"
    assert container.lifecycle().run(tenants=[tenant]).reminders_opened == 1
    status, page = call_api("GET", "/v1/reminders", tenant)
    assert status == 200 and [r["label"] for r in page["reminders"]] == ["Pager rotation"]
    assert container.lifecycle().run(tenants=[tenant]).reminders_opened == 0  # still one


def test_band_transitions_open_one_reminder_per_entry_into_critical(configured, tenant, local_embedder):
    store = container.stores()
    store_concepts(store, tenant, candidates(local_embedder, SPECS))
    age(tenant, "Canary release", days=3)  # 0.85^3 = 0.614: fading, no reminder
    age(tenant, "Feature flags", days=8)  # 0.85^8 = 0.272: critical, one reminder
    first = container.lifecycle().run(tenants=[tenant])
    assert first.bands == {"fading": 1, "critical": 1} and first.reminders_opened == 1
    assert [r["label"] for r in open_reminders(tenant)] == ["Feature flags"]

    # Still critical at the next look (made due again by hand): no second reminder.
    age(tenant, "Feature flags", days=9)
    second = container.lifecycle().run(tenants=[tenant])
    assert second.materialized >= 1 and second.reminders_opened == 0
    assert len(open_reminders(tenant)) == 1

    status, page = call_api("GET", "/v1/reminders", tenant)
    assert status == 200 and [r["label"] for r in page["reminders"]] == ["Feature flags"]
    reminder = page["reminders"][0]
    assert reminder["strength_at_open"] == pytest.approx(0.85**8, rel=1e-3)
    assert reminder["strength"] == pytest.approx(0.85**9, rel=1e-3)
    status, acked = call_api("POST", f"/v1/reminders/{reminder['id']}/acknowledge", tenant)
    assert status == 200 and acked["acknowledged_at"]
    assert call_api("POST", f"/v1/reminders/{reminder['id']}/acknowledge", tenant)[1] == acked  # idempotent
    assert call_api("GET", "/v1/reminders", tenant)[1]["reminders"] == []
    everything = call_api("GET", "/v1/reminders", tenant, query={"include_acknowledged": "true"})[1]["reminders"]
    assert len(everything) == 1
    assert call_api("GET", "/v1/reminders", f"{tenant}-other")[1]["reminders"] == []  # tenant-scoped
    assert call_api("POST", f"/v1/reminders/{reminder['id']}/acknowledge", f"{tenant}-other")[0] == 404
    assert call_api("GET", "/v1/reminders", tenant, query={"cursor": "not-a-cursor"})[0] == 422  # not its form

    # Reinforced back to fading, then critical again: a new entry, a new reminder.
    age(tenant, "Feature flags", days=1, anchor=0.6)  # 0.6 · 0.85 = 0.51: fading
    container.lifecycle().run(tenants=[tenant])
    age(tenant, "Feature flags", days=4, anchor=0.6)  # 0.6 · 0.85^4 = 0.313: critical
    assert container.lifecycle().run(tenants=[tenant]).reminders_opened == 1
    assert len(open_reminders(tenant)) == 1


def test_reminders_page_with_a_cursor(configured, tenant, local_embedder):
    store = container.stores()
    store_concepts(store, tenant, candidates(local_embedder, SPECS))
    for label, _, _ in SPECS:
        age(tenant, label, days=12)  # decisions 0.85^12 = 0.142, the fact 0.925^12 = 0.392: all critical
    assert container.lifecycle().run(tenants=[tenant]).reminders_opened == 3
    first = call_api("GET", "/v1/reminders", tenant, query={"limit": "2"})[1]
    assert len(first["reminders"]) == 2 and first["next_cursor"]
    rest = call_api("GET", "/v1/reminders", tenant, query={"limit": "2", "cursor": first["next_cursor"]})[1]
    assert len(rest["reminders"]) == 1 and rest["next_cursor"] is None
    seen = {r["label"] for r in first["reminders"] + rest["reminders"]}
    assert seen == {label for label, _, _ in SPECS}


def test_scratch_memories_expire_after_their_ttl(configured, tenant, local_embedder):
    store = container.stores()
    now = datetime.now(UTC)
    specs = [
        ("Scratch note old", "A temporary working note the agent wrote a day and more ago.", "scratch"),
        ("Scratch note new", "A temporary working note the agent wrote a minute ago today.", "scratch"),
        ("Durable old fact", "A fact learned long ago that is not scratch and must stay.", "fact"),
    ]
    ids = add_memories(
        store,
        tenant,
        candidates(local_embedder, specs),
        embedder_id="local",
        at=[now - timedelta(hours=25), now - timedelta(minutes=1), now - timedelta(hours=25)],
    )
    with container.database().tenant_tx(tenant) as conn:  # an explicit expiry wins over the TTL
        conn.execute("UPDATE memories SET expires_at = now() - interval '1 minute' WHERE label = 'Scratch note new'")
        hot_before = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant]).fetchone()[
            "hot_memories"
        ]
    report = container.lifecycle().run(tenants=[tenant])
    assert report.expired == 2
    with container.database().tenant_tx(tenant) as conn:
        left = [r["label"] for r in conn.execute("SELECT label FROM memories").fetchall()]
        audit = conn.execute(
            "SELECT memory_id, action, reason FROM audit_log WHERE action = 'deleted' ORDER BY memory_id"
        ).fetchall()
        hot_after = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant]).fetchone()[
            "hot_memories"
        ]
        bands = conn.execute("SELECT count(*) AS n FROM memory_vector_bands WHERE memory_id = ANY(%s)", [ids[:2]])
        assert bands.fetchone()["n"] == 0
    assert left == ["Durable old fact"]
    assert sorted(a["memory_id"] for a in audit) == sorted(ids[:2]) and {a["reason"] for a in audit} == {"expired"}
    assert hot_after == hot_before - 2
    assert container.lifecycle().run(tenants=[tenant]).expired == 0  # nothing left to expire
