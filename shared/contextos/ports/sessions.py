"""Conversation sessions (S8): the turn buffer, flush claims and their queue bookkeeping."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from contextos.ports.rows import AppendedMessage, FlushRow, SessionDetail, SessionListRow, SessionTaught, TurnRow
from contextos.scopes import Scope


class ConversationPort(Protocol):
    def append(
        self,
        tenant_id: str,
        session_id: str,
        *,
        role: str,
        content: str,
        provenance: str,
        occurred_at: datetime | None = None,
    ) -> AppendedMessage: ...

    def set_session_scope(self, tenant_id: str, session_id: str, scope: Scope) -> None:
        """Who the session is about (S11): its memories take this scope when they are admitted."""
        ...

    def recent_turns(self, tenant_id: str, session_id: str, limit: int) -> list[TurnRow]: ...

    def claim_flush(
        self, tenant_id: str, session_id: str, trigger: str, *, min_unflushed: int = 1
    ) -> FlushRow | None: ...

    def claim_idle(self, tenant_id: str, *, idle_s: int, limit: int) -> list[FlushRow]: ...

    def mark_enqueued(self, tenant_id: str, session_id: str, message_from: int) -> None: ...

    def mark_enqueued_many(self, tenant_id: str, ranges: list[tuple[str, int]]) -> None: ...

    def unsent_flushes(
        self, tenant_id: str, *, older_than_s: int, requeue_after_s: int, limit: int
    ) -> list[FlushRow]: ...

    def claim_job(
        self, tenant_id: str, session_id: str, message_from: int, *, stale_after_s: int
    ) -> FlushRow | None: ...

    def release_job(self, tenant_id: str, session_id: str, message_from: int, reason: str) -> None: ...

    def fail_job(
        self, tenant_id: str, session_id: str, message_from: int, reason: str, counts: dict[str, Any] | None = None
    ) -> None: ...

    def turns(self, tenant_id: str, session_id: str, message_from: int, message_to: int) -> list[TurnRow]: ...

    def get_session(self, tenant_id: str, session_id: str) -> SessionDetail: ...

    def list_sessions(
        self, tenant_id: str, *, status: str | None, limit: int, cursor: str | None
    ) -> tuple[list[SessionListRow], str | None]: ...

    def taught(self, tenant_id: str, session_id: str) -> SessionTaught:
        """What a session's flushes made of it: the memories its turns fed and the candidates held."""
        ...
