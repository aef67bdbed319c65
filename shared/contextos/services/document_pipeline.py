"""Documents distilled (S4 steps 1-7): a claimed document is parsed, screened, extracted,
validated, embedded and admitted, alone or with the other documents of its queue batch.

The claim → run → retry ledger (``contextos.jobs.run_claimed``) decides how each ends: done,
failed with a reason, or handed back for a retry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar
from uuid import UUID

from contextos.embedding import Embedder
from contextos.errors import PermanentError
from contextos.extraction import ConceptExtractor
from contextos.faults import crash_point
from contextos.jobs import ClaimLedger, run_claimed
from contextos.messages import ingest_message
from contextos.models import Concept, DocumentJob, Provenance
from contextos.normalization import estimate_tokens, norm_key
from contextos.observability import logger, metrics
from contextos.parsing import pack_sections, parse_document, split_sections
from contextos.passages import keep_every_passage
from contextos.ports.admission import AdmissionPort
from contextos.ports.documents import DocumentPort
from contextos.ports.rows import ClaimedDocument
from contextos.redaction import RedactionPolicy, merge_counts
from contextos.services.admission import Admission, AdmissionResult, PreparedAdmission
from contextos.services.firewall import HOLD_REASON, ContainsSecret, Firewall, secret_reason
from contextos.settings import Settings
from contextos.sources import DocumentSource

MAX_ATTEMPTS = 3


class BlobStore(Protocol):
    def put(self, bucket: str, key: str, data: bytes, *, content_type: str = ...) -> None: ...
    def get(self, bucket: str, key: str, *, max_bytes: int | None = None) -> bytes: ...
    def delete(self, bucket: str, key: str) -> None: ...


@dataclass
class DocumentPipeline:
    settings: Settings
    documents: DocumentPort
    admissions: AdmissionPort
    blobs: BlobStore
    extractor: ConceptExtractor
    embedder: Embedder
    firewall: Firewall  # the write firewall (S7), on the parsed text

    # -- the work ----------------------------------------------------------------------------
    def process(self, job: DocumentJob, *, data: bytes | None = None) -> None:
        """Run S4 steps 1-7 for one document. Permanent problems end as ``failed``; transient ones raise."""
        tenant_id, document_id = job.tenant_id, job.document_id
        claimed = self._claim(job)
        run_claimed(
            claimed,
            lambda job: self._run(tenant_id, document_id, job, self._load(job) if data is None else data),
            self._ledger(job),
        )

    def process_batch(self, bodies: Mapping[str, str]) -> dict[str, Exception | None]:
        """The document jobs among an SQS batch's message bodies (by message id), processed together
        (``process_jobs``); the outcome of each, by message id. Other messages, and bodies that fit
        no message, are left to ``handle_message``, after the record's idempotency check. A message
        whose job was handled before does no work here: its document is not claimable."""
        jobs: dict[str, DocumentJob] = {}
        for message_id, body in bodies.items():
            try:
                message = ingest_message(body)
            except ValueError:  # the record fails on its own, after its idempotency check
                continue
            if isinstance(message, DocumentJob):
                jobs[message_id] = message
        return dict(zip(jobs, self.process_jobs(list(jobs.values())), strict=True))

    def process_jobs(self, jobs: Sequence[DocumentJob]) -> list[Exception | None]:
        """S4 for an ingest queue batch: steps 1-6 document by document, then step 7 for each tenant's
        documents together, in one transaction under one tenant lock and one commit
        (``Admission.store_documents``). When that fails, the tenant's documents are admitted one by
        one, so one bad document never costs the others. Each job ends exactly as ``process`` would
        end it (done, failed, or handed back); each entry is what ``process`` would have raised."""
        outcomes: list[Exception | None] = [None] * len(jobs)
        ready: dict[str, list[_Ready]] = {}
        for i, job in enumerate(jobs):
            outcomes[i] = _outcome(partial(self._prepare_job, i, job, ready))
        for tenant_id, group in ready.items():
            results = self._store_together(tenant_id, group) if len(group) > 1 else None
            for n, r in enumerate(group):
                outcomes[r.index] = _outcome(partial(self._finish_job, r, results[n] if results else None))
        return outcomes

    def _prepare_job(self, index: int, job: DocumentJob, ready: dict[str, list[_Ready]]) -> None:
        """Claim a batch's document and run steps 1-6 on it, under its ledger."""

        def prepare(claimed: ClaimedDocument) -> None:
            prepared = self._prepare(job.tenant_id, job.document_id, claimed, self._load(claimed))
            ready.setdefault(job.tenant_id, []).append(_Ready(index, job, claimed, prepared))

        run_claimed(self._claim(job), prepare, self._ledger(job))

    def _store_together(self, tenant_id: str, group: Sequence[_Ready]) -> list[AdmissionResult] | None:
        """One tenant's prepared documents in one transaction; None when that failed (nothing written)."""
        try:
            return self.admission.store_documents(tenant_id, [r.prepared for r in group])
        except Exception as exc:
            logger.info(
                "batched admission failed; admitting one by one",
                extra={"documents": len(group), "error": type(exc).__name__},
            )
            return None

    def _finish_job(self, ready: _Ready, stored: AdmissionResult | None) -> None:
        """A prepared document's step 7 under its ledger: admitted with its batch (``stored``) or alone."""
        job = ready.job

        def finish(_: ClaimedDocument) -> None:
            self._admitted(job, stored or self.admission.store_prepared(job.tenant_id, ready.prepared))

        run_claimed(ready.claimed, finish, self._ledger(job))

    def _claim(self, job: DocumentJob) -> ClaimedDocument | None:
        return self.documents.claim_document(
            job.tenant_id, job.document_id, stale_after_s=self.settings.document_stale_processing_s
        )

    def _ledger(self, job: DocumentJob) -> ClaimLedger:
        tenant_id, document_id = job.tenant_id, job.document_id
        return ClaimLedger(
            noun="document",
            log_extra={"document_id": str(document_id)},
            failed_metric="DocumentsFailed",
            max_attempts=MAX_ATTEMPTS,
            fail=lambda reason: self.documents.fail_document(tenant_id, document_id, reason),
            release=lambda reason: self.documents.release_document(tenant_id, document_id, reason),
        )

    def _load(self, claimed: ClaimedDocument) -> bytes:
        if claimed["raw_text"] is not None:
            return claimed["raw_text"].encode("utf-8")
        if claimed["source_s3_key"]:
            return self.blobs.get(self.settings.raw_bucket_name, claimed["source_s3_key"])
        if claimed["upload_s3_key"]:
            return self.blobs.get(
                self.settings.upload_bucket, claimed["upload_s3_key"], max_bytes=self.settings.max_document_bytes
            )
        raise PermanentError("the document has no stored content")

    def _run(self, tenant_id: str, document_id: UUID, claimed: ClaimedDocument, data: bytes) -> None:
        prepared = self._prepare(tenant_id, document_id, claimed, data)
        self._admitted(
            DocumentJob(tenant_id=tenant_id, document_id=document_id),
            self.admission.store_prepared(tenant_id, prepared),
        )

    def _prepare(self, tenant_id: str, document_id: UUID, claimed: ClaimedDocument, data: bytes) -> PreparedAdmission:
        """S4 steps 1-6 and the trust gate: the document ready for the store."""
        parsed = parse_document(data, filename=claimed["filename"], declared_type=claimed["content_type"])
        crash_point("ingest:after_parse")
        screened = self.firewall.screen(
            tenant_id, [parsed.text], what="document", document_id=document_id, reject=False
        )
        if screened.found:
            self._drop_raw_objects(claimed)  # refused or redacted, the file as sent goes
            if screened.policy is RedactionPolicy.reject:
                raise ContainsSecret(secret_reason(screened.counts))
        parsed = parsed.model_copy(update={"text": screened.texts[0]}) if screened.found else parsed
        redactions = merge_counts((claimed.get("counts") or {}).get("redactions") or {}, screened.counts)
        extracted, calls = self._extract(parsed.text, parsed.domain)
        crash_point("ingest:after_extraction")
        concepts, deduplicated = deduplicate(extracted, self.settings.extraction.generic_modifiers)
        cfg = self.settings.extraction
        kept = keep_every_passage(
            parsed.text,
            claimed["filename"] or "document",
            concepts,
            chars=cfg.passage_chars,
            min_words=cfg.passage_min_words,
        )
        raw_text, raw_key = self._keep_raw_text(tenant_id, document_id, parsed.text)
        source = DocumentSource(
            document_id=document_id,
            provenance=Provenance(claimed["provenance"]),
            source_type=parsed.source_type,
            domain=parsed.domain,
            counts={
                "extraction_calls": calls,
                "extracted": len(extracted),
                "deduplicated": deduplicated,
                "passages_kept": len(kept),
                "tokens_estimated": estimate_tokens(parsed.text),
            }
            | ({"redactions": redactions} if redactions else {}),
            raw_text=raw_text,
            raw_s3_key=raw_key,
        )
        # ``hold`` counts what was redacted at submission too (a text body is redacted before its row)
        hold = HOLD_REASON if redactions and self.firewall.policy(tenant_id) is RedactionPolicy.hold else None
        return self.admission.prepare(tenant_id, [*concepts, *kept], source, source_text=parsed.text, hold_reason=hold)

    def _drop_raw_objects(self, claimed: ClaimedDocument) -> None:
        """The file as sent (a raw source object, an upload) still holds what was redacted: its
        parsed, redacted text is kept instead, so the raw object goes."""
        if claimed["source_s3_key"]:
            self.blobs.delete(self.settings.raw_bucket_name, claimed["source_s3_key"])
        if claimed["upload_s3_key"]:
            self.blobs.delete(self.settings.upload_bucket, claimed["upload_s3_key"])

    def _admitted(self, job: DocumentJob, admitted: AdmissionResult) -> None:
        """After a document's admission (its memories took its scope in that transaction): the metrics."""
        result = admitted.stored
        metrics.add_metric(name="MemoriesCreated", unit="Count", value=result.created)
        metrics.add_metric(name="MemoriesMerged", unit="Count", value=result.merged)

    @property
    def admission(self) -> Admission:
        return Admission(settings=self.settings, store=self.admissions, embedder=self.embedder)

    def _keep_raw_text(self, tenant_id: str, document_id: UUID, text: str) -> tuple[str | None, str | None]:
        """S4 step 5: the parsed text inline when small, else in the raw bucket under a stable key."""
        encoded = text.encode("utf-8")
        if len(encoded) <= self.settings.inline_text_max_bytes:
            return text, None
        key = f"{self.settings.raw_prefix}{tenant_id}/{document_id}/text.txt"
        self.blobs.put(self.settings.raw_bucket_name, key, encoded, content_type="text/plain; charset=utf-8")
        return None, key

    def _extract(self, text: str, domain: str) -> tuple[list[Concept], int]:
        """One call when the document fits the window; otherwise section by section, each call
        given the labels already extracted (S4 step 3). Returns the concepts and the call count."""
        cfg = self.settings.extraction
        if estimate_tokens(text) <= cfg.window_tokens:
            return self.extractor.extract(text, domain=domain, known=[]), 1
        chunks = pack_sections(split_sections(text, domain), cfg.window_tokens)
        if len(chunks) > cfg.max_calls_per_document:
            raise PermanentError(
                f"the document needs {len(chunks)} extraction calls of {cfg.window_tokens} tokens;"
                f" the limit is {cfg.max_calls_per_document}"
            )
        concepts: list[Concept] = []
        for chunk in chunks:
            concepts.extend(self.extractor.extract(chunk, domain=domain, known=[c.label for c in concepts]))
        return concepts, len(chunks)


