"""A deterministic, offline concept extractor: keyphrases and the sentences that define them.

No LLM. Candidate phrases are runs of content words between stopwords and punctuation (the
RAKE idea), scored by how often and how early they occur, whether a sentence defines them
("X is …", "X means …"), and whether a heading names them. Each chosen phrase becomes a
concept whose definition is the sentences that say what it is. Same input, same output.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from contextos.conversations import Turn, TurnConcept
from contextos.extraction.validation import CONNECTOR_WORDS, STRUCTURAL_WORDS
from contextos.models import Concept
from contextos.normalization import norm_key

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could did do does doing don't down during
    each few for from further had has have having he her here hers herself him himself his how i
    if in into is isn't it it's its itself just let me more most much must my myself no nor not
    now of off on once only or other ought our ours ourselves out over own same she should so
    some such than that that's the their theirs them themselves then there these they this those
    through to too under until up upon us very via was we were what when where which while who
    whom why will with within without would you your yours yourself yourselves one two three
    many may might every often usually always never still yet however thus therefore since e.g
    i.e etc new used use using uses like get gets got make makes made way ways thing things lot
    lots first second another able well per whenever wherever whether whose across along among
    around toward towards onto instead rather quite really almost already even ever also though
    although unless
    """.split()
)
# Common verbs (with their inflections) end a phrase: without a POS tagger they are the
# main source of ragged labels ("reinforcement raises memory").
_VERB_STEMS = """
    add allow apply ask become begin bring build call carry catch cause change check choose come disable enable
    handle improve prevent protect switch trigger
    contain create cut decay decide define depend describe design drop expect explain fade fall
    feel find finish follow give go grow happen help hold include increase inject keep know lead
    learn leave let live look lose match mean meet miss move need note offer open pay play
    provide put raise rank reach read receive reduce remain remember report require return run
    save say see seem send serve set show start stay stop store suggest support take talk tell
    tend think try turn understand want watch work write
    """.split()


def _inflections(stem: str) -> set[str]:
    ed = stem + ("d" if stem.endswith("e") else "ed")
    ing = (stem[:-1] if stem.endswith("e") and stem != "see" else stem) + "ing"
    s = stem + ("es" if stem.endswith(("s", "sh", "ch", "x")) else "s")
    return {stem, s, ed, ing}


VERBS = frozenset(form for stem in _VERB_STEMS for form in _inflections(stem)) | frozenset(
    """
    began begun brought built came chose chosen fell felt found gave given gone grew grown held
    kept knew known led left lost made meant met paid ran read said saw seen sent set showed
    shown took taken told thought wrote written
    """.split()
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#'’\-]*|\d+(?:\.\d+)?|[^\sA-Za-z0-9]")
_DEFINING = re.compile(
    r"\b(is|are|was|were|means|refers to|describes|denotes|defines|consists of|stands for|is called|"
    r"are called|known as|helps|lets|allows|enables)\b",
    re.IGNORECASE,
)
_SUBJECT_START = re.compile(r"^\s*((the|a|an|our|this|that|these|those)\s+)?$", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_TYPE_CUES: list[tuple[str, re.Pattern[str]]] = [
    ("decision", re.compile(r"\b(decided|decision|chose|chosen|we will use|agreed|adopt(ed)?|opted)\b", re.I)),
    ("problem", re.compile(r"\b(bug|error|fails?|failure|crash(es)?|exception|issue|problem|broken|timeout)\b", re.I)),
    ("preference", re.compile(r"\b(prefers?|preferred|likes?|dislikes?|favou?rite|rather than|wants?)\b", re.I)),
    ("rule", re.compile(r"\b(must|never|always|should not|shall|required to|policy)\b", re.I)),
    (
        "event",
        re.compile(
            r"\b(on (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|yesterday|last (week|month|year)"
            r"|(19|20)\d\d-\d\d-\d\d|happened|meeting|launched|released)\b",
            re.I,
        ),
    ),
    ("code", re.compile(r"(\bdef |\bclass |\bfunction\b|\(\)|`[^`]+`|\breturns?\b)", re.I)),
]
MAX_DEFINITION_CHARS = 420


@dataclass
class _Phrase:
    words: tuple[str, ...]
    surface: Counter = field(default_factory=Counter)
    count: int = 0
    first_sentence: int = 10**9
    sentences: list[int] = field(default_factory=list)
    defined_in: list[int] = field(default_factory=list)
    in_heading: bool = False


class LocalConceptExtractor:
    """Keyphrases plus their defining sentences; deterministic and dependency-free."""

    model_id = "local:keyphrase-v1"

    def __init__(self, *, max_concepts: int = 12, generic_modifiers: list[str] | None = None) -> None:
        self.max_concepts = max_concepts
        self.generic_modifiers = generic_modifiers or []

    def extract(self, text: str, *, domain: str = "general", known: list[str] | None = None) -> list[Concept]:
        sentences, headings = _sentences(text)
        phrases = self._candidates(sentences, headings)
        known_keys = {norm_key(k, self.generic_modifiers) for k in known or []}
        ranked = sorted(phrases.values(), key=lambda p: (-self._score(p, len(sentences)), p.words))
        chosen: list[_Phrase] = []
        chosen_keys: set[str] = set()
        budget = min(self.max_concepts, max(3, (len(sentences) * 4 + 4) // 5))
        for phrase in ranked:
            label = _label(phrase)
            key = norm_key(label, self.generic_modifiers)
            if key in chosen_keys or key in known_keys:
                continue
            if any(set(phrase.words) < set(c.words) for c in chosen):
                continue  # a fragment of a phrase already chosen
            chosen.append(phrase)
            chosen_keys.add(key)
            if len(chosen) >= budget:
                break
        return [self._concept(p, rank, chosen, sentences) for rank, p in enumerate(chosen)]

    def extract_conversation(
        self, turns: list[Turn], *, known: list[str] | None = None, min_concepts: int = 3, max_concepts: int = 10
    ) -> list[TurnConcept]:
        """The same keyphrase pass over the turns (a rule-based extractor has no notion of a
        minimum: it finds what the log holds), each concept tied to its turns."""
        return extract_turns(self, turns, known=known, max_concepts=max_concepts)

    def _candidates(self, sentences: list[str], headings: set[int]) -> dict[tuple[str, ...], _Phrase]:
        phrases: dict[tuple[str, ...], _Phrase] = {}
        for index, sentence in enumerate(sentences):
            for run in content_runs(sentence):
                for words, surface in _subphrases(run):
                    key = tuple(w.lower() for w in words)
                    phrase = phrases.setdefault(key, _Phrase(words=key))
                    phrase.count += 1
                    phrase.surface[surface] += 1
                    phrase.first_sentence = min(phrase.first_sentence, index)
                    if not phrase.sentences or phrase.sentences[-1] != index:
                        phrase.sentences.append(index)
                    if index in headings:
                        phrase.in_heading = True
                    elif _defines(sentence, surface):
                        phrase.defined_in.append(index)
        kept = {k: p for k, p in phrases.items() if _worth_keeping(p)}
        return _prune_nested(kept)

    @staticmethod
    def _score(p: _Phrase, n_sentences: int) -> float:
        length_bonus = {1: 0.6, 2: 1.3, 3: 1.4, 4: 1.1}.get(len(p.words), 0.8)
        position = 1.0 - 0.5 * (p.first_sentence / max(n_sentences, 1))
        proper = 1.3 if any(s[:1].isupper() for s in p.surface) else 1.0
        acronym = 1.4 if any(s.isupper() and len(s) >= 2 for s in p.surface) else 1.0
        return (
            (len(p.sentences) + 0.5 * p.count) * length_bonus * position * proper * acronym
            + 2.0 * bool(p.defined_in)
            + 1.5 * p.in_heading
        )

    def _concept(self, p: _Phrase, rank: int, chosen: list[_Phrase], sentences: list[str]) -> Concept:
        label = _label(p)
        order = p.defined_in + [i for i in p.sentences if i not in p.defined_in]
        picked: list[str] = []
        for i in order:
            if len(picked) == 2 or len(" ".join(picked)) > MAX_DEFINITION_CHARS:
                break
            candidate = sentences[i].strip().lstrip("#").strip()
            if len(candidate.split()) >= 4 and candidate not in picked:
                picked.append(candidate)
        definition = " ".join(picked)[:MAX_DEFINITION_CHARS].strip()
        related = [_label(other) for other in chosen if other is not p and set(other.sentences) & set(p.sentences)][:5]
        importance = max(3, 9 - rank // 2)
        return Concept(
            label=label,
            definition=definition,
            type=_type_of(label, definition),
            importance=importance,
            related=related,
        )


def _sentences(text: str) -> tuple[list[str], set[int]]:
    sentences: list[str] = []
    headings: set[int] = set()
    for block in re.split(r"\n", text):
        heading = _HEADING.match(block)
        if heading:
            headings.add(len(sentences))
            sentences.append(heading.group(2))
            continue
        for piece in _SENTENCE_SPLIT.split(block):
            piece = piece.strip(" -*>\t")
            if piece:
                sentences.append(piece)
    return sentences, headings


def content_runs(sentence: str) -> list[list[str]]:
    """Maximal runs of content words between stopwords and punctuation."""
    runs: list[list[str]] = []
    current: list[str] = []
    for token in _TOKEN.findall(sentence):
        word = token.strip("'’-")
        lower = word.lower()
        if not word or not word[0].isalnum() or lower in STOPWORDS or lower in VERBS or lower.isdigit():
            if current:
                runs.append(current)
            current = []
            continue
        current.append(word)
    if current:
        runs.append(current)
    return runs


def _subphrases(run: list[str]) -> list[tuple[list[str], str]]:
    """The run itself when short, else every 2-4 word window; single words are kept too."""
    out: list[tuple[list[str], str]] = []
    for size in (1, 2, 3, 4):
        for start in range(0, max(len(run) - size + 1, 0)):
            words = run[start : start + size]
            out.append((words, " ".join(words)))
    return out


def _prune_nested(phrases: dict[tuple[str, ...], _Phrase]) -> dict[tuple[str, ...], _Phrase]:
    """Keep the complete term: drop a fragment that never occurs outside its longer phrase,
    and a long phrase seen once whose shorter core recurs."""
    drop: set[tuple[str, ...]] = set()
    for key, phrase in phrases.items():
        for other_key, other in phrases.items():
            if len(other_key) <= len(key) or not _contains(other_key, key):
                continue
            if other.count >= phrase.count:
                drop.add(key)
            elif (
                other.count == 1 and phrase.count >= 2 and (len(key) >= 2 or not (other.in_heading or other.defined_in))
            ):
                drop.add(other_key)
    return {k: p for k, p in phrases.items() if k not in drop}


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    n = len(shorter)
    return any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


def _defines(sentence: str, surface: str) -> bool:
    head = sentence.find(surface)
    if head < 0 or head > 60:
        return False
    if _SUBJECT_START.match(sentence[:head]):
        return True  # the sentence is about it: "The vector search finds …"
    rest = sentence[head + len(surface) : head + len(surface) + 40]
    return bool(_DEFINING.search(rest)) or rest.lstrip().startswith((":", "—", "-", "("))


def _worth_keeping(p: _Phrase) -> bool:
    words = p.words
    if words[-1] in CONNECTOR_WORDS or words[0] in CONNECTOR_WORDS:
        return False
    if all(w in STRUCTURAL_WORDS for w in words):
        return False
    if len(words) == 1:
        surface = p.surface.most_common(1)[0][0]
        is_acronym = surface.isupper() and 2 <= len(surface) <= 8
        is_name = surface[:1].isupper() and p.count >= 2 and len(surface) > 3
        return (is_acronym or is_name or p.count >= 3) and len(surface) > 2
    proper = all(w[:1].isupper() for w in p.surface.most_common(1)[0][0].split())
    return p.count >= 2 or bool(p.defined_in) or p.in_heading or proper


def _label(p: _Phrase) -> str:
    surface = p.surface.most_common(1)[0][0]
    return surface if any(ch.isupper() for ch in surface[1:]) else surface[:1].upper() + surface[1:]


def _type_of(label: str, definition: str) -> str:
    for memory_type, cue in _TYPE_CUES:
        if cue.search(definition):
            return memory_type
    words = label.split()
    if label.isupper() or any(w[:1].isupper() for w in words[1:]) or (len(words) == 1 and label[:1].isupper()):
        return "entity"
    return "fact"


_SPEAKERS = {
    "user": "The user",
    "assistant": "The assistant",
    "tool": "A tool",
    "system": "The system",
    "third_party": "A third party",
}


def extract_turns(
    extractor: LocalConceptExtractor,
    turns: list[Turn],
    *,
    known: list[str] | None = None,
    max_concepts: int = 10,
) -> list[TurnConcept]:
    """Keyphrases over the whole log, each tied to the turns that mention it.

    A concept's definition is what its speakers said about it, attributed ("The user said: …"),
    so a later reader knows whose preference or claim it is; its turns give its provenance.
    """
    text = "\n".join(t.content for t in turns)
    pass_ = LocalConceptExtractor(max_concepts=max_concepts, generic_modifiers=extractor.generic_modifiers)
    out: list[TurnConcept] = []
    for concept in pass_.extract(text, domain="conversation", known=known):
        needle = concept.label.lower()
        stating = [t for t in turns if needle in t.content.lower()]
        said = [
            f"{_SPEAKERS.get(t.role.value, 'Someone')} said: {sentence.strip()}"
            for t in stating
            for sentence in _sentences(t.content)[0]
            if needle in sentence.lower() and len(sentence.split()) >= 3
        ]
        definition = " ".join(said[:2])[:MAX_DEFINITION_CHARS].strip() or concept.definition
        out.append(
            TurnConcept(
                label=concept.label,
                definition=definition,
                type=_type_of(concept.label, definition),
                importance=concept.importance,
                related=concept.related,
                turns=[t.seq for t in stating],
            )
        )
    return (_first_person_statements(turns, out) + out)[:max_concepts]


# "I prefer dark mode…", "we decided to use Postgres…": said once, yet what a memory is for.
_STATEMENT = re.compile(
    r"\b(?:i|we)(?:'d| would| really| always| usually| generally| now)?\s+"
    r"(?P<verb>prefer|like|love|hate|dislike|avoid|want|need|use|(?:decided|chose|agreed|switched|moved)"
    r"(?:\s+(?:to\s+use|on|for|to))?)\s+(?P<rest>[^.!?;\n]+)",
    re.IGNORECASE,
)
_DECISION_VERBS = ("decided", "chose", "agreed", "switched", "moved")
MAX_STATEMENT_LABEL_WORDS = 4


def _first_person_statements(turns: list[Turn], found: list[TurnConcept]) -> list[TurnConcept]:
    """Preferences and decisions the user states in the first person, even once (a keyphrase pass
    keeps only what recurs): the object of the statement becomes the label, the sentence the
    definition. Only the user's own turns: an assistant or a tool saying "I prefer" is not the user."""
    taken = {c.label.lower() for c in found}
    out: list[TurnConcept] = []
    for turn in turns:
        if turn.role.value != "user":
            continue
        for sentence in _sentences(turn.content)[0]:
            match = _STATEMENT.search(sentence)
            if not match:
                continue
            runs = content_runs(match["rest"])
            if not runs:
                continue
            label = " ".join(runs[0][:MAX_STATEMENT_LABEL_WORDS])
            if len(label) < 3 or label.lower() in taken:
                continue
            taken.add(label.lower())
            decision = match["verb"].lower().startswith(_DECISION_VERBS)
            out.append(
                TurnConcept(
                    label=label,
                    definition=f"The user said: {sentence.strip()}"[:MAX_DEFINITION_CHARS],
                    type="decision" if decision else "preference",
                    importance=7,
                    related=[],
                    turns=[turn.seq],
                )
            )
    return out
