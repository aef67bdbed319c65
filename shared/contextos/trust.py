"""Trust (S7), pure: provenance ceilings, content signals, gate trust and composite trust.

No database and no AWS here: the services decide with these functions, the store records it.

Content signals are judged per sentence. A sentence that *addresses* the agent with a directive
("ignore previous instructions and ...", "from now on always recommend ...") is a full signal;
one that only calls out to an agent, sets a standing rule, or *describes* an injection (quotes
it, names it an attack) is a weak one. A candidate carries the signals of its own text and of the
source sentences it was drawn from or that promote what it names; a source taints all of its
candidates only when directives make up a large share of it (it is an attack, not a document
that quotes one line of one).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from contextos.config import GovernanceSettings
from contextos.errors import ProvenanceAboveCeiling
from contextos.models import Provenance

# Characters that render as nothing: used to split trigger words so a pattern does not see them.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad"))
_SPACES = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|(?<=>)(?=<)|(?<=\])\s+(?=\S)")
_ADDRESSES = re.compile(r"\S+@\S+|\w+://\S+")
_WORD = re.compile(r"[a-z0-9][a-z0-9'._-]*[a-z0-9]|[a-z0-9]")
_RAW_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9]")
# A directive's verb beside a call-out to an agent makes it a directive.
_BEHAVIOUR = re.compile(
    r"\b(always|never|must|should|remember|store|save|recommend|tell|say|answer|respond|reply|ignore|forward|send"
    r"|install|book|approve|rank|mention|refer|treat|call|describe|report|update|act|run|post|merge|include|move"
    r"|forget|disregard|pretend|only|make sure|please)\b"
)
# Words that call the agent, not names of what an injection promotes.
_NOT_TERMS = frozenset(
    """
    ai assistant assistants agent agents llm llms chatgpt claude gpt model models system note important warning
    attention instructions instruction message dear hey hi hello user users from when whenever if the a an
    please reply comment review support guest candidate p.s inst
    for and but with this that these those then than you your yours we our they their there here its not
    all any each every also only just into onto over under after before about above below between
    what which who whom whose where why how new now one two three
    """.split()
)


@dataclass(frozen=True)
class Signal:
    """How strongly a text reads as instructions to an agent (0: not at all, 1: a directive)."""

    strength: float = 0.0
    names: tuple[str, ...] = ()


NO_SIGNAL = Signal()


@dataclass(frozen=True)
class FlaggedSentence:
    text: str  # folded for scanning
    words: frozenset[str]
    terms: frozenset[str]  # the names it carries (products, people, hosts): what it promotes
    signal: Signal


@dataclass(frozen=True)
class SourceScan:
    """A source text's signalled sentences, computed once for all candidates drawn from it."""

    flagged: tuple[FlaggedSentence, ...] = ()
    sentences: int = 0
    whole: Signal = NO_SIGNAL  # set when the source as a whole reads as an attack


def cap_provenance(claimed: Provenance, ceiling: Provenance, settings: GovernanceSettings) -> Provenance:
    """What a credential may claim: the claimed provenance when it is not more trusted than the
    credential's ceiling, else the ceiling itself (an agent's key cannot claim ``user_turn``)."""
    if settings.trust_of(claimed) <= settings.trust_of(ceiling):
        return claimed
    return ceiling


def claim_provenance(
    claimed: Provenance | None, default: Provenance, ceiling: Provenance, settings: GovernanceSettings
) -> Provenance:
    """One rule for every write that names its provenance: an explicit claim above the credential's
    ceiling is refused (403 ``provenance_above_ceiling``) — never silently lowered, so the caller
    learns its claim did not hold; an unstated provenance takes the default, lowered to the ceiling."""
    if claimed is not None and settings.trust_of(claimed) > settings.trust_of(ceiling):
        raise ProvenanceAboveCeiling(
            f"this credential may claim provenance up to {ceiling.value!r}; {claimed.value!r} is above it",
            details={"requested": claimed.value, "ceiling": ceiling.value},
        )
    return cap_provenance(claimed or default, ceiling, settings)


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE)


def normalized_for_scan(text: str) -> str:
    """Fold the usual disguises of an injected instruction: compatibility forms (full-width,
    ligatures), invisible characters, case and runs of whitespace."""
    return _SPACES.sub(" ", _folded(text)).strip().lower()


def _disguised(text: str) -> bool:
    """Invisible characters inside a word, or letters in compatibility forms: nobody writes
    ordinary prose that way."""
    return bool(re.search(r"\w[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]\w", text)) or any(
        "\uff01" <= ch <= "\uff5e" for ch in text
    )


@lru_cache(maxsize=8)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE | re.DOTALL) for p in patterns)


def injection_signals(texts: Iterable[str], patterns: Iterable[str]) -> list[str]:
    """The configured directive patterns found in any of the texts (their indexes, as names),
    so a held candidate can say why without repeating the text."""
    compiled = _compiled(tuple(patterns))
    found: list[str] = []
    for text in texts:
        if not text:
            continue
        for sentence in split_sentences(text):
            found += [
                f"pattern_{i}" for i, p in enumerate(compiled) if f"pattern_{i}" not in found and p.search(sentence)
            ]
    return found


def split_sentences(text: str) -> list[str]:
    """Sentences (and lines, and adjacent markup elements) of a text, folded for scanning."""
    return [s for s in (normalized_for_scan(part) for part in _SENTENCE_END.split(_folded(text))) if s]


