"""Presigned uploads (S11): a large file goes straight to the upload bucket under the caller's
tenant prefix, and the bucket's notification starts its ingestion (`IngestionService.ingest_upload`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from contextos.config import Settings
from contextos.management_models import UploadRequest, UploadTicket
from contextos.parsing import safe_filename


class Presigner(Protocol):
    def presigned_put(self, bucket: str, key: str, *, content_type: str | None, expires_s: int) -> str: ...


@dataclass
class UploadService:
    settings: Settings
    presigner: Presigner
    expires_s: int = 900

    def ticket(self, tenant_id: str, request: UploadRequest) -> UploadTicket:
        # A fresh folder per upload: two files with one name never overwrite each other.
        key = (
            f"{self.settings.upload_prefix}{tenant_id}/{uuid.uuid4().hex}/{safe_filename(request.filename) or 'upload'}"
        )
        url = self.presigner.presigned_put(
            self.settings.upload_bucket, key, content_type=request.content_type, expires_s=self.expires_s
        )
        return UploadTicket(
            url=url,
            key=key,
            headers={"Content-Type": request.content_type} if request.content_type else {},
            expires_at=datetime.now(UTC) + timedelta(seconds=self.expires_s),
        )
