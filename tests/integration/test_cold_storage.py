"""S5 cold storage against real PostgreSQL and moto S3: archival to batched objects, stubs that leave
every hot read path, reactivation by a matching query, and faults at every step leaving each memory
exactly once, hot or cold, after a rerun."""

import gzip
import json
import threading

import pytest
from contextos import container
from contextos.lsh import BANDS

from tests.helpers import call_api
from tests.integration.test_merging import candidates, store_concepts

SPECS = [
    ("Canary release", "A canary release sends a small share of traffic to the new version first.", "decision"),
    ("Feature flags", "Feature flags let the team disable a risky change without a deploy.", "decision"),
    ("Blue-green deployment", "Two identical production environments; the router picks one of them.", "fact"),
    ("Rollback plan", "Rollback switches the router back to the previous environment quickly.", "decision"),
]
RELATED = {"Canary release": ["Feature flags", "Rollback plan"], "Feature flags": ["Blue-green deployment"]}


class StepFault(RuntimeError):
    """Raised by the fault tests at a named step of archival or reactivation."""


@pytest.fixture
def seeded(configured, tenant, local_embedder):
    store = container.stores()
    store_concepts(store, tenant, candidates(local_embedder, SPECS, related=RELATED))
    return tenant


def query_text(label: str) -> str:
    return next(f"{lbl}: {definition}" for lbl, definition, _ in SPECS if lbl == label)


def forget(tenant: str, labels: list[str]) -> None:
    """Thirty unused days: every memory here falls below 0.10 (0.85^30 = 0.008, facts 0.925^30 = 0.096)."""
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(
            """UPDATE memories SET strength_anchor = 1.0, strength_anchor_at = now() - interval '30 days',
                      next_transition_at = now() - interval '1 second'
               WHERE label = ANY(%s)""",
            [labels],
        )


def snapshot(tenant: str) -> dict:
    """Everything that must survive a round trip, per memory id."""
    with container.database().tenant_tx(tenant) as conn:
        memories = conn.execute("SELECT id, label, definition, type, importance FROM memories").fetchall()
        items = conn.execute("SELECT id, memory_id FROM memory_items").fetchall()
        edges = conn.execute("SELECT src_id, dst_id, type FROM relationships").fetchall()
    out = {}
    for m in memories:
        out[m["id"]] = {
            "label": m["label"],
            "definition": m["definition"],
            "items": sorted(str(i["id"]) for i in items if i["memory_id"] == m["id"]),
            "edges": sorted(
                (str(e["src_id"]), str(e["dst_id"]), e["type"]) for e in edges if m["id"] in (e["src_id"], e["dst_id"])
            ),
        }
    return out


