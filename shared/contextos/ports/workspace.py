"""The workspace's reads (S10): export pages in id order, the stored rows an import compares its
files with, and the memories a router file lists. An import's writes go through admission."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol
from uuid import UUID


class WorkspaceReads(Protocol):
    def export_page(
        self, tenant_id: str, *, after: UUID | None, limit: int, live_only: bool = False
    ) -> list[dict[str, Any]]: ...

    def live_ids(self, tenant_id: str, ids: Sequence[UUID]) -> set[UUID]: ...

    def rows_by_id(self, tenant_id: str, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]: ...

    def router_rows(self, tenant_id: str, *, limit: int) -> list[dict[str, Any]]: ...
