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

_SENTENCE_PUNCTUATION = re.compile(r"[.!?;](\s|$)")
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
    he him his she her hers ones
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
    ("shared", "private"),
    ("requires", "optional"),
    ("vegetarian", "carnivore"),
    ("married", "single"),
    ("win", "lose"),
    ("won", "lost"),
]
_STEMMER = Stemmer.Stemmer("english")
# By stem, so "requires" meets "optional" as "required" does.
_ANTONYM: dict[str, set[str]] = {}
for _a, _b in _ANTONYMS:
    _sa, _sb = _STEMMER.stemWord(_a), _STEMMER.stemWord(_b)
    _ANTONYM.setdefault(_sa, set()).add(_sb)
    _ANTONYM.setdefault(_sb, set()).add(_sa)
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
_COPULAS = frozenset("is are was were".split())
# ("may" is left to the months: "ships in May".)
_AUXILIARIES = _COPULAS | frozenset("has have had will would can could should must might does do did".split())
# Number words are values too, as digits ("two approvals" against "one approval", "Four workers"
# as "4 workers").
_NUMBER_WORDS = {
    w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
} | {"twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000"}
_PREPOSITIONS = frozenset("in on at to by with from for of via into onto".split())
# Words by which a newer statement reports that the older one stopped being true.
_CHANGE = re.compile(
    r"\b(instead of|no longer|any ?more|stopped|moved (from|to|out)|left the|switched|replaced|was changed"
    r"|were changed|has changed|have changed|not anymore|used to)\b"
)
# A slot after a copula, or after one of these verbs, takes one value: "<the same subject> is X"
# against "... is Y", "is hosted in X", "is owned by X", "defaults to X".
_SINGLE_VALUE_VERBS = frozenset(
    """
    run runs hosted located based live lives owned managed led signed encrypted hashed written issued priced
    billed named called set defaults go goes sent routed stored pinned deployed
    """.split()
)
_ARTICLES = frozenset("a an the".split())
_VALUE_WORDS = _MONTHS | _WEEKDAYS | frozenset(f"{d}s" for d in _WEEKDAYS) | frozenset(_NUMBER_WORDS)
_NOT_CONTENT = _FILLER | _NEGATIONS | _UNITS | _VALUE_WORDS


@dataclass(frozen=True)
class _Side:
    tokens: tuple[str, ...]  # the statement's tokens, lowercased
    stems: frozenset[str]  # stems of the statement's content words
    mentions: frozenset[str]  # those and the label's: everything the side names
    named: frozenset[str]  # label words the statement says too: they name the subject
    label_only: frozenset[str]  # label words the statement does not say (a summary's words)
    values: frozenset[str]  # numbers, dates, months and weekdays
    subject_values: frozenset[str] | None  # those before the first auxiliary ("Release 2.0 is ...")
    negated: bool


def split_label(text: str) -> tuple[str | None, str]:
    """The store hands statements over as ``"label: definition"``: the label, when there is one."""
    head, sep, tail = text.partition(": ")
    if sep and tail and 0 < len(head.split()) <= 6 and not _SENTENCE_PUNCTUATION.search(head):
        return head, tail
    return None, text


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def _tokens(text: str) -> list[str]:
    return [t.removesuffix("'s") for t in _TOKEN.findall(text.lower().replace("\u2019", "'"))]


def _is_value(token: str) -> bool:
    return token[0].isdigit() or token in _VALUE_WORDS


def _content(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if t not in _NOT_CONTENT and not t[0].isdigit()]


def _values(tokens: Sequence[str]) -> frozenset[str]:
    return frozenset(_NUMBER_WORDS.get(t, t) for t in tokens if _is_value(t))