def rows(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute(
            """SELECT m.id, m.label, m.definition, m.tier, m.state, m.strength_anchor, m.band, m.cold_object_key,
                      m.cold_byte_start, m.cold_byte_end, v.searchable, v.cold AS vector_cold,
                      (SELECT count(*) FROM memory_items i WHERE i.memory_id = m.id) AS items,
                      (SELECT count(*) FROM audit_log a WHERE a.memory_id = m.id AND a.action = 'archived') AS archived,
                      (SELECT count(*) FROM audit_log a WHERE a.memory_id = m.id AND a.action = 'reactivated')
                          AS reactivated
               FROM memories m LEFT JOIN memory_vectors v ON v.memory_id = m.id ORDER BY m.label"""
        ).fetchall()


def cold_member(s3, row: dict) -> dict:
    body = s3.get_object(
        Bucket="contextos-cold",
        Key=row["cold_object_key"],
        Range=f"bytes={row['cold_byte_start']}-{row['cold_byte_end']}",
    )["Body"].read()
    return json.loads(gzip.decompress(body))


def assert_each_memory_exactly_once(tenant: str, s3, before: dict) -> dict[str, list]:
    """Every memory is one row, either hot with all its items, or a cold stub whose byte range holds
    all of it (definition, items, its edges); archived once per time it went cold; no edge lost."""
    now = rows(tenant)
    assert sorted(r["id"] for r in now) == sorted(before), "a memory was lost or duplicated"
    tiers: dict[str, list] = {"hot": [], "cold": []}
    kept_edges: set[tuple] = set()
    for row in now:
        original = before[row["id"]]
        tiers[row["tier"]].append(row["label"])
        if row["tier"] == "hot":
            assert row["state"] == "active" and row["definition"] == original["definition"]
            assert row["items"] == len(original["items"]) and row["searchable"] and not row["vector_cold"]
            assert row["archived"] == row["reactivated"]
        else:
            assert row["state"] == "archived" and row["definition"] == "" and row["items"] == 0
            assert not row["searchable"] and row["vector_cold"]
            assert row["archived"] == row["reactivated"] + 1
            member = cold_member(s3, row)
            assert member["memory"]["id"] == str(row["id"])
            assert member["memory"]["definition"] == original["definition"]
            assert sorted(i["id"] for i in member["items"]) == original["items"]
            edges = {(e["src_id"], e["dst_id"], e["type"]) for e in member["edges"]}
            assert edges <= set(original["edges"])
            kept_edges |= edges
    # An edge goes cold with the first of its two ends to be archived: none is lost on the way.
    with container.database().tenant_tx(tenant) as conn:
        kept_edges |= {
            (str(e["src_id"]), str(e["dst_id"]), e["type"])
            for e in conn.execute("SELECT src_id, dst_id, type FROM relationships").fetchall()
        }
    assert kept_edges == {e for m in before.values() for e in m["edges"]}
    return tiers


def test_archival_writes_full_memories_to_one_object_and_leaves_stubs(seeded, s3, local_embedder):
    from contextos.store.governance import write_audit

    before = snapshot(seeded)
    with container.database().tenant_tx(seeded) as conn:  # some history for the memory to take along
        canary_id = conn.execute("SELECT id FROM memories WHERE label = 'Canary release'").fetchone()["id"]
        write_audit(conn, seeded, [{"actor": "tests", "action": "merged", "memory_id": canary_id, "reason": "key"}])
    forget(seeded, ["Canary release", "Feature flags"])
    report = container.lifecycle().run(tenants=[seeded])
    assert report.archived == 2 and not report.failed_tenants
    tiers = assert_each_memory_exactly_once(seeded, s3, before)
    assert sorted(tiers["cold"]) == ["Canary release", "Feature flags"]
    cold = [r for r in rows(seeded) if r["tier"] == "cold"]
    assert len({r["cold_object_key"] for r in cold}) == 1  # one object for the batch, one range per memory
    assert sorted((r["cold_byte_start"], r["cold_byte_end"]) for r in cold)[0][0] == 0
    member = cold_member(s3, next(r for r in cold if r["id"] == canary_id))
    # its whole audit history up to the archival goes with it (admission by ingest, then our entry)
    with container.database().tenant_tx(seeded) as conn:
        history = conn.execute(
            "SELECT actor, action FROM audit_log WHERE memory_id = %s AND action <> 'archived' ORDER BY seq",
            [canary_id],
        ).fetchall()
    assert [(h["actor"], h["action"]) for h in member["history"]] == [(h["actor"], h["action"]) for h in history]
    assert ("tests", "merged") in [(h["actor"], h["action"]) for h in member["history"]]
    assert member["embedder_id"] == "local"
    # The edge between two archived memories, and those to hot ones, are gone from the hot graph.
    with container.database().tenant_tx(seeded) as conn:
        assert conn.execute("SELECT count(*) AS n FROM relationships").fetchone()["n"] == 0
        actions = conn.execute("SELECT action, actor, reason FROM audit_log WHERE action = 'archived'").fetchall()
    assert len(actions) == 2 and {(a["actor"], a["reason"]) for a in actions} == {("lifecycle", "forgotten")}

    # Every hot read path leaves the stubs out: vector, text, graph, and the assembled context (dry run).
    store = container.stores()
    vector = local_embedder.embed([query_text("Canary release")])[0]
    assert not {r["id"] for r in store.reads.vector_search(seeded, vector, k=10, ef_search=40)} & {
        r["id"] for r in cold
    }
    assert store.reads.text_search(seeded, [["canary release"]], k=10, cap=100) == []
    graph = store.reads.graph_expand(
        seeded, [r["id"] for r in rows(seeded) if r["tier"] == "hot"], hops=2, fall=0.5, shared_source_weight=0.3, k=20
    )
    assert not {g["id"] for g in graph} & {r["id"] for r in cold}
    status, result = call_api("POST", "/v1/search", seeded, {"query": "canary release traffic"})
    assert status == 200 and "Canary release" not in {m["label"] for m in result["memories"]}
    status, detail = call_api("GET", f"/v1/memories/{cold[0]['id']}", seeded)
    assert status == 200 and detail["tier"] == "cold" and detail["state"] == "archived"


def test_each_batch_of_memories_shares_one_object(seeded, s3, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__ARCHIVE_BATCH_SIZE", "2")
    container.reset()
    before = snapshot(seeded)
    forget(seeded, [label for label, _, _ in SPECS])
    assert container.lifecycle().run(tenants=[seeded]).archived == 4
    assert_each_memory_exactly_once(seeded, s3, before)
    keys = [r["cold_object_key"] for r in rows(seeded)]
    assert len(set(keys)) == 2 and all(keys.count(k) == 2 for k in keys)


def test_a_matching_query_reactivates_a_cold_memory_and_a_dry_run_only_lists_it(seeded, s3):
    before = snapshot(seeded)
    forget(seeded, ["Canary release", "Feature flags"])
    container.lifecycle().run(tenants=[seeded])

    status, dry = call_api("POST", "/v1/context", seeded, {"query": query_text("Canary release"), "dry_run": True})
    assert status == 200
    assert [(r["label"], r["restored"]) for r in dry["reactivated"]] == [("Canary release", False)]
    assert dry["reactivated"][0]["similarity"] >= 0.80
    assert {r["label"]: r["tier"] for r in rows(seeded)}["Canary release"] == "cold"  # a dry run changes nothing
    from datetime import UTC, datetime

    past = {"query": query_text("Canary release"), "as_of": datetime.now(UTC).isoformat()}
    status, historical = call_api("POST", "/v1/context", seeded, past)  # a look into the past: listed only
    assert status == 200 and [r["restored"] for r in historical["reactivated"]] == [False]
    assert {r["label"]: r["tier"] for r in rows(seeded)}["Canary release"] == "cold"

    status, result = call_api("POST", "/v1/context", seeded, {"query": query_text("Canary release")})
    assert status == 200
    assert [(r["label"], r["restored"]) for r in result["reactivated"]] == [("Canary release", True)]
    assert "Canary release" in {m["label"] for m in result["memories"]}  # visible in the same context
    canary = next(r for r in rows(seeded) if r["label"] == "Canary release")
    assert canary["tier"] == "hot" and canary["state"] == "active" and canary["reactivated"] == 1
    assert canary["strength_anchor"] == pytest.approx(0.5 * 0.7 + 0.3)  # restored at 0.5, then injected
    # Its edges come back where the other end exists (also as a cold stub); its items all come back.
    tiers = assert_each_memory_exactly_once(seeded, s3, before)
    assert tiers["cold"] == ["Feature flags"]
    with container.database().tenant_tx(seeded) as conn:
        edges = conn.execute("SELECT count(*) AS n FROM relationships").fetchone()["n"]
        audit = conn.execute("SELECT reason FROM audit_log WHERE action = 'reactivated'").fetchall()
        bands = conn.execute("SELECT count(*) AS n FROM memory_vector_bands WHERE memory_id = %s", [canary["id"]])
        assert bands.fetchone()["n"] == BANDS  # near-duplicate merges can find it again
    assert edges == len(before[canary["id"]]["edges"])
    assert len(audit) == 1 and audit[0]["reason"].startswith("among the query's best evidence")

    _, again = call_api("POST", "/v1/context", seeded, {"query": query_text("Canary release")})
    assert again["reactivated"] == []  # already hot
    _, unrelated = call_api("POST", "/v1/context", seeded, {"query": "tax law for small bakeries"})
    assert unrelated["reactivated"] == []  # below the threshold: stays cold


def test_long_superseded_memories_go_cold_and_are_never_reactivated(seeded, s3):
    with container.database().tenant_tx(seeded) as conn:
        successor = conn.execute("SELECT id FROM memories WHERE label = 'Feature flags'").fetchone()["id"]
        conn.execute(
            """UPDATE memories SET state = 'superseded', superseded_by = %s, updated_at = now(),
                      superseded_at = now() - CASE label WHEN 'Canary release' THEN interval '31 days'
                                                          ELSE interval '1 day' END
               WHERE label IN ('Canary release', 'Rollback plan')""",
            [successor],
        )
    before = snapshot(seeded)
    assert container.lifecycle().run(tenants=[seeded]).archived == 1
    state = {r["label"]: (r["tier"], r["state"]) for r in rows(seeded)}
    assert state["Canary release"] == ("cold", "archived") and state["Rollback plan"] == ("hot", "superseded")
    member = cold_member(s3, next(r for r in rows(seeded) if r["label"] == "Canary release"))
    assert member["memory"]["state"] == "superseded" and member["memory"]["superseded_by"] == str(successor)
    assert before  # the superseded memory's content went cold with it
    _, result = call_api("POST", "/v1/context", seeded, {"query": query_text("Canary release")})
    assert result["reactivated"] == []


@pytest.mark.parametrize("step", ["archive:after_put", "archive:before_commit"])
def test_a_fault_during_archival_leaves_every_memory_exactly_once_after_a_rerun(seeded, s3, step):
    before = snapshot(seeded)
    forget(seeded, ["Canary release", "Feature flags", "Rollback plan"])
    cold = container.cold_storage()

    def fault(at: str) -> None:
        if at == step:
            raise StepFault(at)

    cold.on_step = fault
    failed = container.lifecycle().run(tenants=[seeded])
    assert seeded in failed.failed_tenants and failed.archived == 0
    tiers = assert_each_memory_exactly_once(seeded, s3, before)
    assert tiers["cold"] == []  # rolled back: all hot, nothing half-archived

    cold.on_step = lambda at: None
    assert container.lifecycle().run(tenants=[seeded]).archived == 3
    tiers = assert_each_memory_exactly_once(seeded, s3, before)
    assert sorted(tiers["cold"]) == ["Canary release", "Feature flags", "Rollback plan"]


def test_a_failed_s3_write_archives_nothing_and_the_next_scan_does_it(seeded, s3):
    from contextos.errors import TransientError

    before = snapshot(seeded)
    forget(seeded, ["Canary release", "Feature flags"])
    cold = container.cold_storage()
    real_blobs = cold.blobs

    class UnreachableS3:
        def put(self, *args, **kwargs):
            raise TransientError("could not write the cold object")

        def get_range(self, *args, **kwargs):
            return real_blobs.get_range(*args, **kwargs)

    cold.blobs = UnreachableS3()
    assert seeded in container.lifecycle().run(tenants=[seeded]).failed_tenants
    assert assert_each_memory_exactly_once(seeded, s3, before)["cold"] == []
    cold.blobs = real_blobs
    assert container.lifecycle().run(tenants=[seeded]).archived == 2
    assert sorted(assert_each_memory_exactly_once(seeded, s3, before)["cold"]) == ["Canary release", "Feature flags"]


def test_a_crash_mid_way_through_the_batches_keeps_what_committed_and_resumes(seeded, s3, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__ARCHIVE_BATCH_SIZE", "1")
    container.reset()
    before = snapshot(seeded)
    forget(seeded, [label for label, _, _ in SPECS])
    cold = container.cold_storage()
    puts = {"n": 0}

    def crash_on_third_batch(at: str) -> None:
        if at == "archive:after_put":
            puts["n"] += 1
            if puts["n"] == 3:
                raise StepFault("crash after the third object was written")

    cold.on_step = crash_on_third_batch
    failed = container.lifecycle().run(tenants=[seeded])
    assert failed.archived == 2 and seeded in failed.failed_tenants
    assert len(assert_each_memory_exactly_once(seeded, s3, before)["cold"]) == 2
    cold.on_step = lambda at: None
    assert container.lifecycle().run(tenants=[seeded]).archived == 2
    assert len(assert_each_memory_exactly_once(seeded, s3, before)["cold"]) == 4


@pytest.mark.parametrize("step", ["reactivate:after_get", "reactivate:before_commit"])
def test_a_fault_during_reactivation_leaves_the_memory_cold_and_the_next_query_restores_it(seeded, s3, step):
    before = snapshot(seeded)
    forget(seeded, ["Canary release", "Feature flags"])
    container.lifecycle().run(tenants=[seeded])
    cold = container.cold_storage()

    def fault(at: str) -> None:
        if at == step:
            raise StepFault(at)

    cold.on_step = fault
    status, result = call_api("POST", "/v1/context", seeded, {"query": query_text("Canary release")})
    assert status == 200 and result["reactivated"] == []  # the query still answers
    assert sorted(assert_each_memory_exactly_once(seeded, s3, before)["cold"]) == ["Canary release", "Feature flags"]

    cold.on_step = lambda at: None
    _, result = call_api("POST", "/v1/context", seeded, {"query": query_text("Canary release")})
    assert [r["label"] for r in result["reactivated"]] == ["Canary release"]
    assert assert_each_memory_exactly_once(seeded, s3, before)["cold"] == ["Feature flags"]


def test_two_scans_at_once_archive_each_memory_once(seeded, s3, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__ARCHIVE_BATCH_SIZE", "1")
    container.reset()
    before = snapshot(seeded)
    forget(seeded, [label for label, _, _ in SPECS])
    service = container.lifecycle()
    barrier = threading.Barrier(2)
    reports = []

    def scan() -> None:
        barrier.wait()
        reports.append(service.run(tenants=[seeded]))

    threads = [threading.Thread(target=scan) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.archived for r in reports) == 4 and not any(r.failed_tenants for r in reports)
    assert len(assert_each_memory_exactly_once(seeded, s3, before)["cold"]) == 4


def test_a_fault_part_way_through_a_querys_reactivations_keeps_the_ones_done(seeded, s3, monkeypatch):
    before = snapshot(seeded)
    forget(seeded, ["Canary release", "Feature flags", "Rollback plan"])
    container.lifecycle().run(tenants=[seeded])
    cold = container.cold_storage()
    commits = {"n": 0}

    def fail_second(at: str) -> None:
        if at == "reactivate:before_commit":
            commits["n"] += 1
            if commits["n"] == 2:
                raise StepFault(at)

    cold.on_step = fail_second
    query = "the canary release, the feature flags and the rollback plan"  # the best evidence: all three
    _, first = call_api("POST", "/v1/context", seeded, {"query": query})
    assert len(first["reactivated"]) == 2 and all(r["restored"] for r in first["reactivated"])
    assert len(assert_each_memory_exactly_once(seeded, s3, before)["cold"]) == 1
    cold.on_step = lambda at: None
    _, second = call_api("POST", "/v1/context", seeded, {"query": query})
    assert len(second["reactivated"]) == 1  # only the one that failed; the others are hot already
    assert assert_each_memory_exactly_once(seeded, s3, before)["cold"] == []


def test_a_reactivated_memory_shows_the_excerpts_it_was_archived_with(seeded, s3):
    """An archived memory's turns live in its occurrences' excerpts: the query that wakes it sees
    the turn it asked about (L2), in a dry run as after a real reactivation."""
    from contextos.evidence import stem_key

    said = "The canary took five percent of the Frankfurt traffic on Tuesday before the full rollout."
    with container.database().tenant_tx(seeded) as conn:
        conn.execute(
            """UPDATE memory_items SET excerpts = ARRAY[%s], excerpt_stems = ARRAY[%s]
               WHERE memory_id = (SELECT id FROM memories WHERE label = 'Canary release')""",
            [said, stem_key(said)],
        )
    forget(seeded, ["Canary release"])
    container.lifecycle().run(tenants=[seeded])
    assert {r["label"]: r["tier"] for r in rows(seeded)}["Canary release"] == "cold"
    query = "How much of the Frankfurt traffic did the canary take on Tuesday?"
    for dry_run in (True, False):
        status, result = call_api("POST", "/v1/context", seeded, {"query": query, "dry_run": dry_run})
        assert status == 200
        canary = next(m for m in result["memories"] if m["label"] == "Canary release")
        assert canary["tier_used"] == "L2" and canary["excerpts"] == [said], (dry_run, canary)
        assert canary["definition"] == query_text("Canary release").split(": ", 1)[1]
