"""S9 over real data: each governance section, the community bonus in retrieval, the health score,
the daily job and the two routes (with tenant isolation)."""

from __future__ import annotations

import math
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.local.events import scheduled_event
from contextos.local.handlers import invoke
from contextos.models import BASE_TRUST, ContextRequest, MemoryCandidate, Provenance

from tests.helpers import call_api
from tests.memory_writer import add_memories, new_document

DIM = 384


def unit(*weights: tuple[int, float]) -> list[float]:
    """A unit vector from (axis, weight) pairs: cosines between test memories are exact by construction."""
    v = [0.0] * DIM
    for axis, w in weights:
        v[axis] += w
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def add(tenant: str, specs: list[dict]) -> dict[str, uuid.UUID]:
    """Store memories through the real store path (vectors, LSH bands, items); returns label → id."""
    candidates = [
        MemoryCandidate(
            norm_key=s["label"].lower(),
            label=s["label"],
            definition=s.get("definition", s["label"] + " is a thing we track."),
            type=s.get("type", "fact"),
            importance=s.get("importance", 6),
            embedding=s["vector"],
            decay_rate=s.get("rate", 0.15),
            provenance=Provenance.user_upload,
            base_trust=BASE_TRUST[Provenance.user_upload],
        )
        for s in specs
    ]
    at = [datetime.now(UTC) - timedelta(days=s.get("age_days", 0)) for s in specs]
    ids = add_memories(container.stores(), tenant, candidates, embedder_id="local", at=at)
    return {s["label"]: i for s, i in zip(specs, ids, strict=True)}


def sql(tenant: str, statement: str, params=None) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def link(tenant: str, pairs: list[tuple[uuid.UUID, uuid.UUID]], kind: str = "related") -> None:
    sql(
        tenant,
        """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
           SELECT %s, s, d, %s, 0.5 FROM unnest(%s::uuid[], %s::uuid[]) AS p(s, d)""",
        [tenant, kind, [p[0] for p in pairs], [p[1] for p in pairs]],
    )


def documents(tenant: str, n: int) -> list[uuid.UUID]:
    store = container.stores()
    return [new_document(store, tenant) for _ in range(n)]


def source(tenant: str, memory_ids: list[uuid.UUID], document_id: uuid.UUID) -> None:
    """Record that each memory also occurred in a document (a memory_item per pair)."""
    sql(
        tenant,
        """INSERT INTO memory_items (tenant_id, memory_id, document_id, label, definition, importance)
           SELECT %s, m, %s, 'occurrence', 'seen in a document', 5 FROM unnest(%s::uuid[]) AS t(m)""",
        [tenant, document_id, memory_ids],
    )


def tag(tenant: str, memory_ids: list[uuid.UUID], tags: list[str]) -> None:
    sql(tenant, "UPDATE memories SET tags = %s WHERE id = ANY(%s::uuid[])", [tags, memory_ids])


def communities_of(tenant: str) -> dict[uuid.UUID, int]:
    return {r["memory_id"]: r["community"] for r in sql(tenant, "SELECT memory_id, community FROM memory_communities")}


@pytest.fixture
def reports(configured):
    return container.reports()


