"""Near-duplicate merges on real text, and the ones the label guard refuses (S4 step 7).

A candidate merges into the nearest memory of its type at cosine >= ``merge.near_duplicate_cosine``
only when the two labels may name the same thing: they share a word and name the same identifiers
(``merge_plan.may_name_the_same``). This counts, over LoCoMo conversations (one conversation = one
tenant), the same-type pairs at or above the threshold with the local embedder, and how many of
them the guard keeps apart:

- ``extracted``: the memories the conversation path stores: the local extractor over each session
  (one flush), the service's clamp and S4 validation (as ``benchmarks.conversation_memories``);
- ``per_turn``: one memory per turn as an agent would save what was said, label = its first 40
  characters (as the stale-distractor set writes through POST /v1/memories).

Pairs, not merges: an admission merges a candidate into one memory, so the pair counts bound the
merges from above. ``--show`` prints every near pair's labels and verdict for reading (dataset text: printed,
never written to the report). Run: ``python -m benchmarks.merge_labels [--conversations 3]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from contextos.embedding.local import LocalMiniLMEmbedder
from contextos.extraction.local import LocalConceptExtractor
from contextos.extraction.validation import validate
from contextos.merge_plan import may_name_the_same
from contextos.normalization import norm_key
from contextos.settings import Settings

from benchmarks.conversation_memories import clamp, flushes
from benchmarks.locomo import DATA, load
from benchmarks.report import write_report

Memory = tuple[str, str, str]  # label, definition, type


def near_pairs(memories: list[Memory], vectors: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Same-type pairs (i < j) at or above the threshold."""
    sims = vectors @ vectors.T
    types = np.array([m[2] for m in memories])
    same = types[:, None] == types[None, :]
    i, j = np.nonzero(np.triu((sims >= threshold) & same, k=1))
    return list(zip(i.tolist(), j.tolist(), strict=True))


def tally(
    name: str, memories: list[Memory], embedder: LocalMiniLMEmbedder, settings: Settings, show: bool
) -> dict[str, int]:
    modifiers = settings.extraction.generic_modifiers
    vectors = np.array(embedder.embed([f"{label}: {definition}" for label, definition, _ in memories]))
    pairs = near_pairs(memories, vectors, settings.merge.near_duplicate_cosine)
    keys = [norm_key(label, modifiers) for label, _, _ in memories]
    refused = [(i, j) for i, j in pairs if keys[i] != keys[j] and not may_name_the_same(keys[i], keys[j])]
    if show:
        for i, j in pairs:
            verdict = "same key" if keys[i] == keys[j] else "refused" if (i, j) in refused else "merges"
            print(f"[{name}] {verdict}: {memories[i][0]!r} <> {memories[j][0]!r}")
    return {
        "memories": len(memories),
        "near_pairs": len(pairs),
        "same_key_pairs": sum(keys[i] == keys[j] for i, j in pairs),
        "refused_pairs": len(refused),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print every near pair's labels and verdict")
    args = parser.parse_args()
    settings = Settings()
    embedder = LocalMiniLMEmbedder()
    extractor = LocalConceptExtractor(generic_modifiers=settings.extraction.generic_modifiers)
    cfg = settings.conversation
    totals: dict[str, dict[str, int]] = {"extracted": {}, "per_turn": {}}
    started = time.perf_counter()
    conversations = load(DATA)[: args.conversations]
    for conv in conversations:
        extracted: list[Memory] = []
        for turns, _ in flushes(conv):
            concepts = extractor.extract_conversation(
                turns, min_concepts=cfg.min_concepts, max_concepts=cfg.max_concepts
            )
            report = validate(
                clamp(concepts, settings),
                min_definition_chars=settings.extraction.min_definition_chars,
                generic_modifiers=settings.extraction.generic_modifiers,
            )
            extracted += [(c.label, c.definition, str(c.type)) for c in report.accepted]
        said = [t.text.split("] ", 1)[-1].split(": ", 1)[-1] for t in conv.turns]
        per_turn = [(text[:40], text, "fact") for text in said]
        for name, memories in (("extracted", extracted), ("per_turn", per_turn)):
            for key, value in tally(name, memories, embedder, settings, args.show).items():
                totals[name][key] = totals[name].get(key, 0) + value
    figures: dict[str, float | int | str] = {"conversations": len(conversations)}
    for name, counts in totals.items():
        figures |= {f"{name}_{key}": value for key, value in counts.items()}
        differing = counts["near_pairs"] - counts["same_key_pairs"]
        figures[f"{name}_refused_share_of_near_duplicate_pairs"] = round(counts["refused_pairs"] / max(differing, 1), 3)
    figures["threshold"] = settings.merge.near_duplicate_cosine
    figures["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(figures)
    path = write_report(
        "merge_labels",
        figures,
        title="Near-duplicate merges on real text and the label guard",
        notes=[
            "One LoCoMo conversation = one tenant. Same-type pairs at cosine >= the threshold (local MiniLM,"
            " 'label: definition'); same_key_pairs merge by key whatever the guard says.",
            "refused_pairs: pairs of different keys the guard keeps apart (the labels share no word, or name"
            " other identifiers: words holding a digit); the share is of the near-duplicate pairs of different"
            " keys. Before the guard every near pair merged.",
            "extracted: the conversation path's memories (local extractor per session, clamp, validation);"
            " per_turn: one memory per turn, label = its first 40 characters.",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
