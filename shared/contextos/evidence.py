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

from contextos.stopwords import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")  # "srsly.write_jsonl" holds the words "write" and "jsonl"


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def stems(text: str) -> set[str]:
    """The distinct stems of a text's content words."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]
    return set(_stemmer().stemWords(words))


def stem_key(text: str) -> str:
    """`stems` as stored beside an excerpt (migration 0031): sorted, space-separated."""
    return " ".join(sorted(stems(text)))


def matching_excerpts(
    query: str,
    excerpts: Mapping[Hashable, Sequence[str]],
    k: int,
    stored: Mapping[Hashable, Sequence[str | None]] | None = None,
) -> dict[Hashable, list[str]]:
    """Per memory, at most ``k`` of its excerpts that share a content word with ``query``, the
    best match first (the sum of the shared words' rarity among all these excerpts; ties keep
    the given order). A memory none of whose excerpts match gets none. ``stored`` holds, per
    memory and in the same order, each excerpt's `stem_key` from the write path (None where a
    row predates it: that excerpt is stemmed here)."""
    wanted = stems(query)
    if not wanted or k <= 0:
        return {}
    stored = stored or {}
    held = {key: _matches(texts, stored.get(key), wanted) for key, texts in excerpts.items()}
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


def _matches(texts: Sequence[str], keys: Sequence[str | None] | None, wanted: set[str]) -> list[set[str]]:
    """Each excerpt's stems that the query holds, from the stored form when there is one."""
    if keys is None or len(keys) != len(texts):
        return [stems(e) & wanted for e in texts]
    return [
        wanted.intersection(key.split()) if key is not None else stems(e) & wanted
        for e, key in zip(texts, keys, strict=True)
    ]
