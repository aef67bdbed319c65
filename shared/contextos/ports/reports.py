"""Reports over a tenant's memory (S9, S13): health and governance inputs, communities, the decay
forecast, and the lifecycle events' outbox."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from contextos.ports.rows import AuditEventRow, ReminderEventRow


class ReportPort(Protocol):
    def health_inputs(self, tenant_id: str, flagged_ids: Sequence[UUID] | None) -> dict[str, Any]: ...

    def decay_candidates(self, tenant_id: str) -> tuple[list[UUID], list[dict[str, Any]]]: ...

    def contradiction_edges(self, tenant_id: str) -> list[dict[str, Any]]: ...

    def similar_pairs(self, tenant_id: str, *, min_cosine: float, limit: int) -> list[dict[str, Any]]: ...

    def god_nodes(self, tenant_id: str) -> tuple[list[UUID], list[dict[str, Any]]]: ...

    def community_edges(self, tenant_id: str) -> tuple[list[dict[str, Any]], int, int]: ...

    def memory_refs(self, tenant_id: str, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]: ...

    def replace_communities(self, tenant_id: str, communities: dict[UUID, int]) -> None: ...

    def save_governance(
        self, tenant_id: str, report: dict[str, Any], *, trigger: str, flagged_ids: Sequence[UUID]
    ) -> dict[str, Any]: ...

    def latest_governance(self, tenant_id: str) -> dict[str, Any] | None: ...

    def community_samples(
        self, tenant_id: str, community_ids: Sequence[int], per_community: int
    ) -> dict[int, list[Any]]: ...


class ForecastPort(Protocol):
    def band_counts(
        self, tenant_id: str, *, days: list[int], policy: str, rate: float | None
    ) -> tuple[datetime, list[tuple[int, str, str, int]]]: ...

    def decay_row(self, tenant_id: str, memory_id: UUID) -> dict[str, Any] | None: ...


class EventOutboxPort(Protocol):
    def audit_after_cursor(self, tenant_id: str, limit: int) -> tuple[int, list[AuditEventRow]]: ...

    def advance(self, tenant_id: str, chain_seq: int) -> None: ...

    def unpublished_reminders(self, tenant_id: str, limit: int) -> list[ReminderEventRow]: ...

    def mark_reminders(self, tenant_id: str, ids: list[UUID]) -> None: ...
