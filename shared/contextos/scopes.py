"""Scopes inside a tenant (S11): who a memory, document or session belongs to, and the filters
that select by it. The tenant is the security wall; scopes only organise what one tenant holds.

Pure: the SQL predicate a filter becomes lives in ``contextos.store.scopes``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ConfigDict, Field

from contextos.modelbase import BaseModel

_ID: dict[str, Any] = {"min_length": 1, "max_length": 200}


class Scope(BaseModel):
    """What a write may carry: the user, agent and run it belongs to, and free tags and metadata."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(default=None, **_ID)
    agent_id: str | None = Field(default=None, **_ID)
    run_id: str | None = Field(default=None, **_ID)
    tags: list[str] = Field(default_factory=list, max_length=50)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.run_id or self.tags or self.metadata)

    def key_suffix(self) -> str:
        """Namespaces a memory's merge key by who it belongs to, so one user's memory never merges into
        (or takes the key of) another's; tags and metadata do not split keys."""
        owners = [
            f"{name}={value}"
            for name, value in (("u", self.user_id), ("a", self.agent_id), ("r", self.run_id))
            if value
        ]
        return "@" + ",".join(owners) if owners else ""

    @property
    def owner(self) -> Scope:
        """Only who it belongs to (user, agent, run): what keeps one owner's memories apart from another's."""
        return Scope(user_id=self.user_id, agent_id=self.agent_id, run_id=self.run_id)


def key_owner(norm_key: str) -> str | None:
    """The owner part of a merge key (`Scope.key_suffix`), None for a tenant-wide memory. The key's
    words never hold an "@" (normalization drops punctuation), so the first one starts the suffix.
    SQL reads the same with ``substring(norm_key from '@.*$')`` (`contextos.store.scopes`)."""
    at = norm_key.find("@")
    return norm_key[at:] if at >= 0 else None


class ScopeFilter(BaseModel):
    """A read's filter: every given field must match (tags: all of them; metadata: each key equal)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(default=None, **_ID)
    agent_id: str | None = Field(default=None, **_ID)
    run_id: str | None = Field(default=None, **_ID)
    tags: list[str] = Field(default_factory=list, max_length=50, description="Memories holding all of these tags.")
    metadata: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Memories whose metadata has each of these keys with this value."
    )

    @property
    def empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.run_id or self.tags or self.metadata)


# A metadata filter in a query string: a key, "=", its value (the value may be empty or hold "=").
METADATA_FILTER = r"^[^=]+="


def metadata_filters(pairs: list[str] | None) -> dict[str, str | int | float | bool]:
    """``key=value`` query parameters as metadata equality filters; a value that reads as a JSON
    number or boolean matches that, anything else matches as a string."""
    out: dict[str, str | int | float | bool] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"metadata filter {pair!r} is not key=value")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key] = value if isinstance(value, str | int | float | bool) else raw
    return out
