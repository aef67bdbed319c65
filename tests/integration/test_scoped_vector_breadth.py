"""A large scope's ANN breadth is sized by the share of the index's candidates it holds, learnt
from its own queries (the ANN statement returns it), and it still answers within the scope."""

from contextos import container
from contextos.scopes import ScopeFilter
from contextos.store import scoped_reads
from contextos.store.scoped_reads import ScopedReads

from tests.integration.test_merging import candidates
from tests.memory_writer import add_memories


def test_a_large_scopes_share_is_learnt_from_its_queries(configured, tenant, local_embedder, monkeypatch):
    monkeypatch.setattr(scoped_reads, "SCOPED_EXACT_MAX_ROWS", 5)
    store = container.stores()
    specs = [(f"Topic {n}", f"Note {n} about deployment pipelines and release trains.", "fact") for n in range(40)]
    ids = add_memories(store, tenant, candidates(local_embedder, specs), embedder_id="local")
    store.admission.settle_vectors(tenant, limit=20)  # half in the ANN index, half in the fresh segment
    big = set(ids[::4])  # a quarter of the tenant
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("UPDATE memories SET user_id = 'big' WHERE id = ANY(%s)", [list(big)])
    scope = ScopeFilter(user_id="big")
    reads = ScopedReads(store.reads, scope)
    key = (tenant, scope.model_dump_json())
    [vector] = local_embedder.embed(["deployment pipelines release trains"])
    shares = []
    for _ in range(6):
        found = reads.vector_search(tenant, vector, k=8, ef_search=40, exact_scan_max_rows=20_000, scope_cache_s=30)
        assert len(found) == 8 and {r["id"] for r in found} <= big
        shares.append(scoped_reads._LARGE_SCOPES[key][0])
    # first assumed from the exact pass's bound (at least 6 rows of the tenant's hot ones), then
    # drawn towards the quarter the ANN's candidates hold
    assert abs(shares[-1] - 0.25) < 0.1 and abs(shares[-1] - 0.25) <= abs(shares[0] - 0.25), shares


def test_a_large_metadata_scope_is_read_on_memories_and_never_leaves_it(
    configured, tenant, local_embedder, monkeypatch
):
    monkeypatch.setattr(scoped_reads, "SCOPED_EXACT_MAX_ROWS", 5)
    store = container.stores()
    specs = [(f"Topic {n}", f"Note {n} about deployment pipelines and release trains.", "fact") for n in range(40)]
    ids = add_memories(store, tenant, candidates(local_embedder, specs), embedder_id="local")
    store.admission.settle_vectors(tenant, limit=20)
    red = set(ids[1::3])
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("""UPDATE memories SET metadata = '{"team": "red"}' WHERE id = ANY(%s)""", [list(red)])
    scope = ScopeFilter(metadata={"team": "red"})
    reads = ScopedReads(store.reads, scope)
    [vector] = local_embedder.embed(["deployment pipelines release trains"])
    for _ in range(3):
        found = reads.vector_search(tenant, vector, k=8, ef_search=40, exact_scan_max_rows=20_000, scope_cache_s=30)
        assert len(found) == 8 and {r["id"] for r in found} <= red
    share = scoped_reads._LARGE_SCOPES[(tenant, scope.model_dump_json())][0]
    assert 0.2 < share < 0.5, share  # a third of the candidates, counted on memories
