"""The migration runner (STYLE 10): numbered SQL files applied once each, in order, under a lock;
then the repeatable definitions (functions, views: ``store/definitions/<name>.sql``), each applied
again whenever its text changes, Flyway-style, so the latest text of a function is its one
definition."""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

import psycopg
from contextos.errors import SchemaMismatch
from contextos.observability import logger
from contextos.store.dialect import DEFINITIONS_DIR, Dialect

NO_TRANSACTION = "-- contextos: no transaction"
_CONCURRENT_INDEX = re.compile(r"CREATE\s+INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)
_LOCK_KEY = 7_420_011  # an arbitrary constant: one migrator at a time per database

# Migrations whose function bodies moved to store/definitions/, or went because a later migration
# drops the function (the schema they leave after the last migration is the same), with every
# checksum a database may have recorded when it ran an earlier text (a migration folded twice has
# two): such a database is up to date, and its record is rewritten to the file's checksum (a
# repair, not a warning).
FOLDED_CHECKSUMS: dict[str, dict[int, tuple[str, ...]]] = {
    "postgres": {
        8: ("b944274836040d2dbf6c9118da51d5f1143601d827e004ea2f2c4049bae8c9a3",),
        11: (
            "33e32b9a8817e6f05a963b461db26c95b5d8f3c4e4887bd9985660cd69f1d8ee",
            "8074390d5fc1a1e4faaaf2f3b06e68bf3450a59aed409b3cc690bd8828a5da76",  # the audit chain's first text
        ),
        16: ("6d67a651a0951ca8621447dc18f6fb58126b46078f10f781a915f5f8032e942b",),
        27: ("66c2c2d25c067db43f0c46f40c262ad155f291fc5476700db944aed838314698",),
        29: ("3bf7e6ff34184b190169689d189a441df6134ce7f31da79678f082b473f5095f",),
        32: ("115fff7cf9da3034f66d785834a1842a853f3d7e846225d1179f2a15c9b66b08",),
        35: ("7377b5ddf14e766ffe48722de25ae59662d70548eadcfa7f3de277a42c527a74",),
        38: ("f47229c493d6a8c2e9fb157911c95aaf47b55b696410bd10495d4508d760af30",),
    },
}


def migrate(
    conninfo: str, dialect: Dialect, embedding_dim: int, embedder_id: str, definitions: Path = DEFINITIONS_DIR
) -> list[int]:
    """Apply every pending migration, then every new or changed definition; return the versions
    applied now. Safe to call concurrently."""
    applied_now: list[int] = []
    lock = dialect.migration_lock_sql()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        if lock:
            while not conn.execute(lock[0], [_LOCK_KEY]).fetchone()[0]:  # type: ignore[index]
                time.sleep(0.05)
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {row[0]: row[1] for row in conn.execute("SELECT version, checksum FROM schema_version")}
            for version, name, sql in dialect.render_migrations(embedding_dim):
                checksum = hashlib.sha256(sql.encode()).hexdigest()
                if version in done:
                    if done[version] != checksum:
                        _recorded_differs(conn, dialect, version, done[version], checksum)
                    continue
                if sql.startswith(NO_TRANSACTION):
                    _run_outside_a_transaction(conn, sql)
                    conn.execute(
                        "INSERT INTO schema_version (version, name, checksum) VALUES (%s, %s, %s)",
                        [version, name, checksum],
                    )
                else:
                    with conn.transaction():
                        conn.execute(sql)
                        conn.execute(
                            "INSERT INTO schema_version (version, name, checksum) VALUES (%s, %s, %s)",
                            [version, name, checksum],
                        )
                applied_now.append(version)
                logger.info("migration applied", extra={"version": version, "migration": name})
            apply_definitions(conn, dialect, embedding_dim, definitions)
            _check_embedding_dim(conn, embedding_dim, embedder_id)
        finally:
            if lock:
                conn.execute(lock[1], [_LOCK_KEY])
    return applied_now


def _run_outside_a_transaction(conn: psycopg.Connection, sql: str) -> None:
    """A migration marked ``-- contextos: no transaction`` (``CREATE INDEX CONCURRENTLY`` cannot run
    in one): its statements one by one, each on its own; such a file holds plain statements, each
    ending with ``;`` at the end of a line (no function bodies). An index a killed build left
    invalid is dropped before it is built again (``IF NOT EXISTS`` would keep it)."""
    for statement in (s.strip() for s in re.split(r";[ \t]*(?:\n|$)", sql)):
        if not any(line.strip() and not line.strip().startswith("--") for line in statement.splitlines()):
            continue
        built = _CONCURRENT_INDEX.search(statement)
        if (
            built
            and conn.execute(
                "SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(%s) AND NOT indisvalid", [built.group(1)]
            ).fetchone()
        ):
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {built.group(1)}")
        conn.execute(statement)


def _recorded_differs(conn: psycopg.Connection, dialect: Dialect, version: int, recorded: str, checksum: str) -> None:
    if recorded in FOLDED_CHECKSUMS.get(dialect.name, {}).get(version, ()):
        conn.execute("UPDATE schema_version SET checksum = %s WHERE version = %s", [checksum, version])
        logger.info("migration record repaired: its functions are definitions now", extra={"version": version})
    else:
        logger.warning("applied migration differs from its file", extra={"version": version})


def apply_definitions(conn: psycopg.Connection, dialect: Dialect, embedding_dim: int, directory: Path) -> list[str]:
    """Apply each definition whose text differs from the one last applied (by checksum, recorded in
    ``schema_definitions``); return the names applied now. Runs after the versioned migrations, so a
    definition may use any table; a versioned migration must not call a definition's function (a
    fresh database has none yet). Definitions apply in name order."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_definitions ("
        " name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    done = {row[0]: row[1] for row in conn.execute("SELECT name, checksum FROM schema_definitions")}
    applied: list[str] = []
    for name, sql in dialect.render_definitions(embedding_dim, directory):
        checksum = hashlib.sha256(sql.encode()).hexdigest()
        if done.get(name) == checksum:
            continue
        with conn.transaction():
            conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_definitions (name, checksum) VALUES (%s, %s)"
                " ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()",
                [name, checksum],
            )
        applied.append(name)
        logger.info("definition applied", extra={"definition": name})
    return applied


def _check_embedding_dim(conn: psycopg.Connection, embedding_dim: int, embedder_id: str) -> None:
    """Record the store's embedder on first use; refuse a store built for another dimension."""
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES ('embedding_dim', %s), ('embedder_id', %s)"
        " ON CONFLICT (key) DO NOTHING",
        [str(embedding_dim), embedder_id],
    )
    row = conn.execute("SELECT value FROM store_meta WHERE key = 'embedding_dim'").fetchone()
    if row and int(row[0]) != embedding_dim:
        raise SchemaMismatch(
            f"the store holds {row[0]}-d vectors but the configured embedder gives {embedding_dim}-d;"
            " run `contextos reembed` or point CONTEXTOS_DATABASE_URL at another database"
        )
