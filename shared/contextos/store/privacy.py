"""The write firewall's store: each tenant's redaction policy (``tenants.settings``) and the audit
entries that record what was redacted — kinds and counts, never values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from contextos.store.audit import write_audit
from contextos.store.db import Database
from psycopg.types.json import Jsonb

POLICY_KEY = "redaction_policy"


class PrivacyStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def policy(self, tenant_id: str) -> str | None:
        """The tenant's stored policy, None when it never set one (the tenants table has no RLS)."""
        with self.db.system_tx() as conn:
            row = conn.execute(
                "SELECT settings ->> %s AS policy FROM tenants WHERE tenant_id = %s", [POLICY_KEY, tenant_id]
            ).fetchone()
        return row["policy"] if row else None

    def set_policy(self, tenant_id: str, policy: str, *, actor: str) -> None:
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """INSERT INTO tenants (tenant_id, settings) VALUES (%s, %s)
                   ON CONFLICT (tenant_id) DO UPDATE SET settings = tenants.settings || EXCLUDED.settings""",
                [tenant_id, Jsonb({POLICY_KEY: policy})],
            )
            write_audit(
                conn, tenant_id, [{"actor": actor, "action": "privacy_policy_set", "details": {"policy": policy}}]
            )

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
    ) -> None:
        """One audit entry for one screened text: where it came in, the kinds and counts."""
        details: dict[str, Any] = {"way_in": what, "counts": dict(counts)}
        if document_id:
            details["document_id"] = str(document_id)
        if session_id:
            details["session_id"] = session_id
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant_id])
            write_audit(conn, tenant_id, [{"actor": actor, "action": action, "details": details}])
