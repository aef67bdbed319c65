"""Reading and managing memories (S3, S4.5, S11): memory → sources, document → memories, and the
management verbs the API, the CLI, the MCP server and the markdown workspace share:

- ``list(tenant, query) -> MemoryPage``
- ``edit(tenant, memory_id, patch, *, actor) -> MemoryEdited``
- ``forget(tenant, memory_id, *, actor, reason=None) -> MemoryForgotten``
- ``restore(tenant, memory_id, *, actor) -> MemoryRestored``
- ``forget_document(tenant, document_id, *, actor) -> DocumentForgotten``
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from contextos.config import DecaySettings
from contextos.decay import band_of
from contextos.embedding import Embedder
from contextos.errors import BadRequest, Conflict, Forbidden, NotFound
from contextos.management_models import (
    DocumentForgotten,
    DocumentListItem,
    DocumentListQuery,
    DocumentPage,
    GraphColumns,
    GraphEdge,
    GraphNode,
    MemoryEdited,
    MemoryForgotten,
    MemoryGraph,
    MemoryListItem,
    MemoryListQuery,
    MemoryPage,
    MemoryPatch,
    MemoryRestored,
    RestoreMode,
)
from contextos.models import DocumentMemories, MemoryDetail, MemorySource, MemorySummary
from contextos.normalization import acronyms, initials, norm_key
from contextos.ports.documents import DocumentPort
from contextos.ports.management import ManagementPort
from contextos.ports.reads import MemoryDetails
from contextos.ports.rows import LockedMemory
from contextos.ports.unit_of_work import TenantWork, UnitOfWork
from contextos.scopes import Scope, ScopeFilter
from contextos.services.firewall import Firewall
from contextos.services.forgetting import Blobs, Expunged, Rewrite, drop, expunge
from contextos.services.governance import firewall_label
from contextos.settings import Settings


class MemoryProtected(Forbidden):
    """A protected memory refuses edits unless the caller passes ``unlock: true``."""

    code = "memory_protected"


class MemoryKeyTaken(Conflict):
    """Another active memory already holds the key this change would give it."""

    code = "memory_key_taken"


class NotRestorable(Conflict):
    code = "not_restorable"


class MemoryCold(Conflict):
    """A cold memory's text lives in cold storage: it comes back hot when a query needs it."""

    code = "memory_cold"


class EditRace(Conflict):
    code = "edit_conflict"


