"""The markdown workspace (S10): export as a stream of files, import and sync by id.

Import and sync go through the admission path every memory takes: the credential's provenance
ceiling and the trust gate (held files go to the review queue, nowhere else), the contradiction
gate for new active memories, and an audit row for each create and edit. Every file gets its own
report line; a bad file never fails the rest.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import uuid
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, overload
from uuid import UUID

from contextos.decay import decay_rate
from contextos.embedding import Embedder
from contextos.errors import ContextOSError
from contextos.models import DocumentAccepted, DocumentCreate, DocumentRecord, MemoryCandidate, Provenance
from contextos.normalization import acronyms, initials, norm_key
from contextos.observability import logger, metrics
from contextos.parsing import content_hash as bytes_hash
from contextos.parsing import safe_filename
from contextos.ports import WorkspaceStorePort
from contextos.redaction import RedactionPolicy
from contextos.services.firewall import Firewall, secret_reason
from contextos.services.governance import TrustGate, firewall_label
from contextos.settings import Settings
from contextos.store.contradictions import close_superseded, link
from contextos.store.governance import GovernanceStore
from contextos.store.management import ManagementStore
from contextos.store.workspace import NewItem, NewMemory, WorkspaceStore
from contextos.trust import cap_provenance
from contextos.workspace.format import Limits, WorkspaceFileError, content_hash, name_files, parse_file, render_file
from contextos.workspace.model import (
    Access,
    DeletedFile,
    FileReport,
    ImportReport,
    Scope,
    State,
    Strength,
    SyncReport,
    WorkspaceEdge,
    WorkspaceFile,
    WorkspaceMemory,
    WorkspaceSource,
)
from contextos.workspace.router import MCP_FILE, ROUTER_FILE, RouterEntry, RouterTool, mcp_snippet, render_router

if TYPE_CHECKING:
    from contextos.store.db import Conn

ArchiveFormat = Literal["tar", "zip"]
_EPOCH_MTIME = 0  # archive members carry no clock: the same store gives the same archive bytes


@overload
def _utc(value: datetime | str) -> datetime: ...
@overload
def _utc(value: None) -> None: ...
def _utc(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC)


def memory_of_row(row: dict) -> WorkspaceMemory:
    """A stored memory (an export row) as its workspace file's model."""
    cold = (
        {"object": row["cold_object_key"], "start": row["cold_byte_start"], "end": row["cold_byte_end"]}
        if row["cold_object_key"]
        else None
    )
    return WorkspaceMemory(
        id=row["id"],
        type=row["type"],
        l0=row["label"],
        importance=row["importance"],
        tags=list(row["tags"] or []),
        related=[WorkspaceEdge.model_validate(e) for e in row["edges"]],
        created=_utc(row["created_at"]),
        modified=_utc(row["updated_at"]),
        version=row["version"],
        always_load=row["always_load"],
        protected=row["protected"],
        strength=Strength(
            anchor=row["strength_anchor"],
            anchored=_utc(row["strength_anchor_at"]),
            policy=row["decay_policy"],
            rate=row["decay_rate"],
            scale=row["decay_scale"],
            shape=row["decay_shape"],
        ),
        provenance=row["provenance"],
        trust=row["base_trust"],
        scope=Scope(user_id=row["user_id"], agent_id=row["agent_id"], run_id=row["run_id"]),
        metadata=row["metadata"] or {},
        sources=[
            WorkspaceSource(
                document=s["document"],
                filename=s["filename"],
                session=s["session"],
                messages=[s["message_from"], s["message_to"]] if s["message_from"] is not None else None,
                at=_utc(s["at"]),
                importance=s["importance"],
                label=s["label"],
                excerpt=s["excerpt"],
            )
            for s in row["sources"]
        ],
        state=State(
            state=row["state"],
            tier=row["tier"],
            superseded_by=row["superseded_by"],
            superseded_at=_utc(row["superseded_at"]),
            valid_from=_utc(row["valid_from"]),
            valid_to=_utc(row["valid_to"]),
            recorded_at=_utc(row["recorded_at"]),
            expires_at=_utc(row["expires_at"]),
            cold=cold,
        ),
        access=Access(count=row["access_count"], last=_utc(row["last_accessed_at"])),
        l1=row["definition"],
    )


