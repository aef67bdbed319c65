"""The document ledger (S4): queued → processing → done or failed, what each taught, and the upload
tickets that promise a document its id, provenance and scope."""

from __future__ import annotations

from typing import Any, Protocol
from uuid import UUID

from contextos.models import DocumentRecord
from contextos.ports.rows import ClaimedDocument, DocumentMemory, UploadTicketRow
from contextos.scopes import Scope


class DocumentPort(Protocol):
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
    ) -> tuple[DocumentRecord, bool]: ...

    def add_upload_ticket(
        self, tenant_id: str, object_key: str, document_id: UUID, provenance: str, scope: Scope
    ) -> None: ...

    def upload_ticket(self, tenant_id: str, object_key: str) -> UploadTicketRow | None: ...

    def get_document(self, tenant_id: str, document_id: UUID) -> DocumentRecord: ...

    def claim_document(self, tenant_id: str, document_id: UUID, *, stale_after_s: int) -> ClaimedDocument | None: ...

    def release_document(self, tenant_id: str, document_id: UUID, reason: str) -> None: ...

    def fail_document(
        self, tenant_id: str, document_id: UUID, reason: str, counts: dict[str, Any] | None = None
    ) -> None: ...

    def finish_document(self, tenant_id: str, document_id: UUID, counts: dict[str, Any], *, source_type: str) -> None:
        """Done without an admission of its own (a dropped workspace file: its counts are the file's report)."""
        ...

    def memories_of_document(self, tenant_id: str, document_id: UUID) -> list[DocumentMemory]: ...
