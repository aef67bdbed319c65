"""A small tenant's exact searches stay exact on a warm connection (S6: k rows whenever k exist).

psycopg prepares a statement after its fifth run and PostgreSQL may then keep one generic plan for
it; a plan made for a large tenant's ANN path must never answer a small tenant's exact one. Every
steered statement runs here at least 20 times on ONE connection (a pool of one, as one Lambda
container), alternating a large tenant (ANN path: it has more hot memories than the exact bound,
its vectors settled into the HNSW index) and a small one (exact path), in both orders; each time the
small tenant's rows must be its exact top k, computed here from the vectors it was given.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import psycopg
import pytest
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.models import BASE_TRUST, MemoryCandidate, Provenance
from contextos.scopes import ScopeFilter
from contextos.store.contradictions import neighbours
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.history import HistoricalReads
from contextos.store.scoped_reads import ScopedHistoricalReads, ScopedReads
from contextos.store.stores import Stores

from tests.memory_writer import add_memories

DIM = 384
LARGE = 1500  # above EXACT_MAX: the large tenant takes the ANN path
SMALL = 60
EXACT_MAX = 500  # exact_scan_max_rows for these runs (the setting, lowered to keep the data small)
K = 20
EF_SEARCH = 40  # the ANN's breadth: of LARGE + SMALL indexed rows, about 2 of the small tenant's
ROUNDS = 12  # each order, so every statement runs 2 * ROUNDS >= 20 times per tenant
WARM = 8  # the large tenant's queries first: past psycopg's prepare threshold and the server's 5 custom plans


@dataclass
class Tenant:
    name: str
    ids: list[uuid.UUID]
    vectors: np.ndarray  # unit rows, in ids' order

    def exact_top(self, query: np.ndarray, k: int, among: set[uuid.UUID] | None = None) -> list[uuid.UUID]:
        sims = self.vectors @ query
        order = np.argsort(-sims, kind="stable")
        return [self.ids[i] for i in order if among is None or self.ids[i] in among][:k]


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def memory_candidates(vectors: np.ndarray, prefix: str) -> list[MemoryCandidate]:
    decay = get_settings().decay
    return [
        MemoryCandidate(
            norm_key=f"{prefix} note {n}",
            label=f"{prefix} note {n}",
            definition=f"Note {n} of {prefix} about the release train.",
            type="fact",
            importance=6,
            embedding=[float(x) for x in v],
            decay_rate=decay_rate(6, "fact", decay),
            provenance=Provenance.user_upload,
            base_trust=BASE_TRUST[Provenance.user_upload],
        )
        for n, v in enumerate(vectors)
    ]


@pytest.fixture(scope="module")
def tenants(database_url: str) -> Iterator[tuple[Tenant, Tenant]]:
    """A large and a small tenant in one database, every vector settled into the HNSW index as the
    lifecycle leaves them; all vectors near one direction, so the index's nearest rows to a small
    tenant's query are mostly the large tenant's (what a post-filtered plan loses)."""
    rng = np.random.default_rng(27)
    centre = rng.standard_normal(DIM)
    db = Database(database_url, get_dialect("postgres"), min_size=1, max_size=1)
    store = Stores.over(db, get_settings().decay)
    tenants = []
    for size, prefix in ((LARGE, "large"), (SMALL, "small")):
        name = f"t-{prefix}-{uuid.uuid4().hex[:8]}"
        vectors = unit(centre + 1.2 * rng.standard_normal((size, DIM)))
        ids = add_memories(store, name, memory_candidates(vectors, prefix), embedder_id="local")
        while store.admission.settle_vectors(name, limit=1000):
            pass
        tenants.append(Tenant(name, ids, vectors))
    with psycopg.connect(database_url, autocommit=True) as owner:  # what autovacuum would have done
        owner.execute("ANALYZE memory_vectors")
        owner.execute("ANALYZE memories")
    db.close()
    yield tenants[0], tenants[1]


@pytest.fixture(params=["auto", "force_generic_plan"])
def world(request, database_url: str, tenants: tuple[Tenant, Tenant]) -> Iterator[tuple[Stores, Tenant, Tenant]]:
    """A pool of one fresh connection per test: every statement's plans are cached on it alone.

    After five custom plans of a prepared statement PostgreSQL may keep a generic one, by comparing
    estimated costs (measured choosing it at 100k/30k/8k tenants); at this test's size its estimates
    keep custom plans, so the second run makes that choice for it, for every statement."""
    db = Database(database_url, get_dialect("postgres"), min_size=1, max_size=1)
    with db.pool.connection() as conn:
        conn.execute(f"SET plan_cache_mode = {request.param}")  # the session's: this connection keeps it
    yield Stores.over(db, get_settings().decay), *tenants
    db.close()


def queries(tenant: Tenant, n: int, seed: int) -> list[np.ndarray]:
    """Queries near the tenant's own vectors (each one of them, slightly moved)."""
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(tenant.ids), size=n)
    return list(unit(tenant.vectors[picks] + 0.3 * rng.standard_normal((n, DIM)) / np.sqrt(DIM)))


