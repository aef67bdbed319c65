"""The memory service's own rules on in-memory fakes of its ports (contextos.ports): what it decides
before and inside the unit of work — protection, the edit race, key clashes, forgetting only one's
own, restoring under a key of its own — with no database. The stores are the integration tests'."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import pytest
from contextos.config import DecaySettings
from contextos.errors import Forbidden, NotFound
from contextos.management_models import MemoryPatch
from contextos.normalization import norm_key
from contextos.ports.unit_of_work import ColdMember, ErasedRows
from contextos.services.firewall import Firewall
from contextos.services.memories import EditRace, MemoryKeyTaken, MemoryProtected, MemoryService, NotRestorable
from contextos.settings import Settings

from tests.unit.test_service_ports import DefaultPrivacy, FakeEmbedder

MODIFIERS = Settings().extraction.generic_modifiers


def memory(label: str = "Deploy day", **over: Any) -> dict[str, Any]:
    row = {
        "id": uuid4(),
        "norm_key": norm_key(label, MODIFIERS),
        "label": label,
        "definition": "We deploy on Tuesdays.",
        "type": "fact",
        "importance": 5,
        "tags": [],
        "metadata": {},
        "always_load": False,
        "protected": False,
        "user_id": None,
        "agent_id": None,
        "run_id": None,
        "state": "active",
        "tier": "hot",
        "version": 1,
        "superseded_by": None,
        "forgotten_at": None,
        "forgotten_state": None,
        "cold_object_key": None,
        "embedding": [1.0, 0.0],
        "band_keys": None,
        "embedder_id": "fake",
    }
    return row | over


@dataclass
class FakeMemories:
    """The memories of one tenant, and what the service asked of them in its transactions."""

    rows: dict[UUID, dict[str, Any]] = field(default_factory=dict)
    taught_by: dict[UUID, str] = field(default_factory=dict)
    edits: list[dict[str, Any]] = field(default_factory=list)
    forgotten: list[UUID] = field(default_factory=list)
    restored: list[tuple[UUID, str, str]] = field(default_factory=list)
    tenant_locks: int = 0
    on_lock: Any = None  # called at each lock: a concurrent writer

    def lock(self, memory_id: UUID) -> Any:
        if memory_id not in self.rows:
            raise NotFound(f"memory {memory_id} not found")
        if self.on_lock:
            self.on_lock(self.rows[memory_id])
        return dict(self.rows[memory_id])

    def key_taken(self, norm_key: str, memory_id: UUID) -> bool:
        return any(
            r["norm_key"] == norm_key and r["state"] == "active" and i != memory_id for i, r in self.rows.items()
        )

    def apply_edit(self, row: Any, changes: dict[str, Any], **kw: Any) -> int:
        stored = self.rows[row["id"]]
        stored.update(changes, norm_key=kw["norm_key"], version=stored["version"] + 1)
        self.edits.append({"id": row["id"], "changes": changes, **kw})
        return int(stored["version"])

    def taught_only_by(self, memory_id: UUID, actor: str) -> bool:
        return self.taught_by.get(memory_id) == actor

    def forget_hot(self, row: Any, *, actor: str, reason: str | None) -> None:
        self.rows[row["id"]]["forgotten_at"] = "now"
        self.forgotten.append(row["id"])

    def restore(self, row: Any, *, state: str, norm_key: str, actor: str, undo: str) -> None:
        self.restored.append((row["id"], norm_key, undo))

    def delete(self, ids: Sequence[UUID], *, actor: str, reason: str) -> None:
        raise AssertionError("no hard delete in these cases")

    def lock_document(self, document_id: UUID) -> Any:
        raise AssertionError("not under test")

    def document_memories(self, document_id: UUID) -> dict[str, list[UUID]]:
        raise AssertionError("not under test")

    def delete_document(self, document_id: UUID, shared: Sequence[UUID]) -> int:
        raise AssertionError("not under test")

    def audit(self, entries: Sequence[dict[str, Any]]) -> None:
        pass


class NoCold:
    def lock_members_sharing(self, memory_ids: Sequence[UUID]) -> list[ColdMember]:
        return []

    def repoint(self, object_key: str, members: Sequence[tuple[UUID, tuple[int, int]]]) -> None:
        raise AssertionError("nothing cold here")


class NoErasure:
    def user_rows(self, user_id: str) -> dict[str, list[Any]]:
        raise AssertionError("not under test")

    def erase_user(self, user_id: str, ids: dict[str, list[Any]], *, actor: str) -> ErasedRows:
        raise AssertionError("not under test")

    def erase_tenant(self, *, actor: str) -> ErasedRows:
        raise AssertionError("not under test")


@dataclass
class FakeWork:
    memories: FakeMemories
    transactions: int = 0

    @property
    def cold(self) -> NoCold:
        return NoCold()

    @property
    def erasure(self) -> NoErasure:
        return NoErasure()

    def lock_tenant(self) -> int:
        self.memories.tenant_locks += 1
        return len(self.memories.rows)

    @contextmanager
    def tenant(self, tenant_id: str) -> Iterator[FakeWork]:
        self.transactions += 1
        yield self


def service(rows: list[dict[str, Any]]) -> tuple[MemoryService, FakeMemories, FakeWork]:
    memories = FakeMemories(rows={r["id"]: r for r in rows})
    work = FakeWork(memories)
    svc = MemoryService(
        reads=None,  # type: ignore[arg-type]
        documents=None,  # type: ignore[arg-type]
        management=None,  # type: ignore[arg-type]
        work=work,
        decay=DecaySettings(),
        settings=Settings(),
        embedder=FakeEmbedder(),
        firewall=Firewall(DefaultPrivacy()),  # type: ignore[arg-type]
    )
    return svc, memories, work


def test_a_protected_memory_refuses_an_edit_until_it_is_unlocked():
    row = memory(protected=True)
    svc, memories, _ = service([row])
    with pytest.raises(MemoryProtected):
        svc.edit("t1", row["id"], MemoryPatch(importance=9), actor="ann")
    assert memories.edits == []
    edited = svc.edit("t1", row["id"], MemoryPatch(importance=9, unlock=True), actor="ann")
    assert edited.version == 2 and edited.changed == ["importance"] and edited.reembedded is False


def test_a_new_label_is_embedded_before_the_transaction_and_keyed_again():
    row = memory()
    svc, memories, work = service([row])
    out = svc.edit("t1", row["id"], MemoryPatch(label="Release day"), actor="ann")
    (edit,) = memories.edits
    assert edit["norm_key"] == norm_key("Release day", MODIFIERS)
    assert edit["embedding"] == [1.0, 0.0] and out.reembedded is True
    assert work.transactions == 2  # read, embed outside, then write after checking the version


def test_an_edit_that_raced_another_is_refused_and_changes_nothing():
    row = memory()
    svc, memories, _ = service([row])
    locks = iter([None, "someone else edited meanwhile"])

    def concurrent(stored: dict[str, Any]) -> None:
        if next(locks):
            stored["version"] += 1

    memories.on_lock = concurrent
    with pytest.raises(EditRace):
        svc.edit("t1", row["id"], MemoryPatch(definition="We deploy on Wednesdays."), actor="ann")
    assert memories.edits == []


def test_a_label_another_active_memory_holds_is_refused():
    row, other = memory("Deploy day"), memory("Release day")
    svc, memories, _ = service([row, other])
    with pytest.raises(MemoryKeyTaken):
        svc.edit("t1", row["id"], MemoryPatch(label="Release day"), actor="ann")
    assert memories.edits == []


def test_a_credential_that_may_forget_only_its_own_cannot_forget_another_s():
    mine, theirs = memory("Mine"), memory("Theirs")
    svc, memories, _work = service([mine, theirs])
    memories.taught_by = {mine["id"]: "agent-a", theirs["id"]: "agent-b"}
    with pytest.raises(Forbidden):
        svc.forget("t1", theirs["id"], actor="agent-a", only_own=True)
    assert svc.forget("t1", mine["id"], actor="agent-a", only_own=True).forgotten
    assert memories.forgotten == [mine["id"]] and memories.tenant_locks == 2  # every forget takes the tenant lock


def test_a_restored_memory_whose_key_is_taken_gets_a_key_of_its_own():
    gone = memory("Deploy day", forgotten_at="yesterday", forgotten_state="active")
    successor = memory("Deploy day")
    svc, memories, _ = service([gone, successor])
    out = svc.restore("t1", gone["id"], actor="ann")
    ((restored, key, undo),) = memories.restored
    assert restored == gone["id"] and undo == "forget" and out.state == "active"
    assert key == f"{gone['norm_key']}~{gone['id'].hex[:12]}"


def test_a_memory_that_is_neither_forgotten_nor_superseded_has_nothing_to_restore():
    row = memory()
    svc, _, _ = service([row])
    with pytest.raises(NotRestorable):
        svc.restore("t1", row["id"], actor="ann")
