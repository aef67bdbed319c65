"""Who may do what (S11): the permission matrix, decided here and nowhere else.

REST (`api/auth.require`), the in-process MCP backend and, through the API, the CLI all ask
`authorize`. A credential is a person (Cognito) or an API key; a key may carry its own verbs and
scopes, otherwise its principal's defaults apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from contextos.errors import BadRequest, Forbidden
from contextos.models import Provenance
from contextos.scopes import ScopeFilter


class Verb(StrEnum):
    read = "read"  # context, search, list and show memories, documents, sessions, reports
    write = "write"  # documents, uploads, manual memories, turns, MCP writes
    edit = "edit"  # change a memory's text or fields; restore a forgotten one
    forget = "forget"  # forget any memory ("forget:own" grants only memories this key alone taught)
    forget_document = "forget-document"  # delete a document and what only it taught
    unlock = "unlock"  # change a protected memory (edits, syncs, imports that unlock)
    export = "export"  # the whole tenant as workspace files
    import_ = "import"  # workspace import and sync
    audit = "audit"  # read the audit log
    review = "review"  # promote or reject held candidates
    erase = "erase"  # erase a user scope or the whole tenant


FORGET_OWN = "forget:own"
ALL_VERBS: frozenset[str] = frozenset(v.value for v in Verb)
GRANTABLE: frozenset[str] = ALL_VERBS | {FORGET_OWN}
DEFAULT_VERBS: dict[str, frozenset[str]] = {
    "user": ALL_VERBS,
    "agent": frozenset({Verb.read.value, Verb.write.value, FORGET_OWN}),
}


def parse_verbs(raw: Iterable[str] | None) -> frozenset[str] | None:
    """Validated verbs for a key, or None (its principal's defaults)."""
    if raw is None:
        return None
    verbs = frozenset(v.strip() for v in raw if v.strip())
    if unknown := sorted(verbs - GRANTABLE):
        raise BadRequest(f"unknown verbs {unknown}; known: {sorted(GRANTABLE)}")
    return verbs


@dataclass(frozen=True, slots=True)
class KeyScope:
    """What a key is confined to: its writes carry these, its reads see only these."""

    user_id: str | None = None
    agent_id: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.tags)

    def stamp(self, user_id: str | None, agent_id: str | None, tags: Iterable[str]) -> dict[str, object]:
        """A write's scope fields with this key's scope on them; naming another user or agent is refused."""
        if self.user_id and user_id and user_id != self.user_id:
            raise Forbidden(f"this key is limited to user_id {self.user_id!r}")
        if self.agent_id and agent_id and agent_id != self.agent_id:
            raise Forbidden(f"this key is limited to agent_id {self.agent_id!r}")
        return {
            "user_id": self.user_id or user_id,
            "agent_id": self.agent_id or agent_id,
            "tags": sorted(set(tags) | set(self.tags)),
        }

    def confine(self, wanted: ScopeFilter | None) -> ScopeFilter | None:
        """A read filter narrowed to this scope; a request for another user or agent is refused."""
        if self.empty:
            return wanted
        base = wanted or ScopeFilter()
        for name in ("user_id", "agent_id"):
            mine, asked = getattr(self, name), getattr(base, name)
            if mine and asked and asked != mine:
                raise Forbidden(f"this key is limited to {name} {mine!r}")
        return base.model_copy(
            update={
                "user_id": self.user_id or base.user_id,
                "agent_id": self.agent_id or base.agent_id,
                "tags": sorted(set(base.tags) | set(self.tags)),
            }
        )


@dataclass(frozen=True, slots=True)
class Principal:
    tenant_id: str
    kind: str  # "user" (a person) or "agent" (an API key)
    subject: str
    provenance_ceiling: Provenance
    verbs: frozenset[str] | None = None  # None: the kind's defaults
    scope: KeyScope = field(default_factory=KeyScope)

    @property
    def granted(self) -> frozenset[str]:
        return self.verbs if self.verbs is not None else DEFAULT_VERBS.get(self.kind, frozenset())

    def may(self, verb: Verb) -> bool:
        granted = self.granted
        return verb.value in granted or (verb is Verb.forget and FORGET_OWN in granted)

    def forgets_only_own(self) -> bool:
        """Forget is granted only for memories this credential alone taught."""
        return Verb.forget.value not in self.granted and FORGET_OWN in self.granted


def authorize(principal: Principal, verb: Verb) -> Principal:
    """The one check: the principal if it may, else 403 ``forbidden`` naming the verb."""
    if not principal.may(verb):
        raise Forbidden(
            f"this {principal.kind} credential may not {verb.value}",
            details={"verb": verb.value, "granted": sorted(principal.granted)},
        )
    return principal
