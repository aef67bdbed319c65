"""A document's scope, each write in its own tenant transaction: the ingestion service's two calls."""

from __future__ import annotations

from uuid import UUID

from contextos.scopes import Scope
from contextos.store.db import Database
from contextos.store.scopes import inherit_document_scope, set_document_scope


def scope_document(db: Database, tenant_id: str, document_id: UUID, scope: Scope) -> None:
    """Record who a new document is about (user, agent, run, tags)."""
    with db.tenant_tx(tenant_id) as conn:
        set_document_scope(conn, tenant_id, document_id, scope)


def scope_document_memories(db: Database, tenant_id: str, document_id: UUID) -> None:
    """Give the memories the document taught its scope (after admission stored them)."""
    with db.tenant_tx(tenant_id) as conn:
        inherit_document_scope(conn, tenant_id, document_id)