def alternate(large: Tenant, small: Tenant) -> Iterator[tuple[Tenant, np.ndarray]]:
    """The connection's first queries are the large tenant's (whichever tenant a container serves
    first shapes the plans it caches); then large then small ROUNDS times, then small then large."""
    big, little = queries(large, 2 * ROUNDS + WARM, 1), queries(small, 2 * ROUNDS, 2)
    for q in big[2 * ROUNDS :]:
        yield large, q
    for r in range(ROUNDS):
        yield large, big[r]
        yield small, little[r]
    for r in range(ROUNDS, 2 * ROUNDS):
        yield small, little[r]
        yield large, big[r]


def test_the_plain_vector_search_is_exact_for_a_small_tenant_on_a_warm_connection(world):
    store, large, small = world
    answers = []
    for tenant, q in alternate(large, small):
        hits = store.reads.vector_search(tenant.name, q, k=K, ef_search=EF_SEARCH, exact_scan_max_rows=EXACT_MAX)
        if tenant is small:
            answers.append([h["id"] for h in hits] == small.exact_top(q, K))
        else:
            assert len(hits) == K
    assert all(answers), f"{answers.count(False)} of {len(answers)} small-tenant answers were not its exact top {K}"


def test_the_short_answer_fallback_is_exact_on_a_warm_connection(world):
    """The small tenant sent down the ANN path (its bound below its size): the index's post-filtered
    answer is short, and the exact re-ask must be exact whatever plan the connection cached."""
    store, large, small = world
    answers = []
    for tenant, q in alternate(large, small):
        bound = 0 if tenant is small else EXACT_MAX
        hits = store.reads.vector_search(tenant.name, q, k=K, ef_search=EF_SEARCH, exact_scan_max_rows=bound)
        if tenant is small:
            answers.append([h["id"] for h in hits] == small.exact_top(q, K))
    assert all(answers), f"{answers.count(False)} of {len(answers)} fallback answers were not exact"


def test_the_contradiction_neighbours_are_exact_for_a_small_tenant_on_a_warm_connection(world):
    store, large, small = world
    settings = get_settings().governance.model_copy(
        update={"contradiction_exact_scan_max_rows": EXACT_MAX, "contradiction_similarity_floor": -1.0}
    )
    k = settings.contradiction_top_k
    answers = []
    for tenant, q in alternate(large, small):
        [probe] = memory_candidates(q[None, :], "probe")
        with store.db.tenant_tx(tenant.name) as conn:
            rows = neighbours(
                conn, tenant.name, [probe], [probe.norm_key], len(tenant.ids), get_dialect("postgres"), settings
            )
        if tenant is small:
            found = [r["id"] for r in rows if not r["key_match"]]
            answers.append(found == small.exact_top(q, k))
    assert all(answers), f"{answers.count(False)} of {len(answers)} gate neighbour sets were not exact"


def test_the_scoped_readers_are_exact_for_a_small_scope_on_a_warm_connection(world):
    store, large, small = world
    owner = f"u-{uuid.uuid4().hex[:6]}"
    scoped = set(small.ids[::2])
    big_owner = f"u-{uuid.uuid4().hex[:6]}"
    with store.db.tenant_tx(small.name) as conn:
        conn.execute("UPDATE memories SET user_id = %s WHERE id = ANY(%s)", [owner, list(scoped)])
    with store.db.tenant_tx(large.name) as conn:
        conn.execute("UPDATE memories SET user_id = %s WHERE id = ANY(%s)", [big_owner, large.ids])
    readers = {
        small.name: ScopedReads(store.reads, ScopeFilter(user_id=owner), exact_scan_max_rows=EXACT_MAX),
        large.name: ScopedReads(store.reads, ScopeFilter(user_id=big_owner), exact_scan_max_rows=EXACT_MAX),
    }
    answers = []
    for tenant, q in alternate(large, small):
        hits = readers[tenant.name].vector_search(
            tenant.name, q, k=K, ef_search=EF_SEARCH, exact_scan_max_rows=EXACT_MAX, scope_cache_s=30
        )
        if tenant is small:
            answers.append([h["id"] for h in hits] == small.exact_top(q, K, among=scoped))
    assert all(answers), f"{answers.count(False)} of {len(answers)} scoped answers were not exact"


