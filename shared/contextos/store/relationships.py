"""Reads of the typed edges between memories that services answer with."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from contextos.store.db import Conn


def outgoing(conn: Conn, tenant_id: str, memory_id: UUID, types: Sequence[str]) -> dict[str, list[UUID]]:
    """The memories ``memory_id`` points at, by edge type (only the given types), each list sorted."""
    rows = conn.execute(
        """SELECT dst_id, type FROM relationships
           WHERE tenant_id = %s AND src_id = %s AND type = ANY(%s::text[])""",
        [tenant_id, memory_id, list(types)],
    ).fetchall()
    found: dict[str, list[UUID]] = {t: [] for t in types}
    for row in rows:
        found[row["type"]].append(row["dst_id"])
    return {t: sorted(ids) for t, ids in found.items()}
