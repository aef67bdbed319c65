"""The read path's L2 excerpt matching (S6.6) on realistic candidates: stemming every candidate's
excerpts per query (as before migration 0031) against comparing the stems stored at write time.

Candidates: for each question of ``benchmarks/data/doc_qa_questions.jsonl``, the 320 passages of the
doc-QA documents (``benchmarks/data/doc_qa_manifest.json``, ~360-character passages as the local
extractor writes them) that BM25 ranks highest for it, as 20 chosen memories of 16 excerpts each
(the read path's ``max_memories`` and ``l2_excerpt_pool``), each excerpt cut to ``l2_excerpt_chars``
as the candidate pool reads it. Both variants run on the same candidates in the same process and
must choose the same excerpts. Reported: per query wall and CPU time, p50/p95, and the ratio.

Run: ``python -m benchmarks.excerpt_matching``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.evidence import matching_excerpts, stem_key
from contextos.parsing import parse_document
from contextos.settings import Settings

from benchmarks.doc_qa import DATA, ChunkRag, chunks_of, load_documents
from benchmarks.report import write_report

ROUNDS = 5


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    cfg = Settings().retrieval
    docs = load_documents(DATA / "doc_qa_manifest.json")
    passages = [
        p for d in docs for p in chunks_of(parse_document(d.data, filename=d.filename, declared_type=None).text, 360)
    ]
    questions = [json.loads(line)["q"] for line in (DATA / "doc_qa_questions.jsonl").read_text().splitlines() if line]
    rag = ChunkRag(passages)
    memories, per_memory = cfg.max_memories, cfg.l2_excerpt_pool
    cases = []
    for q in questions:
        import bm25s

        ids, _ = rag.retriever.retrieve(
            bm25s.tokenize([q], stopwords="en", stemmer=rag.stemmer, show_progress=False),
            k=min(memories * per_memory, len(passages)),
            show_progress=False,
        )
        chosen = [passages[int(i)][: cfg.l2_excerpt_chars] for i in ids[0]]
        excerpts = {m: chosen[m * per_memory : (m + 1) * per_memory] for m in range(memories)}
        stored = {m: [stem_key(e) for e in texts] for m, texts in excerpts.items()}  # the write path's work
        cases.append((q, excerpts, stored))

    timings: dict[str, dict[str, list[float]]] = {v: {"wall": [], "cpu": []} for v in ("stem_at_read", "stored")}
    for _ in range(ROUNDS):
        for q, excerpts, stored in cases:
            for variant, arg in (("stem_at_read", None), ("stored", stored)):
                w, c = time.perf_counter(), time.process_time()
                matching_excerpts(q, excerpts, cfg.l2_excerpts, arg)
                timings[variant]["cpu"].append((time.process_time() - c) * 1000)
                timings[variant]["wall"].append((time.perf_counter() - w) * 1000)
    same = all(
        matching_excerpts(q, e, cfg.l2_excerpts) == matching_excerpts(q, e, cfg.l2_excerpts, s) for q, e, s in cases
    )
    figures: dict = {"queries": len(cases), "memories_per_query": memories, "excerpts_per_memory": per_memory}
    for variant, t in timings.items():
        for kind in ("wall", "cpu"):
            figures[f"{variant}_{kind}_p50_ms"] = round(statistics.median(t[kind]), 3)
            figures[f"{variant}_{kind}_p95_ms"] = round(percentile(t[kind], 0.95), 3)
    figures["stored_over_stem_at_read_wall_p50"] = round(
        figures["stored_wall_p50_ms"] / figures["stem_at_read_wall_p50_ms"], 3
    )
    figures["stored_over_stem_at_read_cpu_p50"] = round(
        figures["stored_cpu_p50_ms"] / figures["stem_at_read_cpu_p50_ms"], 3
    )
    figures["same_excerpts_chosen"] = same
    figures["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(json.dumps(figures, indent=1))
    write_report(
        "excerpt_matching",
        figures,
        title="L2 excerpt matching: stems stored at write time vs stemmed per query",
        notes=[
            f"Per query: {memories} chosen memories x {per_memory} excerpts (the read path's max_memories and"
            " l2_excerpt_pool), the doc-QA passages BM25 ranks highest for the question, cut to l2_excerpt_chars.",
            "stem_at_read: evidence.matching_excerpts stems every excerpt (the read path before migration 0031);"
            " stored: it compares the stems the write path stored (memory_items.excerpt_stems).",
            f"{ROUNDS} rounds over the {len(cases)} questions; both variants interleaved in one process.",
        ],
    )


if __name__ == "__main__":
    main()
