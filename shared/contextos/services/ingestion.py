"""Documents in (S4): accept an upload once per content (the API, the upload bucket, a workspace file),
then hand it to the pipeline (``contextos.services.document_pipeline``): parse → extract → validate →
embed → admit."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote_plus
from uuid import UUID

from contextos.errors import BadRequest, NotFound, PayloadTooLarge
from contextos.jobs import IngestMessage, JobQueue, S3Notification, S3TestEvent
from contextos.models import (
    DocumentAccepted,
    DocumentCreate,
    DocumentJob,
    DocumentRecord,
    DocumentStatus,
    Provenance,
)
from contextos.observability import logger, metrics
from contextos.parsing import content_hash, safe_filename
from contextos.ports.documents import DocumentPort
from contextos.redaction import RedactionPolicy, redact
from contextos.scopes import Scope
from contextos.services.document_pipeline import BlobStore, DocumentPipeline
from contextos.services.firewall import Firewall, secret_reason
from contextos.settings import Settings
from contextos.tenancy import valid_tenant
from contextos.workspace.format import has_frontmatter


@dataclass
class IngestionService:
    settings: Settings
    documents: DocumentPort
    blobs: BlobStore
    queue: JobQueue
    pipeline: DocumentPipeline  # what a queued or uploaded document goes through
    firewall: Firewall  # the write firewall (S7), before anything is stored
    # A frontmatter markdown file is a workspace memory (S10): (tenant, key, name, bytes, ceiling) → its
    # document, or None when the file is an ordinary document.
    workspace_upload: Callable[[str, str, str, bytes, Provenance], DocumentRecord | None] | None = None

    # -- the way in through the API -----------------------------------------------------------
    def submit(self, tenant_id: str, request: DocumentCreate) -> DocumentAccepted:
        """Accept a document once per content: a duplicate returns the existing one and does no work."""
        data = self._request_bytes(request)
        if not data.strip():
            raise BadRequest("the document is empty")
        if len(data) > self.settings.max_document_bytes:
            raise PayloadTooLarge(f"the document is {len(data)} bytes; the limit is {self.settings.max_document_bytes}")
        digest = content_hash(data)  # of what was sent: the same text sent again is the same document
        text, counts = request.text, {}
        if text is not None:
            # A text is redacted before it is stored anywhere (row, raw object); a binary file
            # is parsed and redacted by the worker, which then deletes its raw object.
            screened = self.firewall.screen(tenant_id, [text], what="document", reject=False)
            if screened.found:
                if screened.policy is RedactionPolicy.reject:
                    return self._refuse_secret(tenant_id, request, digest, screened.counts)
                text, counts = screened.texts[0], {"redactions": screened.counts}
                data = text.encode("utf-8")
        inline_text, source_key = None, None
        if text is not None and len(data) <= self.settings.inline_text_max_bytes:
            inline_text = text
        else:
            source_key = f"{self.settings.raw_prefix}{tenant_id}/{digest}/source"
            self.blobs.put(self.settings.raw_bucket_name, source_key, data)
        record, created = self.documents.create_document(
            tenant_id,
            content_hash=digest,
            filename=safe_filename(request.filename),
            content_type=request.content_type,
            provenance=request.provenance.value,
            size_bytes=len(data),
            raw_text=inline_text,
            source_s3_key=source_key,
            metadata=request.metadata,
            counts=counts,
            scope=Scope(user_id=request.user_id, agent_id=request.agent_id, run_id=request.run_id, tags=request.tags),
        )
        if created or record.status == "queued":
            self.queue.send(DocumentJob(tenant_id=tenant_id, document_id=record.id).model_dump(mode="json"))
        metrics.add_metric(name="DocumentsSubmitted", unit="Count", value=1)
        return DocumentAccepted(id=record.id, status=record.status, duplicate=not created)

    def _refuse_secret(
        self, tenant_id: str, request: DocumentCreate, digest: str, counts: dict[str, int]
    ) -> DocumentAccepted:
        """Under ``reject``: the document is recorded as failed with ``contains_secret`` and no text."""
        record, created = self.documents.create_document(
            tenant_id,
            content_hash=digest,
            filename=safe_filename(request.filename),
            content_type=request.content_type,
            provenance=request.provenance.value,
            size_bytes=0,
            metadata=request.metadata,
        )
        if created:
            self.documents.fail_document(tenant_id, record.id, secret_reason(counts), {"redactions": counts})
        status = DocumentStatus.failed if created else record.status
        return DocumentAccepted(id=record.id, status=status, duplicate=not created)

    def get(self, tenant_id: str, document_id: UUID) -> DocumentRecord:
        return self.documents.get_document(tenant_id, document_id)

    @staticmethod
    def _request_bytes(request: DocumentCreate) -> bytes:
        if (request.text is None) == (request.content_base64 is None):
            raise BadRequest("give exactly one of 'text' or 'content_base64'")
        if request.text is not None:
            return request.text.encode("utf-8")
        try:
            return base64.b64decode(request.content_base64 or "", validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadRequest("'content_base64' is not valid base64") from exc

    # -- the ingest queue ---------------------------------------------------------------------
    def handle_message(self, message: IngestMessage) -> None:
        """One SQS message: our own document job, or an S3 notification about uploads."""
        match message:
            case S3TestEvent():
                return  # S3 sends one when the notification is configured
            case S3Notification():
                for record in message.Records:
                    s3 = record.s3
                    bucket, key = (s3.bucket.name, s3.object.key) if s3 else (None, None)
                    if record.eventName.startswith("ObjectCreated") and bucket and key:
                        self.ingest_upload(bucket, key)
            case DocumentJob():
                self.process(message)

    # -- the way in through the upload bucket --------------------------------------------------
    def ingest_upload(self, bucket: str, raw_key: str) -> DocumentRecord | None:
        """An object under ``uploads/<tenant>/…``: record it once, then process it here."""
        key = unquote_plus(raw_key)
        prefix = self.settings.upload_prefix
        rest = key[len(prefix) :] if key.startswith(prefix) else ""
        tenant_id, _, name = rest.partition("/")
        if not valid_tenant(tenant_id) or not name:
            logger.warning("upload outside a tenant prefix ignored", extra={"bucket": bucket, "key_length": len(key)})
            metrics.add_metric(name="UploadsRejected", unit="Count", value=1)
            return None
        try:
            data = self.blobs.get(bucket, key, max_bytes=self.settings.max_document_bytes)
        except PayloadTooLarge as exc:
            return self._record_refused_upload(tenant_id, key, name, exc.message)
        except NotFound:
            logger.info("uploaded object is gone; nothing to ingest")
            return None
        # A ticketed upload carries its credential's ceiling and scope; a bare drop, the bucket's.
        ticket = self.documents.upload_ticket(tenant_id, key)
        provenance = Provenance(ticket["provenance"]) if ticket else self.settings.upload_drop_provenance
        if self.workspace_upload and name.lower().endswith((".md", ".markdown")) and has_frontmatter(data):
            record = self.workspace_upload(tenant_id, key, name, data, provenance)
            if record is not None:
                if redact(data.decode("utf-8", errors="replace")).found:
                    self.blobs.delete(bucket, key)  # its memory keeps the redacted text; the file goes
                return record
        record, _ = self.documents.create_document(
            tenant_id,
            content_hash=content_hash(data),
            filename=safe_filename(name),
            content_type=None,
            provenance=provenance.value,
            size_bytes=len(data),
            upload_s3_key=key,
            document_id=ticket["document_id"] if ticket else None,
            scope=Scope(user_id=ticket["user_id"], agent_id=ticket["agent_id"], tags=ticket["tags"])
            if ticket
            else None,
        )
        if record.status not in ("queued", "processing"):
            return record  # the same content was ingested before: no work
        self.process(DocumentJob(tenant_id=tenant_id, document_id=record.id), data=data)
        return self.documents.get_document(tenant_id, record.id)

    def _record_refused_upload(self, tenant_id: str, key: str, name: str, reason: str) -> DocumentRecord:
        record, _ = self.documents.create_document(
            tenant_id,
            content_hash=content_hash(f"refused:{key}".encode()),
            filename=safe_filename(name),
            content_type=None,
            provenance=Provenance.user_upload.value,
            size_bytes=0,
            upload_s3_key=key,
        )
        self.documents.fail_document(tenant_id, record.id, reason)
        return self.documents.get_document(tenant_id, record.id)

    def process(self, job: DocumentJob, *, data: bytes | None = None) -> None:
        """S4 steps 1-7 for one document (``DocumentPipeline.process``)."""
        self.pipeline.process(job, data=data)

    def process_batch(self, bodies: Mapping[str, str]) -> dict[str, Exception | None]:
        """The document jobs among an SQS batch's message bodies (``DocumentPipeline.process_batch``)."""
        return self.pipeline.process_batch(bodies)
