"""Conversation extraction on LoCoMo (S8): concepts per flush, and what the extracted memories keep.

Each LoCoMo session is one flush (a session ends, the buffer is flushed). The flush goes through
what the conversation function runs before the store: the local extractor over the whole log
(3-10 concepts, provenance by speaker; the first speaker is the user, the second the assistant),
the service's clamp to ``max_concepts``, and S4's validation. Reported:

- concepts per flush (accepted after validation): min / median / max, and the share of flushes
  with 3-10;
- evidence recall of the extracted memories: per question, BM25 (bm25s, stemmed) over the
  conversation's extracted memories (label and definition); the top k memories' source turns
  (the turns each concept cites) against the question's evidence turns, R@5/10/20 — beside the
  same BM25 over one memory per turn (the per-turn figure), categories 1-4;
- the evidence coverage: the share of evidence turns that any extracted memory cites (the
  ceiling of that recall).

Report only, no target. Run: ``python -m benchmarks.conversation_memories [--conversations 10]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from contextos.conversations import Role, Turn, TurnConcept
from contextos.extraction.local import LocalConceptExtractor
from contextos.extraction.validation import rejection_reason, validate
from contextos.models import Provenance
from contextos.settings import Settings

from benchmarks.locomo import DATA, KS, Conversation, load
from benchmarks.report import write_report


def flushes(conv: Conversation) -> list[tuple[list[Turn], dict[int, str]]]:
    """One flush per session: its turns as the extractor reads them, and seq → LoCoMo dia_id."""
    speakers = list(dict.fromkeys(t.speaker for t in conv.turns))
    out: list[tuple[list[Turn], dict[int, str]]] = []
    for session in sorted({t.session for t in conv.turns}):
        turns, ids = [], {}
        for t in (t for t in conv.turns if t.session == session):
            user = t.speaker == speakers[0]
            seq = len(turns) + 1
            # The memory text is "[date] speaker: text"; the extractor reads what was said.
            content = t.text.split("] ", 1)[-1].split(": ", 1)[-1]
            turns.append(
                Turn(
                    seq=seq,
                    role=Role.user if user else Role.assistant,
                    content=content,
                    provenance=Provenance.user_turn if user else Provenance.agent_turn,
                )
            )
            ids[seq] = t.dia_id
        out.append((turns, ids))
    return out


def clamp(concepts: list[TurnConcept], settings: Settings) -> list[TurnConcept]:
    """The conversation service's clamp (acceptable ones first, then the most important)."""
    min_chars = settings.extraction.min_definition_chars
    ranked = sorted(
        concepts,
        key=lambda c: (rejection_reason(c, min_definition_chars=min_chars) is not None, -int(c.importance)),
    )
    return ranked[: settings.conversation.max_concepts]


class Bm25:
    def __init__(self, texts: list[str]) -> None:
        import bm25s
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")
        self.n = len(texts)
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False))

    def search(self, query: str, k: int) -> list[int]:
        import bm25s

        ids, _ = self.retriever.retrieve(
            bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False),
            k=min(k, self.n),
            show_progress=False,
        )
        return [int(i) for i in ids[0]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args()

    settings = Settings()
    cfg = settings.conversation
    extractor = LocalConceptExtractor(generic_modifiers=settings.extraction.generic_modifiers)
    conversations = load(DATA)[: args.conversations]
    per_flush: list[int] = []
    extracted: list[int] = []
    recall_mem = {k: [] for k in KS}
    recall_turn = {k: [] for k in KS}
    covered = total_evidence = 0
    sources_per_memory: list[int] = []
    started = time.perf_counter()
    for conv in conversations:
        memories: list[tuple[str, set[str]]] = []
        for turns, ids in flushes(conv):
            concepts = extractor.extract_conversation(
                turns, min_concepts=cfg.min_concepts, max_concepts=cfg.max_concepts
            )
            extracted.append(len(concepts))
            report = validate(
                clamp(concepts, settings),
                min_definition_chars=settings.extraction.min_definition_chars,
                generic_modifiers=settings.extraction.generic_modifiers,
            )
            per_flush.append(len(report.accepted))
            for c in report.accepted:
                cited = {ids[s] for s in getattr(c, "turns", []) if s in ids}
                memories.append((f"{c.label}: {c.definition}", cited))
                sources_per_memory.append(len(cited))
        cited_anywhere = set().union(*(m[1] for m in memories)) if memories else set()
        by_memory = Bm25([m[0] for m in memories]) if memories else None
        by_turn = Bm25([t.text for t in conv.turns])
        for q in conv.questions:
            evidence = set(q.evidence)
            total_evidence += len(evidence)
            covered += len(evidence & cited_anywhere)
            top_m = by_memory.search(q.question, max(KS)) if by_memory else []
            top_t = by_turn.search(q.question, max(KS))
            for k in KS:
                found = set().union(*(memories[i][1] for i in top_m[:k])) if top_m else set()
                recall_mem[k].append(len(found & evidence) / len(evidence))
                recall_turn[k].append(len({conv.turns[i].dia_id for i in top_t[:k]} & evidence) / len(evidence))
    elapsed = time.perf_counter() - started

    questions = len(recall_turn[KS[0]])
    figures = {
        "conversations": len(conversations),
        "flushes": len(per_flush),
        "questions": questions,
        "concepts_per_flush_min": min(per_flush),
        "concepts_per_flush_median": statistics.median(per_flush),
        "concepts_per_flush_max": max(per_flush),
        "flushes_with_3_to_10": round(sum(3 <= n <= 10 for n in per_flush) / len(per_flush), 3),
        "extracted_per_flush_mean": round(statistics.mean(extracted), 2),
        "source_turns_per_memory_mean": round(statistics.mean(sources_per_memory), 2),
        "evidence_cited_by_extracted_memories": round(covered / max(total_evidence, 1), 3),
        **{f"extracted_memories_recall_at_{k}": round(100 * statistics.mean(recall_mem[k]), 1) for k in KS},
        **{f"per_turn_recall_at_{k}": round(100 * statistics.mean(recall_turn[k]), 1) for k in KS},
        "extraction_s": round(elapsed, 1),
        "concepts_per_flush": per_flush,
    }
    print({k: v for k, v in figures.items() if not isinstance(v, list)})
    path = write_report(
        "conversation_memories",
        figures,
        title="Conversation extraction on LoCoMo: concepts per flush and evidence recall",
        notes=[
            "One flush per LoCoMo session; the local spaCy extractor, the service's clamp and S4 validation.",
            "Recall (categories 1-4, percent): BM25 over the conversation's extracted memories, a question's"
            " evidence turn counts when a top-k memory cites it; beside BM25 over one memory per turn.",
            "The two are not equal-token: a memory cites several turns and is longer than one turn.",
            "Report only (no target yet).",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