class _Sink(io.RawIOBase):
    """A write-only stream whose bytes are taken out as they come: archives stream, never pile up."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self.chunks)
        self.chunks.clear()
        return out


@dataclass
class _Plan:
    """One parsed file on its way in."""

    report: FileReport
    memory: WorkspaceMemory | None = None
    provenance: Provenance = Provenance.user_upload
    key: str = ""
    hold_reason: str | None = None  # the firewall's ``hold`` policy: to review, masked
    file_id: UUID | None = None  # the id the file carries, whether or not it could be applied


def _id_of(plan: _Plan) -> UUID:
    """The memory id of a plan that reached the write (planning gave it its memory and id)."""
    assert plan.memory is not None and plan.memory.id is not None
    return plan.memory.id


@dataclass
class WorkspaceService:
    settings: Settings
    store: WorkspaceStorePort
    workspace: WorkspaceStore
    embedders: Callable[[], Embedder]  # loaded on the first import: an export never needs the model
    firewall: Firewall  # the write firewall (S7) on every imported file
    submit_document: Callable[[str, DocumentCreate], DocumentAccepted] | None = None
    limits: Limits = field(default_factory=Limits)
    page_size: int = 500

    def _screen(self, tenant_id: str, plan: _Plan, memory: WorkspaceMemory, actor: str) -> WorkspaceMemory | None:
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

    @property
    def embedder(self) -> Embedder:
        return self.embedders()

    # -- export ------------------------------------------------------------------------------
    def memories(self, tenant_id: str, *, live_only: bool = False) -> Iterator[WorkspaceMemory]:
        """Every memory of the tenant in id order, one keyset page in memory at a time."""
        after: UUID | None = None
        while rows := self.workspace.export_page(tenant_id, after=after, limit=self.page_size, live_only=live_only):
            for row in rows:
                yield memory_of_row(row)
            after = rows[-1]["id"]

    def files(self, tenant_id: str) -> Iterator[tuple[str, bytes]]:
        for path, memory in name_files(self.memories(tenant_id)):
            yield path, render_file(memory).encode("utf-8")

    def archive(self, tenant_id: str, fmt: ArchiveFormat = "tar") -> Iterator[bytes]:
        """The workspace as a tar.gz (or zip) byte stream, written as the pages arrive. A zip keeps
        one small entry per file for its central directory; a tar keeps nothing."""
        sink = _Sink()
        if fmt == "zip":
            with zipfile.ZipFile(sink, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
                for path, data in self.files(tenant_id):
                    info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    archive.writestr(info, data)
                    yield sink.take()
        else:
            # gzip with a fixed header: tarfile's own "w|gz" stamps the current second into it, so two
            # exports of an unchanged store would differ
            with (
                gzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0) as compressed,
                tarfile.open(fileobj=compressed, mode="w|", format=tarfile.PAX_FORMAT) as archive,
            ):
                for path, data in self.files(tenant_id):
                    member = tarfile.TarInfo(path)
                    member.size, member.mtime, member.mode = len(data), _EPOCH_MTIME, 0o644
                    archive.addfile(member, io.BytesIO(data))
                    # TarFile remembers every member it wrote (for reading back); a write-only stream
                    # needs none of them, and 100k of them would be tens of MB.
                    archive.members.clear()  # type: ignore[attr-defined]  # (not in the stubs)
                    if chunk := sink.take():
                        yield chunk
        yield sink.take()

    def export_dir(self, tenant_id: str, directory: Any) -> int:
        """Write the workspace under ``directory`` (a ``pathlib.Path``); returns the file count."""
        count = 0
        for path, data in self.files(tenant_id):
            target = directory / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            count += 1
        return count

    # -- router files ------------------------------------------------------------------------
    def router(self, tenant_id: str, tool: RouterTool, *, token_budget: int = 4000) -> list[WorkspaceFile]:
        rows = self.workspace.router_rows(tenant_id, limit=max(50, token_budget // 4))
        entries = [RouterEntry(r["label"], r["definition"], r["type"], r["importance"], r["always_load"]) for r in rows]
        return [
            WorkspaceFile(path=ROUTER_FILE[tool], content=render_router(tool, entries, token_budget=token_budget)),
            WorkspaceFile(path=MCP_FILE[tool], content=mcp_snippet(tool)),
        ]

    # -- import ------------------------------------------------------------------------------
    def import_files(
        self,
        tenant_id: str,
        files: Sequence[tuple[str, bytes]],
        *,
        actor: str,
        ceiling: Provenance,
        unlock: Iterable[UUID] = (),
        document_id: UUID | None = None,
        restore: bool = False,  # accepted for older clients: every import now keeps the ids it carries
    ) -> ImportReport:
        """Create or update each file's memory by id; plain markdown goes to S4 as a document.

        An id this tenant does not hold is unknown, whoever else may hold it: the memory is created
        under it (ids are per tenant), so no answer tells whether another tenant has that id.
        ``restore`` copies a whole workspace, ids and all."""
        plans = self._import_plans(
            tenant_id, files, actor=actor, ceiling=ceiling, unlock=set(unlock), document_id=document_id
        )
        reports = [p.report for p in plans]
        return ImportReport(files=reports, counts=_counts(reports))

    def _import_plans(
        self,
        tenant_id: str,
        files: Sequence[tuple[str, bytes]],
        *,
        actor: str,
        ceiling: Provenance,
        unlock: set[UUID],
        document_id: UUID | None = None,
    ) -> list[_Plan]:
        plans: list[_Plan] = []
        for start in range(0, len(files), self.page_size):
            plans += self._import_batch(
                tenant_id,
                files[start : start + self.page_size],
                actor=actor,
                ceiling=ceiling,
                unlock=unlock,
                document_id=document_id,
            )
        return plans

    def _import_batch(
        self,
        tenant_id: str,
        files: Sequence[tuple[str, bytes]],
        *,
        actor: str,
        ceiling: Provenance,
        unlock: set[UUID],
        document_id: UUID | None,
    ) -> list[_Plan]:
        cfg = self.settings
        modifiers = cfg.extraction.generic_modifiers
        plans: list[_Plan] = []
        documents: list[tuple[_Plan, bytes]] = []
        seen_ids: set[UUID] = set()
        for path, data in files:
            plan = _Plan(report=FileReport(path=path, status="failed"))
            plans.append(plan)
            try:
                memory = parse_file(path, data, self.limits)
            except WorkspaceFileError as exc:
                plan.report.code, plan.report.reason = exc.code, exc.reason
                continue
            if memory is None:
                documents.append((plan, data))
                continue
            plan.file_id = memory.id
            screened = self._screen(tenant_id, plan, memory, actor)
            if screened is None:
                continue
            memory = screened
            if memory.id is not None and memory.id in seen_ids:
                plan.report.code, plan.report.reason = "duplicate_id", "another file in this import has this id"
                continue
            if memory.id is not None:
                seen_ids.add(memory.id)
            key = norm_key(memory.l0, modifiers)
            if not key:
                plan.report.code, plan.report.reason = "invalid_field", "l0: the label has no words to key it by"
                continue
            plan.memory, plan.key = memory, key
            plan.provenance = cap_provenance(memory.provenance, ceiling, cfg.governance)
        for plan, data in documents:
            self._as_document(tenant_id, plan, data, ceiling)
        parsed = [p for p in plans if p.memory is not None]
        if parsed:
            self._admit(tenant_id, parsed, actor=actor, unlock=unlock, document_id=document_id)
            self.store.settle_vectors(tenant_id, limit=cfg.merge.settle_batch)
        metrics.add_metric(name="WorkspaceFilesImported", unit="Count", value=len(files))
        return plans

    def _as_document(self, tenant_id: str, plan: _Plan, data: bytes, ceiling: Provenance) -> None:
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
        accepted = self.submit_document(
            tenant_id,
            DocumentCreate(
                text=text,
                filename=plan.report.path.rsplit("/", 1)[-1],
                provenance=cap_provenance(Provenance.user_upload, ceiling, self.settings.governance),
            ),
        )
        plan.report.status, plan.report.reason = "document", f"ingested as document {accepted.id}"

    def _admit(
        self,
        tenant_id: str,
        plans: list[_Plan],
        *,
        actor: str,
        unlock: set[UUID],
        document_id: UUID | None,
    ) -> None:
        """One transaction under the tenant lock for the batch's creates and edits."""
        cfg = self.settings
        ids = [p.memory.id for p in plans if p.memory and p.memory.id is not None]
        gate_store = self.store.gate
        with self.workspace.transaction(tenant_id) as conn:
            hot = self.workspace.lock_tenant(conn, tenant_id)
            cold_prefix = f"{cfg.lifecycle.cold_prefix}{tenant_id}/"
            existing = self.workspace.rows_by_id(conn, tenant_id, ids, lock=True)
            creates: list[_Plan] = []
            for plan in plans:
                memory = plan.memory
                assert memory is not None
                cold = memory.state.cold or {}
                if cold and not str(cold.get("object", "")).startswith(cold_prefix):
                    plan.report.code, plan.report.reason = (
                        "foreign_cold_object",
                        "the cold pointer is not this tenant's",
                    )
                elif memory.id is not None and memory.id in existing:
                    self._edit(conn, tenant_id, plan, existing[memory.id], actor=actor, unlock=unlock)
                else:
                    creates.append(plan)
            creates = self._without_key_clashes(conn, tenant_id, creates)
            if not creates:
                return
            vectors = self.embedder.embed([f"{p.memory.l0}: {p.memory.l1}" for p in creates])  # type: ignore[union-attr]
            candidates = [self._candidate(p, v) for p, v in zip(creates, vectors, strict=True)]
            gate = TrustGate(cfg)
            admitted, held = gate.split([c for p, c in zip(creates, candidates, strict=True) if not p.hold_reason])
            for p, c in zip(creates, candidates, strict=True):
                if p.hold_reason:
                    held += gate.split([c], hold_reason=p.hold_reason)[1]
            plan_of = {id(c): p for p, c in zip(creates, candidates, strict=True)}
            held_plans = [plan_of[id(h.candidate)] for h in held]
            review_ids = GovernanceStore.hold(conn, tenant_id, held, actor=actor)
            for plan, review_id in zip(held_plans, review_ids, strict=True):
                plan.report.status, plan.report.code = "held", "held_for_review"
                why = "it carried a secret (masked)" if plan.hold_reason else "below the trust threshold"
                plan.report.reason = f"{why}: review item {review_id}"
            admitted_ids = {id(c) for c in admitted}
            going = [(p, v) for p, v, c in zip(creates, vectors, candidates, strict=True) if id(c) in admitted_ids]
            for plan, _ in going:
                if plan.memory is not None and plan.memory.id is None:
                    plan.memory = plan.memory.model_copy(update={"id": uuid.uuid4()})
            # The contradiction gate judges new active memories against the tenant's (S7).
            live = [
                (p, c)
                for p, c in zip(creates, candidates, strict=True)
                if id(c) in admitted_ids and p.memory.state.state == "active" and p.memory.state.tier == "hot"  # type: ignore[union-attr]
            ]
            outcome = None
            if gate_store is not None and live and hot:
                live_candidates = [c for _, c in live]
                outcome = gate_store.judge_batch(
                    conn,
                    tenant_id,
                    live_candidates,
                    [c.norm_key for c in live_candidates],
                    hot_memories=hot,
                    dialect=self.store.db.dialect.name,
                )
                close_superseded(conn, tenant_id, outcome)
            new_rows = [self._new_memory(p, v) for p, v in going]
            items = [item for p, _ in going for item in self._items(p, document_id)]
            self.workspace.insert_memories(
                conn,
                tenant_id,
                new_rows,
                items,
                embedder_id=self.embedder.model_id,
                actor=actor,
                reason="imported from a workspace file",
            )
            if outcome is not None and gate_store is not None:
                link(conn, tenant_id, outcome, [_id_of(p) for p, _ in live], actor=actor)
            edges = [
                (_id_of(p), e.id, e.type, e.weight)
                for p, _ in going
                for e in p.memory.related  # type: ignore[union-attr]
            ]
            self.workspace.insert_edges(conn, tenant_id, edges)
            for plan, _ in going:
                plan.report.status, plan.report.memory_id = "created", plan.memory.id  # type: ignore[union-attr]

    def _without_key_clashes(self, conn: Conn, tenant_id: str, creates: list[_Plan]) -> list[_Plan]:
        """One active memory per normalized key: a new active file whose key is taken fails alone."""
        active = [p for p in creates if p.memory is not None and p.memory.state.state == "active"]
        taken = self.workspace.active_keys(conn, tenant_id, sorted({p.key for p in active}))
        kept, mine = [], set()
        for plan in creates:
            if plan.memory is not None and plan.memory.state.state == "active":
                if plan.key in taken or plan.key in mine:
                    holder = taken.get(plan.key)
                    plan.report.code = "duplicate_key"
                    plan.report.reason = (
                        f"memory {holder} already holds this label; edit its file instead"
                        if holder
                        else "another file in this import has the same label"
                    )
                    continue
                mine.add(plan.key)
            kept.append(plan)
        return kept

    def _candidate(self, plan: _Plan, vector: list[float]) -> MemoryCandidate:
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

    def _new_memory(self, plan: _Plan, vector: list[float]) -> NewMemory:
        m = plan.memory
        assert m is not None and m.id is not None
        s, st = m.strength, m.state
        cold = st.cold or {}
        return NewMemory(
            id=m.id,
            norm_key=plan.key,
            label=m.l0,
            definition=m.l1,
            type=m.type.value,
            importance=m.importance,
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
            decay_policy=s.policy if s else None,
            decay_rate=s.rate if s else decay_rate(m.importance, m.type.value, self.settings.decay),
            decay_scale=s.scale if s else None,
            decay_shape=s.shape if s else None,
            last_accessed_at=m.access.last if m.access else None,
            access_count=m.access.count if m.access else 0,
            provenance=plan.provenance.value,
            base_trust=self.settings.governance.trust_of(plan.provenance),
            state=st.state,
            tier=st.tier,
            superseded_by=st.superseded_by,
            superseded_at=st.superseded_at,
            valid_from=st.valid_from,
            valid_to=st.valid_to,
            recorded_at=st.recorded_at,
            expires_at=st.expires_at,
            cold_object_key=cold.get("object"),
            cold_byte_start=cold.get("start"),
            cold_byte_end=cold.get("end"),
            initials=initials(m.l0),
            acronyms=acronyms(m.l0),
            embedding=vector,
        )

    @staticmethod
    def _items(plan: _Plan, document_id: UUID | None) -> list[NewItem]:
        m = plan.memory
        assert m is not None and m.id is not None
        if not m.sources and document_id is not None:  # a dropped file is its memory's source
            return [NewItem(m.id, document_id, None, None, None, None, m.l0, m.l1, m.importance, None)]
        return [
            NewItem(
                memory_id=m.id,
                document_id=s.document,
                filename=s.filename,
                session_id=s.session,
                message_from=s.messages[0] if s.messages else None,
                message_to=s.messages[1] if s.messages and len(s.messages) > 1 else None,
                label=s.label,
                definition=s.excerpt,
                importance=s.importance,
                created_at=s.at,
            )
            for s in m.sources
        ]

    # -- edits -------------------------------------------------------------------------------
    def _edit(
        self,
        conn: Conn,
        tenant_id: str,
        plan: _Plan,
        row: dict,
        *,
        actor: str,
        unlock: set[UUID],
    ) -> None:
        """A file for a stored memory: unchanged, an edit to apply, a conflict, or a refusal.

        Edited means the file no longer matches the hash it was exported with (a file without a
        hash was written by hand). An edit applies only over the version it was made on; the store
        moving on since (another edit) makes it a conflict, reported and not overwritten."""
        file, report = plan.memory, plan.report
        assert file is not None and file.id is not None
        stored = memory_of_row(row)
        report.memory_id = file.id
        if content_hash(file) == content_hash(stored) or (file.hash is not None and content_hash(file) == file.hash):
            report.status = "unchanged"
            return
        if file.version != stored.version:
            report.status, report.code = "conflict", "version_conflict"
            report.reason = f"edited at version {file.version}; the store is at version {stored.version}"
            return
        before, after = stored.editable(), file.editable()
        changed = [k for k in after if after[k] != before[k]]
        if not changed:
            report.status, report.reason = "unchanged", "only fields the store owns differ (left as stored)"
            return
        if stored.protected and file.id not in unlock:
            report.status, report.code = "refused", "protected"
            report.reason = "the memory is protected: unlock it to change it"
            return
        key = norm_key(file.l0, self.settings.extraction.generic_modifiers)
        if "label" in changed and stored.state.state == "active":
            holder = self.workspace.active_keys(conn, tenant_id, [key]).get(key)
            if holder is not None and holder != file.id:
                report.code, report.reason = "duplicate_key", f"memory {holder} already holds this label"
                return
        embedding = None
        if "label" in changed or "definition" in changed:
            embedding = self.embedder.embed([f"{file.l0}: {file.l1}"])[0]
        current = ManagementStore.lock_memory(conn, tenant_id, file.id)
        version = None
        if current["version"] == stored.version:
            version = ManagementStore(self.workspace.db, self.settings.decay).apply_edit(
                conn,
                tenant_id,
                current,
                {k: after[k] for k in changed},
                norm_key=key,
                initials=initials(file.l0),
                acronyms=acronyms(file.l0),
                embedding=embedding,
                embedder_id=self.embedder.model_id,
                actor=actor,
                reason="workspace edit",
            )
        if version is None:
            report.status, report.code = "conflict", "version_conflict"
            report.reason = "the memory changed while this edit was applied"
            return
        report.status, report.reason = "updated", f"changed {', '.join(changed)}; now version {version}"

    # -- sync --------------------------------------------------------------------------------
    def sync(
        self,
        tenant_id: str,
        files: Sequence[tuple[str, bytes]],
        *,
        actor: str,
        ceiling: Provenance,
        unlock: Iterable[UUID] = (),
        deleted: Iterable[UUID] = (),
        forget: Callable[[UUID], object] | None = None,
    ) -> SyncReport:
        """Files → store (edits and new files by id, conflicts reported), then store → files: every
        memory whose file is missing or stale is (re)written, and a renamed file's old path removed.

        Nothing the user wrote is lost: a file that could not be applied (broken, refused, in
        conflict) gets no write at its path nor for the memory it names, and a memory whose file the
        user deleted (``deleted``: ids the client last saw on disk) is not written back — it is
        forgotten only when ``forget`` is given (``--prune``: the memory service's audited, restorable
        forget under the caller's rights), and reported either way."""
        plans = self._import_plans(tenant_id, files, actor=actor, ceiling=ceiling, unlock=set(unlock))
        reports = [p.report for p in plans]
        by_path = {r.path: r for r in reports}
        present: dict[UUID, str] = {}
        hashes: dict[str, str | None] = {}
        for path, data in files:
            r = by_path[path]
            if r.memory_id is not None and r.status in ("created", "updated", "unchanged", "conflict", "refused"):
                present[r.memory_id] = path
                hashes[path] = _digest(data)
        unapplied = [p for p in plans if p.report.status in ("failed", "conflict", "refused")]
        kept_paths = {p.report.path for p in unapplied}
        kept_ids = {i for p in unapplied for i in (p.file_id, p.report.memory_id) if i is not None}
        gone = {i for i in deleted if i not in present and i not in kept_ids}
        write: list[WorkspaceFile] = []
        remove: list[str] = []
        for path, memory in name_files(self.memories(tenant_id, live_only=True)):
            old = present.get(memory.id)  # type: ignore[arg-type]
            if memory.id in kept_ids or memory.id in gone or old in kept_paths or path in kept_paths:
                continue
            text = render_file(memory)
            if old == path and hashes.get(old) == _digest(text.encode("utf-8")):
                continue
            write.append(WorkspaceFile(path=path, content=text))
            if old is not None and old != path:
                remove.append(old)
        deletions = self._deletions(tenant_id, sorted(gone), forget)
        logger.info(
            "workspace sync",
            extra={"files": len(files), "written": len(write), "removed": len(remove), "deleted": len(deletions)},
        )
        return SyncReport(
            files=reports, counts=_counts(reports), write=write, remove=sorted(set(remove)), deleted=deletions
        )

    def _deletions(self, tenant_id: str, ids: list[UUID], forget: Callable[[UUID], object] | None) -> list[DeletedFile]:
        """The memories whose files were deleted: kept (and reported) unless ``forget`` is given, which
        forgets each (a protected one is refused and kept)."""
        if not ids:
            return []
        held = self.workspace.live_ids(tenant_id, ids)
        out: list[DeletedFile] = []
        for memory_id in ids:  # only the files the user deleted, never a pass over the tenant
            if memory_id not in held:
                out.append(DeletedFile(memory_id=memory_id, status="unknown", reason="no such memory (already gone)"))
            elif forget is None:
                why = "its file was deleted: it is not written back; prune to forget it"
                out.append(DeletedFile(memory_id=memory_id, status="kept", reason=why))
            else:
                try:
                    forget(memory_id)
                    out.append(DeletedFile(memory_id=memory_id, status="forgotten"))
                except ContextOSError as exc:
                    out.append(DeletedFile(memory_id=memory_id, status="kept", code=exc.code, reason=str(exc)))
        return out

    # -- the upload bucket -------------------------------------------------------------------
    def ingest_upload(
        self, tenant_id: str, key: str, name: str, data: bytes, *, ceiling: Provenance | None = None
    ) -> DocumentRecord | None:
        """A frontmatter markdown file dropped into the upload bucket: its memory, recorded as a
        document whose status and counts are the file's report. None when it is not a workspace
        file (then it is an ordinary document for S4)."""
        try:
            if parse_file(name, data, self.limits) is None:
                return None
        except WorkspaceFileError:
            pass  # a broken workspace file fails below, on its document
        record, created = self.store.create_document(
            tenant_id,
            content_hash=bytes_hash(data),
            filename=safe_filename(name),
            content_type="text/markdown",
            provenance=(ceiling or self.settings.upload_drop_provenance).value,
            size_bytes=len(data),
            upload_s3_key=key,
        )
        if not created and record.status in ("done", "failed"):
            return record
        # A redelivered message racing the first one does no work twice (the same claim as S4's).
        if (
            self.store.claim_document(tenant_id, record.id, stale_after_s=self.settings.document_stale_processing_s)
            is None
        ):
            return record
        report = self.import_files(
            tenant_id,
            [(name, data)],
            actor="upload",
            ceiling=ceiling or self.settings.upload_drop_provenance,
            document_id=record.id,
        ).files[0]
        counts = {"workspace": report.model_dump(mode="json", exclude_none=True)}
        if report.status in ("created", "updated", "unchanged", "held"):
            self.workspace.finish_document(tenant_id, record.id, counts)
        else:
            self.store.fail_document(tenant_id, record.id, f"{report.code}: {report.reason}", counts)
        return self.store.get_document(tenant_id, record.id)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _counts(reports: Sequence[FileReport]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in reports:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts
