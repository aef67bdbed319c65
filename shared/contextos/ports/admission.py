"""Admission (S4 step 7): the one way candidates become memories, for every source — a document, a
conversation flush, a manual memory (``source`` None), a promotion and a workspace import."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol
from uuid import UUID

from contextos.governance_models import HeldCandidate
from contextos.models import MemoryCandidate, StoreResult
from contextos.scopes import Scope
from contextos.sources import ConceptSource, DocumentSource


@dataclass
class Admitted:
    """An admission's result, the counts recorded with its source, and the review items it held."""

    result: StoreResult
    counts: dict[str, Any] = field(default_factory=dict)
    review_ids: list[UUID] = field(default_factory=list)


@dataclass(frozen=True)
class DocumentAdmission:
    """One document's part of a batched admission: its candidates, the trust gate's held ones, and
    the document itself (its counts already joined)."""

    candidates: Sequence[MemoryCandidate]
    source: DocumentSource
    held: Sequence[HeldCandidate] = ()


@dataclass(frozen=True)
class Promotion:
    """A user vouching for a held candidate (S7): decided and admitted in one transaction."""

    review_id: UUID
    actor: str
    reason: str


@dataclass(frozen=True)
class GivenSource:
    """An occurrence a workspace file names for its memory (a document, or a session's messages)."""

    document_id: UUID | None
    filename: str | None
    session_id: str | None
    message_from: int | None
    message_to: int | None
    label: str
    definition: str
    importance: int
    created_at: datetime | None


@dataclass(frozen=True)
class GivenMemory:
    """A memory as a workspace file gives it (S10): admitted as given, its id, state, strength and
    history kept, through the same gates as every candidate (``candidate`` is what they judge)."""

    id: UUID
    candidate: MemoryCandidate
    held: HeldCandidate | None = None  # the trust gate's (or the firewall's) hold: the review queue only
    state: str = "active"
    tier: str = "hot"
    tags: Sequence[str] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    always_load: bool = False
    protected: bool = False
    version: int = 1
    created_at: datetime | None = None
    updated_at: datetime | None = None
    strength_anchor: float | None = None
    strength_anchor_at: datetime | None = None
    decay_policy: str = "exponential"
    decay_scale: float | None = None
    decay_shape: float | None = None
    last_accessed_at: datetime | None = None
    access_count: int = 0
    superseded_by: UUID | None = None
    superseded_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    recorded_at: datetime | None = None
    expires_at: datetime | None = None
    cold_object_key: str | None = None
    cold_byte_start: int | None = None
    cold_byte_end: int | None = None
    sources: Sequence[GivenSource] = ()
    edges: Sequence[tuple[UUID, str, float]] = ()  # (to, type, weight): kept where the other end exists

    @property
    def live(self) -> bool:
        """Active and hot: searchable, counted, judged by the contradiction gate."""
        return self.state == "active" and self.tier == "hot"


@dataclass(frozen=True)
class GivenEdit:
    """A workspace file's change to a stored memory, decided on the row as it was read (``version``):
    applied only over that version."""

    memory_id: UUID
    version: int
    changes: dict[str, Any]
    norm_key: str
    embedding: Sequence[float] | None  # the new text's vector, when label or definition changed
    label: str  # the label after the edit (its initials and acronyms are kept for merging)
    key_must_be_free: bool  # a relabelled active memory takes a key no other active memory holds


@dataclass(frozen=True)
class WorkspaceBatch:
    """One batch of a workspace import: edits by id, then new memories (S10)."""

    edits: Sequence[GivenEdit] = ()
    memories: Sequence[GivenMemory] = ()
    document_id: UUID | None = None  # a dropped file's document: the source of a memory naming none


@dataclass(frozen=True)
class FileOutcome:
    """What became of one edit or one given memory."""

    status: Literal["created", "updated", "held", "conflict", "duplicate_key"]
    memory_id: UUID
    version: int | None = None
    review_id: UUID | None = None
    holder: UUID | None = None  # duplicate_key: the memory holding the key, when one does


class VectorSettling(Protocol):
    def settle_vectors(self, tenant_id: str, *, limit: int) -> int:
        """Move up to ``limit`` fresh vectors into the ANN index; how many moved."""
        ...


class AdmissionPort(VectorSettling, Protocol):
    """The one transaction in which candidates become memories, under the tenant lock."""

    def store_concepts(
        self,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        source: ConceptSource | None,
        *,
        embedder_id: str,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
        scope: Scope | None = None,
    ) -> StoreResult: ...

    def admit_batch(
        self,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        source: ConceptSource | None,
        *,
        embedder_id: str,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
        scope: Scope | None = None,
        promotion: Promotion | None = None,
    ) -> Admitted | None: ...

    def admit_documents(
        self, tenant_id: str, documents: Sequence[DocumentAdmission], *, embedder_id: str, actor: str = "ingest"
    ) -> list[StoreResult]: ...

    def admit_workspace(
        self, tenant_id: str, batch: WorkspaceBatch, *, embedder_id: str, actor: str
    ) -> tuple[list[FileOutcome], list[FileOutcome]]:
        """A workspace batch in one transaction under the tenant lock: its edits (each over the
        version it was made on), then its memories (an id already taken or an active key already held
        refuses that file alone; a held one goes to the review queue; the contradiction gate judges
        the live ones). The outcomes of the edits and of the memories, in their order."""
        ...

    def links(self, tenant_id: str, memory_id: UUID, types: Sequence[str]) -> dict[str, list[UUID]]: ...

    def source_owner(self, tenant_id: str, document_id: UUID | None, session_id: str | None) -> Scope: ...
