"""CockroachDB cannot run here (no binary on any reachable registry): its DDL is checked as SQL text."""

import re

import pytest
from contextos.store.dialect import get_dialect


def rendered(dialect: str) -> str:
    return "\n".join(sql for _, _, sql in get_dialect(dialect).render_migrations(1024))


def test_both_dialects_have_the_same_numbered_migrations():
    pg = [(v, n) for v, n, _ in get_dialect("postgres").migration_files()]
    crdb = [(v, n) for v, n, _ in get_dialect("cockroach").migration_files()]
    assert pg == crdb
    assert [v for v, _ in pg] == sorted(v for v, _ in pg)


def test_the_vector_dimension_follows_the_embedder():
    assert "vector(1024)" in rendered("postgres")
    assert "vector(384)" in "\n".join(sql for _, _, sql in get_dialect("postgres").render_migrations(384))


def test_cockroach_ddl_uses_its_vector_index_and_no_extension():
    sql = rendered("cockroach")
    assert "CREATE VECTOR INDEX IF NOT EXISTS memory_vectors_embedding_vec" in sql
    assert "(tenant_id, embedding vector_cosine_ops)" in sql  # tenant-prefixed: ANN already scoped
    assert "CREATE EXTENSION" not in sql
    assert "USING hnsw" not in sql
    assert "CREATE INVERTED INDEX" in sql
    assert "DO $$" not in sql and "FOR EACH STATEMENT" not in sql
    assert "CREATE ROLE IF NOT EXISTS contextos_app" in sql


def test_postgres_ddl_uses_hnsw_and_row_level_security():
    sql = rendered("postgres")
    assert "CREATE EXTENSION IF NOT EXISTS vector" in sql
    assert "USING hnsw (embedding vector_cosine_ops)" in sql
    assert sql.count("ENABLE ROW LEVEL SECURITY") >= 13


def test_every_tenant_table_has_row_level_security_in_both_dialects():
    """A new table with a tenant_id must come with its policy (tenants and api_keys are looked up
    before a tenant is known: the authorizer and the tenant lock)."""
    for dialect in ("postgres", "cockroach"):
        sql = rendered(dialect)
        tables = re.findall(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\);", sql, flags=re.DOTALL)
        tenant_tables = {name for name, body in tables if "tenant_id" in body} - {"tenants", "api_keys"}
        assert {"conversation_flushes", "governance_reports", "memory_communities"} <= tenant_tables
        for name in tenant_tables:
            assert f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY" in sql, (dialect, name)
            assert f"CREATE POLICY tenant_isolation ON {name}" in sql, (dialect, name)


def test_search_breadth_is_set_per_transaction_in_each_dialect():
    assert get_dialect("postgres").search_breadth_sql(80) == "SET LOCAL hnsw.ef_search = 80"
    assert get_dialect("cockroach").search_breadth_sql(80) == "SET LOCAL vector_search_beam_size = 80"
    assert get_dialect("cockroach").ann_post_filters() is False
    assert get_dialect("postgres").ann_post_filters() is True


def test_the_signature_prefilter_is_a_bit_count_on_postgres_and_absent_on_cockroach():
    from contextos.store.dialect import get_dialect

    postgres = get_dialect("postgres").signature_filter_sql("b", "p.prefix", "%(d)s")
    assert postgres == "(b.signature64 IS NULL OR bit_count((b.signature64 # p.prefix)::bit(64)) <= %(d)s)"
    assert get_dialect("cockroach").signature_filter_sql("b", "p.prefix", "%(d)s") == "true"


def test_band_lookups_always_name_the_tenant_in_both_dialects():
    """PostgreSQL probes band rows by the bigint bucket (migration 0014) and still checks the tenant
    id; CockroachDB keeps the (tenant_id, band_key) key and has no bucket column."""
    pg, crdb = get_dialect("postgres"), get_dialect("cockroach")
    assert pg.band_match_sql("b", "k.key") == (
        "b.bucket = (%(tenant_bucket)s::int8 | k.key) AND b.tenant_id = %(tenant)s"
    )
    assert crdb.band_match_sql("b", "k.key") == "b.tenant_id = %(tenant)s AND b.band_key = k.key"
    assert "b.tenant_id = %(tenant)s" in pg.band_tenant_sql("b")
    assert crdb.band_tenant_sql("b") == "b.tenant_id = %(tenant)s"
    assert "bucket" not in rendered("cockroach").split("0014 (CockroachDB)")[1].split("PostgreSQL also")[0]
    assert "PRIMARY KEY (bucket, memory_id, tenant_id) INCLUDE (signature64)" in rendered("postgres")
    assert "band_keys INT4[]" in rendered("cockroach")


def test_item_indexes_keep_only_the_rows_they_serve_in_both_dialects():
    for dialect in ("postgres", "cockroach"):
        sql = rendered(dialect)
        assert "ON memory_items (tenant_id, session_id)\n    WHERE session_id IS NOT NULL" in sql
        assert "ON memory_items (tenant_id, document_id)\n    WHERE document_id IS NOT NULL" in sql


def test_a_tenants_own_vector_index_names_it_as_a_literal_on_postgres_and_is_not_needed_on_cockroach():
    """PostgreSQL gets a partial HNSW index per large tenant (its predicate must name the tenant, as
    the read path's statement does); CockroachDB's vector index is prefixed by the tenant already."""
    pg, crdb = get_dialect("postgres"), get_dialect("cockroach")
    ddl = pg.tenant_vector_index_sql("memory_vectors_hnsw_t_ab12", "o'brien")
    assert ddl is not None and ddl.startswith("CREATE INDEX CONCURRENTLY IF NOT EXISTS memory_vectors_hnsw_t_ab12")
    assert "WHERE tenant_id = 'o''brien' AND searchable AND indexed" in ddl
    assert pg.tenant_literal("o'brien") == "'o''brien'"
    assert crdb.tenant_vector_index_sql("memory_vectors_hnsw_t_ab12", "t") is None
    assert (
        "CREATE VECTOR INDEX IF NOT EXISTS memory_vectors_embedding_vec\n    ON memory_vectors (tenant_id, embedding"
        in (rendered("cockroach"))
    )
    with pytest.raises(ValueError):
        pg.tenant_vector_index_sql("x; DROP TABLE memories", "t")
    with pytest.raises(ValueError):
        pg.tenant_literal("a\x00b")


def test_iterative_scans_are_a_dialect_choice():
    assert get_dialect("postgres").filtered_scan_sql() is None  # pgvector 0.6 (the embedded server)
    assert (
        get_dialect("postgres", iterative_scan=True).filtered_scan_sql()
        == "SET LOCAL hnsw.iterative_scan = strict_order"
    )
    assert get_dialect("cockroach", iterative_scan=True).filtered_scan_sql() is None
