"""The ``Judge`` port (S1, S7): does a new statement contradict, entail or leave alone an old one?"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol, runtime_checkable

from pydantic import BaseModel


class Verdict(StrEnum):
    contradiction = "contradiction"
    entailment = "entailment"
    neutral = "neutral"


class Judgement(BaseModel):
    verdict: Verdict
    confidence: float
    reason: str
    answered: bool = True  # False: the judge gave no usable answer for this pair (counted as neutral)


class JudgePair(BaseModel):
    """One question for the judge: ``hypothesis`` (the newer statement) against ``premise`` (the
    stored one). The subjects are the memories' labels when known: statements are only compared
    when they are about the same subject (S7, precision first)."""

    premise: str
    hypothesis: str
    similarity: float
    premise_subject: str | None = None
    hypothesis_subject: str | None = None


@runtime_checkable
class Judge(Protocol):
    model_id: str

    def judge(self, premise: str, hypothesis: str, *, similarity: float) -> Judgement:
        """Judge ``hypothesis`` (the newer statement) against ``premise`` (the stored one)."""
        ...

    def judge_many(self, pairs: Sequence[JudgePair]) -> list[Judgement]:
        """One judgement per pair, in order: the bulk form the store path calls for a whole document."""
        ...
