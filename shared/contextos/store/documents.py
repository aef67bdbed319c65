"""Documents (S4): an upload's row from queued through processing to done or failed, and what it taught.

Each method takes the tenant explicitly and filters on it even though row-level security
would too: RLS is the second wall, not the first.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from contextos.errors import NotFound
from contextos.models import DocumentRecord
from contextos.ports.rows import ClaimedDocument, DocumentMemory, UploadTicketRow, row_of, rows_of
from contextos.scopes import Scope
from contextos.store.db import Database
from contextos.store.scopes import set_document_scope
from psycopg.types.json import Jsonb

DOCUMENT_COLUMNS = (
    "id, filename, source_type, domain, provenance, status, error, counts, content_hash,"
    " created_at, updated_at, metadata"
)


class DocumentStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def create_document(
        self,
        tenant_id: str,
        *,
        content_hash: str,
        filename: str | None,
        content_type: str | None,
        provenance: str,
        size_bytes: int,
        raw_text: str | None = None,
        source_s3_key: str | None = None,
        upload_s3_key: str | None = None,
        metadata: dict[str, Any] | None = None,
        counts: dict[str, Any] | None = None,
        document_id: UUID | None = None,
        scope: Scope | None = None,
    ) -> tuple[DocumentRecord, bool]:
        """Insert a queued document (with ``document_id`` when one was promised, e.g. by an upload
        ticket) and, in the same transaction, who it is about (``scope``), or return the tenant's
        existing one with the same content (its scope as it was first written)."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant_id])
            row = conn.execute(
                f"""INSERT INTO documents (tenant_id, id, content_hash, filename, content_type, provenance,
                        size_bytes, raw_text, source_s3_key, upload_s3_key, metadata, counts)
                    VALUES (%s, COALESCE(%s, gen_random_uuid()), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                    ON CONFLICT (tenant_id, content_hash) DO NOTHING
                    RETURNING {DOCUMENT_COLUMNS}""",
                [
                    tenant_id,
                    document_id,
                    content_hash,
                    filename,
                    content_type,
                    provenance,
                    size_bytes,
                    raw_text,
                    source_s3_key,
                    upload_s3_key,
                    Jsonb(metadata or {}),
                    Jsonb(counts or {}),
                ],
            ).fetchone()
            if row:
                if scope is not None:
                    set_document_scope(conn, tenant_id, row["id"], scope)
                return DocumentRecord.model_validate(row), True
            existing = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE tenant_id = %s AND content_hash = %s",
                [tenant_id, content_hash],
            ).fetchone()
            return DocumentRecord.model_validate(existing), False

    def add_upload_ticket(
        self, tenant_id: str, object_key: str, document_id: UUID, provenance: str, scope: Scope
    ) -> None:
        """What a presigned upload promised: its document id, the caller's ceiling and scope."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant_id])
            conn.execute(
                """INSERT INTO upload_tickets (tenant_id, object_key, document_id, provenance, user_id, agent_id, tags)
                   VALUES (%s, %s, %s, %s, %s, %s, %s)""",
                [tenant_id, object_key, document_id, provenance, scope.user_id, scope.agent_id, scope.tags],
            )

    def upload_ticket(self, tenant_id: str, object_key: str) -> UploadTicketRow | None:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                """SELECT document_id, provenance, user_id, agent_id, tags FROM upload_tickets
                   WHERE tenant_id = %s AND object_key = %s""",
                [tenant_id, object_key],
            ).fetchone()
        return row_of(UploadTicketRow, row)

    def get_document(self, tenant_id: str, document_id: UUID) -> DocumentRecord:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE tenant_id = %s AND id = %s", [tenant_id, document_id]
            ).fetchone()
        if not row:
            raise NotFound(f"document {document_id} not found")
        return DocumentRecord.model_validate(row)

    def claim_document(self, tenant_id: str, document_id: UUID, *, stale_after_s: int) -> ClaimedDocument | None:
        """Move a queued document (or one whose worker died) to processing.

        None when it is finished, or another worker holds it right now: a redelivered
        message then does no work twice.
        """
        with self.db.tenant_tx(tenant_id) as conn:
            claimed = conn.execute(
                """UPDATE documents SET status = 'processing', attempts = attempts + 1, updated_at = now()
                   WHERE tenant_id = %s AND id = %s
                     AND (status = 'queued'
                          OR (status = 'processing' AND updated_at < now() - make_interval(secs => %s)))
                   RETURNING id, filename, content_type, provenance, raw_text, source_s3_key, upload_s3_key,
                             attempts, counts""",
                [tenant_id, document_id, stale_after_s],
            ).fetchone()
        return row_of(ClaimedDocument, claimed)

    def release_document(self, tenant_id: str, document_id: UUID, reason: str) -> None:
        """Hand a document back to the queue after a transient failure, keeping the reason."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE documents SET status = 'queued', error = %s, updated_at = now()
                   WHERE tenant_id = %s AND id = %s AND status = 'processing'""",
                [reason[:1000], tenant_id, document_id],
            )

    def fail_document(
        self, tenant_id: str, document_id: UUID, reason: str, counts: dict[str, Any] | None = None
    ) -> None:
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE documents SET status = 'failed', error = %s, counts = counts || %s, updated_at = now()
                   WHERE tenant_id = %s AND id = %s AND status <> 'done'""",
                [reason[:1000], Jsonb(counts or {}), tenant_id, document_id],
            )

    def finish_document(self, tenant_id: str, document_id: UUID, counts: dict[str, Any], *, source_type: str) -> None:
        """Done without an admission of its own (a dropped workspace file: its counts are the file's report)."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE documents SET status = 'done', error = NULL, source_type = %s, counts = %s,
                          updated_at = now()
                   WHERE tenant_id = %s AND id = %s""",
                [source_type, Jsonb(counts), tenant_id, document_id],
            )

    def memories_of_document(self, tenant_id: str, document_id: UUID) -> list[DocumentMemory]:
        """Every memory a document taught (document → memories)."""
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT DISTINCT m.id, m.label, m.type, m.importance, m.state
                   FROM memory_items i JOIN memories m ON m.tenant_id = i.tenant_id AND m.id = i.memory_id
                   WHERE i.tenant_id = %s AND i.document_id = %s AND m.forgotten_at IS NULL ORDER BY m.label""",
                [tenant_id, document_id],
            ).fetchall()
        return rows_of(DocumentMemory, rows)
