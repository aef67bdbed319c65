import hashlib
import itertools
import shutil
import threading

import psycopg
import pytest
from contextos.errors import SchemaMismatch
from contextos.store.dialect import DEFINITIONS_DIR, get_dialect
from contextos.store.migrate import FOLDED_CHECKSUMS, apply_definitions, migrate


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


OWN_FUNCTIONS = (
    "SELECT p.proname AS name, p.prosrc AS body FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
    " WHERE n.nspname = 'public'"
    " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"  # not pgvector's
)


def own_functions(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        return [(r[0], r[1]) for r in conn.execute(OWN_FUNCTIONS)]


def test_a_fresh_database_holds_one_definition_per_function_and_the_latest_text(fresh_database):
    dialect = get_dialect("postgres")
    migrate(fresh_database, dialect, 384, "local")
    functions = own_functions(fresh_database)
    names = [name for name, _ in functions]
    assert sorted(names) == sorted(set(names))  # no overload left behind by an older migration
    definitions = dict(dialect.render_definitions(384))
    assert {"contextos_bm25_rank", "contextos_bm25_score", "contextos_at_least_query"} <= set(definitions)
    for name, body in functions:
        if name in definitions:
            assert body.strip() in definitions[name], name  # the definition file's text, not a migration's
    assert "contextos_text_search_bm25" not in names and "contextos_bm25_scope_gather" not in names
    with psycopg.connect(fresh_database) as conn:
        recorded = dict(conn.execute("SELECT name, checksum FROM schema_definitions").fetchall())
    assert recorded == {name: hashlib.sha256(sql.encode()).hexdigest() for name, sql in definitions.items()}


def test_a_changed_definition_is_applied_again_and_an_unchanged_one_never(fresh_database, tmp_path):
    dialect = get_dialect("postgres")
    migrate(fresh_database, dialect, 384, "local")
    shutil.copytree(DEFINITIONS_DIR, tmp_path, dirs_exist_ok=True)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        assert apply_definitions(conn, dialect, 384, tmp_path) == []  # the same text: nothing to do
        score = tmp_path / "contextos_bm25_score.sql"
        score.write_text(score.read_text().replace("$fn$\n", "$fn$\n    -- changed\n", 1))
        assert apply_definitions(conn, dialect, 384, tmp_path) == ["contextos_bm25_score"]
        assert apply_definitions(conn, dialect, 384, tmp_path) == []
    bodies = dict(own_functions(fresh_database))
    assert "-- changed" in bodies["contextos_bm25_score"]
    assert "-- changed" not in bodies["contextos_bm25_rank"]
    # the next deploy with the repository's text puts it back
    migrate(fresh_database, dialect, 384, "local")
    assert "-- changed" not in dict(own_functions(fresh_database))["contextos_bm25_score"]


def test_definitions_follow_the_dialect():
    assert get_dialect("cockroach").render_definitions(384) == []  # no plpgsql: no BM25 there
    for name, sql in get_dialect("postgres").render_definitions(384):
        assert "-- dialect:" not in sql
        assert f"CREATE OR REPLACE FUNCTION {name}(" in sql  # one file, one function, named after it


def install_dropped_bm25_functions(owner_url: str) -> None:
    """Stand-ins with the signatures of the two functions 0051 drops (0016's ranking, 0032's scope
    gathering): what a database deployed before 0051 still holds; only their names and arguments matter."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION contextos_text_search_bm25(text, text[], real, integer, integer, real, real, integer,"
            " timestamptz, boolean) RETURNS TABLE (id uuid, score real) LANGUAGE sql AS 'SELECT NULL::uuid, 0::real'"
        )
        conn.execute(
            "CREATE FUNCTION contextos_bm25_scope_gather(text, text, timestamptz, text, text, text, text[], integer)"
            " RETURNS SETOF uuid LANGUAGE sql AS 'SELECT NULL::uuid'"
        )


def audit_chain(conn: psycopg.Connection, tenant: str) -> list[tuple]:
    return conn.execute(
        "SELECT chain_seq, prev_hash, hash FROM audit_log WHERE tenant_id = %s ORDER BY chain_seq", [tenant]
    ).fetchall()


def write_audit_rows(conn: psycopg.Connection, tenant: str, n: int) -> None:
    """``n`` entries in one statement, then one more on its own (the head moves per statement)."""
    conn.execute(
        "INSERT INTO audit_log (tenant_id, actor, action, reason) SELECT %s, 'tests', 'admitted', 'entry ' || i"
        " FROM generate_series(1, %s) i",
        [tenant, n],
    )
    conn.execute(
        "INSERT INTO audit_log (tenant_id, actor, action, reason) VALUES (%s, 'tests', 'admitted', 'one')", [tenant]
    )


def assert_one_unbroken_chain(conn: psycopg.Connection, tenant: str, n: int) -> None:
    rows = audit_chain(conn, tenant)
    assert [seq for seq, _, _ in rows] == list(range(1, n + 1))
    assert rows[0][1] == "0" * 64
    assert all(after[1] == before[2] for before, after in itertools.pairwise(rows))
    head = conn.execute("SELECT chain_seq, hash FROM audit_chain_heads WHERE tenant_id = %s", [tenant]).fetchone()
    assert head == (n, rows[-1][2])


def test_until_the_definitions_apply_an_audit_row_is_refused_never_written_unchained(fresh_database, tmp_path):
    """The chaining functions are definitions, applied after the migrations: in between, 0011's
    trigger refuses an audit row; once they apply, every row is chained."""
    dialect = get_dialect("postgres")
    migrate(fresh_database, dialect, 384, "local", definitions=tmp_path)  # no definition applied yet
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.RaiseException, match="not defined yet"):
            write_audit_rows(conn, "t1", 3)
        assert conn.execute("SELECT count(*) FROM audit_log").fetchone()[0] == 0
    migrate(fresh_database, dialect, 384, "local")
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        write_audit_rows(conn, "t1", 3)
        write_audit_rows(conn, "t1", 2)
        assert_one_unbroken_chain(conn, "t1", 7)


@pytest.mark.parametrize("text", [0, -1], ids=["first_text", "last_text"])
def test_a_database_deployed_before_the_fold_is_repaired_without_running_anything_again(fresh_database, text):
    """It ran the migrations that still carried the BM25 bodies and the audit chain's functions
    (their checksums recorded, the audit definitions not yet recorded) and has the functions 0051
    drops: the next migrate drops them, rewrites those records, re-runs nothing, applies the audit
    chain's definitions, and the chain goes on across it."""
    dialect = get_dialect("postgres")
    migrate(fresh_database, dialect, 384, "local")
    install_dropped_bm25_functions(fresh_database)
    folded = FOLDED_CHECKSUMS["postgres"]
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        write_audit_rows(conn, "t1", 4)
        for version, checksums in folded.items():
            conn.execute("UPDATE schema_version SET checksum = %s WHERE version = %s", [checksums[text], version])
        conn.execute("UPDATE schema_version SET checksum = 'edited by hand' WHERE version = 1")
        conn.execute("DELETE FROM schema_version WHERE version = 51")
        conn.execute("DELETE FROM schema_definitions WHERE name LIKE 'audit_log_chain%'")
    assert migrate(fresh_database, dialect, 384, "local") == [51]
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        assert {r[0] for r in conn.execute("SELECT name FROM schema_definitions")} >= {
            "audit_log_chain",
            "audit_log_chain_head",
        }
        write_audit_rows(conn, "t1", 2)
        assert_one_unbroken_chain(conn, "t1", 8)
    files = {v: hashlib.sha256(sql.encode()).hexdigest() for v, _, sql in dialect.render_migrations(384)}
    with psycopg.connect(fresh_database) as conn:
        recorded = dict(conn.execute("SELECT version, checksum FROM schema_version").fetchall())
    assert {v: recorded[v] for v in folded} == {v: files[v] for v in folded}
    assert recorded[1] == "edited by hand"  # any other difference is only warned about
    names = {name for name, _ in own_functions(fresh_database)}
    assert "contextos_text_search_bm25" not in names and "contextos_bm25_scope_gather" not in names


def test_an_index_migration_runs_outside_a_transaction_and_rebuilds_what_a_killed_build_left(fresh_database):
    """0054 builds its index CONCURRENTLY (it cannot run in a transaction); a build killed half way
    leaves an invalid index, and the next migrate drops it and builds it again."""
    dialect = get_dialect("postgres")
    migrate(fresh_database, dialect, 384, "local")
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'memories_tenant_lexemes'::regclass")
        conn.execute("DELETE FROM schema_version WHERE version = 54")  # as if the build had died before its record
    assert migrate(fresh_database, dialect, 384, "local") == [54]
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        valid = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'memories_tenant_lexemes'::regclass"
        ).fetchone()[0]
    assert valid
