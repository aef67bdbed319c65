"""A deterministic, precision-first NLI over two statements: negation, antonyms, numbers, dates
and exclusive values, decided only when both statements are about the same subject.

No offline NLI model ships in a package with a usable licence (docs/decisions.md), so the local
judge speaks only when the evidence is lexical and clear; Bedrock gives the real judgement. A
false contradiction is silent data loss (S7), so every rule here asks first: is everything that
differs between the two statements the cue itself? Any other content word found on one side
only (another service, person, product, version) makes them different statements, and the
verdict is neutral.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

from contextos.judge import Judgement, JudgePair, Verdict

_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[a-z][a-z'-]*[a-z]|[a-z]")
_NEGATIONS = frozenset(
    """
    not no never none cannot can't don't doesn't didn't isn't aren't wasn't weren't won't
    shouldn't mustn't hasn't haven't hadn't couldn't wouldn't nor without n't
    """.split()
)
# Words that carry no subject and no claim of their own: articles, auxiliaries, pronouns,
# prepositions and the adverbs that mark an update ("now", "currently", "instead").
_FILLER = frozenset(
    """
    a an the this that these those it its it's they them their there here we our us you your i me my
    he him his she her hers one ones
    is are was were be been being am has have had having do does did doing will would shall should
    can could may might must
    of in on at by for from to into onto with within via as per than then so such also too very
    and or but if when while because since until about over under between through during
    now currently today instead actually still already yet just only again anymore longer newly always
    updated update changed change set setting settings configured default value values
    what which who whom whose where why how all any each every both either neither some more most
    other another same own rather much many few less least
    """.split()
)
# Subject-free words a label may add ("Deploy limit" beside "Deploy timeout").
_GENERIC_LABEL = frozenset(
    """
    system systems approach method methods process policy policies rule rules limit limits config
    configuration parameter parameters option options level amount number count rate time times
    detail details info information note notes fact facts status state current new old
    """.split()
)
# Pairs of content words that cannot both hold of one subject. Bare function words (on/off,
# up/down, before/after, in/out) are left out: they flip with the rest of a sentence's meaning
# ("logs on", "backs up", "after the migration") far more often than they contradict.
_ANTONYMS = [
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("true", "false"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("allowed", "forbidden"),
    ("allowed", "prohibited"),
    ("permitted", "forbidden"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("increases", "decreases"),
    ("accept", "reject"),
    ("accepted", "rejected"),
    ("accepts", "rejects"),
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("love", "hate"),
    ("loves", "hates"),
    ("prefer", "avoid"),
    ("prefers", "avoids"),
    ("open", "closed"),
    ("opened", "closed"),
    ("success", "failure"),
    ("succeeded", "failed"),
    ("passed", "failed"),
    ("passes", "fails"),
    ("valid", "invalid"),
    ("required", "optional"),
    ("mandatory", "optional"),
    ("public", "private"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("synchronously", "asynchronously"),
    ("online", "offline"),
    ("active", "inactive"),
    ("available", "unavailable"),
    ("supported", "unsupported"),
    ("supported", "deprecated"),
    ("encrypted", "unencrypted"),
    ("stable", "unstable"),
    ("safe", "unsafe"),
    ("secure", "insecure"),
    ("included", "excluded"),
    ("include", "exclude"),
    ("includes", "excludes"),
    ("approved", "rejected"),
    ("compatible", "incompatible"),
    ("correct", "incorrect"),
    ("legal", "illegal"),
    ("possible", "impossible"),
    ("allowed", "blocked"),
    ("started", "stopped"),
    ("running", "stopped"),
    ("granted", "revoked"),
    ("locked", "unlocked"),
    ("visible", "hidden"),
    ("free", "paid"),
    ("cheaper", "pricier"),
    ("faster", "slower"),
    ("higher", "lower"),
    ("more", "fewer"),
    ("larger", "smaller"),
    ("minimum", "maximum"),
    ("first", "last"),
    ("vegetarian", "carnivore"),
    ("married", "single"),
    ("win", "lose"),
    ("won", "lost"),
]
_ANTONYM: dict[str, set[str]] = {}
for _a, _b in _ANTONYMS:
    _ANTONYM.setdefault(_a, set()).add(_b)
    _ANTONYM.setdefault(_b, set()).add(_a)
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_UNITS = frozenset(
    """
    ms millisecond milliseconds s sec secs second seconds min mins minute minutes h hr hrs hour hours
    day days week weeks month months year years kb mb gb tb kib mib gib tib byte bytes bit bits
    percent pct x times k m
    """.split()
)
# A copula or exclusive verb: "<the same subject> is X" against "<the same subject> is Y", also
# through a participle that takes one value ("is hosted in", "is owned by", "defaults to").
_COPULAS = frozenset("is are was were".split())
_EXCLUSIVE_PARTICIPLES = frozenset(
    """
    set owned hosted located based written stored pinned capped limited configured maintained led run
    managed deployed scheduled priced named called
    """.split()
)
# ("may" is left to the months: "ships in May".)
_AUXILIARIES = _COPULAS | frozenset("has have had will would can could should must might does do did".split())
_STEMMER = Stemmer.Stemmer("english")


@dataclass(frozen=True)
class _Side:
    tokens: tuple[str, ...]  # the statement's tokens, lowercased
    stems: frozenset[str]  # stems of the statement's content words
    mentions: frozenset[str]  # those and the label's: everything the side names
    named: frozenset[str]  # label words the statement says too: they name the subject
    label_only: frozenset[str]  # label words the statement does not say (a summary's words)
    values: frozenset[str]  # numbers, dates, months and weekdays
    subject_values: frozenset[str]  # those before the first auxiliary ("Release 2.0 is ...")
    negated: bool


def split_label(text: str) -> tuple[str | None, str]:
    """The store hands statements over as ``"label: definition"``: the label, when there is one."""
    head, sep, tail = text.partition(": ")
    if sep and tail and 0 < len(head.split()) <= 6 and not re.search(r"[.!?;](\s|$)", head):
        return head, tail
    return None, text


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def _tokens(text: str) -> list[str]:
    text = text.lower().replace("\u2019", "'")
    out = []
    for t in _TOKEN.findall(text):
        if t.endswith("'s"):
            t = t[:-2]
        out.append(t)
    return out


def _is_value(token: str) -> bool:
    return token[0].isdigit() or token in _MONTHS or token in _WEEKDAYS


def _content(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if t not in _FILLER and t not in _NEGATIONS and t not in _UNITS and not _is_value(t)]


def _side(subject: str | None, statement: str) -> _Side:
    tokens = tuple(_tokens(statement))
    label_tokens = _tokens(subject or "")
    label_stems = frozenset(_stem(t) for t in _content(label_tokens) if t not in _GENERIC_LABEL)
    label_stems |= frozenset(t for t in label_tokens if t[0].isdigit())  # "Release 2.0" names its subject
    negated = any(t in _NEGATIONS or t.endswith("n't") for t in tokens) or "no longer" in " ".join(tokens)
    verb = next((i for i, t in enumerate(tokens) if t in _AUXILIARIES), 0)
    own = frozenset(_stem(t) for t in _content(tokens)) | frozenset(t for t in tokens if t[0].isdigit())
    return _Side(
        tokens=tokens,
        stems=own - frozenset(t for t in tokens if t[0].isdigit()),
        mentions=own | label_stems,
        named=label_stems & own,
        label_only=label_stems - own,
        values=frozenset(t for t in tokens if _is_value(t)),
        subject_values=frozenset(t for t in tokens[:verb] if _is_value(t)),
        negated=negated,
    )


def _shared_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class LocalHeuristicJudge:
    model_id = "local:nli-rules-v2"

    def __init__(self, *, similarity_floor: float = 0.6) -> None:
        self.similarity_floor = similarity_floor

    def judge(self, premise: str, hypothesis: str, *, similarity: float) -> Judgement:
        return self.judge_pair(JudgePair(premise=premise, hypothesis=hypothesis, similarity=similarity))

    def judge_many(self, pairs: Sequence[JudgePair]) -> list[Judgement]:
        return [self.judge_pair(p) for p in pairs]

    def judge_pair(self, pair: JudgePair) -> Judgement:
        if pair.similarity < self.similarity_floor:
            return _neutral("statements are about different things")
        old = _side(*_subject_and_statement(pair.premise_subject, pair.premise))
        new = _side(*_subject_and_statement(pair.hypothesis_subject, pair.hypothesis))

        if _different_subjects(old, new):
            return _neutral("the statements are about different subjects")

        only_old, only_new = old.stems - new.stems, new.stems - old.stems
        flips = _antonym_flips(only_old, only_new, old, new)
        if flips:
            a, b = flips[0]
            rest_old = only_old - {_stem(w) for w, _ in flips}
            rest_new = only_new - {_stem(w) for _, w in flips}
            if not rest_old and not rest_new and old.negated == new.negated:
                return Judgement(verdict=Verdict.contradiction, confidence=0.75, reason=f"opposite terms: {a}/{b}")
            return _neutral("opposite terms, but the statements differ in more than that")

        if only_old or only_new:
            if _exclusive_swap(old, new):
                return Judgement(
                    verdict=Verdict.contradiction, confidence=0.65, reason="the same subject is given another value"
                )
            contained = not only_new and old.negated == new.negated and old.values >= new.values
            if contained and pair.similarity >= 0.85:
                return Judgement(verdict=Verdict.entailment, confidence=0.7, reason="the older statement says it all")
            return _neutral("the statements say different things")

        # Same words (up to inflection and filler): only a negation or a value can tell them apart.
        if old.negated != new.negated:
            return Judgement(verdict=Verdict.contradiction, confidence=0.8, reason="one statement negates the other")
        if old.values != new.values:
            if old.values and new.values and not (old.values <= new.values or new.values <= old.values):
                return Judgement(
                    verdict=Verdict.contradiction, confidence=0.7, reason="same statement, different values"
                )
            return _neutral("one statement gives a value the other does not")
        if pair.similarity >= 0.85:
            return Judgement(verdict=Verdict.entailment, confidence=0.8, reason="the statements say the same")
        return _neutral("no clear lexical relation")


def _different_subjects(old: _Side, new: _Side) -> bool:
    """A word naming one side's subject (in its label and its statement, or a number in its label)
    that the other side never says; or both labels summarising with words the other lacks
    ("Payments timeout" and "Search timeout" over "The service times out after 30 s"); or the
    numbers before the verb differ ("Release 2.0 is ..." and "Release 3.0 is ...")."""
    if (old.named - new.mentions) or (new.named - old.mentions):
        return True
    if (old.label_only - new.mentions) and (new.label_only - old.mentions):
        return True
    return old.subject_values != new.subject_values


def _subject_and_statement(subject: str | None, text: str) -> tuple[str | None, str]:
    label, statement = split_label(text)
    if subject is None:
        return label, statement
    if label is not None and label.strip().lower() == subject.strip().lower():
        return subject, statement
    return subject, text


def _antonym_flips(only_old: frozenset[str], only_new: frozenset[str], old: _Side, new: _Side) -> list[tuple[str, str]]:
    """(old word, new word) pairs of opposites, each word found on one side only."""
    old_words = {t for t in old.tokens if _stem(t) in only_old}
    new_words = {t for t in new.tokens if _stem(t) in only_new}
    return sorted((a, b) for a in old_words for b in _ANTONYM.get(a, ()) if b in new_words)


def _exclusive_swap(old: _Side, new: _Side) -> bool:
    """ "The primary database is PostgreSQL" against "The primary database is MySQL": the same
    words up to a copula, at least two of them content words, then a different value of at most
    three words, and nothing else on either side."""
    n = _shared_prefix(old.tokens, new.tokens)
    if n < 3 or old.negated or new.negated:
        return False
    head = old.tokens[:n]
    if head[-1] in _COPULAS or (head[-1] == "to" and head[-2] == "defaults"):
        subject = head[:-1]
    elif len(head) >= 3 and head[-3] in _COPULAS and head[-2] in _EXCLUSIVE_PARTICIPLES:
        subject = head[:-3]  # "is hosted in", "is owned by", "is set to"
    else:
        return False
    if len(_content(subject)) < 2:
        return False
    rest_old, rest_new = _content(old.tokens[n:]), _content(new.tokens[n:])
    return 0 < len(rest_old) <= 3 and 0 < len(rest_new) <= 3 and not set(rest_old) & set(rest_new)


def _neutral(reason: str) -> Judgement:
    return Judgement(verdict=Verdict.neutral, confidence=0.5, reason=reason)
