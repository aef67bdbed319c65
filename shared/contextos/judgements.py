"""What the contradiction gate (S7) asks and decides: the judge's questions and verdicts, and the
outcome for one admission batch that the store applies. Pure data, shared by the ``Judge`` port,
the gate (``contextos.services.contradiction``) and the store that writes the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from uuid import UUID

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


# (candidate index, memory id, the memory's text as judged) → (judgement, the judge failed)
JudgementCache = dict[tuple[int, UUID, str], tuple[Judgement, bool]]


@dataclass
class GateOutcome:
    """What the contradiction gate decided for one admission batch."""

    # candidate index → ids of the memories it supersedes / corroborates
    supersedes: dict[int, list[UUID]] = field(default_factory=dict)
    corroborates: dict[int, list[UUID]] = field(default_factory=dict)
    # candidate index → ids of the memories (hot, or cold stubs) whose subject it reports a change to,
    # without a contradiction verdict: linked for ordering, never superseded
    updates: dict[int, list[UUID]] = field(default_factory=dict)
    cold_updates: set[UUID] = field(default_factory=set)
    judgements: dict[tuple[int, UUID], Judgement] = field(default_factory=dict)
    keys: dict[UUID, str] = field(default_factory=dict)  # norm_key of every memory judged against
    judge_id: str = "unknown"  # the judge that decided (named in the audit rows)
    judged: int = 0
    judged_under_lock: int = 0  # pairs prejudge had not seen (or that changed since)
    judge_failures: int = 0

    @property
    def superseded_ids(self) -> list[UUID]:
        return sorted({m for ids in self.supersedes.values() for m in ids})
