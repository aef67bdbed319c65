"""What the admission store asks of the contradiction gate (S7), a port of its own: the store
depends on it, and the storage ports (``contextos.ports``) name the store's types, so keeping it
there would tie the two modules in a circle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from contextos.judgements import GateOutcome, JudgementCache
from contextos.models import MemoryCandidate

Conn = Any  # a tenant transaction's connection, as the store's transactions yield it


class ContradictionGatePort(Protocol):
    """The contradiction gate (S7) as the admission store sees it: given the candidates (under the
    tenant lock, in the admission's transaction), the decided outcome; the store applies it."""

    prejudges: bool

    def prejudge(self, db: Any, tenant_id: str, candidates: Sequence[MemoryCandidate]) -> JudgementCache: ...

    def judge_batch(
        self,
        conn: Conn,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        *,
        hot_memories: int,
        dialect: str = "postgres",
        cache: JudgementCache | None = None,
    ) -> GateOutcome: ...
