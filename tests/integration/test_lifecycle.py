"""functions/lifecycle on an EventBridge schedule: exact decayed strengths, bands, and only what is due."""

import threading

import pytest
from contextos import container
from contextos.local.events import scheduled_event
from contextos.local.handlers import invoke

from tests.helpers import call_api, run_queue
from tests.integration.test_ingest_pipeline import RUNBOOK


@pytest.fixture
def ingested(configured, tenant, sqs, local_aws, drain_ingest_queue):
    call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    return tenant


def age(tenant: str, label: str, days: float, rate: float = 0.15) -> None:
    """Move a memory's anchor into the past, as if it had not been used for ``days``."""
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(
            """UPDATE memories SET strength_anchor = 1.0, decay_rate = %s,
                      strength_anchor_at = now() - make_interval(secs => %s),
                      next_transition_at = now() - interval '1 second'
               WHERE label ILIKE %s""",
            [rate, days * 86400, label],
        )


def row(tenant: str, label: str) -> dict:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute(
            "SELECT strength, band, next_transition_at, strength_materialized_at FROM memories WHERE label ILIKE %s",
            [label],
        ).fetchone()


def test_the_scheduled_scan_materializes_exact_decayed_strengths_and_bands(ingested):
    age(ingested, "canary release", days=3)  # 0.85^3 = 0.614 → fading
    age(ingested, "feature flags", days=10)  # 0.85^10 = 0.197 → critical
    age(ingested, "rollback", days=20)  # 0.85^20 = 0.0388 → forgotten
    report = invoke("lifecycle", scheduled_event("contextos-lifecycle"))
    assert report["materialized"] >= 3
    canary, flags, rollback = row(ingested, "canary release"), row(ingested, "feature flags"), row(ingested, "rollback")
    assert canary["strength"] == pytest.approx(0.85**3, rel=1e-4) and canary["band"] == "fading"
    assert flags["strength"] == pytest.approx(0.85**10, rel=1e-4) and flags["band"] == "critical"
    assert rollback["strength"] == pytest.approx(0.85**20, rel=1e-4) and rollback["band"] == "forgotten"
    # The next transition is when the closed form crosses the next boundary: 0.40 for a fading memory.
    days_to_040 = (canary["next_transition_at"] - canary["strength_materialized_at"]).total_seconds() / 86400
    assert 0.85 ** (3 + days_to_040) == pytest.approx(0.40, rel=1e-3)
    assert rollback["next_transition_at"] is None


def test_a_scan_touches_only_memories_whose_band_is_due(ingested):
    age(ingested, "canary release", days=3)
    first = container.lifecycle().run(tenants=[ingested])
    second = container.lifecycle().run(tenants=[ingested])
    assert first.materialized >= 1
    assert second.materialized == 0


def test_a_scan_of_named_tenants_leaves_the_others_for_the_next_scan(ingested, sqs, local_aws):
    other = f"{ingested}-other"
    call_api("POST", "/v1/documents", other, {"text": RUNBOOK})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    for tenant in (ingested, other):
        age(tenant, "canary release", days=3)
    only_one = container.lifecycle().run(tenants=[ingested])
    assert only_one.tenants == 1 and only_one.materialized >= 1
    assert row(ingested, "canary release")["band"] == "fading"
    assert row(other, "canary release")["band"] != "fading"  # not scanned: still as admitted
    assert container.lifecycle().run(tenants=[other]).materialized == only_one.materialized
    assert row(other, "canary release")["band"] == "fading"


def test_two_concurrent_scans_materialize_each_memory_once(ingested):
    labels = ("canary release", "feature flags", "rollback", "blue-green deployment")
    for label in labels:
        age(ingested, label, days=5)
    store = container.lifecycle_store()
    counts: list[int] = []
    barrier = threading.Barrier(2)

    def scan() -> None:
        barrier.wait()
        after, done = None, 0
        while True:
            batch = store.materialize(ingested, limit=1, after=after)
            done += batch.claimed
            if (after := batch.after) is None:
                break
        counts.append(done)

    threads = [threading.Thread(target=scan) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == len(labels)
    with container.database().tenant_tx(ingested) as conn:
        assert conn.execute("SELECT count(*) AS n FROM memories WHERE next_transition_at <= now()").fetchone()["n"] == 0


def test_keyset_batches_cover_every_due_memory(ingested):
    with container.database().tenant_tx(ingested) as conn:
        conn.execute(
            "UPDATE memories SET strength_anchor_at = now() - interval '4 days',"
            " next_transition_at = now() - interval '1 second'"
        )
        total = conn.execute("SELECT count(*) AS n FROM memories").fetchone()["n"]
    service = container.lifecycle()
    service.settings = service.settings.model_copy(update={"batch_size": 2})
    progress: list[int] = []

    def record(tenant: str, stage: str, done: int) -> None:
        if (tenant, stage) == (ingested, "materialized"):
            progress.append(done)

    report = service.run(progress=record)
    assert report.materialized >= total
    assert len(progress) >= total // 2


def test_the_cli_runs_the_scan_with_progress_and_prints_the_report(ingested, capsys):
    import json

    from contextos.cli import main

    age(ingested, "canary release", days=3)
    assert main(["lifecycle", "run"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["materialized"] >= 1 and report["bands"].get("fading", 0) >= 1
    assert f"{ingested}: materialized" in err  # progress on stderr, per tenant and stage


def test_the_scan_asks_each_tenant_only_for_the_stages_it_has_work_for(ingested):
    """One statement says which stages find something for which tenant; every flag agrees with what
    the stage then does, and a tenant with nothing flagged is not visited at all."""
    life = container.lifecycle_store()
    container.lifecycle().run()  # whatever was due is done: nothing left for this tenant
    assert container.lifecycle_store().due_work()[ingested] <= {"text_statistics"}
    age(ingested, "canary release", days=3)
    assert "materialize" in life.due_work()[ingested]
    age(ingested, "rollback", days=20)
    container.lifecycle().run()  # forgotten now: archival is due, and the scan archives it
    work = life.due_work()[ingested]
    assert "materialize" not in work and "archive" not in work
    assert row(ingested, "rollback") is None or row(ingested, "rollback")["band"] == "forgotten"
