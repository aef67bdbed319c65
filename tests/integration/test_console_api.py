"""The reads the console draws from, on the real database: the tenant graph paged past its
first page (each edge once, on the page that loads its second end), the same graph as columns,
and the forgetting forecast
(every active memory counted at every day, banded by the real decay closed forms)."""

from collections import Counter

from tests.graph_seed import batches, graph_files
from tests.helpers import call_api


def seed(tenant: str, n: int) -> None:
    for files in batches(graph_files(n), 100):
        status, report = call_api("POST", "/v1/import", tenant, {"files": files})
        assert status == 200, report
        assert report["counts"].get("created") == len(files), report["counts"]


def all_memories(tenant: str) -> list[dict]:
    out, cursor = [], None
    while True:
        query = {"limit": "500"} | ({"cursor": cursor} if cursor else {})
        status, page = call_api("GET", "/v1/memories", tenant, query=query)
        assert status == 200, page
        out += page["memories"]
        cursor = page["next_cursor"]
        if not cursor:
            return out


def test_the_graph_pages_past_its_first_page_and_returns_each_edge_once(configured, tenant):
    seed(tenant, 250)
    status, whole = call_api("GET", "/v1/graph", tenant, query={"limit": "1000"})
    assert status == 200 and not whole["truncated"] and len(whole["nodes"]) == 250
    assert len(whole["edges"]) > 250  # the seed's edges are in the store
    nodes, edges, offset = [], [], 0
    for _ in range(10):  # five pages of 60 are enough; a route that ignores offset must not loop forever
        status, page = call_api("GET", "/v1/graph", tenant, query={"limit": "60", "offset": str(offset)})
        assert status == 200, page
        nodes += [n["id"] for n in page["nodes"]]
        loaded = set(nodes)
        assert all(e["src"] in loaded and e["dst"] in loaded for e in page["edges"])
        edges += [(e["src"], e["dst"], e["type"]) for e in page["edges"]]
        offset += len(page["nodes"])
        if not page["truncated"]:
            break
    assert nodes == [n["id"] for n in whole["nodes"]]
    assert len(edges) == len(set(edges))
    assert sorted(edges) == sorted((e["src"], e["dst"], e["type"]) for e in whole["edges"])
    # a related pair is one edge (#41: every pair came as A→B and B→A)
    related = [frozenset((e["src"], e["dst"])) for e in whole["edges"] if e["type"] == "related"]
    assert related and len(related) == len(set(related))
    assert {n["band"] for n in whole["nodes"]} == {"strong", "fading", "critical", "forgotten"}


def test_the_graph_columns_hold_the_pages_memories_and_edges_with_edges_as_ranks(configured, tenant):
    seed(tenant, 250)
    status, whole = call_api("GET", "/v1/graph", tenant, query={"limit": "1000"})
    assert status == 200
    status, columns = call_api("GET", "/v1/graph/columns", tenant)
    assert status == 200 and not columns["truncated"] and columns["offset"] == 0
    assert columns["ids"] == [n["id"] for n in whole["nodes"]]
    for column, field in (("labels", "label"), ("types", "type"), ("bands", "band"), ("importance", "importance")):
        assert columns[column] == [n[field] for n in whole["nodes"]], column
    assert columns["communities"] == [n["community"] for n in whole["nodes"]]
    ids = columns["ids"]
    drawn = zip(columns["edge_src"], columns["edge_dst"], columns["edge_types"], columns["edge_weights"], strict=True)
    assert sorted((ids[s], ids[d], t, w) for s, d, t, w in drawn) == sorted(
        (e["src"], e["dst"], e["type"], e["weight"]) for e in whole["edges"]
    )

    # pages of columns: the same memories in order, each edge once, its ends ranked on this or an earlier page
    ranked, edges, offset = [], [], 0
    for _ in range(10):
        status, page = call_api("GET", "/v1/graph/columns", tenant, query={"limit": "70", "offset": str(offset)})
        assert status == 200 and page["offset"] == offset
        ranked += page["ids"]
        ends = list(zip(page["edge_src"], page["edge_dst"], page["edge_types"], strict=True))
        assert all(offset <= max(s, d) < len(ranked) for s, d, _ in ends)
        edges += [(ranked[s], ranked[d], t) for s, d, t in ends]
        offset += len(page["ids"])
        if not page["truncated"]:
            break
    assert ranked == ids and offset == 250
    assert len(edges) == len(set(edges))
    assert sorted(edges) == sorted((e["src"], e["dst"], e["type"]) for e in whole["edges"])

    status, page = call_api("GET", "/v1/graph/columns", tenant, query={"offset": "250"})
    assert status == 200 and page["ids"] == [] and page["edge_src"] == [] and not page["truncated"]
    for query in ({"limit": "0"}, {"limit": "5001"}, {"offset": "-1"}):
        status, body = call_api("GET", "/v1/graph/columns", tenant, query=query)
        assert status == 422 and body["error"]["code"] == "validation_error", query


def test_the_forecast_counts_every_memory_and_starts_from_todays_bands(configured, tenant):
    seed(tenant, 80)
    memories = all_memories(tenant)
    status, forecast = call_api("GET", "/v1/forecast", tenant, query={"days": "60", "step": "15"})
    assert status == 200, forecast
    assert forecast["memories"] == len(memories) == 80
    for series in (forecast["current"], forecast["alternative"]):
        assert [p["day"] for p in series["points"]] == [0, 15, 30, 45, 60]
        for p in series["points"]:
            assert p["total"] == p["strong"] + p["fading"] + p["critical"] + p["forgotten"] == 80
    today = forecast["current"]["points"][0]
    assert {b: today[b] for b in ("strong", "fading", "critical", "forgotten")} == {
        b: Counter(m["band"] for m in memories)[b] for b in ("strong", "fading", "critical", "forgotten")
    }
    later = forecast["current"]["points"][-1]
    assert later["forgotten"] > today["forgotten"] and later["strong"] < today["strong"]  # nothing is reinforced
    assert forecast["thresholds"]["strong"] == 0.7 and forecast["thresholds"]["forgotten"] == 0.1

    status, slow = call_api(
        "GET", "/v1/forecast", tenant, query={"days": "60", "policy": "exponential", "rate": "0.001"}
    )
    assert status == 200
    assert slow["alternative"]["points"][-1]["forgotten"] < later["forgotten"]  # a gentler λ keeps more


def test_the_forecast_refuses_bad_input_with_stable_codes(configured, tenant):
    status, body = call_api("GET", "/v1/forecast", tenant, query={"policy": "exponential"})
    assert status == 200 and "λ = 0.15 a day" in body["alternative"]["description"]  # a middle-importance rate
    for query in ({"days": "0"}, {"days": "9999"}, {"policy": "linear"}, {"rate": "1.5"}):
        status, body = call_api("GET", "/v1/forecast", tenant, query=query)
        assert status == 422 and body["error"]["code"] == "validation_error", query
    status, body = call_api("GET", "/v1/graph", tenant, query={"offset": "-1"})
    assert status == 422


def test_forgotten_memories_are_listed_only_when_asked_for_and_restore_from_there(configured, tenant):
    seed(tenant, 3)
    memories = all_memories(tenant)
    gone = memories[0]["id"]
    assert call_api("DELETE", f"/v1/memories/{gone}", tenant, query={"reason": "test"})[0] == 200
    assert gone not in {m["id"] for m in all_memories(tenant)}
    status, page = call_api("GET", "/v1/memories", tenant, query={"state": "forgotten"})
    assert status == 200
    assert [m["id"] for m in page["memories"]] == [gone] and page["memories"][0]["forgotten_at"]
    status, curve = call_api("GET", f"/v1/forecast/memories/{gone}", tenant)
    assert status == 200 and curve["forgotten_at"]  # the console's page of it needs no 404
    assert call_api("POST", f"/v1/memories/{gone}/restore", tenant, {})[0] == 200
    status, page = call_api("GET", "/v1/memories", tenant, query={"state": "forgotten"})
    assert page["memories"] == []
    assert all(m["forgotten_at"] is None for m in all_memories(tenant))


def test_a_memorys_strength_curve_comes_from_its_decay_anchors(configured, tenant):
    from datetime import datetime

    status, made = call_api("POST", "/v1/memories", tenant, {"label": "Curve check", "definition": "Decays daily."})
    assert status == 201
    status, curve = call_api("GET", f"/v1/forecast/memories/{made['memory_id']}", tenant, query={"days": "30"})
    assert status == 200, curve
    status, detail = call_api("GET", f"/v1/memories/{made['memory_id']}", tenant)
    assert curve["policy"] == "exponential" and 0 < curve["rate"] < 1
    assert abs(curve["strength_now"] - detail["strength"]) < 1e-3 and curve["band_now"] == detail["band"]
    strengths = [p["strength"] for p in curve["points"]]
    assert strengths == sorted(strengths, reverse=True) and strengths[-1] < strengths[0]
    # the crossings are where the closed form meets each threshold: S0·(1−λ)^days = boundary
    by_band = {c["band"]: datetime.fromisoformat(c["at"]) for c in curve["crossings"]}
    anchored = datetime.fromisoformat(curve["anchored_at"])
    days = (by_band["forgotten"] - anchored).total_seconds() / 86400
    assert abs(curve["anchor"] * (1 - curve["rate"]) ** days - curve["thresholds"]["forgotten"]) < 1e-6
    assert by_band["fading"] < by_band["critical"] < by_band["forgotten"]
    status, body = call_api("GET", "/v1/forecast/memories/00000000-0000-4000-8000-000000000000", tenant)
    assert status == 404 and body["error"]["code"] == "not_found"


def test_strengths_that_fall_below_a_float_are_forgotten_not_a_server_error(configured, tenant):
    """PostgreSQL raises on a float underflow where Python returns 0.0: an extreme alternative rate
    over a long horizon, or a memory anchored years ago, is a strength in the forgotten band."""
    from contextos import container

    seed(tenant, 3)
    with container.database().tenant_tx(tenant) as conn:  # eight years ago: 0.01^2920, exp(-(2920/30)^1.5)
        conn.execute(
            """UPDATE memories SET strength_anchor_at = now() - interval '2920 days', decay_rate = 0.99,
                      decay_policy = CASE WHEN id = (SELECT min(id::text)::uuid FROM memories WHERE tenant_id = %(t)s)
                                          THEN 'weibull' ELSE 'exponential' END,
                      decay_scale = 30, decay_shape = 1.5
               WHERE tenant_id = %(t)s""",
            {"t": tenant},
        )
    for query in (
        {"policy": "exponential", "rate": "0.9999999999999998", "days": "111", "step": "21"},
        {"policy": "exponential", "rate": "0.9", "days": "365"},
        {"policy": "weibull", "days": "365"},
    ):
        status, body = call_api("GET", "/v1/forecast", tenant, query=query)
        assert status == 200, (query, body)
        assert body["current"]["points"][0]["forgotten"] == body["memories"] == 3
    for memory in all_memories(tenant):
        status, detail = call_api("GET", f"/v1/memories/{memory['id']}", tenant)
        assert status == 200 and detail["strength"] < 1e-100, detail
    status, body = call_api("POST", "/v1/context", tenant, {"query": "anything at all", "dry_run": True})
    assert status == 200, body
