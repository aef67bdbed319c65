"""Conversation structure as graph signal on LoCoMo (S6.3, S9): session-neighbour edges and the
weights that could rank by them, measured before deciding the defaults.

The LoCoMo protocol of ``benchmarks/locomo.py`` (one memory per turn, one ``add_memories`` call per
session, both timelines), with every turn linked to its session's previous turn by a ``related``
edge (``merge.session_neighbour_weight``, ``--weight``) and the S9 communities computed for each
tenant as the governance run does (Louvain over the explicit and implicit edges). Each question is
asked once per timeline through ``RetrievalService.context`` with the deployed default recipe
(``real``); the same candidate pool is then re-ranked in-process by each recipe variant (the
relevance recipe with ``semantic_graph`` or ``semantic_community`` raised) and cut by the same
forgetting budget, so the variants differ only in their weights. Without edges (the deployed
default) the figures are those of ``benchmarks/reports/locomo.json``.

Run: ``python -m benchmarks.locomo_structure [--weight 0.8] [--conversations N]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextos.services.retrieval as retrieval
from contextos.config import RelevanceRecipe
from contextos.models import ContextRequest, LifecycleReport
from contextos.observability import metrics
from contextos.scoring import rank
from contextos.services.reports import ReportService
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.migrate import migrate
from contextos.store.reports import ReportStore

from benchmarks import locomo
from benchmarks.report import write_report

VARIANTS = {
    "graph_0.05": {"semantic_graph": 0.05},
    "graph_0.1": {"semantic_graph": 0.1},
    "community_0.05": {"semantic_community": 0.05},
    "community_0.1": {"semantic_community": 0.1},
    "community_0.2": {"semantic_community": 0.2},
}


class Reranked(retrieval.RetrievalService):
    """The real read path; its searched pool is also ranked by each variant recipe."""

    variants: dict[str, RelevanceRecipe]
    last: dict

    def _forgetting_budget(self, ranked, sources, limit, *args, **kwargs):
        chosen = super()._forgetting_budget(ranked, sources, limit, *args, **kwargs)
        pool = [r.candidate for r in ranked]
        cfg = self.settings.retrieval
        self.last = {
            name: super(Reranked, self)._forgetting_budget(
                rank(pool, cfg, recipe, updates=retrieval._updates(pool)), sources, limit
            )
            for name, recipe in self.variants.items()
        }
        return chosen


def summarise(rows: list[dict], key: str) -> dict:
    def r10(items: list[dict]) -> float:
        return round(100 * float(np.mean([locomo.recall(r[key], r["evidence"], 10) for r in items])), 1)

    out = {"r@10": r10(rows)}
    for c, name in locomo.CATEGORIES.items():
        out[f"c{c} {name}"] = r10([r for r in rows if r["category"] == c])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weight", type=float, default=0.8, help="session-neighbour edge weight")
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args()
    settings = Settings()
    settings.merge.session_neighbour_weight = args.weight
    every = locomo.load(locomo.DATA)
    conversations = every[: args.conversations]
    from contextos.embedding.local import LocalMiniLMEmbedder

    embedder = LocalMiniLMEmbedder(batch_size=locomo.EMBED_BATCH)
    turn_vectors = locomo.cached_embed(embedder, "turns", [t.text for c in every for t in c.turns])
    question_vectors = locomo.cached_embed(embedder, "questions", [q.question for c in every for q in c.questions])
    rows: list[dict] = []
    edges = 0
    with tempfile.TemporaryDirectory(prefix="contextos-structure-") as tmp:
        url = embedded_database_url(Path(tmp))
        migrate(url, get_dialect("postgres"), 384, "locomo-minilm")
        db = Database(url, get_dialect("postgres"), max_size=4)
        store, scan, service = locomo.scanned_read_path(db, settings, embedder, Reranked)
        service.variants = {
            name: settings.retrieval.recipe(None).model_copy(update=change) for name, change in VARIANTS.items()
        }
        reports = ReportService(
            settings=settings, store=ReportStore(db, settings.decay, settings.reports), judge=None, tenant_ids=list
        )  # type: ignore[arg-type]
        turn_offset = question_offset = 0
        for conv in conversations:
            vectors = turn_vectors[turn_offset : turn_offset + len(conv.turns)]
            qvectors = question_vectors[question_offset : question_offset + len(conv.questions)]
            turn_offset += len(conv.turns)
            question_offset += len(conv.questions)
            now = datetime.now(UTC)
            shift = now - conv.turns[-1].when.replace(tzinfo=UTC)
            tenants = {
                "contextos": (f"s-{conv.sample_id}", [t.when.replace(tzinfo=UTC) + shift for t in conv.turns]),
                "contextos_fresh": (
                    f"s-{conv.sample_id}-fresh",
                    [now - (len(conv.turns) - 1 - i) * locomo.FRESH_SPACING for i in range(len(conv.turns))],
                ),
            }
            maps = {
                name: locomo.store_conversation(store, settings, tenant, conv, vectors, times)
                for name, (tenant, times) in tenants.items()
            }
            for tenant, _ in tenants.values():
                scan.scan_tenant(tenant, LifecycleReport())  # as deployed: the scan has run
                reports._communities(tenant)  # as the governance run computes them
                with db.tenant_tx(tenant) as conn:
                    edges += conn.execute("SELECT count(*) AS n FROM relationships").fetchone()["n"]
            for q, qv in zip(conv.questions, qvectors, strict=True):
                row: dict = {"category": q.category, "evidence": q.evidence}
                for name, (tenant, _) in tenants.items():
                    request = ContextRequest(query=q.question, dry_run=True, max_memories=20, token_budget=100_000)
                    result = service.context(tenant, request, query_vector=qv.tolist())
                    metrics.clear_metrics()
                    row[f"{name} real"] = [maps[name][m.id] for m in result.memories]
                    for variant, chosen in service.last.items():
                        row[f"{name} {variant}"] = [maps[name][r.candidate.id] for r in chosen]
                rows.append(row)
            print(f"  {conv.sample_id}: {len(conv.questions)} questions", flush=True)
        db.close()
    keys = [k for k in rows[0] if k not in ("category", "evidence")]
    figures: dict = {"questions": len(rows), "session_neighbour_weight": args.weight, "neighbour_edges": edges}
    figures |= {key: summarise(rows, key) for key in keys}
    for key in keys:
        print(f"{key:<32} {figures[key]}")
    write_report(
        "locomo_structure",
        figures,
        title="LoCoMo: session-neighbour edges and the graph / community weights",
        notes=[
            "LoCoMo protocol of benchmarks/locomo.py; every turn linked to its session's previous turn "
            f"(related edge, weight {args.weight}); S9 communities computed per tenant; R@10 in percent.",
            "`real`: the deployed default recipe through RetrievalService.context (dry run). The other rows "
            "re-rank that same candidate pool with the relevance recipe's semantic_graph or semantic_community "
            "raised, then apply the same forgetting budget (they skip the reactivation step, which in a dry run"
            " only drops the cold stubs it cannot read back; `real` and an unchanged recipe gave identical lists).",
            "Without the edges (the default) see benchmarks/reports/locomo.json.",
        ],
    )


if __name__ == "__main__":
    main()
