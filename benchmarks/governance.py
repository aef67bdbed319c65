"""Governance report and health score cost (S9) on one synthetic tenant.

One fresh embedded PostgreSQL in a temp dir (nothing touches ``.contextos/``). The tenant gets
``--size`` memories (random unit vectors, 2 % of them near duplicates of another), stored
through the real ``add_memories`` path (vectors and LSH bands); each memory occurs in 1-3 of
``size / 50`` documents (implicit edges from shared sources), carries 2 of ``size / 30`` tags,
and has on average two explicit ``related`` edges; 5 % of the memories are 40 days old.
Measured: the full ``ReportService.run`` (judge = the local heuristic), each store query alone,
``health``, and the community lookup the read path makes per query.

Run: ``python -m benchmarks.governance`` (``--size 10000`` by default, about two
minutes on 2 cores). Figures go to ``benchmarks/reports/governance.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np
from contextos.judge.local import LocalHeuristicJudge
from contextos.observability import metrics
from contextos.services.reports import ReportService
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.reports import ReportStore, community_peers
from contextos.store.stores import Stores

from benchmarks.fixtures import analyze, bulk_load, corpus, embedded_store, percentile, timed
from benchmarks.report import write_report

TENANT = "bench-governance"


def load(store: Stores, db: Database, size: int, rng: np.random.Generator) -> list:
    ids = bulk_load(store, TENANT, corpus(size, rng))
    documents = max(size // 50, 2)
    tags = max(size // 30, 2)
    item_memory, item_document = [], []
    for index, memory_id in enumerate(ids):
        for d in rng.choice(documents, 1 + index % 3, replace=False):
            item_memory.append(memory_id)
            item_document.append(int(d))
    src = rng.integers(0, size, size * 2)
    dst = rng.integers(0, size, size * 2)
    with db.tenant_tx(TENANT) as conn:
        doc_ids = [
            r["id"]
            for r in conn.execute(
                """INSERT INTO documents (tenant_id, content_hash, status)
                   SELECT %s, 'h' || n, 'done' FROM generate_series(1, %s) AS n RETURNING id""",
                [TENANT, documents],
            ).fetchall()
        ]
        conn.execute(
            """INSERT INTO memory_items (tenant_id, memory_id, document_id, label, definition, importance)
               SELECT %s, m, (%s::uuid[])[d + 1], 'occurrence', 'seen', 5
               FROM unnest(%s::uuid[], %s::int[]) AS t(m, d)""",
            [TENANT, doc_ids, item_memory, item_document],
        )
        conn.execute(
            """UPDATE memories m SET tags = ARRAY['tag' || (abs(hashtext(m.id::text)) %% %s),
                                                 'tag' || (abs(hashtext(m.id::text || 'x')) %% %s)]
               WHERE tenant_id = %s""",
            [tags, tags, TENANT],
        )
        conn.execute(
            """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
               SELECT %s, (%s::uuid[])[s + 1], (%s::uuid[])[d + 1], 'related', 0.5
               FROM unnest(%s::int[], %s::int[]) AS t(s, d) WHERE s <> d ON CONFLICT DO NOTHING""",
            [TENANT, ids, ids, src.tolist(), dst.tolist()],
        )
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    metrics.disable_metrics = True  # type: ignore[attr-defined]
    rng = np.random.default_rng(7)
    settings = Settings()
    with tempfile.TemporaryDirectory() as tmp, embedded_store(Path(tmp), settings) as store:
        db = store.db
        load_ms, ids = timed(load, store, db, args.size, rng)
        analyze(db)
        reports_store = ReportStore(db, settings.decay, settings.reports)
        service = ReportService(settings, reports_store, LocalHeuristicJudge(), lambda: [TENANT])
        run_ms, report = timed(service.run, TENANT, trigger="cli")
        near = min(settings.reports.conflict_min_cosine, settings.merge.near_duplicate_cosine)
        sections = {
            "decay_candidates_ms": timed(reports_store.decay_candidates, TENANT)[0],
            "contradiction_edges_ms": timed(reports_store.contradiction_edges, TENANT)[0],
            "similar_pairs_ms": timed(
                reports_store.similar_pairs, TENANT, min_cosine=near, limit=settings.reports.similar_pairs_max
            )[0],
            "god_nodes_ms": timed(reports_store.god_nodes, TENANT)[0],
            "community_edges_ms": timed(reports_store.community_edges, TENANT)[0],
        }
        health_ms, health = timed(service.health, TENANT)
        lookups = []
        for k in range(50):
            top = [ids[(k * 37 + j) % len(ids)] for j in range(10)]
            candidates = [ids[(k * 91 + j) % len(ids)] for j in range(60)]
            lookups.append(timed(community_peers, db, TENANT, top, candidates)[0])
    figures = {
        "memories": args.size,
        "load_s": round(load_ms / 1000, 1),
        "governance_run_ms": run_ms,
        **sections,
        "health_ms": health_ms,
        "community_lookup_p50_ms": statistics.median(lookups),
        "community_lookup_p95_ms": percentile(lookups, 0.95),
        "decay_candidates": report.decay_candidates.total,
        "conflict_candidates": report.conflict_candidates.total,
        "pairs_judged": report.conflict_candidates.pairs_judged,
        "consolidation_clusters": report.consolidation.total,
        "near_duplicate_pairs": report.consolidation.near_duplicate_pairs,
        "planted_near_duplicates": args.size // 50,
        "god_nodes": report.god_nodes.total,
        "communities": report.communities.total,
        "memories_in_communities": report.communities.memories_in_communities,
        "explicit_edges": report.communities.explicit_edges,
        "implicit_edges": report.communities.implicit_edges,
        "edges_used": report.communities.edges_used,
        "truncated": str(report.communities.truncated),
        "modularity": report.communities.modularity,
        "health_score": health.score,
    }
    path = write_report(
        "governance",
        figures,
        title=f"Governance report and health score at {args.size:,} memories",
        notes=[
            "governance_run_ms is the whole daily job for the tenant: every query, the judge over the most "
            "similar pairs, connected components, Louvain (networkx, fixed seed) and the writes",
            "the *_ms section figures are each store query alone, run again after the report (warm cache)",
            "near_duplicate_pairs vs planted_near_duplicates: the LSH-banded pair search's recall on planted "
            "pairs at cosine ≈ 0.99 (random pairs are far apart)",
            "community_lookup is the one query the read path adds (10 top hits, 60 candidates)",
        ],
    )
    print(path.read_text() if path.suffix == ".md" else path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
