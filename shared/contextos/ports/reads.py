"""The read path's storage (S6): the three searches, the candidate pool, reinforcement of what was
injected, a memory's detail, and the readers for a scope (S11) or a past time (S7)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from contextos.ports.rows import MemoryDetail, MemorySourceRow, PoolRow, SubjectPair, TextHit, VectorHit
from contextos.scopes import ScopeFilter


@dataclass(frozen=True)
class BM25Params:
    """BM25's constants and the bounds of its statistics (docs/design.md S6.2)."""

    k1: float = 1.5
    b: float = 0.75
    extra_weight: float = 0.5  # a synonym's or a carried phrase's lexeme, against the query's own
    df_live_max: int = 1000  # without the scan's count, a document frequency is counted up to this


@dataclass(frozen=True, slots=True)
class PoolRequest:
    """What the candidate pool is asked: the walk's seeds and knobs, the searches' hits, the top
    hits whose S9 communities count, and how many pinned memories and excerpts to read."""

    seeds: Sequence[UUID]
    found: Sequence[UUID]
    top: Sequence[UUID]
    hops: int
    fall: float
    shared_source_weight: float
    k: int
    pinned: int
    excerpts: int
    excerpt_chars: int
    stems: Sequence[str] = ()  # the query's content-word stems, which choose the excerpts read
    known: Sequence[UUID] = ()  # ids whose cosine the caller holds: their vectors are not read again


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


class MemoryDetails(Protocol):
    """A memory's row with its exact strength now, and every occurrence behind it."""

    def get_memory(self, tenant_id: str, memory_id: UUID) -> MemoryDetail: ...

    def sources_of_memory(self, tenant_id: str, memory_id: UUID) -> list[MemorySourceRow]: ...


class ReadPort(SearchReads, MemoryDetails, Protocol):
    """Present-time reads, the readers for a scope or a past time, and reinforcement."""

    def reader(
        self,
        *,
        as_of: datetime | None,
        scope: ScopeFilter | None,
        exact_scan_max_rows: int,
        scope_cache_s: float,
    ) -> SearchReads:
        """The reads within ``scope`` (S11), answered as of ``as_of`` (S7), or both; this store
        itself when neither is asked."""
        ...

    def same_subject_pairs(self, tenant_id: str, ids: Sequence[UUID], *, min_cosine: float) -> list[SubjectPair]: ...

    def searchable_size(self, tenant_id: str, cache_s: float) -> int:
        """The tenant's hot memories and cold stubs (what a query's candidates come from), as
        counted at most ``cache_s`` ago."""
        ...

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


class VersionReads(Protocol):
    def predecessors(self, tenant_id: str, memory_ids: Sequence[UUID]) -> dict[UUID, list[dict[str, Any]]]:
        """Per memory, the versions it superseded (directly or through others), newest first."""
        ...
