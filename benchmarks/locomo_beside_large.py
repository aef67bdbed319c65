"""LoCoMo beside a large tenant (S6, S14): the same questions as ``benchmarks/locomo.py``, each LoCoMo
conversation's tenant in one database with a large tenant (``benchmarks/retrieval.py``'s corpus), on
ONE warm connection, every LoCoMo question interleaved with a large-tenant query.

LoCoMo's tenants are small (≈600 turns each), so their vector searches take the exact path; the large
tenant's take the ANN one. On a pool of one connection the two share every prepared statement:
a plan cached for the large tenant must never answer a LoCoMo question. Every vector (LoCoMo's and the
large tenant's) is settled into the HNSW index before the questions, as the lifecycle leaves them.
The recall figures are compared with ``benchmarks/reports/locomo.json`` (the LoCoMo run alone), read
at run time; the order of the pair flips every question.

Run: ``.venv/bin/python benchmarks/locomo_beside_large.py [--large 100000]``. Report:
``benchmarks/reports/locomo_beside_large.json`` and ``.md``. The data is read at run time from
``$CONTEXTOS_LOCOMO_DATA`` (``benchmarks.locomo.locomo_data``) and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.models import ContextRequest, LifecycleReport
from contextos.observability import metrics
from contextos.services.cold import ColdStorage
from contextos.services.lifecycle import LifecycleService
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.lifecycle import LifecycleStore
from contextos.store.migrate import migrate
from contextos.store.stores import Stores

from benchmarks.locomo import (
    DATA,
    EMBED_BATCH,
    FRESH_SPACING,
    MemoryBlobs,
    cached_embed,
    load,
    store_conversation,
    summarise,
)
from benchmarks.report import write_report
from benchmarks.retrieval import (
    LARGE_TENANT,
    build_corpus,
    build_index,
    corpus_vectors,
    make_queries,
    prototypes,
)
from benchmarks.retrieval import load as load_corpus
from benchmarks.warm import pool_of_one, prepared_plans, read_service

VARIANTS = {"contextos": "shifted", "contextos_fresh": "fresh"}
ALONE = Path(__file__).resolve().parent / "reports" / "locomo.json"  # the LoCoMo run on its own


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--pool", type=int, default=5_000, help="prototype texts of the large corpus")
    parser.add_argument("--large-queries", type=int, default=300, help="distinct large-tenant queries, cycled")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--limit-questions", type=int, default=None)
    args = parser.parse_args()
    wall = time.perf_counter()
    settings = Settings()
    conversations = load(DATA)[: args.conversations]
    for c in conversations:
        c.questions = c.questions[: args.limit_questions] if args.limit_questions else c.questions

    from contextos.embedding.local import LocalMiniLMEmbedder

    embedder = LocalMiniLMEmbedder(batch_size=EMBED_BATCH)
    turn_vectors = cached_embed(embedder, "turns", [t.text for c in conversations for t in c.turns])
    question_vectors = cached_embed(embedder, "questions", [q.question for c in conversations for q in c.questions])
    protos = prototypes(args.pool, random.Random(7))
    large = build_corpus(LARGE_TENANT, args.large, protos, settings.extraction.generic_modifiers, seed=2)
    large_q = make_queries(large, protos, args.large_queries, seed=4)
    large_qv = np.asarray(embedder.embed(large_q), dtype=np.float32)
    pool = np.asarray(embedder.embed([p.text() for p in protos]), dtype=np.float32)
    print(f"{len(conversations)} conversations; large tenant of {len(large)} memories", flush=True)

    results: list[dict] = []
    failures: list[dict] = []
    shorts = 0
    with tempfile.TemporaryDirectory(prefix="contextos-locomo-large-") as tmp:
        url = embedded_database_url(Path(tmp))
        migrate(url, get_dialect("postgres"), 384, "locomo-minilm")
        loaded = load_corpus(url, large, corpus_vectors(large, pool, seed=6), settings, seed=9)  # drops the HNSW index
        setup = Database(url, get_dialect("postgres"), max_size=2)
        store = Stores.over(setup, settings.decay, settings.merge)
        life = LifecycleStore(setup, settings.decay, settings.lifecycle)
        blobs = MemoryBlobs()  # the cold bucket, shared by the setup's scan and the warm service
        cold = ColdStorage(life, blobs, settings.cold_bucket, settings.lifecycle)
        scan = LifecycleService(
            tenants=store.tenants, vectors=store.admission, lifecycle=life, cold=cold, settings=settings.lifecycle
        )
        tenants: dict[str, dict[str, str]] = {}
        id_maps: dict[str, dict] = {}
        offset = 0
        for conv in conversations:
            vectors = turn_vectors[offset : offset + len(conv.turns)]
            offset += len(conv.turns)
            now = datetime.now(UTC)
            shift = now - conv.turns[-1].when.replace(tzinfo=UTC)
            times = {
                "shifted": [t.when.replace(tzinfo=UTC) + shift for t in conv.turns],
                "fresh": [now - (len(conv.turns) - 1 - i) * FRESH_SPACING for i in range(len(conv.turns))],
            }
            tenants[conv.sample_id] = {}
            for timeline, when in times.items():
                tenant = f"locomo-{conv.sample_id}" + ("-fresh" if timeline == "fresh" else "")
                tenants[conv.sample_id][timeline] = tenant
                id_maps[tenant] = store_conversation(store, settings, tenant, conv, vectors, when)
                scan.scan_tenant(tenant, LifecycleReport())  # as deployed: the lifecycle scan has run
                while store.admission.settle_vectors(tenant, limit=10_000):  # and settled every vector
                    pass
        loaded["index_s"] = round(build_index(url), 1)  # HNSW over every tenant's vectors, then ANALYZE
        life.refresh_common_lexemes(LARGE_TENANT)
        life.refresh_text_stats(LARGE_TENANT)
        setup.close()
        print(f"loaded {loaded}; questions on one warm connection…", flush=True)

        one = pool_of_one(url, get_dialect("postgres"))
        service = read_service(one, settings, embedder, blobs)
        # The same-run baseline: the same questions, asked back to back (same data, same clock) on a
        # second warm connection that serves LoCoMo's tenants only.
        own = pool_of_one(url, get_dialect("postgres"))
        alone_service = read_service(own, settings, embedder, blobs)
        load_before = os.getloadavg()
        n = 0
        offset = 0

        def ask_large() -> None:
            nonlocal n
            v = large_qv[n % len(large_qv)]
            request = ContextRequest(query=large_q[n % len(large_q)], dry_run=True)
            service.context(LARGE_TENANT, request, query_vector=v.tolist())
            n += 1

        for conv in conversations:
            qvectors = question_vectors[offset : offset + len(conv.questions)]
            offset += len(conv.questions)
            for i, (q, qv) in enumerate(zip(conv.questions, qvectors, strict=True)):
                row: dict = {"sample_id": conv.sample_id, "category": q.category, "evidence": q.evidence}
                if i % 2 == 0:
                    ask_large()
                for method, timeline in VARIANTS.items():
                    tenant = tenants[conv.sample_id][timeline]
                    request = ContextRequest(query=q.question, dry_run=True, max_memories=20, token_budget=100_000)
                    for name, asked in ((method, service), (f"{method}_alone", alone_service)):
                        try:
                            result = asked.context(tenant, request, query_vector=qv.tolist())
                            row[name] = [id_maps[tenant][m.id] for m in result.memories]
                        except Exception as exc:  # a failed read counts as nothing retrieved, and is reported
                            failures.append({"method": name, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
                            row[name] = []
                    shorts += len(metrics.metric_set.get("VectorSearchShort", {}).get("Value", []))
                    metrics.clear_metrics()
                if i % 2 == 1:
                    ask_large()
                shorts += len(metrics.metric_set.get("VectorSearchShort", {}).get("Value", []))
                metrics.clear_metrics()
                results.append(row)
            print(f"  {conv.sample_id}: {len(conv.questions)} questions", flush=True)
        plans = prepared_plans(one, "AS vector_sim")
        load_after = os.getloadavg()
        one.close()
        own.close()

    alone = json.loads(ALONE.read_text())
    summary = {m: summarise(results, m) for m in [*VARIANTS, *(f"{v}_alone" for v in VARIANTS)]}
    differing = {m: sum(r[m] != r[f"{m}_alone"] for r in results) for m in VARIANTS}
    figures: dict = {"questions": len(results), "large_tenant_memories": len(large)}
    for m in VARIANTS:
        for k in (5, 10, 20):
            figures[f"{m} r@{k}"] = summary[m][f"r@{k}"]
            figures[f"{m} r@{k} alone (locomo.json)"] = alone.get(f"{m} r@{k}")
            figures[f"{m} r@{k} alone, same run"] = summary[f"{m}_alone"][f"r@{k}"]
        figures[f"{m} r@10 change vs alone"] = round(summary[m]["r@10"] - (alone.get(f"{m} r@10") or 0.0), 1)
        figures[f"{m} r@10 change vs alone, same run"] = round(summary[m]["r@10"] - summary[f"{m}_alone"]["r@10"], 1)
        figures[f"{m} questions ranked differently than alone, same run"] = differing[m]
    figures |= {
        "target_r@10_not_below_alone_same_run": "pass"
        if figures["contextos r@10 change vs alone, same run"] >= 0
        else "fail",
        "vector_search_short_answers": shorts,
        "failed_context_calls": len(failures),
        "large_tenant_queries_interleaved": n,
        "load_average_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "run_s": round(time.perf_counter() - wall, 0),
        "summary": summary,
        "prepared_vector_statements": plans,
        "failures": failures[:20],
        "data": loaded,
    }
    notes = [
        f"LoCoMo's {len(conversations)} conversations (two tenants each: the shifted and the fresh timeline, as"
        f" benchmarks/locomo.py builds them) in one embedded PostgreSQL beside a tenant of {len(large)} memories"
        " (benchmarks/retrieval.py's corpus and loader); every vector settled into one HNSW index over all of them,"
        " after the lifecycle scan of each LoCoMo tenant.",
        "One warm connection (a pool of one) answers everything: a large-tenant query before the LoCoMo question, or"
        f" after it, alternately ({n} large-tenant queries in all), so the statements the two share are prepared and"
        " their plans cached on that one connection. Only the ContextOS variants run (the baselines do not touch the"
        " database); recall as benchmarks/locomo.py counts it.",
        "The baseline is measured in the same run: each question is also asked, back to back (same data, same clock),"
        " on a second warm connection that serves LoCoMo's tenants only; locomo.json's figures (another run, another"
        " clock: the real timeline decays with it) are shown beside.",
        f"Result: contextos r@10 {figures['contextos r@10']} against"
        f" {figures['contextos r@10 alone, same run']} alone in the same run"
        f" ({figures['contextos r@10 change vs alone, same run']:+}; questions ranked differently:"
        f" {differing['contextos']}) and {figures['contextos r@10 alone (locomo.json)']} in locomo.json;"
        f" contextos_fresh r@10 {figures['contextos_fresh r@10']}"
        f" against {figures['contextos_fresh r@10 alone (locomo.json)']}. Short vector answers counted by the read"
        f" path's check (VectorSearchShort): {shorts}. The LoCoMo run alone moves by a few questions run to run"
        " (see locomo.json's history).",
    ]
    path = write_report(
        "locomo_beside_large", figures, title="LoCoMo beside a large tenant, one warm connection", notes=notes
    )
    print(f"report: {path} (run {time.perf_counter() - wall:.0f} s)")


if __name__ == "__main__":
    main()