@lru_cache(maxsize=16_384)
def _side(subject: str | None, statement: str) -> _Side:
    tokens = tuple(_tokens(statement))
    label_tokens = _tokens(subject or "")
    label_stems = frozenset(_stem(t) for t in _content(label_tokens) if t not in _GENERIC_LABEL)
    label_stems |= _values(label_tokens)  # "Release 2.0", "April conversion" name their subject
    negated = any(t in _NEGATIONS or t.endswith("n't") for t in tokens) or "no longer" in " ".join(tokens)
    verb = next((i for i, t in enumerate(tokens) if t in _AUXILIARIES), None)
    stems = frozenset(map(_stem, _content(tokens)))
    values = _values(tokens)
    own = stems | values
    return _Side(
        tokens=tokens,
        stems=stems,
        mentions=own | label_stems,
        named=label_stems & own,
        label_only=label_stems - own,
        values=values,
        subject_values=None if verb is None else _values(tokens[:verb]),
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
        old_subject, old_statement, old = _prepared(pair.premise_subject, pair.premise)
        new_subject, new_statement, new = _prepared(pair.hypothesis_subject, pair.hypothesis)
        same_label = bool(old_subject) and (old_subject or "").strip().lower() == (new_subject or "").strip().lower()

        if _different_subjects(old, new):
            return _neutral("the statements are about different subjects")
        # One statement repeating the other's own sentences cannot deny it, whatever words the rest adds.
        if _sentences_within(new_statement, old_statement) or _sentences_within(old_statement, new_statement):
            return _said(
                verdict=Verdict.entailment, confidence=0.75, reason="one statement repeats the other's sentences"
            )

        only_old, only_new = old.stems - new.stems, new.stems - old.stems
        flips = _antonym_flips(only_old, only_new)
        if flips:
            a, b = (_word_of(side, stem) for side, stem in zip((old, new), flips[0], strict=True))
            rest_old = only_old - {w for w, _ in flips}
            rest_new = only_new - {w for _, w in flips}
            if not rest_old and not rest_new and old.negated == new.negated:
                return _said(verdict=Verdict.contradiction, confidence=0.75, reason=f"opposite terms: {a}/{b}")

        if pair.similarity >= 0.75 and _reports_a_change(old, new, new_statement):
            return _said(verdict=Verdict.contradiction, confidence=0.6, reason="the newer statement reports a change")

        if only_old or only_new:
            if not flips and _exclusive_swap(old, new, same_label):
                return Judgement(
                    verdict=Verdict.contradiction, confidence=0.65, reason="the same subject is given another value"
                )
            contained = not only_new and old.negated == new.negated and old.values >= new.values
            if contained and pair.similarity >= 0.85:
                return _said(verdict=Verdict.entailment, confidence=0.7, reason="the older statement says it all")
            if old.negated != new.negated and not only_new and not (new.values - old.values):
                # "purged after 30 days" / "never purged": the newer one denies the older, less its detail
                return _said(
                    verdict=Verdict.contradiction, confidence=0.7, reason="the newer statement denies the older"
                )
            return _neutral("the statements say different things")

        # Same words (up to inflection and filler): only a negation or a value can tell them apart.
        if old.negated != new.negated:
            return _said(verdict=Verdict.contradiction, confidence=0.8, reason="one statement negates the other")
        if old.values != new.values:
            if old.values and new.values and not (old.values <= new.values or new.values <= old.values):
                return Judgement(
                    verdict=Verdict.contradiction, confidence=0.7, reason="same statement, different values"
                )
            return _neutral("one statement gives a value the other does not")
        if pair.similarity >= 0.85:
            return _said(verdict=Verdict.entailment, confidence=0.8, reason="the statements say the same")
        return _neutral("no clear lexical relation")


def _sentence_set(text: str) -> set[str]:
    return {" ".join(s.lower().split()).rstrip(".!?;: ") for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()}


def _sentences_within(part: str, whole: str) -> bool:
    """Every sentence of ``part`` is, word for word, a sentence of ``whole``."""
    sentences = _sentence_set(part)
    return bool(sentences) and sentences <= _sentence_set(whole)


def _different_subjects(old: _Side, new: _Side) -> bool:
    """A word naming one side's subject (in its label and its statement, or a number in its label)
    that the other side never says; or both labels summarising with words the other lacks
    ("Payments timeout" and "Search timeout" over "The service times out after 30 s"); or the
    numbers before the verb differ ("Release 2.0 is ..." and "Release 3.0 is ...")."""
    if (old.named - new.mentions) or (new.named - old.mentions):
        return True
    if (old.label_only - new.mentions) and (new.label_only - old.mentions):
        return True
    if old.subject_values is None or new.subject_values is None:
        return False
    return old.subject_values != new.subject_values


@lru_cache(maxsize=16_384)
def _prepared(subject: str | None, text: str) -> tuple[str | None, str, _Side]:
    subject, statement = _subject_and_statement(subject, text)
    return subject, statement, _side(subject, statement)


def _subject_and_statement(subject: str | None, text: str) -> tuple[str | None, str]:
    label, statement = split_label(text)
    if subject is None:
        return label, statement
    if label is not None and label.strip().lower() == subject.strip().lower():
        return subject, statement
    return subject, text


def _antonym_flips(only_old: frozenset[str], only_new: frozenset[str]) -> list[tuple[str, str]]:
    """(old stem, new stem) pairs of opposites, each found on one side only."""
    return sorted((a, b) for a in only_old for b in _ANTONYM.get(a, ()) if b in only_new)


def _exclusive_swap(old: _Side, new: _Side, same_label: bool) -> bool:
    """One slot of the same sentence filled differently, where the slot takes one value: "The
    primary database is PostgreSQL" / "... is MySQL", "runs in eu-west-1" / "runs in us-east-2",
    "is owned by the data team" / "... the finance team". The slot holds at most three content
    words on each side, none shared, none a participle (that is another predicate: "is backed up")."""
    if old.negated or new.negated:
        return False
    n = _shared_prefix(old.tokens, new.tokens)
    m = _shared_prefix(old.tokens[n:][::-1], new.tokens[n:][::-1])
    head = list(old.tokens[:n])
    slot_old, slot_new = old.tokens[n : len(old.tokens) - m], new.tokens[n : len(new.tokens) - m]
    while head and head[-1] in _ARTICLES:
        head.pop()
    if len(head) < 2:
        return False
    if head[-1] in _COPULAS or head[-1] in _SINGLE_VALUE_VERBS:
        subject = head[:-1]
    elif head[-2] in _SINGLE_VALUE_VERBS and len(head[-1]) <= 4:  # "runs in", "owned by", "go to"
        subject = head[:-2]
    elif head[-1] in ("use", "uses") and len(old.tokens) > len(head) and old.tokens[len(head)] in _ARTICLES:
        subject = head[:-1]  # "uses a Redis cache": one of a kind
    else:
        return False
    if subject and subject[-1] in _COPULAS:
        subject = subject[:-1]
    if len(_content(subject)) < (1 if same_label else 2):
        return False
    rest_old, rest_new = _content(slot_old), _content(slot_new)
    if not (0 < len(rest_old) <= 3 and 0 < len(rest_new) <= 3) or set(rest_old) & set(rest_new):
        return False
    # The same kind of filler on both sides: not "the X" against "a Y" (a category), not a value
    # against a name ("eu-west-1" against "AWS"), not a new preposition (another predicate).
    if (slot_old[0] in _ARTICLES or slot_new[0] in _ARTICLES) and slot_old[0] != slot_new[0]:
        return False
    if any(_is_value(t) for t in slot_old) != any(_is_value(t) for t in slot_new):
        return False
    if slot_old[0] in _PREPOSITIONS or slot_new[0] in _PREPOSITIONS:
        return False
    # A participle starts another predicate ("is backed up", "are reviewed before"), unless an
    # article makes it a noun's modifier ("the engineering manager").
    return old.tokens[n - 1] in _ARTICLES or not any(t.endswith(("ed", "ing")) for t in (rest_old[0], rest_new[0]))


def _reports_a_change(old: _Side, new: _Side, new_text: str) -> bool:
    """The newer statement says the older one stopped holding ("moved from Berlin to Lisbon",
    "no longer", "instead of 30 seconds") and repeats most of what the older one said."""
    if not _CHANGE.search(new_text.lower()) or not old.stems:
        return False
    return len(old.stems & new.stems) >= 0.5 * len(old.stems)


def _word_of(side: _Side, stem: str) -> str:
    """The statement's own word for a stem (reasons quote words, not stems)."""
    return next((t for t in side.tokens if _stem(t) == stem), stem)


def _said(*, verdict: Verdict, confidence: float, reason: str) -> Judgement:
    # Built without validation: the values are this module's own (the store path judges in bulk).
    return Judgement.model_construct(verdict=verdict, confidence=confidence, reason=reason, answered=True)


def _neutral(reason: str) -> Judgement:
    return _said(verdict=Verdict.neutral, confidence=0.5, reason=reason)


# Words by which a newer statement reports that something about its subject changed. Broader than
# `_CHANGE` (which, with the rest of a sentence repeated, decides a contradiction): these only ever
# link two statements for ordering, never supersede one.
_UPDATE_CUE = re.compile(
    r"\b(now|no longer|any ?more|instead|moved|changed|switched|replaced|rewritten|rewrote|rebuilt|migrated"
    r"|raised|lowered|increased|decreased|reduced|shortened|lengthened|extended|took over|taken over|promoted"
    r"|demoted|quit|sold|went up|went down|gone up|gone down|upgraded|downgraded|renamed|relocated"
    r"|transferred|stopped|used to|formerly|previously)\b"
)


def reports_a_change(statement: str) -> bool:
    """Whether a statement carries a change cue at all (the cheap first test of `reports_an_update`)."""
    return _UPDATE_CUE.search(statement.lower()) is not None


def reports_an_update(older: str, newer: str, *, min_shared: int = 2) -> bool:
    """Whether ``newer`` reads as an update of ``older``: it carries a change cue ("moved", "now",
    "was rewritten", "took over"), the two statements share at least ``min_shared`` content words
    (by stem), and nothing marks them as about different subjects (`_different_subjects`). Weaker
    than a contradiction on purpose: the store records it as a link that orders the newer first
    and flags the pair, and hides nothing."""
    if not reports_a_change(newer):
        return False
    old, new = _side(None, older), _side(None, newer)
    if _different_subjects(old, new) or len(old.stems & new.stems) < min_shared:
        return False
    return _leads_with_shared(older, new.stems) or _leads_with_shared(newer, old.stems)


def _leads_with_shared(statement: str, other: frozenset[str] | set[str]) -> bool:
    """The statement's first content word (where its subject usually stands: "The payments service
    ...", "Maria ...") is one the other statement says too: "The search service now times out" does
    not update "The payments service times out", however many other words they share."""
    head = next(iter(_content(_tokens(statement))), None)
    return head is not None and _stem(head) in other


def reports_an_update_of_lexemes(older_label: str, older_lexemes: Sequence[str], newer: str) -> bool:
    """`reports_an_update` against a cold stub, which keeps its label and the lexemes of its text
    (PostgreSQL's English stems, the same Snowball stemmer as here) but not the text itself."""
    if not reports_a_change(newer):
        return False
    stems = set(older_lexemes) | {_stem(t) for t in _content(_tokens(older_label))}
    new = _side(None, newer)
    return len(stems & new.stems) >= 2 and (
        _leads_with_shared(older_label, new.stems) or _leads_with_shared(newer, stems)
    )
