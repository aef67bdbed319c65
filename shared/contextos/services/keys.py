"""API keys for agents (S11): only their sha256 is stored; the authorizer turns a key into a tenant."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field

from contextos.access import KeyScope, parse_verbs
from contextos.errors import BadRequest
from contextos.models import Provenance
from contextos.ports.keys import KeyPort
from contextos.ports.rows import KeyListRow
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
    verbs: list[str] | None = None  # None: the principal's defaults (contextos.access)
    scope_user_id: str | None = None
    scope_agent_id: str | None = None
    scope_tags: list[str] = field(default_factory=list)

    @property
    def scope(self) -> KeyScope:
        return KeyScope(user_id=self.scope_user_id, agent_id=self.scope_agent_id, tags=tuple(self.scope_tags))


@dataclass
class KeyService:
    store: KeyPort

    def create(
        self,
        tenant_id: str,
        name: str,
        *,
        principal: str = "agent",
        provenance_ceiling: Provenance = Provenance.agent_turn,
        key: str | None = None,
        verbs: list[str] | None = None,
        scope: KeyScope | None = None,
    ) -> str:
        """Make a key (or register a given one, e.g. the local stack's dev key); return it once."""
        if not valid_tenant(tenant_id):
            raise BadRequest(f"invalid tenant id {tenant_id!r}")
        if principal not in ("agent", "user"):
            raise BadRequest("principal must be 'agent' or 'user'")
        key = key or KEY_PREFIX + secrets.token_urlsafe(32)
        granted = parse_verbs(verbs)
        scope = scope or KeyScope()
        self.store.add(
            tenant_id,
            hash_key(key),
            name,
            principal,
            provenance_ceiling.value,
            verbs=sorted(granted) if granted is not None else None,
            scope_user_id=scope.user_id,
            scope_agent_id=scope.agent_id,
            scope_tags=list(scope.tags),
        )
        return key

    def identify(self, key: str) -> KeyIdentity | None:
        """The identity behind a presented key, or None (unknown or revoked)."""
        if not key or len(key) > 512:
            return None
        row = self.store.live(hash_key(key))
        return KeyIdentity(**row) if row else None

    def list(self, tenant_id: str | None = None) -> list[KeyListRow]:
        """Every key (never the key itself: a short prefix of its hash to tell them apart)."""
        return self.store.list(tenant_id)

    def revoke(self, tenant_id: str, name: str) -> int:
        """Revoke a tenant's live keys of that name; how many were revoked (0: none matched)."""
        return self.store.revoke(tenant_id, name)
