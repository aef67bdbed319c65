"""API keys (hashes only) and the re-embedding of a tenant's vectors by another model."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from contextos.lsh import Sketch
from contextos.ports.rows import KeyIdentity, KeyListRow, ReembedRow


class KeyPort(Protocol):
    def add(
        self,
        tenant_id: str,
        key_hash: str,
        name: str,
        principal: str,
        provenance_ceiling: str,
        *,
        verbs: list[str] | None = None,
        scope_user_id: str | None = None,
        scope_agent_id: str | None = None,
        scope_tags: list[str] | None = None,
    ) -> None: ...

    def live(self, key_hash: str) -> KeyIdentity | None: ...

    def list(self, tenant_id: str | None = None) -> list[KeyListRow]: ...

    def revoke(self, tenant_id: str, name: str) -> int: ...


class ReembedPort(Protocol):
    def pending(self, tenant_id: str, embedder_id: str) -> int: ...

    def stored_dimension(self) -> int | None: ...

    def batch(self, tenant_id: str, embedder_id: str, after: UUID, limit: int) -> list[ReembedRow]: ...

    def write(
        self, tenant_id: str, embedder_id: str, ids: list[UUID], vectors: list[list[float]], lsh: Sketch
    ) -> None: ...
