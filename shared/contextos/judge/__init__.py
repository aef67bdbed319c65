"""The ``Judge`` port (S1, S7): does a new statement contradict, entail or leave alone an old one?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from contextos.judgements import Judgement, JudgePair, Verdict

__all__ = ["Judge", "JudgePair", "Judgement", "Verdict"]


@runtime_checkable
class Judge(Protocol):
    model_id: str

    def judge(self, premise: str, hypothesis: str, *, similarity: float) -> Judgement:
        """Judge ``hypothesis`` (the newer statement) against ``premise`` (the stored one)."""
        ...

    def judge_many(self, pairs: Sequence[JudgePair]) -> list[Judgement]:
        """One judgement per pair, in order: the bulk form the store path calls for a whole document."""
        ...
