"""Services reach storage through declared ports (contextos.ports): a fake store stands in for the
database, so a service's own rules are tested alone. The real stores are the integration tests'."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import pytest
from contextos.errors import Conflict
from contextos.governance_models import MemoryCreate
from contextos.models import MemoryCandidate, Provenance, StoreResult
from contextos.ports.admission import AdmissionPort, Admitted
from contextos.services.firewall import Firewall
from contextos.services.governance import GovernanceService
from contextos.settings import Settings


class FakeEmbedder:
    model_id = "fake"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


@dataclass
class FakeAdmissions:
    """An admission store that records what it was asked and answers as told."""

    superseded: list[UUID] = field(default_factory=list)
    pending: bool = True
    calls: list[dict[str, Any]] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)
    db: Any = None

    def store_concepts(
        self, tenant_id: str, candidates: Sequence[MemoryCandidate], source: Any, **kw: Any
    ) -> StoreResult:
        raise AssertionError("a manual memory goes through admit_batch")

    def admit_batch(
        self, tenant_id: str, candidates: Sequence[MemoryCandidate], source: Any, **kw: Any
    ) -> Admitted | None:
        self.calls.append({"tenant": tenant_id, "candidates": list(candidates), "source": source, **kw})
        if kw.get("promotion") is not None and not self.pending:
            return None
        ids = [uuid4() for _ in candidates] or ([uuid4()] if kw.get("promotion") else [])
        held = [uuid4() for _ in kw.get("held", ())]
        return Admitted(StoreResult(created=len(ids), items=len(ids), memory_ids=ids), {}, held)

    def links(self, tenant_id: str, memory_id: UUID, types: Sequence[str]) -> dict[str, list[UUID]]:
        return {"supersedes": list(self.superseded), "corroborates": []}

    def settle_vectors(self, tenant_id: str, *, limit: int) -> int:
        self.settled.append(tenant_id)
        return 0


class DefaultPrivacy:
    """No policy stored (the default, redact) and nothing to record: the firewall as a new tenant has it."""

    def policy(self, tenant_id: str) -> str | None:
        return None

    def set_policy(self, tenant_id: str, policy: str, *, actor: str) -> None:
        raise AssertionError("not under test")

    def record(self, tenant_id: str, **entry: object) -> None:
        pass


def service(store: AdmissionPort) -> GovernanceService:
    return GovernanceService(
        settings=Settings(),
        store=store,
        governance=None,  # type: ignore[arg-type]
        embedder=FakeEmbedder(),
        firewall=Firewall(DefaultPrivacy()),  # type: ignore[arg-type]
    )


def test_a_manual_memory_is_admitted_through_the_one_admission_call_with_its_scope():
    old = uuid4()
    store = FakeAdmissions(superseded=[old])
    request = MemoryCreate(label="Deploy day", definition="We deploy on Tuesdays.", user_id="ann")
    out = service(store).create_memory("t1", request, actor="tests", ceiling=Provenance.user_turn)
    (call,) = store.calls
    assert call["source"] is None and call["scope"].user_id == "ann" and call["held"] == []
    (candidate,) = call["candidates"]
    assert candidate.norm_key.endswith(request.scope().key_suffix())  # merges only within ann's memories
    assert out.status == "admitted" and out.memory_id is not None and out.superseded == [old]
    assert store.settled == ["t1"]


def test_a_low_trust_manual_memory_is_held_and_admits_nothing():
    store = FakeAdmissions()
    request = MemoryCreate(label="Deploy day", definition="We deploy on Tuesdays.", provenance=Provenance.web_content)
    out = service(store).create_memory("t1", request, actor="tests", ceiling=Provenance.user_turn)
    (call,) = store.calls
    assert call["candidates"] == [] and len(call["held"]) == 1
    assert out.status == "held" and out.review_id is not None and out.memory_id is None


def test_a_promotion_is_decided_and_admitted_in_the_admission_call():
    store = FakeAdmissions()
    review_id = uuid4()
    out = service(store).promote("t1", review_id, actor="ann", kind="user", reason="checked")
    (call,) = store.calls
    assert call["candidates"] == [] and call["promotion"].review_id == review_id
    assert call["promotion"].reason == "checked" and out.status == "promoted" and len(out.memory_ids) == 1


def test_promoting_an_item_that_is_not_pending_is_a_conflict():
    @dataclass
    class Decided:
        def review_status(self, tenant_id: str, review_id: UUID) -> str:
            return "rejected"

    store = FakeAdmissions(pending=False)
    svc = GovernanceService(
        settings=Settings(),
        store=store,
        governance=Decided(),  # type: ignore[arg-type]
        embedder=FakeEmbedder(),
        firewall=Firewall(DefaultPrivacy()),  # type: ignore[arg-type]
    )
    with pytest.raises(Conflict, match="already rejected"):
        svc.promote("t1", uuid4(), actor="ann", kind="user", reason="checked")
    assert store.settled == []
