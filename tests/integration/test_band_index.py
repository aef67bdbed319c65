"""The LSH band rows behind near-duplicate merges (contextos.store.bands, migration 0014): the keys a
memory's vector row carries are exactly its band rows, replaced and deleted with it; lookups never
cross tenants; and recall at the merge threshold holds through the store path."""

import uuid
from pathlib import Path

import numpy as np
import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.lsh import BANDS, sketch
from contextos.models import BASE_TRUST, MemoryCandidate, Provenance

DIM = 384


@pytest.fixture
def store(configured):
    return container.stores()


def candidate(key: str, vector, *, type_: str = "fact", definition: str | None = None) -> MemoryCandidate:
    return MemoryCandidate(
        norm_key=key,
        label=key,
        definition=definition or f"Why {key} matters here, in two plain sentences. It is a test concept.",
        type=type_,
        importance=5,
        embedding=[float(x) for x in vector],
        decay_rate=decay_rate(5, type_, get_settings().decay),
        provenance=Provenance.user_upload,
        base_trust=BASE_TRUST[Provenance.user_upload],
    )


def store_concepts(store, tenant, cands):
    record, _ = store.documents.create_document(
        tenant, content_hash=uuid.uuid4().hex, filename=None, content_type=None, provenance="user_upload", size_bytes=1
    )
    return store.admission.store_document_concepts(
        tenant, record.id, cands, embedder_id="test", source_type="text", domain="general", counts={}
    )


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def at_cosine(base: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at exactly ``cosine`` from each (unit) row of ``base``."""
    noise = rng.standard_normal(base.shape)
    noise -= (noise * base).sum(axis=1, keepdims=True) * base  # orthogonal to base
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    return cosine * base + np.sqrt(1 - cosine**2) * noise


def band_rows(tenant: str) -> dict:
    """memory id → (sorted band keys of its rows, the keys its vector row carries)."""
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute(
            """SELECT v.memory_id, v.band_keys,
                      (SELECT array_agg(b.band_key ORDER BY b.band_key) FROM memory_vector_bands b
                       WHERE b.memory_id = v.memory_id) AS rows
               FROM memory_vectors v"""
        ).fetchall()
    return {r["memory_id"]: (r["rows"] or [], sorted(r["band_keys"] or [])) for r in rows}


def test_each_new_memory_has_exactly_its_band_rows_and_its_vector_row_carries_their_keys(store, tenant):
    vectors = unit(np.random.default_rng(1), 3)
    result = store_concepts(store, tenant, [candidate(f"concept {i}", v) for i, v in enumerate(vectors)])
    expected = sketch(vectors.tolist()).band_keys
    rows = band_rows(tenant)
    assert len(rows) == 3
    for memory_id, keys in zip(result.memory_ids, expected, strict=True):
        assert rows[memory_id] == (sorted(keys), sorted(keys))
        assert len(keys) == BANDS


def test_a_replaced_vector_replaces_its_band_rows(store, tenant):
    rng = np.random.default_rng(2)
    old, new = unit(rng, 2)
    first = store_concepts(store, tenant, [candidate("circuit breaker", old, definition="Short one. It fails fast.")])
    # Same key, a better (longer) definition: the merge keeps it, so the memory's vector becomes the new one.
    longer = "Stops calling a failing dependency so that failures do not cascade. " * 2
    second = store_concepts(store, tenant, [candidate("circuit breaker", new, definition=longer)])
    assert second.memory_ids == first.memory_ids and second.merged == 1
    rows = band_rows(tenant)
    expected = sorted(sketch([new.tolist()]).band_keys[0])
    assert rows[first.memory_ids[0]] == (expected, expected)
    with container.database().tenant_tx(tenant) as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_vector_bands").fetchone()["n"] == BANDS


def test_band_lookups_never_cross_tenants(store, configured):
    """Two tenants hold the same vector (so the same band keys): a near duplicate ingested by one
    merges with its own memory only, never with the other tenant's."""
    tenant_a, tenant_b = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    rng = np.random.default_rng(3)
    base = unit(rng, 1)
    twin = at_cosine(base, 0.99, rng)
    store_concepts(store, tenant_a, [candidate("original", base[0])])
    # Tenant b has only a twin: tenant a's identical memory must not be found from b ...
    result_b = store_concepts(store, tenant_b, [candidate("original twin", twin[0])])
    assert (result_b.created, result_b.merged) == (1, 0)
    # ... while within a tenant the same twin merges.
    result_a = store_concepts(store, tenant_a, [candidate("original twin", twin[0])])
    assert (result_a.created, result_a.merged) == (0, 1)
    for tenant in (tenant_a, tenant_b):
        with container.database().tenant_tx(tenant) as conn:
            owners = conn.execute("SELECT DISTINCT tenant_id FROM memory_vector_bands").fetchall()
        assert [r["tenant_id"] for r in owners] == [tenant]


def test_near_duplicates_just_above_the_threshold_merge_at_the_recall_lsh_promises(store, tenant):
    """Pairs at cosine 0.935 (threshold 0.93): 16 bands of 16 bits share a band with probability
    about 0.89 (contextos.lsh); through the store path at least 0.82 of 200 pairs must merge, and
    pairs below the threshold must not."""
    threshold = get_settings().merge.near_duplicate_cosine
    rng = np.random.default_rng(4)
    originals = unit(rng, 200)
    for start in range(0, 200, 50):
        store_concepts(store, tenant, [candidate(f"original {i}", originals[i]) for i in range(start, start + 50)])
    close = at_cosine(originals, threshold + 0.005, rng)
    far = at_cosine(originals[:50], threshold - 0.03, rng)
    merged = 0
    for start in range(0, 200, 50):
        result = store_concepts(store, tenant, [candidate(f"close {i}", close[i]) for i in range(start, start + 50)])
        merged += result.merged
    assert merged / 200 >= 0.82
    below = store_concepts(store, tenant, [candidate(f"far {i}", far[i]) for i in range(50)])
    assert below.merged == 0


def test_migration_0014_backfills_the_keys_of_rows_written_before_it(store, tenant):
    vectors = unit(np.random.default_rng(5), 2)
    store_concepts(store, tenant, [candidate(f"legacy {i}", v) for i, v in enumerate(vectors)])
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("UPDATE memory_vectors SET band_keys = NULL")
    backfill = (
        Path(__file__).resolve().parents[2] / "shared/contextos/store/migrations/0014_band_keys.sql"
    ).read_text()
    statement = next(s for s in backfill.split(";") if "UPDATE memory_vectors" in s)
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(statement)
    rows = band_rows(tenant)
    assert len(rows) == 2 and all(keys == carried and len(keys) == BANDS for keys, carried in rows.values())


def test_the_python_bucket_of_a_tenant_is_the_one_sql_stores(store, configured):
    from contextos.store.bands import tenant_bucket

    tenants = ["a", "tenant-1", "ünïcode-tenant", f"t-{uuid.uuid4().hex}"]
    with container.database().system_tx() as conn:
        for tenant in tenants:
            for band_key in (0, 1, (15 << 16) | 65535):
                row = conn.execute("SELECT contextos_band_bucket(%s, %s) AS b", [tenant, band_key]).fetchone()
                assert row["b"] == tenant_bucket(tenant) | band_key


def colliding_tenants() -> tuple[str, str]:
    """Two tenant ids whose band buckets collide (same 32-bit hash): a birthday search, ~1e5 tries."""
    from contextos.store.bands import tenant_bucket

    seen: dict[int, str] = {}
    for i in range(2_000_000):
        tenant = f"collide-{i}"
        bucket = tenant_bucket(tenant)
        if bucket in seen:
            return seen[bucket], tenant
        seen[bucket] = tenant
    raise AssertionError("no collision found")


def test_a_bucket_collision_between_tenants_never_returns_the_other_tenants_band_rows(store, database_url):
    """Even with row-level security out of the way (the table owner's connection), the probe's own
    condition keeps another tenant's rows out when both tenants' band keys fall in one bucket."""
    import psycopg
    from contextos.lsh import sketch as lsh_sketch
    from contextos.store.bands import band_params
    from pgvector import Vector
    from pgvector.psycopg import register_vector
    from psycopg.rows import dict_row

    owner, intruder = colliding_tenants()
    rng = np.random.default_rng(6)
    base = unit(rng, 1)
    store_concepts(store, owner, [candidate("owner's memory", base[0])])
    twin = candidate("intruder's twin", at_cosine(base, 0.99, rng)[0])
    lsh = lsh_sketch([twin.embedding])
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        register_vector(conn)
        bypass = conn.execute("SELECT rolbypassrls OR rolsuper AS b FROM pg_roles WHERE rolname = current_user")
        assert bypass.fetchone()["b"]
        owner_keys = sketch(base.tolist()).band_keys[0]
        for tenant, bands, near in ((intruder, 0, 0), (owner, BANDS, 1)):
            rows = conn.execute(
                f"""SELECT b.memory_id FROM unnest(%(keys)s::int[]) AS k(band_key)
                    CROSS JOIN LATERAL (SELECT b.memory_id FROM memory_vector_bands b
                                        WHERE {store.db.dialect.band_match_sql("b", "k.band_key")} OFFSET 0) AS b""",
                band_params(tenant) | {"keys": owner_keys},
            ).fetchall()
            assert len(rows) == bands
            probe = store.admission._near_duplicate_query(tenant, [twin], lsh, [Vector(twin.embedding)])
            assert len(conn.execute(*probe).fetchall()) == near


def test_the_python_signature_prefix_is_the_one_sql_derives(configured):
    from contextos.lsh import signature_prefix, signature_prefix_sql

    signatures = sketch(unit(np.random.default_rng(7), 5).tolist()).signatures
    with container.database().system_tx() as conn:
        for signature in signatures:
            row = conn.execute(f"SELECT {signature_prefix_sql('%s::bit(256)')} AS p", [signature]).fetchone()
            assert row["p"] == signature_prefix(signature)


def test_a_related_edge_between_known_memories_gains_weight_and_one_to_a_new_memory_is_created(store, tenant):
    """Edges touching a memory created in the same transaction take the plain insert; a repeated edge
    between existing memories still takes the upsert and gains weight."""
    rng = np.random.default_rng(8)
    a, b, c = unit(rng, 3)
    first = [candidate("alpha concept", a), candidate("beta concept", b)]
    first[1] = first[1].model_copy(update={"related_keys": ["alpha concept"]})
    store_concepts(store, tenant, first)
    again = [candidate("alpha concept", a), candidate("beta concept", b), candidate("gamma concept", c)]
    again[1] = again[1].model_copy(update={"related_keys": ["alpha concept"]})
    again[2] = again[2].model_copy(update={"related_keys": ["alpha concept"]})
    store_concepts(store, tenant, again)
    with container.database().tenant_tx(tenant) as conn:
        edges = conn.execute(
            """SELECT s.label AS src, d.label AS dst, r.weight FROM relationships r
               JOIN memories s ON s.id = r.src_id JOIN memories d ON d.id = r.dst_id
               WHERE r.type = 'related' ORDER BY s.label"""
        ).fetchall()
    cfg = get_settings().merge
    pairs = [(e["src"], e["dst"]) for e in edges]
    assert pairs == [("beta concept", "alpha concept"), ("gamma concept", "alpha concept")]
    assert edges[0]["weight"] == pytest.approx(min(1.0, cfg.related_edge_weight + cfg.related_edge_step))
    assert edges[1]["weight"] == pytest.approx(cfg.related_edge_weight)


class _Explained:
    """A connection whose statements are EXPLAINed instead of run: the plans a store function's
    statements get, as the application role under row-level security."""

    def __init__(self, conn) -> None:
        self.conn, self.plans = conn, []

    def execute(self, sql, params=None):
        rows = self.conn.execute("EXPLAIN " + sql, params).fetchall()
        self.plans.append("\n".join(next(iter(r.values())) for r in rows))


def test_removing_a_memorys_bands_probes_the_band_index_under_row_level_security(store, tenant, database_url):
    import psycopg
    from contextos.store.bands import delete_band_pairs, delete_bands

    rng = np.random.default_rng(11)
    store_concepts(store, tenant, [candidate(f"gateway {i}", v) for i, v in enumerate(unit(rng, 4))])
    ids = list(band_rows(tenant))[:2]
    other = f"bands-{uuid.uuid4().hex[:8]}"  # another tenant's 40k band rows: reading them all costs
    with psycopg.connect(database_url, autocommit=True) as owner:
        owner.execute(
            "INSERT INTO memory_vector_bands (tenant_id, band_key, memory_id, signature, signature64)"
            " SELECT %s, g %% 100000, gen_random_uuid(), NULL, 0 FROM generate_series(1, 40000) AS g",
            [other],
        )
        owner.execute("ANALYZE memory_vector_bands")
    with store.db.tenant_tx(tenant) as conn:
        # A tiny table may rightly be read whole; with every other way priced out, only a band
        # condition the planner may push into the index under RLS gives a probe by bucket (a leaky
        # one, ``|`` on a joined column, leaves it a filter over the tenant's whole index range).
        conn.execute("SET LOCAL enable_seqscan = off")
        explained = _Explained(conn)
        delete_bands(explained, store.db.dialect, tenant, ids)
        keys = conn.execute(
            "SELECT band_keys FROM memory_vectors WHERE tenant_id = %s AND memory_id = %s", [tenant, ids[0]]
        ).fetchone()["band_keys"]
        delete_band_pairs(explained, store.db.dialect, tenant, [(k, ids[0]) for k in keys])
        assert conn.execute("SELECT current_user").fetchone()["current_user"] == "contextos_app"
    assert len(explained.plans) == 2
    for plan in explained.plans:
        assert "Seq Scan on memory_vector_bands" not in plan, plan
        # an index probe by bucket, not a walk of the whole index with the band condition as a filter
        assert "Index Cond: ((bucket = " in plan, plan
    # and the deletes still remove exactly those memories' band rows
    with store.db.tenant_tx(tenant) as conn:
        delete_bands(conn, store.db.dialect, tenant, ids[:1])
    left = band_rows(tenant)
    assert left[ids[0]][0] == [] and len(left[ids[1]][0]) == BANDS
    with psycopg.connect(database_url, autocommit=True) as owner:
        owner.execute("DELETE FROM memory_vector_bands WHERE tenant_id = %s", [other])
