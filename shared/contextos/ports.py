"""The storage ports: what a service may ask of each aggregate store, declared once.

Services take these, the container wires the implementations (``contextos.store.*``), and a test
may hand a service a fake. A port names no driver: a connection is ``Conn`` here (the store's
``contextos.store.db.Conn``); ``db`` is the store's ``Database``, for the store functions a service
runs inside one tenant transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from contextos.config import DecaySettings
from contextos.gate_port import ContradictionGatePort
from contextos.governance_models import HeldCandidate
from contextos.models import DocumentRecord, MemoryCandidate, StoreResult
from contextos.scopes import Scope
from contextos.sources import ConceptSource

if TYPE_CHECKING:
    from contextos.store.admission import Admitted, DocumentAdmission
    from contextos.store.db import Database
    from contextos.store.history import PoolRequest
    from contextos.store.promotion import Promotion
    from contextos.store.rows import (
        ClaimedDocument,
        DocumentMemory,
        MemoryDetail,
        MemorySourceRow,
        PoolRow,
        TextHit,
        UploadTicketRow,
        VectorHit,
    )
    from contextos.store.text_search import BM25Params

Conn = Any  # a tenant transaction's connection, as the store's transactions yield it


class TenantPort(Protocol):
    def tenant_ids(self) -> list[str]: ...


class DocumentPort(Protocol):
    """Documents (S4): queued → processing → done or failed, and what each taught."""

    db: Database

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

    def memories_of_document(self, tenant_id: str, document_id: UUID) -> list[DocumentMemory]: ...


class AdmissionPort(Protocol):
    """The one transaction in which candidates become memories (S4 step 7), for every source: a
    document, a conversation flush, a manual memory (``source`` None) or a promotion."""

    db: Database

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

    def links(self, tenant_id: str, memory_id: UUID, types: Sequence[str]) -> dict[str, list[UUID]]: ...

    def settle_vectors(self, tenant_id: str, *, limit: int) -> int: ...

    def admit_documents(
        self, tenant_id: str, documents: Sequence[DocumentAdmission], *, embedder_id: str, actor: str = "ingest"
    ) -> list[StoreResult]: ...

    def source_owner(self, tenant_id: str, document_id: UUID | None, session_id: str | None) -> Scope: ...


class TextRanking(Protocol):
    """S6.2's BM25 text search, one signature for the present-time, scoped and historical reads."""

    def text_rank(
        self,
        tenant_id: str,
        query: str,
        extra: Sequence[str],
        phrases: Sequence[Sequence[str]],
        *,
        k: int,
        cap: int | None,
        params: BM25Params,
        with_cold: bool = False,
    ) -> list[TextHit]: ...


class SearchReads(TextRanking, Protocol):
    """What the read path asks of any reader: present-time, scoped (S11) or as of a past time (S7)."""

    def vector_search(
        self,
        tenant_id: str,
        embedding: Sequence[float],
        *,
        k: int,
        ef_search: int,
        exact_scan_max_rows: int = 20_000,
        scope_cache_s: float = 0.0,
    ) -> list[VectorHit]: ...

    def searchable_rows(self, tenant_id: str, *, at_most: int) -> int:
        """How many rows ``vector_search`` could return (counted up to ``at_most``): what a short
        answer is checked against."""
        ...

    def candidate_pool(self, tenant_id: str, query_vector: Sequence[float], request: PoolRequest) -> list[PoolRow]: ...


class ReadPort(SearchReads, Protocol):
    """Present-time reads, reinforcement of what was injected, a memory's detail and its sources."""

    db: Database
    decay: DecaySettings

    def same_subject_pairs(self, tenant_id: str, ids: Sequence[UUID], *, min_cosine: float) -> list[Any]: ...

    def reinforce_and_log(
        self,
        tenant_id: str,
        memory_ids: Sequence[UUID],
        *,
        intent: str,
        budget: int,
        tokens_used: int,
        session_id: str | None = None,
    ) -> None: ...

    def get_memory(self, tenant_id: str, memory_id: UUID) -> MemoryDetail: ...

    def sources_of_memory(self, tenant_id: str, memory_id: UUID) -> list[MemorySourceRow]: ...


# -- what a service that spans aggregates takes --------------------------------------------------
class VectorSettling(Protocol):
    def settle_vectors(self, tenant_id: str, *, limit: int) -> int: ...


class LifecyclePort(TenantPort, VectorSettling, Protocol):
    """The scan walks every tenant and moves its fresh vectors into the ANN index."""


class MemoryReadPort(Protocol):
    """A memory's detail and sources, and a document's memories (the management reads)."""

    db: Database
    decay: DecaySettings

    def get_memory(self, tenant_id: str, memory_id: UUID) -> MemoryDetail: ...

    def sources_of_memory(self, tenant_id: str, memory_id: UUID) -> list[MemorySourceRow]: ...

    def get_document(self, tenant_id: str, document_id: UUID) -> DocumentRecord: ...

    def memories_of_document(self, tenant_id: str, document_id: UUID) -> list[DocumentMemory]: ...


class IngestPort(DocumentPort, AdmissionPort, Protocol):
    """A document's ledger and the admission its concepts go through."""


class WorkspaceStorePort(DocumentPort, VectorSettling, Protocol):
    """A workspace import: documents for the files it cannot map, and the contradiction gate."""

    gate: ContradictionGatePort | None
