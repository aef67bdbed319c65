"""Workspace files in (S10): every file gets its own report line, and a bad file never fails the rest.

A file is parsed, screened by the write firewall, capped at the credential's provenance ceiling and
keyed here; whether it edits a stored memory (and what the edit changes) is decided against the
stored row as read before the transaction, and its text is embedded then too. The batch then goes
through admission like every other way in (``AdmissionPort.admit_workspace``): the trust gate's
holds to the review queue, the contradiction gate for new active memories, one memory writer, an
audit row for each create and edit, and each edit applied only over the version it was made on.
Plain markdown goes to S4 as a document.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from contextos.decay import decay_rate
from contextos.embedding import Embedder
from contextos.errors import ContextOSError
from contextos.governance_models import HeldCandidate
from contextos.models import DocumentAccepted, DocumentCreate, MemoryCandidate, Provenance
from contextos.normalization import norm_key
from contextos.observability import metrics
from contextos.ports.admission import AdmissionPort, FileOutcome, GivenEdit, GivenMemory, GivenSource, WorkspaceBatch
from contextos.ports.workspace import WorkspaceReads
from contextos.redaction import RedactionPolicy
from contextos.services.firewall import Firewall, secret_reason
from contextos.services.governance import TrustGate, firewall_label
from contextos.services.workspace_export import memory_of_row
from contextos.settings import Settings
from contextos.trust import cap_provenance
from contextos.workspace.format import Limits, WorkspaceFileError, content_hash, parse_file
from contextos.workspace.model import FileReport, WorkspaceMemory


@dataclass
class Plan:
    """One parsed file on its way in."""

    report: FileReport
    memory: WorkspaceMemory | None = None
    provenance: Provenance = Provenance.user_upload
    key: str = ""
    hold_reason: str | None = None  # the firewall's ``hold`` policy: to review, masked
    file_id: UUID | None = None  # the id the file carries, whether or not it could be applied


@dataclass(frozen=True)
class Asked:
    """Who imports, at what provenance ceiling, unlocking which protected memories, and for which
    dropped file's document."""

    actor: str
    ceiling: Provenance
    unlock: set[UUID]
    document_id: UUID | None = None


@dataclass
class Edit:
    """A file's change to a stored memory, decided before the transaction."""

    plan: Plan
    version: int
    changes: dict
    changed: list[str]
    key_must_be_free: bool


