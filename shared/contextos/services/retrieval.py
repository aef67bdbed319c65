"""The read path (S6): query → candidates → scores → budgets → an assembled context block."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from contextos.config import Settings
from contextos.decay import band_of
from contextos.embedding import Embedder
from contextos.models import Band, ContextRequest, ContextResult, ScoredMemory
from contextos.normalization import estimate_tokens
from contextos.observability import metrics
from contextos.query_analysis import QueryAnalysis, analyze
from contextos.scoring import Candidate, Ranked, rank
from contextos.store.repository import MemoryStore


@dataclass
class RetrievalService:
    settings: Settings
    store: MemoryStore
    embedder: Embedder

    def context(
        self, tenant_id: str, request: ContextRequest, *, query_vector: list[float] | None = None
    ) -> ContextResult:
        """The whole read path. ``query_vector`` skips embedding the query (benchmarks, callers that
        already hold it)."""
        cfg = self.settings.retrieval
        analysis = analyze(request.query)
        intent = analysis.intent
        if query_vector is None:
            query_vector = self.embedder.embed([request.query])[0]
        rows, found = self._search(tenant_id, analysis, query_vector)
        ranked = rank(self._candidates(rows, found), cfg)
        sources = self.store.sources_of(tenant_id, [r.candidate.id for r in ranked])
        chosen = self._forgetting_budget(ranked, sources, request.max_memories or cfg.max_memories)
        budget = request.token_budget or cfg.token_budget
        memories, index, tokens = self._token_budget(chosen, sources, budget)
        text = assemble(request.query, memories, index, request.format)
        if not request.dry_run:
            self.store.reinforce_and_log(
                tenant_id,
                [m.id for m in memories],
                intent=intent,
                budget=budget,
                tokens_used=tokens,
                session_id=request.session_id,
            )
        metrics.add_metric(name="ContextQueries", unit="Count", value=1)
        return ContextResult(
            query=request.query,
            intent=intent,
            format=request.format,
            context=text,
            tokens_used=tokens,
            token_budget=budget,
            dry_run=request.dry_run,
            memories=memories,
            index=index,
        )

    def _search(
        self, tenant_id: str, analysis: QueryAnalysis, query_vector: list[float]
    ) -> tuple[list[dict], dict[object, dict[str, float]]]:
        """The three searches (S6.2): vector and text concurrently, then the graph from their hits.

        Returns the candidates' rows (with each one's exact cosine to the query) and, per memory,
        the score each method gave it.
        """
        cfg = self.settings.retrieval
        found: dict[object, dict[str, float]] = {}
        with ThreadPoolExecutor(max_workers=1 + len(analysis.phrases)) as pool:
            vector_job = pool.submit(
                self.store.vector_search, tenant_id, query_vector, k=cfg.vector_k, ef_search=cfg.hnsw_ef_search
            )
            text_jobs = [
                pool.submit(self.store.text_search, tenant_id, analysis.terms(phrase), k=cfg.text_k)
                for phrase in analysis.phrases
            ]
            vector_rows = vector_job.result()
            text_rows = [row for job in text_jobs for row in job.result()]
        for row in vector_rows:
            found.setdefault(row["id"], {})["vector"] = max(float(row["vector_sim"]), 0.0)
        top_rank = max((float(r["rank"]) for r in text_rows), default=0.0) or 1.0
        for row in text_rows:
            score = 1.0 if row["label_match"] else min(float(row["rank"]) / top_rank, 1.0)
            scores = found.setdefault(row["id"], {})
            scores["text"] = max(scores.get("text", 0.0), score)
        seeds = [r["id"] for r in vector_rows[: cfg.graph_seeds]]
        seeds += [r["id"] for r in text_rows[: cfg.graph_seeds] if r["id"] not in seeds]
        for row in self.store.graph_expand(
            tenant_id,
            seeds,
            hops=cfg.graph_hops,
            fall=cfg.graph_fall,
            shared_source_weight=cfg.graph_shared_source_weight,
            k=cfg.graph_k,
        ):
            scores = found.setdefault(row["id"], {})
            scores["graph"] = max(scores.get("graph", 0.0), min(float(row["weight"]), 1.0))
        rows = self.store.candidate_rows(tenant_id, list(found), query_vector)
        return rows, found

    def _candidates(self, rows: list[dict], found: dict[object, dict[str, float]]) -> list[Candidate]:
        """Bands (S5): strong always, fading only when relevant, forgotten never."""
        cfg, decay = self.settings.retrieval, self.settings.decay
        now = datetime.now(UTC)
        out = []
        for row in rows:
            band = band_of(row["strength"], decay)
            methods = found.get(row["id"], {})
            vector = max(float(row["vector_sim"]), 0.0)
            relevant = vector >= cfg.fading_relevance_floor or "text" in methods
            if band is Band.forgotten or (band is not Band.strong and not relevant):
                continue
            out.append(
                Candidate(
                    id=row["id"],
                    strength=float(row["strength"]),
                    hours_since_access=(now - row["last_accessed_at"]).total_seconds() / 3600.0,
                    importance=row["importance"],
                    vector=vector,
                    text=methods.get("text", 0.0),
                    graph=methods.get("graph", 0.0),
                    methods=set(methods),
                    payload=row | {"band": band},
                )
            )
        return out

    def _forgetting_budget(self, ranked: list[Ranked], sources: dict, limit: int) -> list[Ranked]:
        """At most ``limit`` memories, and no single source above its share of them (S6.5)."""
        cap = max(1, int(limit * self.settings.retrieval.max_share_per_source))
        per_source: dict[str, int] = {}
        chosen: list[Ranked] = []
        for r in ranked:
            if len(chosen) >= limit:
                break
            primary = (sources.get(r.candidate.id) or ["manual"])[0]
            if per_source.get(primary, 0) >= cap:
                continue
            per_source[primary] = per_source.get(primary, 0) + 1
            chosen.append(r)
        return chosen

    @staticmethod
    def _token_budget(chosen: list[Ranked], sources: dict, budget: int) -> tuple[list[ScoredMemory], list[str], int]:
        """The best get their definition (L1) while the budget lasts; the rest are listed by label (L0)."""
        memories: list[ScoredMemory] = []
        index: list[str] = []
        used = 0
        for r in chosen:
            row = r.candidate.payload
            l1 = estimate_tokens(f"{row['label']}: {row['definition']}") + 4
            l0 = estimate_tokens(row["label"]) + 2
            if used + l1 <= budget:
                tier = "L1"
                used += l1
            elif used + l0 <= budget:
                tier = "L0"
                used += l0
                index.append(row["label"])
            else:
                break
            memories.append(
                ScoredMemory(
                    id=row["id"],
                    label=row["label"],
                    definition=row["definition"] if tier == "L1" else "",
                    type=row["type"],
                    importance=row["importance"],
                    band=row["band"],
                    tier_used=tier,
                    source_ids=sources.get(row["id"], []),
                    score=r.score,
                )
            )
        return memories, index, used


def assemble(query: str, memories: list[ScoredMemory], index: list[str], fmt: str) -> str:
    """Attention positioning: rules and preferences first, then by relevance, the L0 index last."""
    full = [m for m in memories if m.tier_used != "L0"]
    first = [m for m in full if m.type in ("rule", "preference")]
    ordered = first + [m for m in full if m not in first]
    if fmt == "json":
        return json.dumps(
            {
                "memories": [{"label": m.label, "type": m.type, "definition": m.definition} for m in ordered],
                "index": index,
            }
        )
    if fmt == "plain":
        lines = [f"{m.label} ({m.type}): {m.definition}" for m in ordered]
        if index:
            lines.append("Also known: " + "; ".join(index))
        return "\n".join(lines)
    lines = ["## Relevant memory", ""]
    lines += [f"- **{m.label}** ({m.type}): {m.definition}" for m in ordered]
    if index:
        lines += ["", "## Also in memory", "", ", ".join(index)]
    return "\n".join(lines)
