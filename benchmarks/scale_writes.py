"""One tenant's writes on two workers (SPEC S16): does a busy tenant's ingest use a second worker?

Real-text documents (20 pre-embedded concepts each, drawn from the cached passage pool of
`benchmarks.real_text`, labels as the sources titled them, so repeated titles really merge) go
through the store path (`AdmissionStore.store_concepts`: merge probes, upserts, items, edges,
counts) in three shapes, each round in a different order:

- ``one``: one worker on tenant A;
- ``two_one``: two workers on tenant A at once;
- ``two_two``: one worker on tenant A and one on tenant B at once.

Each worker is a process of its own with its own connection pool (as two Lambdas would be), kept
for the whole run; both tenants are seeded first through the same path so the merge lookups have
memories to probe. A shape's throughput is its documents over the wall time from the first worker's
first admission to the last worker's last (the embedder is not measured: the vectors are the
pool's). The embedded database lives under ``--data-dir`` and is recreated every run.

Run: ``.venv/bin/python -m benchmarks.scale_writes`` (about 2 minutes on a quiet machine). Writes
``benchmarks/reports/scale_writes.json``/``.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.decay import decay_rate
from contextos.models import BASE_TRUST, MemoryCandidate, Provenance
from contextos.normalization import norm_key
from contextos.settings import Settings
from contextos.sources import DocumentSource
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.migrate import migrate
from contextos.store.stores import Stores

from benchmarks.real_text import Pool
from benchmarks.real_text import pool as passage_pool
from benchmarks.report import write_report
from benchmarks.retrieval import DIM
from tests.memory_writer import new_document

SHAPES = ("one", "two_one", "two_two")
CONCEPTS_PER_DOCUMENT = 20


@dataclass(frozen=True)
class Run:
    """What one worker did in one shape: its wall-clock span and what the store reported."""

    started: float
    ended: float
    documents: int
    created: int
    merged: int


_stores: Stores | None = None


def _open(url: str) -> None:
    """A worker's own connection pool (each worker process, like each Lambda, has its own)."""
    global _stores
    settings = Settings()
    _stores = Stores.over(Database(url, get_dialect("postgres"), max_size=2), settings.decay, settings.merge)


def _admit(tenant: str, documents: Sequence[Sequence[MemoryCandidate]]) -> Run:
    """Admit ``documents`` into ``tenant`` one at a time, as an ingest worker does."""
    assert _stores is not None
    ids = [new_document(_stores, tenant) for _ in documents]
    created = merged = 0
    started = time.time()
    for document_id, candidates in zip(ids, documents, strict=True):
        source = DocumentSource(
            document_id=document_id,
            provenance=Provenance.user_upload,
            source_type="text",
            domain="general",
            counts={},
            raw_text="x",
        )
        result = _stores.admission.store_concepts(tenant, candidates, source, embedder_id="bench")
        created += result.created
        merged += result.merged
    return Run(started, time.time(), len(documents), created, merged)