@dataclass
class WorkspaceImporter:
    settings: Settings
    admissions: AdmissionPort
    reads: WorkspaceReads
    embedders: Callable[[], Embedder]  # loaded at the first file that needs a vector
    firewall: Firewall  # the write firewall (S7) on every imported file
    submit_document: Callable[[str, DocumentCreate], DocumentAccepted] | None = None
    limits: Limits | None = None
    page_size: int = 500

    def plans(
        self,
        tenant_id: str,
        files: Sequence[tuple[str, bytes]],
        *,
        actor: str,
        ceiling: Provenance,
        unlock: set[UUID],
        document_id: UUID | None = None,
    ) -> list[Plan]:
        """Every file's plan (with its report), the files taken in batches of ``page_size``."""
        asked = Asked(actor, ceiling, unlock, document_id)
        return [
            plan
            for start in range(0, len(files), self.page_size)
            for plan in self._batch(tenant_id, files[start : start + self.page_size], asked)
        ]

    def _batch(self, tenant_id: str, files: Sequence[tuple[str, bytes]], asked: Asked) -> list[Plan]:
        plans: list[Plan] = []
        documents: list[tuple[Plan, bytes]] = []
        seen_ids: set[UUID] = set()
        for path, data in files:
            plan = Plan(report=FileReport(path=path, status="failed"))
            plans.append(plan)
            try:
                memory = parse_file(path, data, self.limits or Limits())
            except WorkspaceFileError as exc:
                plan.report.code, plan.report.reason = exc.code, exc.reason
                continue
            if memory is None:
                documents.append((plan, data))
                continue
            self._plan_memory(tenant_id, plan, memory, seen_ids, actor=asked.actor, ceiling=asked.ceiling)
        for plan, data in documents:
            self._as_document(tenant_id, plan, data, asked.ceiling)
        parsed = [p for p in plans if p.memory is not None]
        if parsed:
            self._admit(tenant_id, parsed, actor=asked.actor, unlock=asked.unlock, document_id=asked.document_id)
            self.admissions.settle_vectors(tenant_id, limit=self.settings.merge.settle_batch)
        metrics.add_metric(name="WorkspaceFilesImported", unit="Count", value=len(files))
        return plans

    def _plan_memory(
        self,
        tenant_id: str,
        plan: Plan,
        memory: WorkspaceMemory,
        seen_ids: set[UUID],
        *,
        actor: str,
        ceiling: Provenance,
    ) -> None:
        """A memory file's plan: screened, its id once per import, keyed, its provenance capped."""
        plan.file_id = memory.id
        screened = self._screen(tenant_id, plan, memory, actor)
        if screened is None:
            return
        if screened.id is not None and screened.id in seen_ids:
            plan.report.code, plan.report.reason = "duplicate_id", "another file in this import has this id"
            return
        if screened.id is not None:
            seen_ids.add(screened.id)
        key = norm_key(screened.l0, self.settings.extraction.generic_modifiers)
        if not key:
            plan.report.code, plan.report.reason = "invalid_field", "l0: the label has no words to key it by"
            return
        plan.memory, plan.key = screened, key
        plan.provenance = cap_provenance(screened.provenance, ceiling, self.settings.governance)

    def _screen(self, tenant_id: str, plan: Plan, memory: WorkspaceMemory, actor: str) -> WorkspaceMemory | None:
        """The write firewall on a workspace file's texts (label, body, source labels and excerpts);
        None when the tenant rejects it (the file's report says ``contains_secret``)."""
        texts = [memory.l0, memory.l1, *(t for src in memory.sources for t in (src.label, src.excerpt))]
        screened = self.firewall.screen(tenant_id, texts, what="workspace file", actor=actor, reject=False)
        if not screened.found:
            return memory
        if screened.policy is RedactionPolicy.reject:
            plan.report.code, plan.report.reason = "contains_secret", secret_reason(screened.counts, "workspace file")
            return None
        plan.hold_reason = screened.hold_reason
        l0, l1, *rest = screened.texts
        sources = [
            src.model_copy(update={"label": rest[2 * i], "excerpt": rest[2 * i + 1]})
            for i, src in enumerate(memory.sources)
        ]
        # the file's own content hash no longer matches: it is imported as an edited file
        return memory.model_copy(update={"l0": firewall_label(l0, l1), "l1": l1, "sources": sources})

    def _as_document(self, tenant_id: str, plan: Plan, data: bytes, ceiling: Provenance) -> None:
        """A file without workspace frontmatter is a document: S4 distils it."""
        if self.submit_document is None:
            plan.report.code, plan.report.reason = (
                "not_a_memory",
                "no workspace frontmatter (and no document ingestion)",
            )
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            plan.report.code, plan.report.reason = "not_utf8", "not valid UTF-8"
            return
        if not data.strip():
            plan.report.code, plan.report.reason = "empty", "the file is empty"
            return
        try:
            accepted = self.submit_document(
                tenant_id,
                DocumentCreate(
                    text=text,
                    filename=plan.report.path.rsplit("/", 1)[-1],
                    provenance=cap_provenance(Provenance.user_upload, ceiling, self.settings.governance),
                ),
            )
        except ContextOSError as exc:
            if exc.status >= 500:
                raise
            # an oversized file fails on its own line, not the whole batch
            plan.report.code, plan.report.reason = exc.code, exc.message
            return
        plan.report.status, plan.report.reason = "document", f"ingested as document {accepted.id}"

    # -- through admission -------------------------------------------------------------------
    def _admit(
        self, tenant_id: str, plans: list[Plan], *, actor: str, unlock: set[UUID], document_id: UUID | None
    ) -> None:
        """The batch's edits and new memories, decided against the stored rows, embedded, and
        admitted in one transaction; each file's report from its outcome."""
        stored = self.reads.rows_by_id(tenant_id, [p.memory.id for p in plans if p.memory and p.memory.id])
        cold_prefix = f"{self.settings.lifecycle.cold_prefix}{tenant_id}/"
        edits: list[Edit] = []
        creates: list[Plan] = []
        for plan in plans:
            memory = plan.memory
            assert memory is not None
            cold = memory.state.cold or {}
            if cold and not str(cold.get("object", "")).startswith(cold_prefix):
                plan.report.code, plan.report.reason = "foreign_cold_object", "the cold pointer is not this tenant's"
            elif memory.id is not None and memory.id in stored:
                edit = self._edit(plan, stored[memory.id], unlock)
                if edit is not None:
                    edits.append(edit)
            else:
                creates.append(plan)
        reembed = [e for e in edits if {"label", "definition"} & set(e.changed)]
        texts = [f"{p.memory.l0}: {p.memory.l1}" for p in [*creates, *(e.plan for e in reembed)]]  # type: ignore[union-attr]
        vectors = self.embedders().embed(texts) if texts else []
        embedded = {id(e): v for e, v in zip(reembed, vectors[len(creates) :], strict=True)}
        given = self._given(creates, vectors[: len(creates)])
        batch = WorkspaceBatch(
            edits=[self._given_edit(e, embedded.get(id(e))) for e in edits], memories=given, document_id=document_id
        )
        embedder_id = self.embedders().model_id if texts else ""  # a vector is written only with a text
        edited, created = self.admissions.admit_workspace(tenant_id, batch, embedder_id=embedder_id, actor=actor)
        for edit, outcome in zip(edits, edited, strict=True):
            _report_edit(edit, outcome)
        for plan, g, outcome in zip(creates, given, created, strict=True):
            _report_create(plan, g, outcome)

    def _edit(self, plan: Plan, row: dict, unlock: set[UUID]) -> Edit | None:
        """A file for a stored memory: unchanged, a conflict, a refusal (reported here, None), or an
        edit to apply. Edited means the file no longer matches the hash it was exported with (a file
        without a hash was written by hand); an edit applies only over the version it was made on."""
        file, report = plan.memory, plan.report
        assert file is not None and file.id is not None
        stored = memory_of_row(row)
        report.memory_id = file.id
        if content_hash(file) == content_hash(stored) or (file.hash is not None and content_hash(file) == file.hash):
            report.status = "unchanged"
            return None
        if file.version != stored.version:
            report.status, report.code = "conflict", "version_conflict"
            report.reason = f"edited at version {file.version}; the store is at version {stored.version}"
            return None
        before, after = stored.editable(), file.editable()
        changed = [k for k in after if after[k] != before[k]]
        if not changed:
            report.status, report.reason = "unchanged", "only fields the store owns differ (left as stored)"
            return None
        if stored.protected and file.id not in unlock:
            report.status, report.code = "refused", "protected"
            report.reason = "the memory is protected: unlock it to change it"
            return None
        relabelled = "label" in changed and stored.state.state == "active"
        return Edit(plan, stored.version, {k: after[k] for k in changed}, changed, key_must_be_free=relabelled)

    @staticmethod
    def _given_edit(edit: Edit, embedding: Sequence[float] | None) -> GivenEdit:
        memory = edit.plan.memory
        assert memory is not None and memory.id is not None
        return GivenEdit(
            memory_id=memory.id,
            version=edit.version,
            changes=edit.changes,
            norm_key=edit.plan.key,
            embedding=embedding,
            label=memory.l0,
            key_must_be_free=edit.key_must_be_free,
        )

    def _given(self, creates: list[Plan], vectors: Sequence[list[float]]) -> list[GivenMemory]:
        """The new memories as their files give them, each with the trust gate's (or the firewall's)
        hold when it is held; a file without an id gets a new one."""
        candidates = [self._candidate(p, v) for p, v in zip(creates, vectors, strict=True)]
        gate = TrustGate(self.settings)
        _, held = gate.split([c for p, c in zip(creates, candidates, strict=True) if not p.hold_reason])
        holds = {id(h.candidate): h for h in held}
        for p, c in zip(creates, candidates, strict=True):
            if p.hold_reason:
                holds[id(c)] = gate.split([c], hold_reason=p.hold_reason)[1][0]
        return [given_memory(p, c, holds.get(id(c))) for p, c in zip(creates, candidates, strict=True)]

    def _candidate(self, plan: Plan, vector: list[float]) -> MemoryCandidate:
        m = plan.memory
        assert m is not None
        return MemoryCandidate(
            norm_key=plan.key,
            label=m.l0,
            definition=m.l1,
            type=m.type.value,
            importance=m.importance,
            embedding=vector,
            decay_rate=m.strength.rate if m.strength else decay_rate(m.importance, m.type.value, self.settings.decay),
            provenance=plan.provenance,
            base_trust=self.settings.governance.trust_of(plan.provenance),
        )


