"""Merge precision (S4 step 7, #41): would a person have merged what the admission merges?

**The pairs** are drawn by a fixed rule from text nobody here wrote and labelled by reading both
sides (``benchmarks/data/merge_pairs.jsonl``: all 467 pairs drawn at 7d6c0e5 with the defaults,
committed before any merge rule was tuned against it; its rows hold a hash of the pair,
``Pair.key``, never its text):

- *documents*: the long description of every installed Python distribution (pinned versions,
  sorted by name; the first ``--docs``), each through the pipeline's own steps (parse, local
  extraction, the one deduplication pass, validation), as if one tenant had uploaded them all;
- *conversations*: LoCoMo (read from ``../shared/datasets``, never copied), each session one
  flush through the conversation extractor, the service's clamp and validation; one
  conversation is one tenant.

Within a tenant, every pair of concepts from two different sources that a merge rule could join:
the same normalized key (``same_key``), one label's initials among the other's acronyms
(``acronym``: "NLS" ↔ "Never log secrets"), or cosine ≥ ``--near`` with the local embedder
(``near_vector``; below the merge threshold too, so that what the threshold keeps apart is
labelled as well). A label says whether the two name the same thing (``same``) and what kind of
pair it is: ``true_restatement``, ``same_name_different``, ``acronym_collision``,
``different_thing`` (close by vector only). The rule the labels follow: *same* when one memory
holding both sides would be right, because both name one referent — a named person, product,
organisation, service, standard, place or work, or one statement restated (a fork's changelog
copying its parent's entries); *different* when a common-noun label names each source's own
instance (a project's "Installation", "Performance", CLI or pull requests; a chat's "Shared
image" or "Hard work"), when letters collide, or when only the vectors are close. The draw holds
no rule: rules against entities are covered by the tests, not by this set yet.

**Not built yet**: the replay of each labelled pair through the real
admission (the first side stored, then the second, in a tenant of its own; ``false_merge_rate``
among pairs labelled different, ``true_merge_kept_rate`` among pairs labelled same). Until then
this module draws and lists the pairs, and writes no report.

It prints the drawn pairs with their text for labelling (terminal only), and their counts.
Run: ``python -m benchmarks.merge_precision [--docs 120] [--conversations 10]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
from contextos.embedding.local import LocalMiniLMEmbedder
from contextos.extraction.local import LocalConceptExtractor
from contextos.extraction.validation import validate
from contextos.normalization import acronyms, initials, norm_key
from contextos.parsing import parse_document
from contextos.services.document_pipeline import deduplicate
from contextos.settings import Settings

from benchmarks.admission_gates import python_docs
from benchmarks.conversation_memories import clamp, flushes
from benchmarks.locomo import DATA, load


@dataclass(frozen=True)
class Side:
    source: str  # the document or session it came from
    label: str
    definition: str
    type: str
    importance: int


@dataclass(frozen=True)
class Pair:
    corpus: str  # "docs" or a LoCoMo sample id
    relation: str  # same_key | acronym | near_vector
    first: Side
    second: Side
    cosine: float

    @property
    def key(self) -> str:
        """What the label file holds of the pair: a hash of both sides' labels, types and sources."""
        text = "|".join(f"{s.source}\x1f{s.label}\x1f{s.type}" for s in (self.first, self.second))
        return hashlib.sha256(f"{self.corpus}|{text}".encode()).hexdigest()[:20]


def document_sides(settings: Settings, extractor: LocalConceptExtractor, max_docs: int) -> list[Side]:
    """The concepts of the first ``max_docs`` installed distributions' long descriptions, as the
    document pipeline extracts them."""
    cfg = settings.extraction
    out: list[Side] = []
    docs = [d for d in python_docs() if d.origin.endswith(":METADATA")][:max_docs]
    for doc in docs:
        parsed = parse_document(doc.text.encode(), filename=doc.filename, declared_type=None)
        concepts = extractor.extract(parsed.text, domain=parsed.domain, known=[])
        concepts, _ = deduplicate(concepts, cfg.generic_modifiers)
        report = validate(
            concepts, min_definition_chars=cfg.min_definition_chars, generic_modifiers=cfg.generic_modifiers
        )
        out += [Side(doc.origin, c.label, c.definition, str(c.type), int(c.importance)) for c in report.accepted]
    return out


