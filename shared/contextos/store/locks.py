"""The tenant lock: one row lock per tenant that serializes admission, the lifecycle's archive and
hard deletes (a row lock works in both dialects)."""

from __future__ import annotations

from contextos.store.db import Conn, one

LOCK_TENANT_SQL = """INSERT INTO tenants (tenant_id) VALUES (%s)
    ON CONFLICT (tenant_id) DO UPDATE SET hot_memories = tenants.hot_memories
    RETURNING hot_memories"""


def lock_tenant(conn: Conn, tenant_id: str) -> int:
    """Take the tenant's lock for the rest of the transaction; return its hot memory count (zero:
    nothing to merge with, so an admission can skip its lookups)."""
    row = one(conn.execute(LOCK_TENANT_SQL, [tenant_id]).fetchone())
    return int(row["hot_memories"])