def given_memory(plan: Plan, candidate: MemoryCandidate, held: HeldCandidate | None) -> GivenMemory:
    """A file's memory as admission takes it: its id (a new one when it has none), fields and history."""
    m = plan.memory
    assert m is not None
    s, st, access = m.strength, m.state, m.access
    cold = st.cold or {}
    return GivenMemory(
        id=m.id or uuid.uuid4(),
        candidate=candidate,
        held=held,
        state=st.state,
        tier=st.tier,
        tags=list(m.tags),
        metadata=m.metadata,
        user_id=m.scope.user_id,
        agent_id=m.scope.agent_id,
        run_id=m.scope.run_id,
        always_load=m.always_load,
        protected=m.protected,
        version=m.version,
        created_at=m.created,
        updated_at=m.modified,
        strength_anchor=s.anchor if s else None,
        strength_anchor_at=s.anchored if s else None,
        decay_policy=s.policy if s else "exponential",
        decay_scale=s.scale if s else None,
        decay_shape=s.shape if s else None,
        last_accessed_at=access.last if access else None,
        access_count=access.count if access else 0,
        superseded_by=st.superseded_by,
        superseded_at=st.superseded_at,
        valid_from=st.valid_from,
        valid_to=st.valid_to,
        recorded_at=st.recorded_at,
        expires_at=st.expires_at,
        cold_object_key=cold.get("object"),
        cold_byte_start=cold.get("start"),
        cold_byte_end=cold.get("end"),
        sources=[
            GivenSource(
                document_id=src.document,
                filename=src.filename,
                session_id=src.session,
                message_from=src.messages[0] if src.messages else None,
                message_to=src.messages[1] if src.messages and len(src.messages) > 1 else None,
                label=src.label,
                definition=src.excerpt,
                importance=src.importance,
                created_at=src.at,
            )
            for src in m.sources
        ],
        edges=[(e.id, e.type, e.weight) for e in m.related],
    )


def _report_edit(edit: Edit, outcome: FileOutcome) -> None:
    report = edit.plan.report
    match outcome.status:
        case "updated":
            report.status, report.reason = (
                "updated",
                f"changed {', '.join(edit.changed)}; now version {outcome.version}",
            )
        case "duplicate_key":
            report.code, report.reason = "duplicate_key", f"memory {outcome.holder} already holds this label"
        case _:
            report.status, report.code = "conflict", "version_conflict"
            report.reason = "the memory changed while this edit was applied"


def _report_create(plan: Plan, given: GivenMemory, outcome: FileOutcome) -> None:
    report = plan.report
    match outcome.status:
        case "created":
            report.status, report.memory_id = "created", given.id
        case "held":
            report.status, report.code = "held", "held_for_review"
            why = "it carried a secret (masked)" if plan.hold_reason else "below the trust threshold"
            report.reason = f"{why}: review item {outcome.review_id}"
        case "duplicate_key":
            report.code = "duplicate_key"
            report.reason = (
                f"memory {outcome.holder} already holds this label; edit its file instead"
                if outcome.holder
                else "another file in this import has the same label"
            )
        case _:
            report.status, report.code = "conflict", "version_conflict"
            report.reason = "a memory with this id was created while this file was applied"
