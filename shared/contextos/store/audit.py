"""The audit log's writer: rows appended in one statement; the database chains them (migration 0011)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextos.store.batch import Writes
from psycopg.types.json import Jsonb


def write_audit(conn: Writes, tenant_id: str, entries: Sequence[dict[str, Any]]) -> None:
    """Append audit rows in one statement (the database chains them: migration 0011)."""
    if not entries:
        return
    conn.execute(
        """INSERT INTO audit_log (tenant_id, actor, action, memory_id, reason, details)
           SELECT %s, a, c, m, r, d FROM unnest(%s::text[], %s::text[], %s::uuid[], %s::text[], %s::jsonb[])
               AS t(a, c, m, r, d)""",
        [
            tenant_id,
            [e["actor"] for e in entries],
            [e["action"] for e in entries],
            [e.get("memory_id") for e in entries],
            [e.get("reason") for e in entries],
            [Jsonb(e.get("details") or {}) for e in entries],
        ],
    )
