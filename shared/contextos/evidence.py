"""Which of a memory's source excerpts are evidence for a query (S6.6's L2 tier).

A hit's excerpts are what its sources said; the block shows those that share the query's words,
best first, instead of the newest. Words are compared up to inflection (Snowball stems) and
weighed by how rare they are among the excerpts at hand, so a word every excerpt holds counts
for little. Pure: no database, no model.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from functools import lru_cache

import Stemmer

from contextos.extraction.lexical import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")  # "srsly.write_jsonl" holds the words "write" and "jsonl"


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def stems(text: str) -> set[str]:
    """The distinct stems of a text's content words."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]
    return set(_stemmer().stemWords(words))


def matching_excerpts(query: str, excerpts: Mapping[Hashable, Sequence[str]], k: int) -> dict[Hashable, list[str]]:
    """Per memory, at most ``k`` of its excerpts that share a content word with ``query``, the
    best match first (the sum of the shared words' rarity among all these excerpts; ties keep
    the given order). A memory none of whose excerpts match gets none."""
    wanted = stems(query)
    if not wanted or k <= 0:
        return {}
    held = {key: [stems(e) & wanted for e in texts] for key, texts in excerpts.items()}
    df = Counter(t for matches in held.values() for m in matches for t in m)
    n = sum(len(matches) for matches in held.values())
    idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
    out: dict[Hashable, list[str]] = {}
    for key, texts in excerpts.items():
        scored = [(sum(idf[t] for t in m), i) for i, m in enumerate(held[key]) if m]
        best = sorted(scored, key=lambda si: (-si[0], si[1]))[:k]
        if best:
            out[key] = [texts[i] for _, i in best]
    return out
