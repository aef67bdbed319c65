"""The ``Judge`` port (S1, S7): does a new statement contradict, entail or leave alone an old one?"""

from __future__ import annotations

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


@runtime_checkable
class Judge(Protocol):
    model_id: str

    def judge(self, premise: str, hypothesis: str, *, similarity: float) -> Judgement:
        """Judge ``hypothesis`` (the newer statement) against ``premise`` (the stored one)."""
        ...