@pytest.fixture
def governed(reports, tenant):
    """A tenant with one example of every governance finding."""
    ids = add(
        tenant,
        [
            # a contradiction the judge sees (cosine 0.98: close enough to also look like a duplicate)
            {"label": "Deploy flag", "definition": "The deploy flag is enabled in production.", "vector": unit((0, 1))},
            {
                "label": "Deploy flag state",
                "definition": "The deploy flag is disabled in production.",
                "vector": unit((0, 1), (1, 0.2)),
            },
            # three near duplicates (cosine ≥ 0.99 to each other)
            {"label": "Kafka retention", "definition": "Kafka keeps messages for seven days.", "vector": unit((2, 1))},
            {
                "label": "Kafka message retention",
                "definition": "Kafka retains every message seven days.",
                "vector": unit((2, 1), (3, 0.1)),
                "importance": 8,
            },
            {
                "label": "Retention in Kafka",
                "definition": "Messages stay in Kafka for a week.",
                "vector": unit((2, 1), (4, 0.1)),
            },
            # #41: as alike by vector as duplicates, but the labels share no word: never suggested
            {"label": "Maria", "definition": "Maria owns the connection pool settings.", "vector": unit((20, 1))},
            {"label": "Pool size", "definition": "The pool keeps 20 connections.", "vector": unit((20, 1), (21, 0.1))},
            # one fading away: 30 days untouched at 20 %/day
            {"label": "Old sprint goal", "vector": unit((5, 1)), "importance": 3, "rate": 0.2, "age_days": 30},
            # one explicit contradiction recorded by the trust gate, both ends still active
            {"label": "Office opens at nine", "vector": unit((6, 1))},
            {"label": "Office opens at ten", "vector": unit((7, 1))},
            # a hub of low importance
            {"label": "Misc notes", "vector": unit((8, 1)), "importance": 2},
            *[{"label": f"Spoke {i}", "vector": unit((10 + i, 1))} for i in range(10)],
        ],
    )
    link(tenant, [(ids["Office opens at nine"], ids["Office opens at ten"])], kind="contradicts")
    link(tenant, [(ids["Misc notes"], ids[f"Spoke {i}"]) for i in range(10)])
    return ids


def test_given_every_kind_of_finding_the_governance_report_names_each_one(reports, governed, tenant):
    report = reports.run(tenant, trigger="cli")
    ids = governed

    decay = report.decay_candidates
    assert decay.total == 1 and decay.items[0].id == ids["Old sprint goal"]
    assert decay.items[0].strength < 0.01  # 0.8^30

    conflicts = {(c.found_by, frozenset((c.a.id, c.b.id))) for c in report.conflict_candidates.items}
    assert ("judge", frozenset((ids["Deploy flag"], ids["Deploy flag state"]))) in conflicts
    assert ("contradicts_edge", frozenset((ids["Office opens at nine"], ids["Office opens at ten"]))) in conflicts
    assert report.conflict_candidates.total == 2
    judged = next(c for c in report.conflict_candidates.items if c.found_by == "judge")
    assert judged.similarity == pytest.approx(1 / math.sqrt(1.04), abs=1e-3)
    assert "enabled/disabled" in judged.reason or "disabled/enabled" in judged.reason

    # the contradicting pair is ≥ 0.93 too, but is not suggested for consolidation, nor "Maria" + "Pool size"
    assert report.consolidation.total == 1
    cluster = report.consolidation.items[0]
    assert {m.id for m in cluster.members} == {
        ids["Kafka retention"],
        ids["Kafka message retention"],
        ids["Retention in Kafka"],
    }
    assert cluster.keep == ids["Kafka message retention"]  # the most important survives
    assert cluster.min_similarity >= get_settings().merge.near_duplicate_cosine
    assert cluster.verified  # the judge saw each of its pairs

    assert [(g.id, g.degree) for g in report.god_nodes.items] == [(ids["Misc notes"], 10)]

    # flagged: the decaying one, both ends of both conflicts, the two duplicates not kept, the hub
    assert report.flagged_memories == 1 + 4 + 2 + 1
    stored = sql(tenant, "SELECT trigger, cardinality(flagged_ids) AS n FROM governance_reports")
    assert stored == [{"trigger": "cli", "n": 8}]


def test_a_god_node_needs_both_many_edges_and_low_importance(reports, governed, tenant):
    sql(tenant, "UPDATE memories SET importance = 9 WHERE id = %s", [governed["Misc notes"]])
    assert reports.run(tenant).god_nodes.total == 0


