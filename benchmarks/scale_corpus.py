"""Tenants made of real text: Zipf-distributed sizes, each tenant's memories drawn from the embedded
passage pool (`benchmarks.real_text`), in the retrieval benchmark's corpus shape (documents of
15-25 memories, related edges, a few memories taught by two documents), so they load through the
same binary COPY (`benchmarks.retrieval.load`). Every memory's text and vector are real: its
definition is a passage, its vector that passage's MiniLM embedding, its label the passage's
section title (made unique within the tenant, as norm keys must be)."""

from __future__ import annotations

import random

import numpy as np
from contextos.normalization import norm_key

from benchmarks.real_text import Pool
from benchmarks.retrieval import TYPES, Corpus


def zipf_sizes(tenants: int, memories: int, *, largest_share: float, smallest: int = 20) -> list[int]:
    """``tenants`` sizes summing to ``memories``, size ∝ 1/rank^s with s chosen so the largest holds
    ``largest_share`` of the rows; none below ``smallest``. Largest first."""
    ranks = np.arange(1, tenants + 1, dtype=float)
    low, high = 0.0, 4.0
    for _ in range(60):  # the largest's share grows with s
        s = (low + high) / 2
        weights = ranks**-s
        if weights[0] / weights.sum() < largest_share:
            low = s
        else:
            high = s
    sizes = np.maximum(smallest, np.floor(memories * weights / weights.sum())).astype(int)
    sizes[0] += memories - int(sizes.sum())  # rounding goes to the largest
    return [int(x) for x in sizes]


def size_class(size: int) -> str:
    """The report's classes (SPEC S16): under 1k, 1k-20k, 20k-100k, over 100k memories."""
    if size < 1_000:
        return "lt1k"
    if size < 20_000:
        return "1k_20k"
    if size <= 100_000:
        return "20k_100k"
    return "gt100k"


def real_corpus(tenant: str, picks: np.ndarray, pool: Pool, generic: list[str], seed: int) -> Corpus:
    """A tenant whose memories are the pool's passages ``picks`` (distinct), grouped into documents
    of 15-25 consecutive passages of one source (the pool interleaves its sources)."""
    rng = random.Random(seed)
    ordered = sorted(int(i) for i in picks)
    by_source: dict[str, list[int]] = {}
    for i in ordered:
        by_source.setdefault(pool.passages[i].source, []).append(i)
    corpus = Corpus(tenant)
    keys: set[str] = set()
    doc = 0
    for source, members in by_source.items():
        start = 0
        while start < len(members):
            size = rng.randint(15, 25)
            chunk = members[start : start + size]
            start += size
            corpus.doc_names.append(f"{source}-{doc}.txt")
            local: list[int] = []
            for passage_no in chunk:
                passage = pool.passages[passage_no]
                label = passage.label[:120] or " ".join(passage.text.split()[:6])
                key = norm_key(label, generic)
                if key in keys or not key:
                    label = f"{label} — {' '.join(passage.text.split()[:8])}"[:200]
                    key = norm_key(label, generic)
                    n = 2
                    while key in keys or not key:
                        label, n = f"{label} ({n})", n + 1
                        key = norm_key(label, generic)
                keys.add(key)
                i = len(corpus)
                corpus.labels.append(label)
                corpus.definitions.append(passage.text)
                corpus.types.append(rng.choice(TYPES))
                corpus.importance.append(min(10, max(1, int(rng.gauss(5.5, 2)))))
                corpus.protos.append(passage_no)  # the pool row its vector is
                corpus.mix.append(passage_no)
                corpus.doc_of.append(doc)
                local.append(i)
            for j, i in enumerate(local):  # related edges: a chain and a random sibling
                if j:
                    corpus.edges.add((i, local[j - 1]))
                if rng.random() < 0.5:
                    other = rng.choice(local)
                    if other != i:
                        corpus.edges.add((i, other))
            doc += 1
    for i in range(len(corpus)):
        if rng.random() < 0.05:
            corpus.extra_doc[i] = rng.randrange(doc)
    return corpus


def real_vectors(corpus: Corpus, pool: Pool) -> np.ndarray:
    return pool.vectors[np.asarray(corpus.protos, dtype=int)]


def real_queries(corpus: Corpus, n: int, seed: int) -> list[str]:
    """What an agent would ask of this tenant: a memory's label, a fragment of its text, or a
    question around one."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        i = rng.randrange(len(corpus))
        words = corpus.definitions[i].split()
        start = rng.randrange(max(1, len(words) - 6))
        fragment = " ".join(words[start : start + rng.randint(4, 8)])
        out.append(
            rng.choice(
                [
                    corpus.labels[i],
                    fragment,
                    f"how does {fragment} work?",
                    f"what did the docs say about {corpus.labels[i]}",
                ]
            )
        )
    return out
