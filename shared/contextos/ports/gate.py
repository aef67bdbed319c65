"""What the admission store asks of the contradiction gate (S7), and what the gate reads back.

The store hands the gate the candidates under the tenant lock, in the admission's transaction,
together with ``GateReads`` bound to that transaction; the gate decides (``GateOutcome``) and the
store applies the outcome. Slow judges judge once before the lock: the store reads the neighbours
in a short transaction of its own and hands them to ``prejudge``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from contextos.config import GovernanceSettings
from contextos.judgements import GateOutcome, JudgementCache
from contextos.models import MemoryCandidate


class GateReads(Protocol):
    """The gate's reads, in the admission's transaction."""

    @property
    def probes_cold(self) -> bool:
        """Whether cold stubs keep their lexemes (and can be found as updated)."""
        ...

    def neighbours(
        self,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        hot_memories: int,
        settings: GovernanceSettings,
        floors: Sequence[float] | None = None,
    ) -> list[dict[str, Any]]:
        """Per candidate, its nearest active memories at or above its floor and the memory holding its
        final key; ``judged`` marks what the judge sees."""
        ...

    def cold_sharing_words(
        self, candidates: Sequence[MemoryCandidate], settings: GovernanceSettings
    ) -> list[dict[str, Any]]:
        """Per candidate, the nearest cold stubs whose kept lexemes share two of its definition's."""
        ...

    def turns_near(self, candidates: Sequence[MemoryCandidate], settings: GovernanceSettings) -> list[dict[str, Any]]:
        """Per kept turn, the nearest active kept turns at or above the update floor, not judged."""
        ...


class ContradictionGatePort(Protocol):
    prejudges: bool  # whether the store should read and judge before taking the lock
    settings: GovernanceSettings

    def floors(self, candidates: Sequence[MemoryCandidate]) -> list[float]:
        """Per candidate, the lowest similarity the gate reads."""
        ...

    def prejudge(self, candidates: Sequence[MemoryCandidate], neighbours: Sequence[dict[str, Any]]) -> JudgementCache:
        """Off the lock: judge each candidate against its neighbours as they were read."""
        ...

    def judge_batch(
        self,
        reads: GateReads,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        *,
        hot_memories: int,
        cache: JudgementCache | None = None,
    ) -> GateOutcome: ...