def test_communities_follow_explicit_edges_and_implicit_edges_from_two_shared_sources_or_tags(reports, tenant):
    ids = add(tenant, [{"label": f"M{i}", "vector": unit((i, 1))} for i in range(12)])
    m = [ids[f"M{i}"] for i in range(12)]
    # explicit: a 4-clique
    link(tenant, [(m[a], m[b]) for a in range(4) for b in range(a + 1, 4)])
    # implicit, sources: M4-M6 each occur in documents D1 and D2; M7 only in D1 (one shared source: no edge)
    d1, d2 = documents(tenant, 2)
    source(tenant, [m[4], m[5], m[6], m[7]], d1)
    source(tenant, [m[4], m[5], m[6]], d2)
    # implicit, tags: M8 and M9 share two tags; M10 shares only one with them
    tag(tenant, [m[8], m[9]], ["billing", "ops"])
    tag(tenant, [m[10]], ["billing"])

    section = reports.run(tenant).communities
    assigned = communities_of(tenant)

    assert len({assigned[x] for x in m[0:4]}) == 1
    assert len({assigned[x] for x in m[4:7]}) == 1
    assert assigned[m[8]] == assigned[m[9]]
    assert len({assigned[m[0]], assigned[m[4]], assigned[m[8]]}) == 3
    assert m[7] not in assigned and m[10] not in assigned and m[11] not in assigned
    assert section.total == 3 and section.memories_in_communities == 9
    assert (section.explicit_edges, section.implicit_edges, section.edges_used) == (6, 3 + 1, 10)
    assert not section.truncated
    assert [c.size for c in section.items] == [4, 3, 2]
    assert section.modularity is not None and section.modularity > 0.5

    again = reports.run(tenant).communities  # fixed seed, ordered input: the same assignment
    assert communities_of(tenant) == assigned and again.items == section.items


def test_above_the_edge_cap_louvain_runs_on_the_heaviest_edges_and_says_so(reports, tenant, monkeypatch):
    ids = add(tenant, [{"label": f"N{i}", "vector": unit((i, 1))} for i in range(6)])
    n = [ids[f"N{i}"] for i in range(6)]
    link(tenant, [(n[0], n[1]), (n[1], n[2]), (n[3], n[4]), (n[4], n[5])])
    monkeypatch.setattr(reports.settings.reports, "community_max_edges", 2)
    section = reports.run(tenant).communities
    assert section.truncated and section.edges_used == 2 and section.explicit_edges == 4
    assert section.memories_in_communities <= 4


def test_the_daily_job_reports_on_every_tenant_through_its_handler(configured_alone, tenant):
    other = "other-" + tenant
    add(tenant, [{"label": "Alpha", "vector": unit((0, 1))}])
    add(other, [{"label": "Beta", "vector": unit((1, 1))}])

    result = invoke("governance", scheduled_event("contextos-governance"))

    assert result["tenants"] == 2 and result["failed"] == [] and result["reports"] == result["tenants"]
    for owner in (tenant, other):
        assert sql(owner, "SELECT trigger FROM governance_reports") == [{"trigger": "schedule"}]


