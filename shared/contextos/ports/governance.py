"""Governance (S7): the review queue, a memory's history and the audit chain; the write firewall's
per-tenant policy and its record of what it found."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol
from uuid import UUID

from contextos.ports.rows import (
    AuditEntry,
    AuditEvent,
    ChainHead,
    DecidedReview,
    ReviewRow,
    UnchainedRow,
    VersionRow,
)


class ReviewPort(Protocol):
    def review_page(
        self, tenant_id: str, *, status: str, after: tuple[datetime, UUID] | None, limit: int
    ) -> list[ReviewRow]: ...

    def decide_alone(
        self, tenant_id: str, review_id: UUID, *, status: str, actor: str, reason: str
    ) -> DecidedReview | None:
        """Decide a pending item in a transaction of its own (a rejection); None when not pending."""
        ...

    def review_status(self, tenant_id: str, review_id: UUID) -> str: ...

    def history(self, tenant_id: str, memory_id: UUID) -> tuple[list[VersionRow], list[AuditEvent]]: ...

    def audit_page(
        self, tenant_id: str, *, after: int, limit: int, memory_id: UUID | None = None
    ) -> list[AuditEntry]: ...

    def unchained(self, tenant_id: str) -> list[UnchainedRow]: ...

    def audit_head(self, tenant_id: str) -> ChainHead | None: ...

    def audit_tenants(self) -> list[str]: ...


class PrivacyPort(Protocol):
    def policy(self, tenant_id: str) -> str | None: ...

    def set_policy(self, tenant_id: str, policy: str, *, actor: str) -> None: ...

    def record(
        self,
        tenant_id: str,
        *,
        actor: str,
        action: str,
        what: str,
        counts: Mapping[str, int],
        document_id: UUID | None = None,
        session_id: str | None = None,
    ) -> None: ...
