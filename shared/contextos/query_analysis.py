"""S6.1 query analysis: intent, up to five key phrases, and synonym expansion (the table is data)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from contextos.extraction.local import content_runs
from contextos.normalization import singular

_INTENTS: list[tuple[str, re.Pattern[str]]] = [
    (
        "debug",
        re.compile(r"\b(bug|error|exception|fail\w*|crash\w*|broken|fix|debug\w*|traceback|stack trace)\b", re.I),
    ),
    ("brainstorm", re.compile(r"\b(ideas?|brainstorm\w*|what if|alternatives?|explore|options?|could we)\b", re.I)),
    ("recall", re.compile(r"\b(what did|when did|remember|recall|last time|previously|who|which)\b", re.I)),
]
MAX_PHRASES = 5
PHRASES_PER_TURN = 2
# Words that point back into the conversation ("does it scale?", "what did they choose?").
_ANAPHORA = re.compile(r"\b(it|its|this|that|these|those|they|them|their|there|he|she|him|her|the same)\b", re.I)


@dataclass(frozen=True)
class QueryAnalysis:
    intent: str
    phrases: list[str]
    expansions: dict[str, list[str]] = field(default_factory=dict)
    carried: list[str] = field(default_factory=list)  # phrases carried over from the session's last turns

    def embedding_text(self, query: str) -> str:
        """What the query vector is computed from: the query, plus the topic it refers back to."""
        return f"{query} ({'; '.join(self.carried)})" if self.carried else query

    def terms(self, phrase: str) -> list[str]:
        """The phrase and its synonyms: what one text search looks for."""
        return [phrase, *self.expansions.get(phrase, [])]


def detect_intent(query: str) -> str:
    """debug / brainstorm / recall / default, by lexical triggers."""
    for intent, pattern in _INTENTS:
        if pattern.search(query):
            return intent
    return "default"


def key_phrases(query: str, limit: int = MAX_PHRASES) -> list[str]:
    """Runs of content words (the noun-phrase-like parts of the query), longest first."""
    phrases: list[str] = []
    for run in content_runs(query):
        phrase = " ".join(run).lower()
        if phrase and phrase not in phrases:
            phrases.append(phrase)
    order = {p: i for i, p in enumerate(phrases)}
    return sorted(phrases, key=lambda p: (-len(p.split()), order[p]))[:limit]


@lru_cache(maxsize=1)
def synonym_table() -> dict[str, list[str]]:
    text = resources.files("contextos").joinpath("data/synonyms.json").read_text(encoding="utf-8")
    return {singular(k.lower()): v for k, v in json.loads(text).items()}


def carried_phrases(query: str, phrases: list[str], recent_turns: Sequence[str]) -> list[str]:
    """The topic of the last turns, when the query refers back to it or names no topic itself:
    the leading key phrases of each turn, most recent turn first, up to the phrase limit."""
    if not recent_turns or (phrases and not _ANAPHORA.search(query)):
        return []
    carried: list[str] = []
    room = MAX_PHRASES - len(phrases)
    for turn in reversed(recent_turns):
        for phrase in key_phrases(turn, PHRASES_PER_TURN):
            if len(carried) >= room:
                return carried
            if phrase not in phrases and phrase not in carried:
                carried.append(phrase)
    return carried


def analyze(query: str, *, recent_turns: Sequence[str] = ()) -> QueryAnalysis:
    """S6.1; ``recent_turns`` (oldest first) are the session's last turns: they can supply the
    topic a query refers back to ("does it scale?"), and are never stored."""
    phrases = key_phrases(query)
    carried = carried_phrases(query, phrases, recent_turns)
    phrases = phrases + carried
    table = synonym_table()
    expansions = {}
    for phrase in phrases:
        extra = [s for word in phrase.split() for s in table.get(singular(word), [])]
        if extra:
            expansions[phrase] = list(dict.fromkeys(extra))
    return QueryAnalysis(intent=detect_intent(query), phrases=phrases, expansions=expansions, carried=carried)
