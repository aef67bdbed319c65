"""The one unit of work: the few verbs that change several aggregates together (forgetting a memory
or a document, restoring one, erasing a user or a tenant) run in one tenant transaction.

A service opens it (``with work.tenant(tenant_id) as tx``), asks the transaction's aggregates for
what it decides on, and leaves the block to commit (or raises to roll back). Every verb is bound
to the tenant; nothing here hands out a connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from contextos.ports.rows import LockedDocument, LockedMemory


@dataclass(frozen=True)
class ColdMember:
    """A cold stub inside its batch object: where its gzip member lies."""

    memory_id: UUID
    object_key: str
    byte_start: int
    byte_end: int


@dataclass
class ErasedRows:
    """What an erasure removed: counts by table, and the S3 objects to delete after the commit."""

    counts: dict[str, int] = field(default_factory=dict)
    objects: list[tuple[str, str]] = field(default_factory=list)  # (raw|upload, key)


class MemoryChanges(Protocol):
    """One memory (or document) locked and changed inside the transaction."""

    def lock(self, memory_id: UUID) -> LockedMemory:
        """The memory's row and vector, locked until commit; NotFound when it is not there."""
        ...

    def key_taken(self, norm_key: str, memory_id: UUID) -> bool:
        """Whether another active memory holds ``norm_key``."""
        ...

    def apply_edit(
        self,
        row: LockedMemory,
        changes: dict[str, Any],
        *,
        norm_key: str,
        initials: str | None,
        acronyms: Sequence[str],
        embedding: Sequence[float] | None,
        embedder_id: str,
        actor: str,
        reason: str | None = None,
    ) -> int:
        """Keep the current version as a revision, write the changes (a new vector when given), audit
        it; the new version."""
        ...

    def taught_only_by(self, memory_id: UUID, actor: str) -> bool: ...

    def forget_hot(self, row: LockedMemory, *, actor: str, reason: str | None) -> None: ...

    def restore(self, row: LockedMemory, *, state: str, norm_key: str, actor: str, undo: str) -> None: ...

    def supersede_by_restored(self, newer: LockedMemory, *, by: UUID, actor: str) -> None:
        """The current version steps back for the older one restored as current: superseded by it,
        its validity closed now, a ``supersedes`` edge from the restored one, audited."""
        ...

    def link_conflict(self, *, newer: UUID, older: UUID, actor: str) -> None:
        """Both versions hold: a ``contradicts`` edge between them and the older one pointing at the
        newer (``updated_by``), audited."""
        ...

    def delete(self, ids: Sequence[UUID], *, actor: str, reason: str) -> None: ...

    def lock_document(self, document_id: UUID) -> LockedDocument: ...

    def document_memories(self, document_id: UUID) -> dict[str, list[UUID]]:
        """The hot memories a document taught (``sole``, ``shared``) and the cold ones it touched."""
        ...

    def delete_document(self, document_id: UUID, shared: Sequence[UUID]) -> int: ...

    def audit(self, entries: Sequence[dict[str, Any]]) -> None: ...


class ColdObjects(Protocol):
    """Cold batch objects seen from the transaction: which members they hold, and where a rewritten
    object's members now lie."""

    def lock_members_sharing(self, memory_ids: Sequence[UUID]) -> list[ColdMember]:
        """Every stub of each object holding one of ``memory_ids``, locked, by object then offset."""
        ...

    def repoint(self, object_key: str, members: Sequence[tuple[UUID, tuple[int, int]]]) -> None: ...


class Erasures(Protocol):
    def user_rows(self, user_id: str) -> dict[str, list[Any]]: ...

    def erase_user(self, user_id: str, ids: dict[str, list[Any]], *, actor: str) -> ErasedRows: ...

    def erase_tenant(self, *, actor: str) -> ErasedRows: ...


class TenantWork(Protocol):
    """One tenant transaction."""

    @property
    def memories(self) -> MemoryChanges: ...

    @property
    def cold(self) -> ColdObjects: ...

    @property
    def erasure(self) -> Erasures: ...

    def lock_tenant(self) -> int:
        """The tenant's admission lock (every writer that changes what admission reads takes it);
        the tenant's hot memories."""
        ...


class UnitOfWork(Protocol):
    def tenant(self, tenant_id: str) -> AbstractContextManager[TenantWork]: ...