def documents_from_pool(
    pool: Pool, count: int, first: int, settings: Settings
) -> tuple[list[list[MemoryCandidate]], int]:
    """``count`` documents of pool passages from index ``first`` on; returns them and the next index."""
    generic = settings.extraction.generic_modifiers
    documents = []
    at = first
    for _ in range(count):
        seen: set[str] = set()
        candidates = []
        for p, vector in zip(
            pool.passages[at : at + CONCEPTS_PER_DOCUMENT], pool.vectors[at : at + CONCEPTS_PER_DOCUMENT], strict=True
        ):
            label = p.label[:100]
            key = norm_key(label, generic)
            if not key or key in seen:
                continue
            seen.add(key)
            candidates.append(
                MemoryCandidate(
                    norm_key=key,
                    label=label,
                    definition=p.text,
                    type="fact",
                    importance=5,
                    embedding=vector.tolist(),
                    decay_rate=decay_rate(5, "fact", settings.decay),
                    provenance=Provenance.user_upload,
                    base_trust=BASE_TRUST[Provenance.user_upload],
                )
            )
        documents.append(candidates)
        at += CONCEPTS_PER_DOCUMENT
    return documents, at


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=Path("/work/cache/scale-writes-db"))
    parser.add_argument("--seed-documents", type=int, default=60, help="documents per tenant before timing")
    parser.add_argument("--documents", type=int, default=12, help="documents per worker per shape per round")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    wall = time.perf_counter()
    settings = Settings()
    if args.data_dir.exists():
        shutil.rmtree(args.data_dir)  # every run from an empty database: the tenants' sizes are the run's own
    args.data_dir.mkdir(parents=True)
    url = embedded_database_url(args.data_dir)
    migrate(url, get_dialect("postgres"), DIM, "bench")
    tenant_a, tenant_b = f"writes-a-{uuid.uuid4().hex[:6]}", f"writes-b-{uuid.uuid4().hex[:6]}"
    pool = passage_pool(
        (2 * args.seed_documents + args.rounds * 5 * args.documents) * CONCEPTS_PER_DOCUMENT, build=False
    )
    at = 0
    load_before = load_average()
    spans: dict[str, list[float]] = {s: [] for s in SHAPES}
    docs: dict[str, int] = dict.fromkeys(SHAPES, 0)
    created = merged = 0
    with ProcessPoolExecutor(2, initializer=_open, initargs=(url,)) as workers:
        seed_a, at = documents_from_pool(pool, args.seed_documents, at, settings)
        seed_b, at = documents_from_pool(pool, args.seed_documents, at, settings)
        for run in [workers.submit(_admit, tenant_a, seed_a), workers.submit(_admit, tenant_b, seed_b)]:
            run.result()
        for r in range(args.rounds):
            order = SHAPES if r % 2 == 0 else tuple(reversed(SHAPES))
            for shape in order:
                first, at = documents_from_pool(pool, args.documents, at, settings)
                jobs = [(tenant_a, first)]
                if shape != "one":
                    second, at = documents_from_pool(pool, args.documents, at, settings)
                    jobs.append((tenant_a if shape == "two_one" else tenant_b, second))
                runs = [f.result() for f in [workers.submit(_admit, t, d) for t, d in jobs]]
                spans[shape].append(max(x.ended for x in runs) - min(x.started for x in runs))
                docs[shape] += sum(x.documents for x in runs)
                created += sum(x.created for x in runs)
                merged += sum(x.merged for x in runs)
                print(f"round {r} {shape}: {sum(x.documents for x in runs) / spans[shape][-1]:.1f} docs/s", flush=True)
    load_after = load_average()
    rate = {s: docs[s] / sum(spans[s]) for s in SHAPES}
    figures = {
        "documents_per_s_one_worker": round(rate["one"], 2),
        "documents_per_s_two_workers_one_tenant": round(rate["two_one"], 2),
        "documents_per_s_two_workers_two_tenants": round(rate["two_two"], 2),
        "two_workers_one_tenant_speedup": round(rate["two_one"] / rate["one"], 3),
        "two_workers_one_tenant_vs_two_tenants": round(rate["two_one"] / rate["two_two"], 3),
        "two_workers_two_tenants_speedup": round(rate["two_two"] / rate["one"], 3),
        "per_round_documents_per_s": {
            s: [round(args.documents * (1 if s == "one" else 2) / x, 2) for x in spans[s]] for s in SHAPES
        },
        "concepts_created": created,
        "concepts_merged": merged,
        "documents_timed": sum(docs.values()),
        "load_average_1m_before": load_before,
        "load_average_1m_after": load_after,
        "run_s": round(time.perf_counter() - wall),
    }
    notes = [
        "One embedded PostgreSQL 16 + pgvector 0.6.2, recreated each run; two tenants seeded with"
        f" {args.seed_documents} documents each through the same path; documents of {CONCEPTS_PER_DOCUMENT}"
        " real passages (pre-embedded: the embedder is not measured), labelled as their sources titled them,"
        " so recurring titles merge.",
        "Each worker is a process with its own connection pool; shapes alternate their order every round;"
        f" {args.rounds} rounds of {args.documents} documents per worker per shape.",
        "Throughput = documents / (last worker's last admission end - first worker's first admission start).",
        "On a 2-core machine two workers compete for the same two cores with the database server, so the"
        " two-tenant shape is the ceiling a second worker can reach here, not 2x; the load average is recorded.",
    ]
    path = write_report("scale_writes", figures, title="One tenant's writes on two workers", notes=notes)
    print(f"report: {path}")
    for k, v in figures.items():
        if not isinstance(v, dict):
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
