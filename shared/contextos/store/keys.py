"""API keys as rows: only a key's sha256 is stored, in ``api_keys`` (no row-level security: the
authorizer looks a key up before it knows the tenant)."""

from __future__ import annotations

from dataclasses import dataclass

from contextos.ports.rows import KeyIdentity, KeyListRow, row_of, rows_of
from contextos.store.db import Database


@dataclass
class KeyStore:
    db: Database

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
    ) -> None:
        """The tenant (once) and the key (once per hash)."""
        with self.db.system_tx() as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant_id])
            conn.execute(
                """INSERT INTO api_keys (key_hash, tenant_id, name, principal, provenance_ceiling, verbs,
                       scope_user_id, scope_agent_id, scope_tags)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key_hash) DO NOTHING""",
                [
                    key_hash,
                    tenant_id,
                    name,
                    principal,
                    provenance_ceiling,
                    verbs,
                    scope_user_id,
                    scope_agent_id,
                    scope_tags or [],
                ],
            )

    def live(self, key_hash: str) -> KeyIdentity | None:
        """The identity columns of a live (unrevoked) key, or None."""
        with self.db.system_tx() as conn:
            row = conn.execute(
                """SELECT tenant_id, name, principal, provenance_ceiling, verbs, scope_user_id, scope_agent_id,
                          scope_tags
                   FROM api_keys WHERE key_hash = %s AND revoked_at IS NULL""",
                [key_hash],
            ).fetchone()
        return row_of(KeyIdentity, row)

    def list(self, tenant_id: str | None = None) -> list[KeyListRow]:
        with self.db.system_tx() as conn:
            rows = conn.execute(
                """SELECT tenant_id, name, principal, provenance_ceiling, verbs, scope_user_id, scope_agent_id,
                          scope_tags, left(key_hash, 12) AS key_hash_prefix,
                          created_at, revoked_at
                   FROM api_keys WHERE %(tenant)s::text IS NULL OR tenant_id = %(tenant)s
                   ORDER BY tenant_id, created_at, name""",
                {"tenant": tenant_id},
            ).fetchall()
        return rows_of(KeyListRow, rows)

    def revoke(self, tenant_id: str, name: str) -> int:
        with self.db.system_tx() as conn:
            return conn.execute(
                """UPDATE api_keys SET revoked_at = now()
                   WHERE tenant_id = %s AND name = %s AND revoked_at IS NULL""",
                [tenant_id, name],
            ).rowcount
