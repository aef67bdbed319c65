"""Each large tenant gets an ANN index of its own, built online by the lifecycle job, and loses it
when it shrinks (S16); the read path searches a tenant's own index alone, so a tenant beside a
larger one gets its true top k, and a tenant without one is searched exactly.

Runs in a database of its own: the job retires the shared index once no tenant needs it."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from contextos.current_settings import get_settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.migrate import migrate
from contextos.store.stores import Stores
from contextos.store.vector_indexes import SHARED_INDEX, TenantVectorIndexes, index_name

from tests.integration.test_plan_cache_exactness import Tenant, memory_candidates, queries, unit
from tests.memory_writer import add_memories

DIM = 384
K = 20
BUILD_AT, DROP_BELOW = 400, 200


@pytest.fixture(scope="module")
def own_database(database_url: str) -> Iterator[str]:
    name = "vector_indexes_" + str(threading.get_ident())[-6:]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    url = database_url.replace("/postgres?", f"/{name}?")
    migrate(url, get_dialect("postgres"), DIM, "local")
    yield url
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def load_tenant(store: Stores, size: int, centre: np.ndarray, rng: np.random.Generator, prefix: str) -> Tenant:
    name = f"t-{prefix}-{uuid.uuid4().hex[:8]}"
    vectors = unit(centre + 1.2 * rng.standard_normal((size, DIM)))
    ids = add_memories(store, name, memory_candidates(vectors, prefix), embedder_id="local")
    while store.admission.settle_vectors(name, limit=1000):
        pass
    return Tenant(name, ids, vectors)


@pytest.fixture(scope="module")
def world(own_database: str) -> Iterator[tuple[Database, Stores, Tenant, Tenant, Tenant]]:
    """Three tenants near one direction (what a post-filtered shared index loses): one above the
    line, one between the two lines, one small; the shared index over all of them."""
    rng = np.random.default_rng(33)
    centre = rng.standard_normal(DIM)
    db = Database(own_database, get_dialect("postgres"), min_size=1, max_size=2)
    store = Stores.over(db, get_settings().decay)
    large = load_tenant(store, 1200, centre, rng, "large")
    middle = load_tenant(store, 300, centre, rng, "middle")
    small = load_tenant(store, 60, centre, rng, "small")
    with psycopg.connect(own_database, autocommit=True) as owner:
        owner.execute("ANALYZE memory_vectors")
        owner.execute("ANALYZE memories")
    yield db, store, large, middle, small
    db.close()


def own_index(url: str, tenant: str) -> tuple[str | None, bool]:
    """(tenants.vector_index, whether the tenant's index exists and is valid)."""
    with psycopg.connect(url, autocommit=True) as owner:
        named = owner.execute("SELECT vector_index FROM tenants WHERE tenant_id = %s", [tenant]).fetchone()[0]
        valid = owner.execute(
            "SELECT coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)), false)",
            [index_name(tenant)],
        ).fetchone()[0]
    return named, valid


def shared_exists(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as owner:
        return owner.execute("SELECT to_regclass(%s) IS NOT NULL", [SHARED_INDEX]).fetchone()[0]


def test_the_job_gives_a_tenant_over_the_line_its_own_index_and_retires_the_shared_one(own_database, world):
    db, _store, large, middle, _small = world
    job = TenantVectorIndexes(db, build_at=BUILD_AT, drop_below=DROP_BELOW)
    assert shared_exists(own_database)
    work = job.run()
    assert work.built == [large.name] and work.dropped == [] and work.shared_retired
    assert own_index(own_database, large.name) == (index_name(large.name), True)
    assert own_index(own_database, middle.name) == (None, False)
    assert not shared_exists(own_database)
    assert job.run().built == []  # nothing more to do: a second pass changes nothing


def test_a_tenant_with_its_own_index_gets_its_top_k_from_it_and_the_others_exactly(own_database, world):
    db, store, large, middle, small = world
    TenantVectorIndexes(db, build_at=BUILD_AT, drop_below=DROP_BELOW).run()
    for tenant, seed in ((large, 1), (middle, 2), (small, 3)):
        found = []
        for q in queries(tenant, 12, seed):
            hits = store.reads.vector_search(tenant.name, q, k=K, ef_search=200, exact_scan_max_rows=100)
            ids = [h["id"] for h in hits]
            found.append(len(set(ids) & set(tenant.exact_top(q, K))) / K)
            assert set(ids) <= set(tenant.ids)
        # the large tenant through its own graph of 1,200 rows (ANN: near exact), the middle one (300,
        # above the exact bound, no index of its own) through a plan that can only be exact
        assert np.mean(found) >= (0.95 if tenant is large else 1.0), (tenant.name, found)
    with psycopg.connect(own_database, autocommit=True) as owner:
        register = owner.execute("SELECT vector_index FROM tenants WHERE tenant_id = %s", [large.name]).fetchone()[0]
        literal = get_dialect("postgres").tenant_literal(large.name)
        plan = "\n".join(
            r[0]
            for r in owner.execute(
                f"""EXPLAIN SELECT memory_id FROM memory_vectors WHERE tenant_id = {literal} AND searchable AND indexed
                    ORDER BY embedding <=> (SELECT embedding FROM memory_vectors LIMIT 1) LIMIT 20"""
            )
        )
    assert register in plan, plan


def test_a_tenant_that_shrinks_below_the_lower_line_loses_its_index_and_one_between_keeps_it(own_database, world):
    db, store, large, _middle, _small = world
    job = TenantVectorIndexes(db, build_at=BUILD_AT, drop_below=DROP_BELOW)
    job.run()
    with psycopg.connect(own_database, autocommit=True) as owner:  # as many memories gone as that takes
        owner.execute("UPDATE tenants SET hot_memories = %s WHERE tenant_id = %s", [DROP_BELOW + 10, large.name])
    assert job.run().dropped == []  # between the lines: kept (no rebuild at every scan near the line)
    assert own_index(own_database, large.name) == (index_name(large.name), True)
    with psycopg.connect(own_database, autocommit=True) as owner:
        owner.execute("UPDATE tenants SET hot_memories = %s WHERE tenant_id = %s", [DROP_BELOW - 10, large.name])
    assert job.run().dropped == [large.name]
    assert own_index(own_database, large.name) == (None, False)
    # and it is searched exactly from then on
    for q in queries(large, 4, 9):
        hits = store.reads.vector_search(large.name, q, k=K, ef_search=40, exact_scan_max_rows=5000)
        assert [h["id"] for h in hits] == large.exact_top(q, K)
    with psycopg.connect(own_database, autocommit=True) as owner:
        owner.execute("UPDATE tenants SET hot_memories = %s WHERE tenant_id = %s", [len(large.ids), large.name])


def test_a_build_that_died_half_way_is_built_again(own_database, world):
    db, _store, large, _middle, _small = world
    job = TenantVectorIndexes(db, build_at=BUILD_AT, drop_below=DROP_BELOW)
    job.run()
    with psycopg.connect(own_database, autocommit=True) as owner:  # what a killed CONCURRENTLY build leaves
        owner.execute("UPDATE tenants SET vector_index = NULL WHERE tenant_id = %s", [large.name])
        owner.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", [index_name(large.name)]
        )
    assert job.run().built == [large.name]
    assert own_index(own_database, large.name) == (index_name(large.name), True)


def test_writes_go_on_while_a_tenant_index_is_built(own_database, world):
    """CREATE INDEX CONCURRENTLY: the table's writes go on while a tenant's index is built."""
    db, store, large, _middle, small = world
    with psycopg.connect(own_database, autocommit=True) as owner:
        owner.execute("UPDATE tenants SET vector_index = NULL WHERE tenant_id = %s", [large.name])
        owner.execute(f"DROP INDEX IF EXISTS {index_name(large.name)}")
    job = TenantVectorIndexes(db, build_at=BUILD_AT, drop_below=DROP_BELOW)
    written: list[float] = []
    done = threading.Event()

    def writer() -> None:
        rng = np.random.default_rng(8)
        while not done.is_set() and len(written) < 50:
            [candidate] = memory_candidates(unit(rng.standard_normal((1, DIM))), f"w{uuid.uuid4().hex[:6]}")
            add_memories(store, small.name, [candidate], embedder_id="local")
            written.append(1.0)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert job.run().built == [large.name]
    finally:
        done.set()
        thread.join()
    assert written, "no write completed while the index was built"
    assert own_index(own_database, large.name) == (index_name(large.name), True)
