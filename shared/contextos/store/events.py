"""The lifecycle events' outbox: audit rows past a tenant's published position, and reminders whose
event has not gone out (migration 0050). Reads are set-based and bounded by ``limit``."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from contextos.ports.rows import AuditEventRow, ReminderEventRow, rows_of
from contextos.store.db import Database


@dataclass
class EventOutboxStore:
    db: Database

    def audit_after_cursor(self, tenant_id: str, limit: int) -> tuple[int, list[AuditEventRow]]:
        """(the chain position published so far, the entries after it — every action, so the position
        moves past those that are not events — with the memory's label, or the held candidate's for a
        review decision)."""
        with self.db.tenant_tx(tenant_id) as conn:
            cursor = conn.execute("SELECT chain_seq FROM event_cursors WHERE tenant_id = %s", [tenant_id]).fetchone()
            after = cursor["chain_seq"] if cursor else 0
            rows = conn.execute(
                """SELECT a.chain_seq, a.action, a.memory_id, a.at, a.actor, a.reason,
                          COALESCE(m.label, q.candidate->>'label') AS label
                   FROM audit_log a
                   LEFT JOIN memories m ON m.tenant_id = a.tenant_id AND m.id = a.memory_id
                   LEFT JOIN review_queue q ON q.tenant_id = a.tenant_id
                        AND a.action IN ('held', 'promoted') AND q.id::text = a.details->>'review_id'
                   WHERE a.tenant_id = %s AND a.chain_seq > %s
                   ORDER BY a.chain_seq LIMIT %s""",
                [tenant_id, after, limit],
            ).fetchall()
        return after, rows_of(AuditEventRow, rows)

    def advance(self, tenant_id: str, chain_seq: int) -> None:
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """INSERT INTO event_cursors (tenant_id, chain_seq) VALUES (%s, %s)
                   ON CONFLICT (tenant_id) DO UPDATE SET chain_seq = GREATEST(event_cursors.chain_seq,
                       EXCLUDED.chain_seq), updated_at = now()""",
                [tenant_id, chain_seq],
            )

    def unpublished_reminders(self, tenant_id: str, limit: int) -> list[ReminderEventRow]:
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT r.id, r.memory_id, r.opened_at, m.label FROM reminders r
                   LEFT JOIN memories m ON m.tenant_id = r.tenant_id AND m.id = r.memory_id
                   WHERE r.tenant_id = %s AND r.event_published_at IS NULL
                   ORDER BY r.opened_at, r.id LIMIT %s""",
                [tenant_id, limit],
            ).fetchall()
        return rows_of(ReminderEventRow, rows)

    def mark_reminders(self, tenant_id: str, ids: list[UUID]) -> None:
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                "UPDATE reminders SET event_published_at = now() WHERE tenant_id = %s AND id = ANY(%s)",
                [tenant_id, ids],
            )
