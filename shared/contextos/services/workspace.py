"""The markdown workspace (S10): export as a stream of files, import and sync by id.

Import and sync go through admission like every memory (``contextos.services.workspace_import``):
the credential's provenance ceiling and the write firewall, the trust gate (held files go to the
review queue, nowhere else), the contradiction gate for new active memories, and an audit row for
each create and edit. Every file gets its own report line; a bad file never fails the rest.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID

from contextos.embedding import Embedder
from contextos.errors import ContextOSError
from contextos.models import DocumentAccepted, DocumentCreate, DocumentRecord, Provenance
from contextos.observability import logger
from contextos.parsing import content_hash as bytes_hash
from contextos.parsing import safe_filename
from contextos.ports.admission import AdmissionPort
from contextos.ports.documents import DocumentPort
from contextos.ports.workspace import WorkspaceReads
from contextos.services.firewall import Firewall
from contextos.services.workspace_export import ByteSink, memory_of_row
from contextos.services.workspace_import import WorkspaceImporter
from contextos.settings import Settings
from contextos.workspace.format import Limits, WorkspaceFileError, name_files, parse_file, render_file
from contextos.workspace.model import DeletedFile, FileReport, ImportReport, SyncReport, WorkspaceFile, WorkspaceMemory
from contextos.workspace.router import MCP_FILE, ROUTER_FILE, RouterEntry, RouterTool, mcp_snippet, render_router

ArchiveFormat = Literal["tar", "zip"]
_EPOCH_MTIME = 0  # archive members carry no clock: the same store gives the same archive bytes


@dataclass
class WorkspaceService:
    settings: Settings
    reads: WorkspaceReads
    documents: DocumentPort  # a dropped file's document
    admissions: AdmissionPort  # every import goes through admission
    embedders: Callable[[], Embedder]  # loaded on the first import: an export never needs the model
    firewall: Firewall  # the write firewall (S7) on every imported file
    submit_document: Callable[[str, DocumentCreate], DocumentAccepted] | None = None
    limits: Limits = field(default_factory=Limits)
    page_size: int = 500

    @property
    def importer(self) -> WorkspaceImporter:
        return WorkspaceImporter(
            settings=self.settings,
            admissions=self.admissions,
            reads=self.reads,
            embedders=self.embedders,
            firewall=self.firewall,
            submit_document=self.submit_document,
            limits=self.limits,
            page_size=self.page_size,
        )

    # -- export ------------------------------------------------------------------------------
    def memories(self, tenant_id: str, *, live_only: bool = False) -> Iterator[WorkspaceMemory]:
        """Every memory of the tenant in id order, one keyset page in memory at a time."""
        after: UUID | None = None
        while rows := self.reads.export_page(tenant_id, after=after, limit=self.page_size, live_only=live_only):
            for row in rows:
                yield memory_of_row(row)
            after = rows[-1]["id"]

    def files(self, tenant_id: str) -> Iterator[tuple[str, bytes]]:
        for path, memory in name_files(self.memories(tenant_id)):
            yield path, render_file(memory).encode("utf-8")

    def archive(self, tenant_id: str, fmt: ArchiveFormat = "tar") -> Iterator[bytes]:
        """The workspace as a tar.gz (or zip) byte stream, written as the pages arrive. A zip keeps
        one small entry per file for its central directory; a tar keeps nothing."""
        sink = ByteSink()
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
        rows = self.reads.router_rows(tenant_id, limit=max(50, token_budget // 4))
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
        plans = self.importer.plans(
            tenant_id, files, actor=actor, ceiling=ceiling, unlock=set(unlock), document_id=document_id
        )
        reports = [p.report for p in plans]
        return ImportReport(files=reports, counts=_counts(reports))

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
        plans = self.importer.plans(tenant_id, files, actor=actor, ceiling=ceiling, unlock=set(unlock))
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
        held = self.reads.live_ids(tenant_id, ids)
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
        record, created = self.documents.create_document(
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
            self.documents.claim_document(tenant_id, record.id, stale_after_s=self.settings.document_stale_processing_s)
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
            self.documents.finish_document(tenant_id, record.id, counts, source_type="workspace")
        else:
            self.documents.fail_document(tenant_id, record.id, f"{report.code}: {report.reason}", counts)
        return self.documents.get_document(tenant_id, record.id)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _counts(reports: Sequence[FileReport]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in reports:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts
