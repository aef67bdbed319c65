"""Merge planning for an admission batch (S4 step 7), as pure functions over the candidates and
the rows the store's lookups returned: which existing memory each candidate joins and why, the
override that lets a candidate contradicting its merge target stand alone, one memory row per
final key, the text each memory gains, the related edges and the counts recorded with the source.

The store runs the lookups and the writes; every decision between them is here, testable
without a database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, NotRequired, TypedDict
from uuid import UUID

from contextos.models import MemoryCandidate, StoreResult
from contextos.normalization import CONNECTORS, SOURCE_MARK, acronyms, initials, is_verbatim_key, label_form
from contextos.scopes import key_owner

# An admission asks for a label's initials and acronyms three times (lookups, pairing, upsert).
label_initials = lru_cache(maxsize=4096)(initials)
label_acronyms = lru_cache(maxsize=4096)(lambda label: tuple(acronyms(label)))


class LookupRow(TypedDict):
    """An existing memory the exact-key or acronym lookup found (``exact``: its key is a candidate's)."""

    exact: bool
    norm_key: str
    initials: str | None
    acronyms: list[str] | None
    importance: int
    created_at: datetime | None
    ingest_seq: NotRequired[int | None]  # admission order: one transaction's memories share created_at
    type: NotRequired[str | None]  # the memory's type (None on an exact-key row)
    label: NotRequired[str | None]  # an acronym row's label and text: the evidence that it names the same
    definition: NotRequired[str | None]


class NearRow(TypedDict):
    """A near duplicate of candidate ``idx``: an existing memory of its type at ``similarity``."""

    idx: int
    norm_key: str
    similarity: float


@dataclass
class MergePlan:
    """Per candidate index: the existing memory's key it joins and why (``acronym``,
    ``near_duplicate``); ``final_keys`` is every candidate's key after the merges."""

    candidates: Sequence[MemoryCandidate]
    merge_into: dict[int, str] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)

    @property
    def final_keys(self) -> list[str]:
        return [self.merge_into.get(i, c.norm_key) for i, c in enumerate(self.candidates)]

    def stand_alone(self, supersedes: Mapping[int, Sequence[UUID]], keys: Mapping[UUID, str]) -> MergePlan:
        """A candidate that contradicts the memory it would merge into stands alone instead: the
        plan without those merges. ``supersedes``: candidate index → the memories it supersedes;
        ``keys``: each judged memory's key."""
        merge_into, reasons = dict(self.merge_into), dict(self.reasons)
        final = self.final_keys
        for i, superseded in supersedes.items():
            if final[i] != self.candidates[i].norm_key and final[i] in {keys[m] for m in superseded}:
                merge_into.pop(i, None)
                reasons.pop(i, None)
        return MergePlan(self.candidates, merge_into, reasons)

    def merge_counts(self) -> dict[str, int]:
        """How many candidates merged by each reason."""
        reasons = list(self.reasons.values())
        return {reason: reasons.count(reason) for reason in set(reasons)}


def order_lookup_rows(rows: Sequence[LookupRow]) -> list[LookupRow]:
    """Acronym pairs are tried most important first, then oldest (the order of ``merge_targets``)."""
    return sorted(
        rows,
        key=lambda r: (-r["importance"], r["created_at"] is None, r["created_at"] or 0, r.get("ingest_seq") or 0),
    )


def identifiers(words: frozenset[str]) -> frozenset[str]:
    """The words that hold a digit: versions, codes, ids, counts."""
    return frozenset(word for word in words if any(ch.isdigit() for ch in word))


def key_words(key: str) -> frozenset[str]:
    """A key's words, its owner suffix, its source mark and connector words aside."""
    owner = key_owner(key)
    words = key[: -len(owner)] if owner else key
    return frozenset(word for word in words.split() if word not in CONNECTORS and not word.startswith(SOURCE_MARK))


def may_name_the_same(key: str, other: str) -> bool:
    """Whether a near duplicate's label can name what the candidate's does: the two share a word
    and name the same identifiers. Vectors alone say "close", not "the same": two people named in
    one sentence ("Anna", "Jolene"), "db 01" and "db 02", "Python 3.11" and "3.12" embed alike. A
    common noun's source mark is no word of its key: what another source restates joins by vector."""
    words, other_words = key_words(key), key_words(other)
    return bool(words & other_words) and identifiers(words) == identifiers(other_words)


def may_suggest_joining(key: str, other: str, type_: str, other_type: str) -> bool:
    """Whether governance may suggest joining two near duplicates: what an admission asks of their
    labels (``may_name_the_same``, one owner; never a rule nor a kept turn), save that two sources'
    common nouns may be suggested, since a person confirms a suggestion. "Maria" and "Pool size"
    embed alike and share no word. (Whether the types must agree is the report's setting.)"""
    return (
        NEVER_JOINED_BY_LIKENESS.isdisjoint((type_, other_type))
        and not is_verbatim_key(key)
        and not is_verbatim_key(other)
        and key_owner(key) == key_owner(other)
        and may_name_the_same(key, other)
    )


