"""A document's passages kept verbatim (S4, S8): what was written stays findable, beside the
concepts extracted from it, as what a conversation's turns are to its concepts.

Pure: the passages of a parsed text and their keys. The ingestion pipeline adds them to the
document's concepts; admission embeds, keys and stores them like any concept, and the rules for
what is verbatim (``normalization.is_verbatim_key``: never merged by likeness, never judged, only
linked as updated) apply to them as to turns.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from contextos.models import Concept
from contextos.normalization import VERBATIM_KEY_PREFIX

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def passage_key(text: str) -> str:
    """A passage's merge key: its words (the same passage in two documents is one memory, each
    occurrence with its own document)."""
    said = "document\n" + " ".join(text.lower().split())
    return f"{VERBATIM_KEY_PREFIX}{hashlib.blake2b(said.encode(), digest_size=12).hexdigest()}"


def passages(text: str, *, chars: int) -> list[str]:
    """The text's paragraphs, consecutive ones joined up to about ``chars`` characters (a longer
    paragraph stands alone), whitespace collapsed."""
    out: list[str] = []
    current = ""
    for paragraph in (" ".join(p.split()) for p in _PARAGRAPH_BREAK.split(text)):
        if not paragraph:
            continue
        if current and len(current) + 1 + len(paragraph) > chars:
            out.append(current)
            current = ""
        current = f"{current} {paragraph}".strip()
    if current:
        out.append(current)
    return out


def document_header(name: str, concepts: Sequence[Concept], topics: int = 3) -> str:
    """The context each passage carries as searchable text: its document and what it is about
    (its most important concepts)."""
    named = [c.label for c in sorted(concepts, key=lambda c: -int(c.importance))][:topics]
    return f"Document {name}" + (f", about {', '.join(named)}" if named else "")


def keep_every_passage(
    text: str, name: str, concepts: Sequence[Concept], *, chars: int = 600, min_words: int = 5
) -> list[Concept]:
    """Each passage of at least ``min_words`` words as a memory of its own: label ``Passage <n> of
    <document>``, type fact, importance 5, the passage's words as its definition, the document's
    header as its excerpt, keyed by its words (``passage_key``)."""
    slug = "-".join(re.sub(r"[^0-9A-Za-z]+", " ", name).split())[:40].strip("-") or "document"
    header = document_header(name, concepts)
    kept = [p for p in passages(text, chars=chars) if len(p.split()) >= min_words]
    return [
        Concept(
            label=f"Passage {n} of {slug}",
            definition=p,
            type="fact",
            importance=5,
            excerpts=[header],
            key=passage_key(p),
        )
        for n, p in enumerate(kept, start=1)
    ]
