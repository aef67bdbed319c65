"""The one way entries reach ``audit_log`` (S3): set-based, inside the caller's transaction.

The hash chain (each entry carrying the hash of the one before) is the database's job, so no
caller computes hashes: an entry is written together with the change it records, or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb


@dataclass(frozen=True, slots=True)
class AuditEntry:
    actor: str
    action: str  # admitted, held, promoted, rejected, merged, superseded, reinforced, archived, reactivated, deleted
    memory_id: UUID | None = None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def append_audit(conn: Any, tenant_id: str, entries: Sequence[AuditEntry]) -> None:
    """Append entries in one statement, in the given order, in the caller's transaction."""
    if not entries:
        return
    conn.execute(
        """INSERT INTO audit_log (tenant_id, actor, action, memory_id, reason, details)
           SELECT %s, a, act, m, r, d
           FROM unnest(%b::text[], %b::text[], %b::uuid[], %b::text[], %b::jsonb[]) WITH ORDINALITY
               AS e(a, act, m, r, d, n)
           ORDER BY n""",
        [
            tenant_id,
            [e.actor for e in entries],
            [e.action for e in entries],
            [e.memory_id for e in entries],
            [e.reason for e in entries],
            [Jsonb(e.details) for e in entries],
        ],
    )