@dataclass(frozen=True)
class _Ready:
    """A claimed document of a batch, prepared for the store (``IngestionService.process_jobs``)."""

    index: int
    job: DocumentJob
    claimed: ClaimedDocument
    prepared: PreparedAdmission


def _outcome(work: Callable[[], None]) -> Exception | None:
    """What ``work`` raised, or None."""
    try:
        work()
    except Exception as exc:  # handed to the caller, per job
        return exc
    return None


AnyConcept = TypeVar("AnyConcept", bound=Concept)  # conversations deduplicate their TurnConcepts


def deduplicate(concepts: list[AnyConcept], generic_modifiers: list[str]) -> tuple[list[AnyConcept], int]:
    """The one deduplication pass after sectioned extraction: one concept per normalized key,
    keeping the most important (then longest) definition and the union of related labels."""
    merged: dict[str, AnyConcept] = {}
    for concept in concepts:
        key = norm_key(concept.label, generic_modifiers)
        current = merged.get(key)
        if current is None:
            merged[key] = concept
            continue
        best, other = (
            (concept, current)
            if (concept.importance, len(concept.definition)) > (current.importance, len(current.definition))
            else (current, concept)
        )
        related = list(dict.fromkeys([*best.related, *other.related]))
        merged[key] = best.model_copy(update={"related": related})
    return list(merged.values()), len(concepts) - len(merged)
