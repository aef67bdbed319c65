"""The management reads (S11): memory and document pages, and the graph around a memory or of a tenant."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from contextos.management_models import DocumentListQuery, MemoryListQuery
from contextos.ports.reads import VersionReads
from contextos.ports.rows import DocumentListRow, GraphColumnsRow, GraphEdgeRow, GraphNodeRow, MemoryListRow
from contextos.scopes import ScopeFilter


class ManagementPort(VersionReads, Protocol):
    def list_memories(self, tenant_id: str, query: MemoryListQuery) -> tuple[list[MemoryListRow], str | None]: ...

    def list_documents(self, tenant_id: str, query: DocumentListQuery) -> tuple[list[DocumentListRow], str | None]: ...

    def graph_around(
        self, tenant_id: str, memory_id: UUID, *, hops: int, limit: int, scope: ScopeFilter | None = None
    ) -> tuple[list[GraphNodeRow], list[GraphEdgeRow], bool]: ...

    def tenant_graph(
        self, tenant_id: str, *, limit: int, offset: int = 0, scope: ScopeFilter | None = None
    ) -> tuple[list[GraphNodeRow], list[GraphEdgeRow], bool]: ...

    def tenant_graph_columns(
        self, tenant_id: str, *, limit: int, offset: int = 0, scope: ScopeFilter | None = None
    ) -> GraphColumnsRow:
        """The same page as ``tenant_graph``, as columns with edges as ranks into them."""
        ...
