"""Governance in the store (S7, S3): the review queue, memory history and the audit chain's reads.

The contradiction gate's SQL is ``contextos.store.contradictions``; the audit writer is
``contextos.store.audit`` (both re-exported here for their existing callers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from contextos.errors import NotFound
from contextos.governance_models import HeldCandidate
from contextos.ports.rows import (
    AuditEntry,
    AuditEvent,
    ChainHead,
    DecidedReview,
    ReviewRow,
    UnchainedRow,
    VersionRow,
    row_of,
    rows_of,
)
from contextos.scopes import Scope
from contextos.store.audit import write_audit
from contextos.store.contradictions import insert_subject_terms
from contextos.store.db import Conn, Database
from psycopg.types.json import Jsonb

__all__ = ["GovernanceStore", "insert_subject_terms", "write_audit"]


@dataclass
class GovernanceStore:
    """The review queue, memory history and the audit chain's reads."""

    db: Database

    # -- the review queue ------------------------------------------------------------------
    @staticmethod
    def hold(
        conn: Conn,
        tenant_id: str,
        held: Sequence[HeldCandidate],
        *,
        actor: str,
        document_id: UUID | None = None,
        session_id: str | None = None,
        messages: tuple[int, int] | None = None,
        scope: Scope | None = None,
    ) -> list[UUID]:
        """Put held candidates in the review queue (and nowhere else), each audit-logged.
        ``messages``: the conversation range they came from, kept so a promotion points there;
        ``scope``: a manual write's own scope, kept so the promoted memory has it (a document's
        or a session's is read from it at promotion)."""
        if not held:
            return []
        rows = conn.execute(
            """INSERT INTO review_queue (tenant_id, candidate, provenance, trust, reason, document_id, session_id)
               SELECT %s, c, p, t, r, %s, %s FROM unnest(%s::jsonb[], %s::text[], %s::float8[], %s::text[])
                   WITH ORDINALITY AS h(c, p, t, r, n)
               ORDER BY n
               RETURNING id""",
            [
                tenant_id,
                document_id,
                session_id,
                [
                    Jsonb(
                        h.candidate.model_dump(mode="json")
                        | {"signals": h.signals}
                        | ({"messages": list(messages)} if messages else {})
                        | ({"scope": scope.model_dump(mode="json")} if scope and not scope.empty else {})
                    )
                    for h in held
                ],
                [h.candidate.provenance.value for h in held],
                [h.trust for h in held],
                [h.reason for h in held],
            ],
        ).fetchall()
        ids = [r["id"] for r in rows]
        write_audit(
            conn,
            tenant_id,
            [
                {
                    "actor": actor,
                    "action": "held",
                    "reason": h.reason,
                    "details": {
                        "review_id": str(review_id),
                        "provenance": h.candidate.provenance.value,
                        "trust": h.trust,
                        "signals": h.signals,
                        **({"document_id": str(document_id)} if document_id else {}),
                        **({"session_id": session_id} if session_id else {}),
                    },
                }
                for h, review_id in zip(held, ids, strict=True)
            ],
        )
        return ids

    def review_page(
        self, tenant_id: str, *, status: str, after: tuple[datetime, UUID] | None, limit: int
    ) -> list[ReviewRow]:
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT id, candidate, provenance, trust, reason, document_id, session_id, status, decided_by,
                          decided_at, decision_reason, created_at
                   FROM review_queue
                   WHERE tenant_id = %(tenant)s AND status = %(status)s
                     AND (%(after_at)s::timestamptz IS NULL OR (created_at, id) > (%(after_at)s, %(after_id)s::uuid))
                   ORDER BY created_at, id
                   LIMIT %(limit)s""",
                {
                    "tenant": tenant_id,
                    "status": status,
                    "after_at": after[0] if after else None,
                    "after_id": after[1] if after else None,
                    "limit": limit,
                },
            ).fetchall()
        return rows_of(ReviewRow, rows)

    @staticmethod
    def decide(
        conn: Conn, tenant_id: str, review_id: UUID, *, status: str, actor: str, reason: str
    ) -> DecidedReview | None:
        """Move a pending item to promoted or rejected; None when it is not pending (or not there)."""
        row = conn.execute(
            """UPDATE review_queue SET status = %s, decided_by = %s, decided_at = now(), decision_reason = %s
               WHERE tenant_id = %s AND id = %s AND status = 'pending'
               RETURNING id, candidate, provenance, trust, document_id, session_id""",
            [status, actor, reason, tenant_id, review_id],
        ).fetchone()
        if row:
            write_audit(
                conn,
                tenant_id,
                [
                    {
                        "actor": actor,
                        "action": status,
                        "reason": reason,
                        "details": {"review_id": str(review_id), "provenance": row["provenance"]},
                    }
                ],
            )
        return row_of(DecidedReview, row)

    def decide_alone(
        self, tenant_id: str, review_id: UUID, *, status: str, actor: str, reason: str
    ) -> DecidedReview | None:
        """``decide`` in a transaction of its own (a rejection: nothing else changes)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return self.decide(conn, tenant_id, review_id, status=status, actor=actor, reason=reason)

    def review_status(self, tenant_id: str, review_id: UUID) -> str:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                "SELECT status FROM review_queue WHERE tenant_id = %s AND id = %s", [tenant_id, review_id]
            ).fetchone()
        if not row:
            raise NotFound(f"review item {review_id} not found")
        return row["status"]

    # -- history ---------------------------------------------------------------------------
    def history(self, tenant_id: str, memory_id: UUID) -> tuple[list[VersionRow], list[AuditEvent]]:
        """The supersession chain through a memory (predecessors and successors), oldest first, and
        every audit entry about any version in it."""
        with self.db.tenant_tx(tenant_id) as conn:
            found = conn.execute(
                "SELECT 1 FROM memories WHERE tenant_id = %s AND id = %s", [tenant_id, memory_id]
            ).fetchone()
            if not found:
                raise NotFound(f"memory {memory_id} not found")
            versions = conn.execute(
                """WITH RECURSIVE back(id, depth) AS (
                       SELECT %(id)s::uuid, 0
                       UNION
                       SELECT m.id, b.depth + 1 FROM back b
                       JOIN memories m ON m.tenant_id = %(tenant)s AND m.superseded_by = b.id
                       WHERE b.depth < 1000
                   ),
                   fwd(id, depth) AS (
                       SELECT %(id)s::uuid, 0
                       UNION
                       SELECT m.superseded_by, f.depth + 1 FROM fwd f
                       JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = f.id
                       WHERE m.superseded_by IS NOT NULL AND f.depth < 1000
                   )
                   SELECT m.id, m.label, m.definition, m.state, m.provenance, m.base_trust, m.valid_from, m.valid_to,
                          m.recorded_at, m.superseded_at, m.superseded_by, m.ingest_seq
                   FROM memories m
                   WHERE m.tenant_id = %(tenant)s AND m.id IN (SELECT id FROM back UNION SELECT id FROM fwd)
                   ORDER BY m.valid_from, m.ingest_seq""",
                {"tenant": tenant_id, "id": memory_id},
            ).fetchall()
            events = conn.execute(
                """SELECT chain_seq, at, actor, action, memory_id, reason, details FROM audit_log
                   WHERE tenant_id = %s AND (memory_id = ANY(%s) OR details->>'by' = ANY(%s))
                   ORDER BY chain_seq""",
                [tenant_id, [v["id"] for v in versions], [str(v["id"]) for v in versions]],
            ).fetchall()
        return rows_of(VersionRow, versions), rows_of(AuditEvent, events)

    # -- the audit chain -------------------------------------------------------------------
    def audit_page(self, tenant_id: str, *, after: int, limit: int, memory_id: UUID | None = None) -> list[AuditEntry]:
        """Entries in chain order after ``after`` (keyset), with the columns the hash covers."""
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT tenant_id, seq, chain_seq, id, at, actor, action, memory_id, reason, details,
                          details::text AS details_text, prev_hash, hash
                   FROM audit_log
                   WHERE tenant_id = %(tenant)s AND COALESCE(chain_seq, 0) > %(after)s
                     AND (%(memory)s::uuid IS NULL OR memory_id = %(memory)s::uuid)
                   ORDER BY chain_seq NULLS FIRST, seq
                   LIMIT %(limit)s""",
                {"tenant": tenant_id, "after": after, "limit": limit, "memory": memory_id},
            ).fetchall()
        return rows_of(AuditEntry, rows)

    def unchained(self, tenant_id: str) -> list[UnchainedRow]:
        """Rows that carry no place in the chain (written around the trigger)."""
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                "SELECT seq, id FROM audit_log WHERE tenant_id = %s AND chain_seq IS NULL ORDER BY seq", [tenant_id]
            ).fetchall()
        return rows_of(UnchainedRow, rows)

    def audit_head(self, tenant_id: str) -> ChainHead | None:
        with self.db.tenant_tx(tenant_id) as conn:
            head = conn.execute(
                "SELECT chain_seq, hash FROM audit_chain_heads WHERE tenant_id = %s", [tenant_id]
            ).fetchone()
        return row_of(ChainHead, head)

    def audit_tenants(self) -> list[str]:
        """Every tenant (the tenants table has no row-level security)."""
        with self.db.system_tx() as conn:
            return [r["tenant_id"] for r in conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")]
