"""Migration 0026: the sessions list's keyset order has its own index, added to existing stores."""

import psycopg
from contextos.store.dialect import get_dialect
from contextos.store.migrate import migrate

from tests.integration.test_migrations import fresh_database  # noqa: F401  (a fixture)


def listing_index(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'sessions_listing'").fetchone()
    return row[0] if row else None


def test_given_a_migrated_store_then_sessions_have_the_newest_first_keyset_index(fresh_database):  # noqa: F811
    migrate(fresh_database, get_dialect("postgres"), 384, "local")
    assert listing_index(fresh_database) == (
        "CREATE INDEX sessions_listing ON public.sessions USING btree (tenant_id, created_at DESC, id DESC)"
    )


def test_given_a_store_migrated_before_0026_when_migrated_then_only_0026_runs(fresh_database):  # noqa: F811
    dialect = get_dialect("postgres")
    migrate(fresh_database, dialect, 384, "local")
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("DROP INDEX sessions_listing")
        conn.execute("DELETE FROM schema_version WHERE version = 26")
    assert listing_index(fresh_database) is None
    assert migrate(fresh_database, dialect, 384, "local") == [26]
    assert listing_index(fresh_database) is not None
