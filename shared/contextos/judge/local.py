"""A deterministic NLI heuristic: negation, antonyms, numbers and dates over similar statements.

No offline NLI model ships in a package with a usable licence (FIELD-NOTES), so the local
judge only speaks when the evidence is lexical and clear; Bedrock gives the real judgement.
"""

from __future__ import annotations

import re

from contextos.judge import Judgement, Verdict

_WORD = re.compile(r"[a-z0-9][a-z0-9.'-]*")
_NEGATIONS = frozenset(
    """
    not no never none cannot can't don't doesn't didn't isn't aren't wasn't weren't won't
    without
    """.split()
)
_ANTONYMS = [
    ("enabled", "disabled"),
    ("true", "false"),
    ("allow", "deny"),
    ("allowed", "forbidden"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("up", "down"),
    ("on", "off"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("love", "hate"),
    ("loves", "hates"),
    ("prefer", "avoid"),
    ("prefers", "avoids"),
    ("before", "after"),
    ("open", "closed"),
    ("success", "failure"),
    ("valid", "invalid"),
    ("always", "never"),
    ("required", "optional"),
    ("public", "private"),
    ("sync", "async"),
]
_ANTONYM = {a: b for a, b in _ANTONYMS} | {b: a for a, b in _ANTONYMS}
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")


class LocalHeuristicJudge:
    model_id = "local:nli-heuristic-v1"

    def __init__(self, *, similarity_floor: float = 0.6) -> None:
        self.similarity_floor = similarity_floor

    def judge(self, premise: str, hypothesis: str, *, similarity: float) -> Judgement:
        if similarity < self.similarity_floor:
            return Judgement(verdict=Verdict.neutral, confidence=0.5, reason="statements are about different things")
        a, b = _words(premise), _words(hypothesis)
        if (a & _NEGATIONS) ^ (b & _NEGATIONS) and len((a ^ b) - _NEGATIONS) <= 3:
            return Judgement(verdict=Verdict.contradiction, confidence=0.8, reason="one statement negates the other")
        flipped = [w for w in a if _ANTONYM.get(w) in b]
        if flipped:
            return Judgement(
                verdict=Verdict.contradiction,
                confidence=0.75,
                reason=f"opposite terms: {flipped[0]}/{_ANTONYM[flipped[0]]}",
            )
        nums_a, nums_b = set(_NUMBER.findall(premise)), set(_NUMBER.findall(hypothesis))
        if nums_a and nums_b and nums_a != nums_b and len(a ^ b) <= 2 * max(len(nums_a ^ nums_b), 1) + 2:
            return Judgement(verdict=Verdict.contradiction, confidence=0.7, reason="same statement, different numbers")
        if similarity >= 0.9 and not (a ^ b) - _NEGATIONS - set(_NUMBER.findall(premise + " " + hypothesis)):
            return Judgement(verdict=Verdict.entailment, confidence=0.8, reason="the statements say the same")
        if similarity >= 0.85 and b <= a | _NEGATIONS:
            return Judgement(
                verdict=Verdict.entailment, confidence=0.7, reason="the newer statement is contained in the older"
            )
        return Judgement(verdict=Verdict.neutral, confidence=0.5, reason="no clear lexical relation")


def _words(text: str) -> set[str]:
    """Words as compared: "3.5" and "don't" stay whole; a sentence's final period is not part of one."""
    return {w.rstrip(".'-") for w in _WORD.findall(text.lower())} - {""}
