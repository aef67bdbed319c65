"""API keys for agents (S11): only their sha256 is stored; the authorizer turns a key into a tenant."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from contextos.errors import BadRequest
from contextos.models import Provenance
from contextos.store.db import Database
from contextos.tenancy import valid_tenant

KEY_PREFIX = "ctx_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class KeyIdentity:
    tenant_id: str
    name: str
    principal: str
    provenance_ceiling: str


@dataclass
class KeyService:
    db: Database

    def create(
        self,
        tenant_id: str,
        name: str,
        *,
        principal: str = "agent",
        provenance_ceiling: Provenance = Provenance.agent_turn,
        key: str | None = None,
    ) -> str:
        """Make a key (or register a given one, e.g. the local stack's dev key); return it once."""
        if not valid_tenant(tenant_id):
            raise BadRequest(f"invalid tenant id {tenant_id!r}")
        if principal not in ("agent", "user"):
            raise BadRequest("principal must be 'agent' or 'user'")
        key = key or KEY_PREFIX + secrets.token_urlsafe(32)
        with self.db.system_tx() as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant_id])
            conn.execute(
                """INSERT INTO api_keys (key_hash, tenant_id, name, principal, provenance_ceiling)
                   VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key_hash) DO NOTHING""",
                [hash_key(key), tenant_id, name, principal, provenance_ceiling.value],
            )
        return key

    def identify(self, key: str) -> KeyIdentity | None:
        """The identity behind a presented key, or None (unknown or revoked)."""
        if not key or len(key) > 512:
            return None
        with self.db.system_tx() as conn:
            row = conn.execute(
                """SELECT tenant_id, name, principal, provenance_ceiling FROM api_keys
                   WHERE key_hash = %s AND revoked_at IS NULL""",
                [hash_key(key)],
            ).fetchone()
        return KeyIdentity(**row) if row else None

    def list(self, tenant_id: str | None = None) -> list[dict]:
        """Every key (never the key itself: a short prefix of its hash to tell them apart)."""
        with self.db.system_tx() as conn:
            return conn.execute(
                """SELECT tenant_id, name, principal, provenance_ceiling, left(key_hash, 12) AS key_hash_prefix,
                          created_at, revoked_at
                   FROM api_keys WHERE %(tenant)s::text IS NULL OR tenant_id = %(tenant)s
                   ORDER BY tenant_id, created_at, name""",
                {"tenant": tenant_id},
            ).fetchall()

    def revoke(self, tenant_id: str, name: str) -> int:
        """Revoke a tenant's live keys of that name; how many were revoked (0: none matched)."""
        with self.db.system_tx() as conn:
            return conn.execute(
                """UPDATE api_keys SET revoked_at = now()
                   WHERE tenant_id = %s AND name = %s AND revoked_at IS NULL""",
                [tenant_id, name],
            ).rowcount