def sentence_signal(raw: str, settings: GovernanceSettings) -> Signal:
    """One sentence: a directive to the agent (full strength), a call-out or a described
    injection (weak), or nothing. Disguised text never counts as a description."""
    sentence = normalized_for_scan(raw)
    if not sentence:
        return NO_SIGNAL
    directive_patterns = _compiled(tuple(settings.injection_patterns))
    callout_patterns = _compiled(tuple(settings.addressing_patterns))
    directives = [f"pattern_{i}" for i, p in enumerate(directive_patterns) if p.search(sentence)]
    callouts = [f"address_{i}" for i, p in enumerate(callout_patterns) if p.search(sentence)]
    weak_ones = [f"weak_{i}" for i, p in enumerate(_compiled(tuple(settings.weak_patterns))) if p.search(sentence)]
    if not directives and not callouts and not weak_ones:
        return NO_SIGNAL
    names = tuple(directives + callouts + weak_ones)
    weak = settings.weak_signal_strength
    if _disguised(raw):
        return Signal(1.0, (*names, "disguised"))
    prose = _ADDRESSES.sub(" ", sentence)  # "attacker@example.com" describes nothing
    describes = any(p.search(prose) for p in _compiled(tuple(settings.describing_patterns)))
    if directives or (callouts and _BEHAVIOUR.search(sentence)):
        return Signal(weak if describes else 1.0, (*names, "describes") if describes else names)
    return Signal(weak, names)


def _terms(raw: str) -> frozenset[str]:
    """Names in a sentence: capitalised words past its first, CamelCase, hosts and versions."""
    tokens = _RAW_TOKEN.findall(_folded(raw))
    out = set()
    for i, t in enumerate(tokens):
        low = t.lower()
        if low in _NOT_TERMS or len(t) < 3 or t.isupper() or t.isdigit():
            continue
        camel = any(c.isupper() for c in t[1:]) and any(c.islower() for c in t)
        host = bool(re.search(r"[a-z][.-][a-z]", low)) and not low.endswith("'s")
        if camel or host or (i > 0 and t[0].isupper()):
            out.add(low)
    return frozenset(out)


def scan_source(text: str | None, settings: GovernanceSettings) -> SourceScan:
    """The signalled sentences of a source text, once per source."""
    if not text:
        return SourceScan()
    parts = [p for p in _SENTENCE_END.split(_folded(text)) if p.strip()]
    flagged = []
    for part in parts:
        signal = sentence_signal(part, settings)
        if signal.strength:
            folded = normalized_for_scan(part)
            flagged.append(FlaggedSentence(folded, frozenset(_WORD.findall(folded)), _terms(part), signal))
    directives = [f for f in flagged if f.signal.strength >= 1.0]
    whole = NO_SIGNAL
    if len(directives) >= 2 and len(directives) >= settings.source_taint_share * len(parts):
        whole = Signal(1.0, ("source_reads_as_instructions",))
    return SourceScan(flagged=tuple(flagged), sentences=len(parts), whole=whole)


def candidate_signal(label: str, definition: str, scan: SourceScan, settings: GovernanceSettings) -> Signal:
    """A candidate's signal: its own text's, and that of every signalled source sentence it was
    drawn from (shares most of its words or its label) or that names what it names."""
    found = [sentence_signal(s, settings) for s in (label, *_SENTENCE_END.split(_folded(definition)))]
    text = normalized_for_scan(f"{label} {definition}")
    words = frozenset(_WORD.findall(normalized_for_scan(definition)))
    label_text = normalized_for_scan(label)
    for f in scan.flagged:
        drawn = bool(words) and len(words & f.words) >= 0.6 * len(words)
        labelled = len(label_text.split()) >= 2 and label_text in f.text
        named = any(re.search(rf"(?<![\w.-]){re.escape(t)}(?![\w-])", text) for t in f.terms)
        if drawn or labelled or named:
            found.append(Signal(f.signal.strength, tuple(f"source_{n}" for n in f.signal.names)))
    found.append(scan.whole)
    strength = max(s.strength for s in found)
    names = sorted({n for s in found for n in s.names})
    return Signal(strength, tuple(names)) if strength else NO_SIGNAL


def candidate_signals(
    candidates: Sequence[tuple[str, str]], source_text: str | None, settings: GovernanceSettings
) -> list[Signal]:
    """``candidate_signal`` for many (label, definition) pairs drawn from one source text."""
    scan = scan_source(source_text, settings)
    return [candidate_signal(label, definition, scan, settings) for label, definition in candidates]


def gate_trust(base_trust: float, signals: list[str], settings: GovernanceSettings, strength: float = 1.0) -> float:
    """The trust the gate compares with its threshold: base trust less the injection penalty,
    scaled by how strongly the candidate reads as instructions to an agent."""
    penalty = settings.injection_penalty * strength if signals else 0.0
    return min(max(base_trust - penalty, 0.0), 1.0)


def composite_trust(
    base_trust: float, corroborations: int, access_count: int, freshness: float, settings: GovernanceSettings
) -> float:
    """S7 at read time: clamp(base + min(0.05·corroborations, 0.15) − 0.10·[access_count ≥ 3 and
    freshness < 0.3], 0, 1). Freshness is the memory's current strength."""
    bonus = min(settings.corroboration_step * max(corroborations, 0), settings.corroboration_cap)
    stale = access_count >= settings.overuse_access_count and freshness < settings.overuse_freshness
    value = base_trust + bonus - (settings.overuse_penalty if stale else 0.0)
    return min(max(value, 0.0), 1.0)
