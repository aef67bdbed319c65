"""Local embedding throughput: batched (the ingest path) against one text at a time (the baseline).

Run: ``python -m benchmarks.embedding [--texts 512]``. Both are measured in this run on
the same texts, so the ratio holds whatever the machine.
"""

from __future__ import annotations

import argparse
import time

from contextos.embedding.local import LocalMiniLMEmbedder

from benchmarks.report import write_report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=512)
    args = parser.parse_args()
    texts = [
        f"Concept {i}: memory item {i % 97} explains why decay rate {i % 13} matters for retrieval in context {i}."
        for i in range(args.texts)
    ]
    embedder = LocalMiniLMEmbedder()
    embedder.embed(texts[:32])  # warm up
    started = time.perf_counter()
    embedder.embed(texts)
    batched_s = time.perf_counter() - started
    single = texts[: max(64, args.texts // 4)]
    started = time.perf_counter()
    for text in single:
        embedder.embed([text])
    single_s = time.perf_counter() - started
    batched_rate = len(texts) / batched_s
    single_rate = len(single) / single_s
    figures = {
        "batched_texts_per_s": round(batched_rate, 1),
        "single_texts_per_s": round(single_rate, 1),
        "batched_over_single": round(batched_rate / single_rate, 2),
        "texts": len(texts),
    }
    path = write_report(
        "embedding",
        figures,
        title="Local embedder throughput (all-MiniLM-L6-v2 int8 ONNX)",
        notes=["Baseline: the same model called one text at a time, measured in the same run."],
    )
    print(f"batched {batched_rate:.0f}/s vs one-at-a-time {single_rate:.0f}/s: {batched_rate / single_rate:.2f}x")
    print(f"report: {path}")


if __name__ == "__main__":
    main()