def test_health_reports_each_component_with_the_inputs_it_was_computed_from(reports, governed, tenant):
    store = container.stores()
    used = [governed["Kafka retention"], governed["Deploy flag"]]
    store.reads.reinforce_and_log(tenant, used, intent="default", budget=1000, tokens_used=650)
    store.reads.reinforce_and_log(tenant, used[:1], intent="default", budget=1000, tokens_used=750)
    sql(  # an old query: outside the 14-day window, so neither its memory nor its tokens count
        tenant,
        """INSERT INTO context_log (tenant_id, at, intent, budget, tokens_used, memory_ids)
           VALUES (%s, now() - interval '20 days', 'default', 1000, 10, %s::uuid[])""",
        [tenant, [governed["Spoke 1"]]],
    )
    sql(
        tenant,
        """INSERT INTO sessions (tenant_id, id, status, message_count, flushed_through)
           VALUES (%(t)s, 's-open', 'open', 3, 1), (%(t)s, 's-ended', 'ended', 2, 2)""",
        {"t": tenant},
    )
    sql(
        tenant,
        """INSERT INTO messages (tenant_id, session_id, seq, role, content, provenance)
           SELECT %s, s, q, 'user', 'x', 'user_turn'
           FROM unnest(ARRAY['s-open', 's-open', 's-open', 's-ended', 's-ended'], ARRAY[1, 2, 3, 1, 2]) AS t(s, q)""",
        [tenant],
    )

    health = reports.health(tenant)  # no report yet: one is computed now
    c = {x.name: x for x in health.components}
    active = len(governed)
    assert c["coverage"].inputs == {"active_memories": active, "used_memories": 2}
    assert c["coverage"].score == pytest.approx(2 / active)
    assert c["efficiency"].inputs["queries"] == 2
    assert c["efficiency"].inputs["mean_utilization"] == pytest.approx(0.70)
    assert c["efficiency"].score == pytest.approx(1.0)
    strengths = sql(
        tenant,
        """SELECT avg(strength_anchor * power(1 - decay_rate, extract(epoch FROM now() - strength_anchor_at) / 86400.0))
           AS s FROM memories""",
    )[0]["s"]
    assert c["freshness"].score == pytest.approx(float(strengths), abs=1e-4)
    assert c["balance"].score == 0.0  # every memory is a fact
    assert c["cleanliness"].inputs == {"active_memories": active, "flagged_memories": 8}
    assert c["cleanliness"].score == pytest.approx(1 - 8 / active)
    expected = 100 * sum(x.weight * x.score for x in health.components)
    assert health.score == pytest.approx(expected, abs=0.01)
    assert health.conversation.open_sessions == 1 and health.conversation.unflushed_messages == 2
    assert health.memories.active_hot == active and health.memories.types == {"fact": active}
    assert health.memories.bands["forgotten"] == 1  # the old sprint goal
    assert health.governance_report_at is not None
    assert sql(tenant, "SELECT trigger FROM governance_reports") == [{"trigger": "on_demand"}]


def test_the_routes_serve_the_callers_own_reports_only(configured, tenant):
    other = "other-" + tenant
    add(tenant, [{"label": "Decaying", "vector": unit((0, 1)), "importance": 2, "rate": 0.2, "age_days": 40}])
    container.reports().run(tenant, trigger="schedule")
    mine = sql(tenant, "SELECT id FROM governance_reports")[0]["id"]

    status, body = call_api("GET", "/v1/governance", tenant)
    assert status == 200 and body["id"] == str(mine) and body["trigger"] == "schedule"
    assert body["decay_candidates"]["total"] == 1

    status, theirs = call_api("GET", "/v1/governance", other)  # nothing of theirs yet: computed for them
    assert status == 200 and theirs["id"] != str(mine) and theirs["trigger"] == "on_demand"
    assert theirs["decay_candidates"]["total"] == 0 and theirs["flagged_memories"] == 0

    status, health = call_api("GET", "/v1/health", tenant)
    assert status == 200 and health["memories"]["active_hot"] == 1
    assert {c["name"] for c in health["components"]} == {
        "coverage",
        "efficiency",
        "freshness",
        "balance",
        "cleanliness",
    }
    status, empty = call_api("GET", "/v1/health", "empty-" + tenant)
    assert status == 200 and empty["score"] is None and empty["memories"]["active_hot"] == 0

    status, error = call_api("GET", "/v1/health", None)
    assert status == 401 and error["error"]["code"] == "unauthorized"