def nearest_by_candidate(candidates: Sequence[MemoryCandidate], rows: Sequence[NearRow]) -> dict[int, str]:
    """candidate index → the key of its most similar near duplicate that may name the same thing
    (``may_name_the_same``): precision before recall, the others stand alone."""
    found: dict[int, tuple[float, str]] = {}
    for row in rows:
        key = candidates[row["idx"]].norm_key
        if is_verbatim_key(key) or is_verbatim_key(row["norm_key"]) or not may_name_the_same(key, row["norm_key"]):
            continue
        if row["idx"] not in found or row["similarity"] > found[row["idx"]][0]:
            found[row["idx"]] = (row["similarity"], row["norm_key"])
    return {i: key for i, (_, key) in found.items()}


# A rule is said once and kept as said: it never joins another memory by acronym or vector
# ("Never log secrets" is not the entity "NLS"), only a restatement of its own key.
NEVER_JOINED_BY_LIKENESS = frozenset({"rule"})


def may_join_by_likeness(candidate: MemoryCandidate, other_type: str | None, other_key: str | None = None) -> bool:
    """Whether a candidate may join another memory by acronym or near duplicate: not a rule, and
    only a memory of its own type (an acronym names a thing of the same kind as its long form).
    A kept turn (``is_verbatim_key``) is what was said, once: it joins nothing and nothing joins it."""
    return (
        candidate.type not in NEVER_JOINED_BY_LIKENESS
        and not is_verbatim_key(candidate.norm_key)
        and not (other_key is not None and is_verbatim_key(other_key))
        and (other_type is None or other_type == candidate.type)
    )


_NOT_WORD = re.compile(r"[^0-9a-z]+")


def _spelled(text: str, phrase: str) -> bool:
    """Whether ``text`` holds ``phrase`` as whole words, up to case, hyphens and punctuation."""
    words = _NOT_WORD.sub(" ", label_form(phrase).lower()).strip()
    return bool(words) and f" {words} " in f" {_NOT_WORD.sub(' ', label_form(text).lower())} "


def _written(text: str, acronym: str) -> bool:
    """Whether ``text`` writes ``acronym`` as a word in capitals ("… Optimization (GRPO) …")."""
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(acronym.upper())}(?![0-9A-Za-z])", label_form(text)) is not None


def acronym_evidence(long_label: str, long_text: str, acronym: str, short_label: str, short_text: str) -> bool:
    """Whether two memories whose labels pair as acronym and long form were said to be one thing:
    the acronym's memory spells the long form out ("the CLI (command line interface)"), or the
    long form's memory writes the acronym ("Group Relative Policy Optimization (GRPO)"). Letters
    alone do not say it: "Attrs instances" is not "AI", "AWS CLI" is not "Amazon Web Services"."""
    return _spelled(f"{short_label} {short_text}", long_label) or _written(long_text, acronym)


def _acronym_pair(candidate: MemoryCandidate, row: LookupRow, cand_initials: str | None, cand_acronyms) -> bool:
    """Whether ``row`` (an acronym lookup's answer) and the candidate pair as acronym and long form,
    with the evidence that they name one thing (``acronym_evidence``). The acronym's label must be
    the acronym alone ("CLI", not "CLI guide" or "Rich CLI", which name things of their own), and a
    long form holding the acronym is no expansion of it ("AI Instructions" is not "AI")."""
    mine = (candidate.label, candidate.definition, candidate.norm_key)
    theirs = (row.get("label") or "", row.get("definition") or "", row["norm_key"])
    if cand_initials and cand_initials in (row["acronyms"] or []):  # the candidate is the long form
        (long_label, long_text, _), (short_label, short_text, short_key), acronym = mine, theirs, cand_initials
    elif row["initials"] and row["initials"] in cand_acronyms:  # the candidate holds the acronym
        (long_label, long_text, _), (short_label, short_text, short_key), acronym = theirs, mine, row["initials"]
    else:
        return False
    return (
        key_words(short_key) == {acronym}
        and acronym not in label_acronyms(long_label)
        and acronym_evidence(long_label, long_text, acronym, short_label, short_text)
    )