def test_the_historical_readers_are_exact_for_a_small_tenant_on_a_warm_connection(world):
    store, large, small = world
    with store.db.tenant_tx(small.name) as conn:
        as_of = conn.execute("SELECT now() AS t").fetchone()["t"]
    plain = HistoricalReads(store.db, as_of)
    answers = []
    for tenant, q in alternate(large, small):
        for reads in (plain, ScopedHistoricalReads(plain, ScopeFilter())):
            hits = reads.vector_search(tenant.name, q, k=K)
            if tenant is small:
                answers.append([h["id"] for h in hits] == small.exact_top(q, K))
    assert all(answers), f"{answers.count(False)} of {len(answers)} historical answers were not exact"


def test_the_cold_stub_search_is_exact_for_a_small_tenant_on_a_warm_connection(configured, world):
    """Cold stubs archived by the lifecycle scan (S5) in a small tenant: their nearest by cosine, on
    the same warm connection as the large tenant's hot searches."""
    from contextos import container
    from contextos.models import LifecycleReport
    from contextos.store.lifecycle import LifecycleStore

    store, large, _ = world
    rng = np.random.default_rng(5)
    name = f"t-cold-{uuid.uuid4().hex[:8]}"
    vectors = unit(large.vectors[:40] + 0.8 * rng.standard_normal((40, DIM)) / np.sqrt(DIM))
    ids = add_memories(container.stores(), name, memory_candidates(vectors, "cold"), embedder_id="local")
    with container.database().tenant_tx(name) as conn:  # thirty unused days: forgotten
        conn.execute(
            """UPDATE memories SET strength_anchor = 1.0, strength_anchor_at = now() - interval '30 days',
                      next_transition_at = now() - interval '1 second' WHERE id = ANY(%s)""",
            [ids[:30]],
        )
    report = LifecycleReport()
    container.lifecycle().scan_tenant(name, report)
    assert report.archived == 30
    cold = Tenant(name, ids[:30], vectors[:30])
    reads = LifecycleStore(store.db, get_settings().decay, get_settings().lifecycle)
    answers = []
    for tenant, q in alternate(large, Tenant(name, ids, vectors)):
        hits = reads.cold_candidates(tenant.name, q, [], limit=10)
        store.reads.vector_search(tenant.name, q, k=K, ef_search=EF_SEARCH, exact_scan_max_rows=EXACT_MAX)
        if tenant.name == name:
            answers.append({h["id"] for h in hits} == set(cold.exact_top(q, 10)))
    assert all(answers), f"{answers.count(False)} of {len(answers)} cold-stub answers were not exact"


def test_a_tenant_with_its_own_index_answers_from_it_on_a_warm_connection(world, database_url):
    """The small tenant given an ANN index of its own (the lifecycle job's, its line lowered for the
    test) and sent down the ANN path: the statement names the tenant, so every plan of it, generic
    ones included, reads the tenant's own graph, never the shared index filtered after its scan."""
    from contextos.store.vector_indexes import TenantVectorIndexes, index_name

    store, large, small = world
    TenantVectorIndexes(store.db, build_at=SMALL, drop_below=1, retire_shared=False).run(only=[small.name])
    try:
        recalls, short = [], 0
        for tenant, q in alternate(large, small):
            hits = store.reads.vector_search(tenant.name, q, k=K, ef_search=EF_SEARCH, exact_scan_max_rows=0)
            if tenant is small:
                ids = [h["id"] for h in hits]
                assert set(ids) <= set(small.ids)
                short += len(ids) < K
                recalls.append(len(set(ids) & set(small.exact_top(q, K))) / K)
        assert short == 0 and np.mean(recalls) >= 0.95, (short, recalls)
        with store.db.pool.connection() as conn:
            mode = conn.execute("SHOW plan_cache_mode").fetchone()["plan_cache_mode"]
            plans = conn.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                [f"%tenant_id = '{small.name}'%"],
            ).fetchall()
        assert plans, "the tenant's ANN statement was never prepared on the warm connection"
        if mode == "force_generic_plan":
            assert sum(p["generic_plans"] for p in plans) > 0
    finally:
        with psycopg.connect(database_url, autocommit=True) as owner:
            owner.execute("UPDATE tenants SET vector_index = NULL WHERE tenant_id = %s", [small.name])
            owner.execute(f"DROP INDEX IF EXISTS {index_name(small.name)}")
