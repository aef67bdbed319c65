"""Tenants: the registry every tenant-scoped job walks (the tenants table has no row-level security)."""

from __future__ import annotations

from contextos.store.db import Database


class TenantStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def tenant_ids(self) -> list[str]:
        with self.db.system_tx() as conn:
            return [r["tenant_id"] for r in conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")]