@dataclass
class MemoryService:
    reads: MemoryDetails
    documents: DocumentPort
    management: ManagementPort
    work: UnitOfWork  # edits, forgetting and restoring change several aggregates in one transaction
    decay: DecaySettings
    settings: Settings | None = None
    embedder: Embedder | None = None
    embedder_factory: Callable[[], Embedder] | None = None  # lazily: most verbs never embed
    blobs: Blobs | None = None  # cold objects and raw documents (S3)
    firewall: Firewall | None = None  # the write firewall (S7) on edits of a memory's text

    # -- reads -------------------------------------------------------------------------------
    def get(self, tenant_id: str, memory_id: UUID) -> MemoryDetail:
        row = self.reads.get_memory(tenant_id, memory_id)
        if row["state"] == "archived" and row["tier"] == "hot":  # forgotten (cold stubs are archived and cold)
            raise NotFound(f"memory {memory_id} not found")
        sources = [MemorySource.model_validate(s) for s in self.reads.sources_of_memory(tenant_id, memory_id)]
        strength = float(row["strength_now"])
        columns: dict[str, Any] = {k: v for k, v in row.items() if k not in ("strength", "band")}
        return MemoryDetail(
            **{k: v for k, v in columns.items() if k in MemoryDetail.model_fields},
            strength=strength,
            band=band_of(strength, self.decay),
            sources=sources,
        )

    def of_document(self, tenant_id: str, document_id: UUID) -> DocumentMemories:
        self.documents.get_document(tenant_id, document_id)  # 404 for another tenant's or a missing document
        rows = self.documents.memories_of_document(tenant_id, document_id)
        return DocumentMemories(document_id=document_id, memories=[MemorySummary.model_validate(r) for r in rows])

    def list(self, tenant_id: str, query: MemoryListQuery) -> MemoryPage:
        rows, cursor = self.management.list_memories(tenant_id, query)
        return MemoryPage(memories=[MemoryListItem.model_validate(r) for r in rows], next_cursor=cursor)

    def list_documents(self, tenant_id: str, query: DocumentListQuery) -> DocumentPage:
        rows, cursor = self.management.list_documents(tenant_id, query)
        return DocumentPage(documents=[DocumentListItem.model_validate(r) for r in rows], next_cursor=cursor)

    def graph(
        self, tenant_id: str, memory_id: UUID, *, hops: int = 2, limit: int = 200, scope: ScopeFilter | None = None
    ) -> MemoryGraph:
        nodes, edges, truncated = self.management.graph_around(
            tenant_id, memory_id, hops=hops, limit=limit, scope=scope
        )
        return _graph(nodes, edges, truncated)

    def tenant_graph(
        self, tenant_id: str, *, limit: int = 300, offset: int = 0, scope: ScopeFilter | None = None
    ) -> MemoryGraph:
        nodes, edges, truncated = self.management.tenant_graph(tenant_id, limit=limit, offset=offset, scope=scope)
        return _graph(nodes, edges, truncated)

    def tenant_graph_columns(
        self, tenant_id: str, *, limit: int = 5000, offset: int = 0, scope: ScopeFilter | None = None
    ) -> GraphColumns:
        columns = self.management.tenant_graph_columns(tenant_id, limit=limit, offset=offset, scope=scope)
        return GraphColumns.model_validate({**columns, "offset": offset})

    # -- edits -------------------------------------------------------------------------------
    def edit(self, tenant_id: str, memory_id: UUID, patch: MemoryPatch, *, actor: str) -> MemoryEdited:
        """Change what a person corrected. The version replaced is kept (``memory_revisions``), a new
        label or definition is embedded again, and the edit is audited."""
        changes = patch.changes()
        if not changes:
            raise BadRequest("nothing to change: give at least one field")
        if "label" in changes or "definition" in changes:  # an edit is a way in too (S7)
            fields = [f for f in ("label", "definition") if f in changes]
            screened = self._firewall.screen(tenant_id, [changes[f] for f in fields], what="memory edit", actor=actor)
            if screened.found:
                changes |= dict(zip(fields, screened.texts, strict=True))
                if "label" in changes:
                    changes["label"] = firewall_label(changes["label"], changes.get("definition", ""))
        with self.work.tenant(tenant_id) as tx:
            current = self._editable(tx.memories.lock(memory_id), patch)
        label = changes.get("label", current["label"])
        definition = changes.get("definition", current["definition"])
        text_changed = label != current["label"] or definition != current["definition"]
        # Embedding is slow: done before the write transaction, which then checks nobody edited meanwhile.
        embedding = self._embedder.embed([f"{label}: {definition}"])[0] if text_changed else None
        key = current["norm_key"]
        owners = ("user_id", "agent_id", "run_id")
        if "label" in changes or any(f in changes for f in owners):
            key = norm_key(label, self._settings.extraction.generic_modifiers)
            if not key:
                raise BadRequest("the label has no words to key the memory by")
            # the merge key stays namespaced by the memory's owner (as a scoped write makes it)
            key += Scope(
                user_id=changes.get("user_id", current["user_id"]),
                agent_id=changes.get("agent_id", current["agent_id"]),
                run_id=changes.get("run_id", current["run_id"]),
            ).key_suffix()
        with self.work.tenant(tenant_id) as tx:
            row = self._editable(tx.memories.lock(memory_id), patch)
            if row["version"] != current["version"]:
                raise EditRace("the memory changed while this edit was prepared; read it again and retry")
            if key != row["norm_key"] and row["state"] == "active" and tx.memories.key_taken(key, memory_id):
                raise MemoryKeyTaken(f"another active memory is already keyed {key!r}")
            version = tx.memories.apply_edit(
                row,
                changes,
                norm_key=key,
                initials=initials(label),
                acronyms=acronyms(label),
                embedding=embedding,
                embedder_id=self._embedder.model_id,
                actor=actor,
            )
        return MemoryEdited(id=memory_id, version=version, changed=sorted(changes), reembedded=embedding is not None)

    @staticmethod
    def _editable(row: LockedMemory, patch: MemoryPatch) -> LockedMemory:
        if row["forgotten_at"] is not None:
            raise NotFound(f"memory {row['id']} not found")
        if row["tier"] == "cold":
            raise MemoryCold("this memory is in cold storage; it can be edited once a query brings it back")
        if row["protected"] and not patch.unlock:
            raise MemoryProtected("this memory is protected: pass unlock: true to edit it")
        return row

    # -- forgetting --------------------------------------------------------------------------
    def forget(
        self, tenant_id: str, memory_id: UUID, *, actor: str, reason: str | None = None, only_own: bool = False
    ) -> MemoryForgotten:
        """Gone from every read and audited. A hot memory can be restored; a cold one is taken out of
        its cold object and deleted (nothing of it is left to restore). ``only_own``: the actor may
        forget only a memory it alone taught (every admission of it was the actor's)."""
        with self.work.tenant(tenant_id) as tx:
            tx.lock_tenant()
            row = tx.memories.lock(memory_id)
            if row["forgotten_at"] is not None:
                raise NotFound(f"memory {memory_id} not found")
            if only_own and not tx.memories.taught_only_by(memory_id, actor):
                raise Forbidden("this credential may forget only memories it alone taught", details={"verb": "forget"})
            if row["protected"]:
                raise MemoryProtected("this memory is protected: unprotect it (PATCH with unlock) before forgetting it")
            if row["tier"] == "cold":
                done = self._expunge(tx, tenant_id, [memory_id])
                tx.memories.delete([memory_id], actor=actor, reason=reason or "forgotten")
            else:
                done = None
                tx.memories.forget_hot(row, actor=actor, reason=reason)
        if done:
            done.finish(self._blobs, self._settings.cold_bucket)
        return MemoryForgotten(id=memory_id, forgotten=True, cold_copy_removed=done is not None)

    def restore(self, tenant_id: str, memory_id: UUID, *, actor: str, mode: RestoreMode = "current") -> MemoryRestored:
        """Undo a forget (while the memory still exists) or a supersession. A supersession is undone
        one of two ways, never into two silent current versions: ``current`` makes this memory the
        current one again and supersedes its successor by it (recorded, and undone the same way);
        ``both`` keeps both active, linked as a conflict (a ``contradicts`` edge governance lists,
        the older pointing at the newer so reads show the newer first). The memory takes its old
        key back, or a key of its own when another active memory holds it."""
        with self.work.tenant(tenant_id) as tx:
            tx.lock_tenant()
            row = tx.memories.lock(memory_id)
            if row["tier"] == "cold":
                raise NotRestorable("this memory is in cold storage; a matching query brings it back")
            undo: Literal["supersession", "forget"]
            if row["forgotten_at"] is not None:
                undo, state = "forget", row["forgotten_state"] or "active"
            elif row["state"] == "superseded":
                undo, state = "supersession", "active"
            else:
                raise NotRestorable(f"the memory is {row['state']}: there is nothing to undo")
            newer = self._current_successor(tx, row) if undo == "supersession" else None
            if newer is not None and mode == "current":
                if newer["protected"]:
                    raise MemoryProtected(
                        "the newer version is protected: restore with mode=both, or unprotect it first"
                    )
                tx.memories.supersede_by_restored(newer, by=memory_id, actor=actor)
            key = row["norm_key"]
            if state == "active" and tx.memories.key_taken(key, memory_id):
                key = f"{key}~{memory_id.hex[:12]}"
            tx.memories.restore(row, state=state, norm_key=key, actor=actor, undo=undo)
            if newer is not None and mode == "both":
                tx.memories.link_conflict(newer=newer["id"], older=memory_id, actor=actor)
        if undo == "forget":
            return MemoryRestored(id=memory_id, restored=undo, state=state)
        return MemoryRestored(
            id=memory_id,
            restored=undo,
            state=state,
            mode=mode,
            superseded=[newer["id"]] if newer is not None and mode == "current" else [],
            conflicts_with=newer["id"] if newer is not None and mode == "both" else None,
        )

    @staticmethod
    def _current_successor(tx: TenantWork, row: LockedMemory) -> LockedMemory | None:
        """The version that superseded ``row``, when it is still the current one (active and hot):
        the one a restore has to decide about. A successor gone, forgotten or cold is not current."""
        if row["superseded_by"] is None:
            return None
        try:
            newer = tx.memories.lock(row["superseded_by"])
        except NotFound:
            return None
        current = newer["state"] == "active" and newer["tier"] == "hot" and newer["forgotten_at"] is None
        return newer if current else None

    def forget_document(self, tenant_id: str, document_id: UUID, *, actor: str) -> DocumentForgotten:
        """Forget everything only this document taught: memories it alone was the source of are
        deleted (hot or cold); the others lose its occurrences (and a definition that came from it);
        the document's raw text and its S3 copies are removed."""
        settings = self._settings
        with self.work.tenant(tenant_id) as tx:
            tx.lock_tenant()
            document = tx.memories.lock_document(document_id)
            taught = tx.memories.document_memories(document_id)
            doc = str(document_id)

            def without_document(payload: dict) -> dict | None:
                return cold_without_document(payload, doc)

            cold = self._expunge(tx, tenant_id, taught["cold"], without_document)
            gone = taught["sole"] + (cold.dropped if cold else [])
            items = tx.memories.delete_document(document_id, taught["shared"])
            tx.memories.delete(gone, actor=actor, reason=f"document {doc} forgotten")
            tx.memories.audit(
                [
                    {
                        "actor": actor,
                        "action": "document_deleted",
                        "details": {
                            "document_id": doc,
                            "memories_deleted": len(gone),
                            "memories_kept": len(taught["shared"]),
                        },
                    }
                ],
            )
        if cold:
            cold.finish(self._blobs, settings.cold_bucket)
        raw = 0
        for bucket, key in (
            (settings.raw_bucket_name, document["raw_s3_key"]),
            (settings.raw_bucket_name, document["source_s3_key"]),
            (settings.upload_bucket, document["upload_s3_key"]),
        ):
            if key:
                self._blobs.delete(bucket, key)
                raw += 1
        return DocumentForgotten(
            id=document_id,
            memories_forgotten=len(gone),
            memories_kept=len(taught["shared"]) + (len(cold.rewritten) if cold else 0),
            items_removed=items,
            cold_copies_removed=len(cold.dropped) if cold else 0,
            raw_objects_removed=raw,
        )

    def _expunge(
        self, tx: TenantWork, tenant_id: str, ids: builtins.list[UUID], rewrite: Rewrite = drop
    ) -> Expunged | None:
        if not ids:
            return None
        settings = self._settings

        def new_key() -> str:
            day = datetime.now(UTC).strftime("%Y/%m/%d")
            return f"{settings.lifecycle.cold_prefix}{tenant_id}/{day}/{uuid.uuid4().hex}.jsonl.gz"

        return expunge(tx.cold, ids, rewrite, blobs=self._blobs, bucket=settings.cold_bucket, new_key=new_key)

    # -- wiring ------------------------------------------------------------------------------
    @property
    def _settings(self) -> Settings:
        if self.settings is None:
            raise RuntimeError("MemoryService needs settings for management verbs")
        return self.settings

    @property
    def _embedder(self) -> Embedder:
        if self.embedder is None and self.embedder_factory is not None:
            self.embedder = self.embedder_factory()
        if self.embedder is None:
            raise RuntimeError("MemoryService needs an embedder to edit memories")
        return self.embedder

    @property
    def _firewall(self) -> Firewall:
        if self.firewall is None:
            raise RuntimeError("MemoryService needs the write firewall to edit a memory's text")
        return self.firewall

    @property
    def _blobs(self) -> Blobs:
        if self.blobs is None:
            raise RuntimeError("MemoryService needs a blob store to forget documents and cold memories")
        return self.blobs


def _graph(nodes: Sequence[Mapping[str, Any]], edges: Sequence[Mapping[str, Any]], truncated: bool) -> MemoryGraph:
    return MemoryGraph(
        nodes=[GraphNode.model_validate(n) for n in nodes],
        edges=[GraphEdge(src=e["src_id"], dst=e["dst_id"], type=e["type"], weight=float(e["weight"])) for e in edges],
        truncated=truncated,
    )


def cold_without_document(payload: dict, document_id: str) -> dict | None:
    """A cold memory's archived JSON without one document's occurrences (None: nothing else taught
    it); a definition that came from that document gives way to the best remaining occurrence's."""
    items = payload.get("items", [])
    kept = [i for i in items if str(i.get("document_id")) != document_id]
    if not kept:
        return None
    memory = dict(payload["memory"])
    removed = {i["definition"] for i in items if str(i.get("document_id")) == document_id}
    if memory.get("definition") in removed:
        best = max(kept, key=lambda i: (i.get("importance", 0), len(i.get("definition", ""))))
        memory["definition"] = best["definition"]
    return payload | {"memory": memory, "items": kept}
