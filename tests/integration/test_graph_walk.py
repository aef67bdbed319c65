"""S6.2's graph walk: weight falling per hop in both directions, no walk back to its own seed, and
each hop walking on only from the k heaviest memories of the hop before — which must give exactly
the top k of the unbounded walk."""

import itertools

import pytest
from contextos import container

from tests.integration.test_merging import candidates, store_concepts

FALL = 0.5


@pytest.fixture
def graph(configured, tenant, local_embedder):
    """Memories each from its own document (no shared-source links), edges set by hand."""
    names = ["seed", *(f"b{i}" for i in range(1, 6)), *(f"c{i}" for i in range(1, 6)), "far"]
    store = container.stores()
    for name in names:
        store_concepts(store, tenant, candidates(local_embedder, [(f"Node {name}", f"Graph node {name}.", "fact")]))
    with container.database().tenant_tx(tenant) as conn:
        ids = {r["label"][5:]: r["id"] for r in conn.execute("SELECT id, label FROM memories")}
    edges = [("seed", f"b{i}", 1.1 - 0.1 * i) for i in range(1, 6)]  # 1.0, 0.9, ... 0.6
    edges += [(f"c{i}", f"b{i}", 1.0) for i in range(1, 6)]  # walked against their direction
    edges += [("c1", "far", 1.0), ("b1", "seed", 1.0)]  # three hops away; a way back home
    with container.database().tenant_tx(tenant) as conn:
        for src, dst, weight in edges:
            conn.execute(
                "INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)"
                " VALUES (%s, %s, %s, 'related', %s)",
                [tenant, ids[src], ids[dst], weight],
            )
    return tenant, ids, edges


def unbounded(edges, seed: str, hops: int) -> dict[str, float]:
    """Every path of up to ``hops`` edges from the seed, either direction, best weight per memory."""
    out: dict[str, float] = {}
    frontier = {seed: 1.0}
    for _ in range(hops):
        step: dict[str, float] = {}
        for (src, dst, w), (node, weight) in itertools.product(edges, frontier.items()):
            for a, b in ((src, dst), (dst, src)):
                if a == node and b != seed:
                    step[b] = max(step.get(b, 0.0), weight * w * FALL)
        for node, weight in step.items():
            out[node] = max(out.get(node, 0.0), weight)
        frontier = step
    return out


@pytest.mark.parametrize("k", [2, 3, 5, 8, 20])
def test_the_bounded_walk_returns_the_unbounded_walks_top_k(graph, k):
    tenant, ids, edges = graph
    names = {v: n for n, v in ids.items()}
    rows = container.stores().reads.graph_expand(
        tenant, [ids["seed"]], hops=2, fall=FALL, shared_source_weight=0.3, k=k
    )
    got = [(names[r["id"]], round(float(r["weight"]), 6)) for r in rows]
    expected = sorted(unbounded(edges, "seed", 2).items(), key=lambda kv: (-kv[1], str(ids[kv[0]])))[:k]
    assert got == [(n, round(w, 6)) for n, w in expected]


def test_weights_fall_per_hop_both_ways_and_never_lead_home(graph):
    tenant, ids, _ = graph
    rows = container.stores().reads.graph_expand(
        tenant, [ids["seed"]], hops=2, fall=FALL, shared_source_weight=0.3, k=20
    )
    weights = {r["id"]: float(r["weight"]) for r in rows}
    assert weights[ids["b1"]] == pytest.approx(0.5)  # 1.0 x 0.5
    assert weights[ids["c1"]] == pytest.approx(0.25)  # then against the edge's direction: 0.5 x 1.0 x 0.5
    assert ids["seed"] not in weights and ids["far"] not in weights  # no way home; three hops is too far
    three = container.stores().reads.graph_expand(
        tenant, [ids["seed"]], hops=3, fall=FALL, shared_source_weight=0.3, k=20
    )
    assert {r["id"]: float(r["weight"]) for r in three}[ids["far"]] == pytest.approx(0.125)