def test_a_memory_in_a_top_hits_community_gets_the_graph_bonus_and_outranks_its_twin(reports, tenant):
    """Two memories almost equally close to the query; the slightly farther one shares a
    community (through two shared tags, which the graph walk does not follow) with the top hit."""
    ids = add(
        tenant,
        [
            {"label": "Zebra", "vector": unit((0, 1))},
            {"label": "Quokka", "vector": unit((0, 0.60), (1, 0.80))},  # cosine 0.60
            {"label": "Axolotl", "vector": unit((0, 0.59), (2, 0.8072))},  # cosine 0.59
        ],
    )
    tag(tenant, [ids["Zebra"], ids["Axolotl"]], ["ops", "billing"])
    retrieval = container.retrieval()
    # the seed formula weighs the graph score; the default relevance recipe gives it no weight yet
    request = ContextRequest(query="wombat", dry_run=True, recipe="standard")
    query = unit((0, 1))

    def ranking():
        result = retrieval.context(tenant, request, query_vector=query)
        return [m.label for m in result.memories], {m.label: m.score for m in result.memories}

    before, scores_before = ranking()
    assert before.index("Quokka") < before.index("Axolotl")
    assert all(s.graph == 0.0 for s in scores_before.values())  # no communities: nothing changes

    reports.run(tenant)
    after, scores_after = ranking()
    bonus = get_settings().reports.community_bonus
    assert after.index("Axolotl") < after.index("Quokka")
    assert scores_after["Axolotl"].graph == pytest.approx(bonus)
    assert scores_after["Quokka"].graph == 0.0
    assert "community" not in scores_after["Axolotl"].methods
    assert scores_after["Axolotl"].bonus == scores_before["Axolotl"].bonus  # no multi-method bonus from it


def test_two_runs_at_once_leave_one_community_per_memory_and_two_reports(reports, tenant):
    ids = add(tenant, [{"label": f"R{i}", "vector": unit((i, 1))} for i in range(6)])
    r = [ids[f"R{i}"] for i in range(6)]
    link(tenant, [(r[0], r[1]), (r[1], r[2]), (r[3], r[4]), (r[4], r[5])])
    errors: list[BaseException] = []

    def run() -> None:
        try:
            reports.run(tenant, trigger="schedule")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = sql(tenant, "SELECT memory_id, count(*) AS n FROM memory_communities GROUP BY memory_id")
    assert len(rows) == 6 and all(row["n"] == 1 for row in rows)
    assert sql(tenant, "SELECT count(*) AS n FROM governance_reports") == [{"n": 2}]


def test_only_the_newest_reports_are_kept(reports, tenant, monkeypatch):
    monkeypatch.setattr(reports.settings.reports, "reports_kept", 2)
    made = [reports.run(tenant).id for _ in range(3)]
    kept = {row["id"] for row in sql(tenant, "SELECT id FROM governance_reports")}
    assert kept == set(made[1:])
    assert reports.governance(tenant).id == made[-1]


def test_a_judge_outage_leaves_a_report_with_what_could_be_found(configured, governed, tenant):
    """The Bedrock judge (botocore Stubber, real response shapes) answers one pair, then is unavailable."""
    import boto3
    from botocore.stub import Stubber
    from contextos.judge.bedrock import BedrockJudge
    from contextos.services.reports import ReportService

    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    verdict = {
        "toolUse": {
            "toolUseId": "t",
            "name": "record_judgement",
            "input": {"verdict": "neutral", "confidence": 0.9, "reason": "same"},
        }
    }
    base = container.reports()
    service = ReportService(
        base.settings, base.store, BedrockJudge(client, model_id="amazon.nova-pro-v1:0"), base.tenant_ids
    )
    with Stubber(client) as stubber:
        stubber.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": [verdict]}},
                "stopReason": "tool_use",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1},
            },
        )
        stubber.add_client_error("converse", service_error_code="ServiceUnavailableException", http_status_code=503)
        report = service.run(tenant)
        stubber.assert_no_pending_responses()

    section = report.conflict_candidates
    assert (section.pairs_judged, section.judge_failures) == (1, 1)
    assert [c.found_by for c in section.items] == ["contradicts_edge"]  # recorded conflicts need no judge
    assert report.decay_candidates.total == 1 and report.god_nodes.total == 1
    # unjudged near duplicates are still suggested, but marked as not verified by the judge
    assert report.consolidation.total == 2 and not any(c.verified for c in report.consolidation.items)
    assert sql(tenant, "SELECT count(*) AS n FROM governance_reports") == [{"n": 1}]
