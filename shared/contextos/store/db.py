"""Connections: a psycopg 3 pool with pgvector types, and tenant-scoped transactions.

Every connection runs as the ``contextos_app`` role, which row-level security always applies
to; every tenant transaction sets ``app.tenant_id`` for that transaction only, so a
connection returned to the pool carries no tenant.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeAlias
from urllib.parse import quote

import psycopg
from contextos.settings import Settings
from contextos.store.dialect import Dialect, get_dialect
from contextos.store.embedded import embedded_database_url
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

APP_ROLE = "contextos_app"

# Every pooled connection returns rows as dicts (the pool's row factory).
Conn: TypeAlias = psycopg.Connection[DictRow]


def resolve_database_url(settings: Settings) -> str:
    """An explicit URL wins; then a Secrets Manager secret (AWS); then the embedded database."""
    if settings.database_url:
        return settings.database_url
    if settings.database_secret_arn:
        from aws_lambda_powertools.utilities import parameters

        secret = parameters.get_secret(
            settings.database_secret_arn, transform="json", max_age=settings.secret_max_age_s
        )
        return conninfo_from_secret(secret, host=settings.database_host, dbname=settings.database_name)
    return embedded_database_url(settings.data_dir)


def conninfo_from_secret(secret: dict, *, host: str | None = None, dbname: str | None = None) -> str:
    """Build a DSN from an RDS-style secret ({host, port, username, password, dbname}) or {url}.

    ``host`` overrides the secret's (the RDS Proxy endpoint rather than the cluster's).
    """
    if "url" in secret:
        return str(secret["url"])
    user = quote(str(secret["username"]), safe="")
    password = quote(str(secret["password"]), safe="")
    host = host or secret["host"]
    port = secret.get("port", 5432)
    dbname = dbname or secret.get("dbname", "postgres")
    return f"postgresql://{user}:{password}@{host}:{port}/{dbname}?sslmode=require"


def one(row: DictRow | None) -> DictRow:
    """The row of a statement that always returns one (an aggregate, an upsert's ``RETURNING``)."""
    if row is None:
        raise RuntimeError("a single-row statement returned no row")
    return row


class Database:
    """The pool and the transactions the store runs in."""

    def __init__(self, conninfo: str, dialect: Dialect, *, min_size: int = 1, max_size: int = 8) -> None:
        self.conninfo = conninfo
        self.dialect = dialect
        self.pool: ConnectionPool[Conn] = ConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            configure=self._configure,
            open=True,
            name="contextos",
        )

    @staticmethod
    def _configure(conn: Conn) -> None:
        register_vector(conn)
        conn.execute(f"SET ROLE {APP_ROLE}")

    @contextmanager
    def tenant_tx(self, tenant_id: str) -> Iterator[Conn]:
        """One transaction in which row-level security shows only ``tenant_id``'s rows."""
        if not tenant_id:
            raise ValueError("a tenant transaction needs a tenant id")
        with self.pool.connection() as conn:
            # BEGIN and the setting in one round trip (a parameterless query may hold two statements);
            # every read path call is a transaction, so this is a round trip off each of them.
            conn.execute(sql.SQL("BEGIN; SELECT set_config('app.tenant_id', {}, true)").format(sql.Literal(tenant_id)))
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def tenant_read(self, tenant_id: str, *statements: tuple[str, Any]) -> list[dict]:
        """Read-only statements in one tenant transaction, sent with its BEGIN, tenant setting and
        COMMIT in a single round trip (psycopg pipeline mode); the last statement's rows. The read
        path's hot statements go through here: on a two-statement query, three round trips fewer."""
        if not tenant_id:
            raise ValueError("a tenant transaction needs a tenant id")
        with self.pool.connection() as conn:
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    conn.execute("SELECT set_config('app.tenant_id', %s, true)", [tenant_id])
                    cursors = [conn.execute(query, params) for query, params in statements]
                    conn.execute("COMMIT")
            except BaseException:
                conn.rollback()
                raise
            return cursors[-1].fetchall() if cursors else []

    @contextmanager
    def system_tx(self) -> Iterator[Conn]:
        """A transaction with no tenant: sees only the tables without row-level security."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        self.pool.close()


def open_database(settings: Settings) -> Database:
    from contextos.store.migrate import migrate

    conninfo = resolve_database_url(settings)
    dialect = get_dialect(settings.database_dialect, iterative_scan=settings.database_iterative_scan)
    migrate(conninfo, dialect, settings.embedding_dimensions, embedder_id_for(settings))
    return Database(conninfo, dialect, min_size=settings.pool_min_size, max_size=settings.pool_max_size)


def embedder_id_for(settings: Settings) -> str:
    if settings.embedder == "bedrock":
        return settings.bedrock.embedding_model_id
    return "local:all-MiniLM-L6-v2-int8"