def conversation_sides(settings: Settings, extractor: LocalConceptExtractor, conv) -> list[Side]:
    """A LoCoMo conversation's concepts, one flush per session, as the conversation path extracts them."""
    cfg, out = settings.conversation, []
    for session, (turns, _) in enumerate(flushes(conv), start=1):
        concepts = extractor.extract_conversation(turns, min_concepts=cfg.min_concepts, max_concepts=cfg.max_concepts)
        report = validate(
            clamp(concepts, settings),
            min_definition_chars=settings.extraction.min_definition_chars,
            generic_modifiers=settings.extraction.generic_modifiers,
        )
        out += [
            Side(f"{conv.sample_id}-S{session}", c.label, c.definition, str(c.type), int(c.importance))
            for c in report.accepted
            if not getattr(c, "key", None)  # a kept turn joins nothing (merge_plan.is_verbatim_key)
        ]
    return out


def draw(corpus: str, sides: list[Side], embedder, settings: Settings, near: float) -> list[Pair]:
    """Every pair of two sources' concepts a merge rule could join (see the module's text), the
    earlier side first; one pair per (relation, label pair)."""
    if not sides:
        return []
    modifiers = settings.extraction.generic_modifiers
    head = settings.extraction.embedded_definition_chars
    vectors = np.array(embedder.embed([f"{s.label}: {s.definition[:head]}" for s in sides]))
    sims = vectors @ vectors.T
    keys = [norm_key(s.label, modifiers) for s in sides]
    inits = [initials(s.label) for s in sides]
    acrs = [set(acronyms(s.label)) for s in sides]
    pairs: dict[tuple[str, str, str], Pair] = {}
    n = len(sides)
    for i in range(n):
        for j in range(i + 1, n):
            a, b = sides[i], sides[j]
            if a.source == b.source:
                continue
            if keys[i] == keys[j]:
                relation = "same_key"
            elif (inits[i] and inits[i] in acrs[j]) or (inits[j] and inits[j] in acrs[i]):
                relation = "acronym"
            elif sims[i, j] >= near:
                relation = "near_vector"
            else:
                continue
            seen = (relation, *sorted((a.label.lower(), b.label.lower())))
            if seen not in pairs:
                pairs[seen] = Pair(corpus, relation, a, b, round(float(sims[i, j]), 3))
    return list(pairs.values())


def drawn_pairs(settings: Settings, embedder, *, docs: int, conversations: int, near: float) -> list[Pair]:
    extractor = LocalConceptExtractor(
        max_concepts=settings.extraction.local_max_concepts,
        definition_chars=settings.extraction.local_definition_chars,
        generic_modifiers=settings.extraction.generic_modifiers,
    )
    pairs = draw("docs", document_sides(settings, extractor, docs), embedder, settings, near)
    for conv in load(DATA)[:conversations]:
        pairs += draw(conv.sample_id, conversation_sides(settings, extractor, conv), embedder, settings, near)
    return pairs


def listing(pairs: list[Pair]) -> None:
    """The drawn pairs with their text, for reading (terminal only)."""
    for p in pairs:
        print(json.dumps({"key": p.key, "corpus": p.corpus, "relation": p.relation, "cosine": p.cosine}))
        for s in (p.first, p.second):
            print(f"   [{s.type}] {s.label!r} ({s.source}): {' '.join(s.definition.split())[:220]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--near", type=float, default=0.85)
    args = parser.parse_args()
    settings = Settings()
    embedder = LocalMiniLMEmbedder()
    started = time.perf_counter()
    pairs = drawn_pairs(settings, embedder, docs=args.docs, conversations=args.conversations, near=args.near)
    listing(pairs)
    counts = Counter(f"{'docs' if p.corpus == 'docs' else 'conversations'} {p.relation}" for p in pairs)
    print(dict(counts), f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
