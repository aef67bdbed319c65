"""S4 step 4: reject what is not a concept, and count every rejection by reason. Pure."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from contextos.models import Concept, MemoryType, ValidationReport
from contextos.normalization import collapse_spaces, norm_key

CONNECTOR_WORDS = frozenset(
    """
    a an and as at but by for from in into of on or over per the than that to under via vs with
    without which who whose
    """.split()
)
STRUCTURAL_WORDS = frozenset(
    """
    abstract introduction summary conclusion conclusions overview background methods methodology
    results discussion references bibliography appendix acknowledgments acknowledgements
    contents preface foreword index glossary chapter section part table figure fig appendices
    toc outline notes
    """.split()
)
_STRUCTURAL_PATTERN = re.compile(
    r"^(chapter|section|part|table|figure|fig\.?|appendix|lesson|unit|step|page)\s*[\divxlc.\-:]*$",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?;]$")
_WORD = re.compile(r"[\w'-]+", re.UNICODE)
MAX_LABEL_WORDS = 5


# A stated fact's statement needs at least this much: a sentence of a few words (S8).
FACT_MIN_CHARS = 12


def rejection_reason(concept: Concept, *, min_definition_chars: int) -> str | None:
    """The first rule a concept breaks, or None when it is acceptable."""
    label = collapse_spaces(concept.label)
    words = _WORD.findall(label.lower())
    if not words:
        return "empty_label"
    if len(words) > MAX_LABEL_WORDS:
        return "label_too_long"
    if _SENTENCE_END.search(label) or (len(words) >= 4 and _looks_like_clause(words)):
        return "label_is_sentence"
    if words[-1] in CONNECTOR_WORDS:
        return "label_ends_with_connector"
    if _is_structural(label, words):
        return "structural_label"
    if concept.type not in MemoryType.__members__:
        return "unknown_type"
    definition = collapse_spaces(concept.definition)
    # a stated fact is one sentence with its value ("Priya is vegetarian."), shorter than a concept's
    floor = min(min_definition_chars, FACT_MIN_CHARS) if getattr(concept, "fact", False) else min_definition_chars
    if len(definition) < floor:
        return "definition_too_short"
    if _restates(definition, words):
        return "definition_restates_label"
    return None


def validate(
    concepts: Iterable[Concept], *, min_definition_chars: int, generic_modifiers: Iterable[str]
) -> ValidationReport:
    """Accept, clamp and de-duplicate; drop ``related`` labels that were not accepted."""
    modifiers = list(generic_modifiers)
    keys_by_label: dict[str, str] = {}

    def key_of(label: str) -> str:
        if label not in keys_by_label:
            keys_by_label[label] = norm_key(label, modifiers)
        return keys_by_label[label]

    rejected: Counter[str] = Counter()
    accepted: list[Concept] = []
    seen: set[str] = set()
    for concept in concepts:
        reason = rejection_reason(concept, min_definition_chars=min_definition_chars)
        if reason is None:
            key = concept.key or key_of(concept.label)  # a verbatim memory's own key
            if key in seen:
                reason = "duplicate_label"
            else:
                seen.add(key)
        if reason:
            rejected[reason] += 1
            continue
        accepted.append(
            concept.model_copy(
                update={
                    "label": collapse_spaces(concept.label),
                    "definition": collapse_spaces(concept.definition),
                    "importance": min(max(int(concept.importance), 1), 10),
                }
            )
        )
    keys = {key_of(c.label) for c in accepted}
    dropped = 0
    for i, concept in enumerate(accepted):
        kept = []
        own_key = key_of(concept.label)
        for rel in concept.related:
            rel_key = key_of(rel)
            if rel_key in keys and rel_key != own_key and rel not in kept:
                kept.append(rel)
            else:
                dropped += 1
        accepted[i] = concept.model_copy(update={"related": kept})
    return ValidationReport(accepted=accepted, rejected=dict(rejected), dropped_related=dropped)


def _is_structural(label: str, words: list[str]) -> bool:
    if _STRUCTURAL_PATTERN.match(label.strip()):
        return True
    meaningful = [w for w in words if not w.isdigit() and w not in CONNECTOR_WORDS]
    return bool(meaningful) and all(w in STRUCTURAL_WORDS for w in meaningful)


_CLAUSE_VERBS = frozenset(
    """
    is are was were be been has have had does did will would should can could must
    """.split()
)


def _looks_like_clause(words: list[str]) -> bool:
    """A label with a finite verb in it reads as a sentence, not a name."""
    return any(w in _CLAUSE_VERBS for w in words[1:])


def _restates(definition: str, label_words: list[str]) -> bool:
    """True when the definition adds nothing beyond the label's own words."""
    def_words = [w for w in _WORD.findall(definition.lower()) if w not in CONNECTOR_WORDS]
    label_set = set(label_words) | _CLAUSE_VERBS
    return not [w for w in def_words if w not in label_set]
