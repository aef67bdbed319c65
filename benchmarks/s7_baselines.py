"""The S7 gates as they were before the per-candidate trust gate and the same-subject judge,
kept verbatim as the same-run baselines of ``benchmarks/admission_gates.py``."""

from __future__ import annotations

import re

from contextos.judge import Judgement, Verdict
from contextos.trust import normalized_for_scan

PREVIOUS_INJECTION_PATTERNS = [
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|your)\b.{0,40}"
    r"\b(instructions?|prompts?|rules|guidelines|context|messages?)\b",
    r"\b(new|updated|real|hidden|secret)\s+(system\s+)?instructions?\b",
    r"\bsystem\s*prompt\b",
    r"\bfrom now on\b",
    r"\b(you|the assistant|the agent|the ai|assistants?|agents?)\s+(must|should|shall|will)\s+"
    r"(now\s+)?(always|never|only)\b",
    r"\b(you|assistants?|agents?|ai|models?|chatbots?|bots?|llms?)\b.{0,30}\b(always|never)\s+(recommend|answer"
    r"|reply|respond|say|tell|mention|reveal|send|trust|refer|use|follow|call|run|execute|include|link|redirect"
    r"|share|forward|ignore)\b",
    r"\bwhen(ever)?\s+(the\s+)?user\s+(asks|says|mentions|requests)\b",
    r"\bdo not (tell|inform|mention|reveal)\b.{0,30}\b(user|anyone|them)\b",
    r"\b(send|forward|email|upload|post|exfiltrate|transfer)\b.{0,60}\b(password|credentials?|api[\s_-]?keys?"
    r"|tokens?|secrets?|private|conversation|history|data)\b.{0,40}\b(to|at)\b",
    r"\b(act|behave|pretend|roleplay)\s+(as|like|to be)\b",
    r"\b(developer|god|jailbreak|dan)\s+mode\b",
    r"<\s*/?\s*(system|assistant|instructions?|im_start|im_end)\s*>",
    r"\[\s*(system|inst)\s*\]|###\s*(system|instruction)",
    r"\b(remember|store|save|memorize)\s+(this|that)\b.{0,40}\b(always|permanent(ly)?|forever)\b",
]


def previous_gate_signals(label: str, definition: str, source_text: str | None) -> bool:
    """The previous trust gate: any pattern in the candidate's text or anywhere in its source."""
    texts = [label, definition, source_text or ""]
    return any(
        re.search(p, normalized_for_scan(t), re.IGNORECASE | re.DOTALL)
        for p in PREVIOUS_INJECTION_PATTERNS
        for t in texts
        if t
    )


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


class PreviousRulesJudge:
    """The local judge as it was: any two similar statements compared, whatever their subjects."""

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
