import threading

import psycopg
import pytest
from contextos.errors import SchemaMismatch
from contextos.store.dialect import get_dialect
from contextos.store.migrate import migrate


@pytest.fixture
def fresh_database(database_url):
    """A new, empty database on the session's server."""
    name = "migrations_" + threading.get_ident().__str__()[-6:]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    url = database_url.replace("/postgres?", f"/{name}?")
    yield url
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_migrations_apply_once_and_a_second_run_applies_nothing(fresh_database):
    dialect = get_dialect("postgres")
    first = migrate(fresh_database, dialect, 384, "local")
    assert first == [v for v, _, _ in dialect.migration_files()]
    assert migrate(fresh_database, dialect, 384, "local") == []
    with psycopg.connect(fresh_database) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]
    assert versions == first


def test_concurrent_migrators_apply_each_migration_exactly_once(fresh_database):
    dialect = get_dialect("postgres")
    results: list[list[int]] = []
    threads = [
        threading.Thread(target=lambda: results.append(migrate(fresh_database, dialect, 384, "local")))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    applied = sorted(v for r in results for v in r)
    assert applied == [v for v, _, _ in dialect.migration_files()]


def test_a_store_built_for_another_dimension_is_refused(fresh_database):
    dialect = get_dialect("postgres")
    migrate(fresh_database, dialect, 384, "local")
    with pytest.raises(SchemaMismatch, match="reembed"):
        migrate(fresh_database, dialect, 1024, "amazon.titan-embed-text-v2:0")
