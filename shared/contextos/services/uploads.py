"""Presigned uploads (S11): a large file goes straight to the upload bucket under the caller's
tenant prefix, and the bucket's notification starts its ingestion (`IngestionService.ingest_upload`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from contextos.management_models import UploadRequest, UploadTicket
from contextos.models import Provenance
from contextos.parsing import safe_filename
from contextos.scopes import Scope
from contextos.settings import Settings


class Presigner(Protocol):
    def presigned_put(self, bucket: str, key: str, *, content_type: str | None, expires_s: int) -> str: ...


class TicketBook(Protocol):
    def add_upload_ticket(
        self, tenant_id: str, object_key: str, document_id: uuid.UUID, provenance: str, scope: Scope
    ) -> None: ...


@dataclass
class UploadService:
    settings: Settings
    presigner: Presigner
    tickets: TicketBook
    expires_s: int = 900

    def ticket(
        self, tenant_id: str, request: UploadRequest, *, provenance: Provenance, scope: dict[str, object] | None = None
    ) -> UploadTicket:
        """A presigned PUT and the document id it will become; the ingest function applies the
        asking credential's provenance ceiling and scope (recorded here) when the object lands."""
        # A fresh folder per upload: two files with one name never overwrite each other.
        key = (
            f"{self.settings.upload_prefix}{tenant_id}/{uuid.uuid4().hex}/{safe_filename(request.filename) or 'upload'}"
        )
        document_id = uuid.uuid4()
        self.tickets.add_upload_ticket(tenant_id, key, document_id, provenance.value, Scope.model_validate(scope or {}))
        url = self.presigner.presigned_put(
            self.settings.upload_bucket, key, content_type=request.content_type, expires_s=self.expires_s
        )
        return UploadTicket(
            url=url,
            key=key,
            document_id=document_id,
            headers={"Content-Type": request.content_type} if request.content_type else {},
            expires_at=datetime.now(UTC) + timedelta(seconds=self.expires_s),
        )