def merge_targets(
    candidates: Sequence[MemoryCandidate], lookup_rows: Sequence[LookupRow], nearest: dict[int, str]
) -> MergePlan:
    """For each candidate without an exact key match: the existing memory it should join.

    An acronym pair wins over a near duplicate when one of the two says they are one thing
    (``acronym_evidence``); the near duplicate (same type, cosine at or
    above the threshold, ``nearest``) counts only for what is still unmatched. Neither joins a
    rule to anything, nor an acronym pair of two types (``may_join_by_likeness``).
    """
    cand_initials = {i: label_initials(c.label) for i, c in enumerate(candidates)}
    cand_acronyms = {i: label_acronyms(c.label) for i, c in enumerate(candidates)}
    existing = {r["norm_key"] for r in lookup_rows if r["exact"]}
    pairs = [r for r in lookup_rows if not r["exact"]]
    targets: dict[int, str] = {}
    reasons: dict[int, str] = {}
    open_idx = [i for i, c in enumerate(candidates) if c.norm_key not in existing]
    for i in open_idx:
        for row in pairs:
            if (
                row["norm_key"] != candidates[i].norm_key
                and may_join_by_likeness(candidates[i], row.get("type"), row["norm_key"])
                and key_owner(row["norm_key"]) == key_owner(candidates[i].norm_key)
                and _acronym_pair(candidates[i], row, cand_initials[i], cand_acronyms[i])
            ):
                targets[i], reasons[i] = row["norm_key"], "acronym"
                break
    for i in open_idx:
        if i not in targets and i in nearest and may_join_by_likeness(candidates[i], None, nearest[i]):
            targets[i], reasons[i] = nearest[i], "near_duplicate"
    return MergePlan(candidates, targets, reasons)


def one_per_key(candidates: Sequence[MemoryCandidate], final_keys: list[str]) -> list[tuple[int, MemoryCandidate]]:
    """Candidates that ended under one key become one memory row: the most important, then longest.
    Returns (candidate index, the candidate under its final key)."""
    best: dict[str, tuple[int, MemoryCandidate]] = {}
    for i, (candidate, key) in enumerate(zip(candidates, final_keys, strict=True)):
        current = best.get(key)
        if current is None or (candidate.importance, len(candidate.definition)) > (
            current[1].importance,
            len(current[1].definition),
        ):
            best[key] = (i, candidate.model_copy(update={"norm_key": key}))
    return list(best.values())


def source_texts(
    candidates: Sequence[MemoryCandidate], final_keys: list[str], chosen: list[tuple[int, MemoryCandidate]]
) -> dict[str, str]:
    """By final key, the text its candidates bring beyond the definition the memory row takes: the
    other candidates' definitions and everyone's excerpts, each passage once, in order."""
    row_of = {c.norm_key: i for i, c in chosen}
    parts: dict[str, list[str]] = {}
    for i, (candidate, key) in enumerate(zip(candidates, final_keys, strict=True)):
        mine = parts.setdefault(key, [])
        pieces = candidate.excerpts if row_of.get(key) == i else [candidate.definition, *candidate.excerpts]
        mine.extend(p for p in pieces if p and p not in mine and p != candidates[row_of[key]].definition)
    return {key: "\n".join(texts) for key, texts in parts.items() if texts}


def related_pairs(
    candidates: Sequence[MemoryCandidate], final_keys: Sequence[str], ids: Mapping[str, UUID]
) -> list[tuple[UUID, UUID]]:
    """The ``related`` edges the candidates name, between the memories they ended in (by final key),
    each once, none from a memory to itself."""
    remap = {c.norm_key: key for c, key in zip(candidates, final_keys, strict=True)}
    return sorted(
        {
            (ids[key], ids[remap.get(r, r)])
            for c, key in zip(candidates, final_keys, strict=True)
            for r in c.related_keys
            if remap.get(r, r) in ids and remap.get(r, r) != key
        }
    )


def store_result(candidates: Sequence[MemoryCandidate], rows: Sequence[Mapping[str, Any]], edges: int) -> StoreResult:
    """The admission's result from the upserted rows (``inserted``: created, else merged into)."""
    created = sum(1 for r in rows if r["inserted"])
    return StoreResult(
        created=created,
        merged=len(candidates) - created,
        items=len(candidates),
        edges=edges,
        memory_ids=[r["id"] for r in rows],
    )


@dataclass(frozen=True)
class GateCounts:
    """What the contradiction gate reports into an admission's counts."""

    judged: int = 0
    judged_under_lock: int = 0
    judge_failures: int = 0
    superseded: int = 0
    corroborated: int = 0


def admission_counts(result: StoreResult, plan: MergePlan, held: int, gate: GateCounts) -> dict[str, Any]:
    """The counts an admission records with its source (a document's, a conversation flush's)."""
    return {
        "memories_created": result.created,
        "memories_merged": result.merged,
        "merged_by": plan.merge_counts(),
        "items": result.items,
        "edges": result.edges,
        "held_for_review": held,
        "judged": gate.judged,
        "judged_under_lock": gate.judged_under_lock,
        "judge_failures": gate.judge_failures,
        "superseded": gate.superseded,
        "corroborated": gate.corroborated,
    }
