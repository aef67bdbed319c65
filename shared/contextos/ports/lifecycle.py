"""The lifecycle scan's storage (S5): band transitions, reminders, scratch expiry, text statistics,
and cold storage (archival claims, reactivation claims, the cold stubs near a query)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from contextos.ports.rows import AcknowledgedReminder, ReminderRow
from contextos.scopes import ScopeFilter


class TenantPort(Protocol):
    def tenant_ids(self) -> list[str]:
        """Every tenant, the registry every tenant-scoped job walks."""
        ...


@dataclass
class TransitionBatch:
    """One keyset batch of due memories: how many were looked at, how many changed band, into which."""

    claimed: int = 0
    changed: int = 0
    bands: dict[str, int] = field(default_factory=dict)
    reminders_opened: int = 0
    after: tuple[datetime, UUID] | None = None  # the next batch starts after this key; None when done


@dataclass
class ArchiveRecord:
    memory_id: UUID
    was_active: bool
    reason: str
    payload: bytes  # the full memory as JSON


class ArchiveClaim(Protocol):
    """Memories claimed for archival in an open transaction: stub them, or leave and roll back."""

    records: list[ArchiveRecord]
    last_id: UUID | None

    def stub(self, object_key: str, ranges: Sequence[tuple[int, int]]) -> None: ...


class ColdClaim(Protocol):
    """A cold stub locked for reactivation."""

    object_key: str


class ColdPort(Protocol):
    def claim_archivable(
        self, tenant_id: str, *, after: UUID | None, limit: int
    ) -> AbstractContextManager[ArchiveClaim]: ...

    def cold_candidates(
        self,
        tenant_id: str,
        query_vector: Sequence[float],
        text_ids: Sequence[UUID],
        *,
        limit: int,
        scope: ScopeFilter | None = None,
    ) -> list[dict[str, Any]]:
        """Cold stubs near a query (by cosine) and those the text search found (``text_ids``)."""
        ...

    def cold_matches(
        self, tenant_id: str, query_vector: Sequence[float], *, min_similarity: float, limit: int
    ) -> list[dict[str, Any]]: ...

    def claim_cold(self, tenant_id: str, memory_id: UUID) -> AbstractContextManager[ColdClaim | None]: ...

    def restore(self, claim: Any, payload: dict[str, Any], *, strength: float, reason: str) -> bool:
        """Bring the claimed stub back hot from its archived ``payload``, in the claim's transaction
        (``claim``: what ``claim_cold`` yielded, which only its own store can use)."""
        ...


class IndexPass(Protocol):
    """What one pass of the per-tenant index job did."""

    built: list[str]  # tenants
    dropped: list[str]


class VectorIndexJob(Protocol):
    """Each large tenant's own ANN index, built online once it grows past the line, dropped once it shrinks."""

    def run(self, only: Collection[str] | None = None) -> IndexPass: ...


class LifecyclePort(Protocol):
    def due_work(self) -> dict[str, frozenset[str]] | None:
        """Per tenant, the scan's stages that would find something now; None when the engine cannot
        tell (every stage then runs for every tenant)."""
        ...

    def materialize(self, tenant_id: str, *, after: tuple[datetime, UUID] | None, limit: int) -> TransitionBatch: ...

    def expire_scratch(self, tenant_id: str, *, limit: int) -> int: ...

    def refresh_text_statistics(self, tenant_id: str, *, common: bool = True, bm25: bool = True) -> tuple[int, int]: ...

    def reminders(
        self, tenant_id: str, *, include_acknowledged: bool, limit: int, cursor: str | None = None
    ) -> tuple[list[ReminderRow], str | None]: ...

    def acknowledge(self, tenant_id: str, reminder_id: UUID) -> AcknowledgedReminder: ...
