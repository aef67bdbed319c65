"""The read path (S6): query → candidates → scores → budgets → an assembled context block."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from contextos.config import IntentAdaptiveRecipe, Settings, StandardRecipe
from contextos.decay import band_of
from contextos.embedding import Embedder
from contextos.errors import UnknownRecipe
from contextos.models import Band, ContextRequest, ContextResult, ScoredMemory, SearchRequest, SearchResult
from contextos.normalization import estimate_tokens
from contextos.observability import metrics
from contextos.query_analysis import QueryAnalysis, analyze
from contextos.scoring import Candidate, Ranked, rank
from contextos.services.cold import ColdStorage
from contextos.store.repository import MemoryStore


@dataclass
class RetrievalService:
    settings: Settings
    store: MemoryStore
    embedder: Embedder
    cold: ColdStorage | None = None  # S5 reactivation of cold matches

    def context(
        self, tenant_id: str, request: ContextRequest, *, query_vector: list[float] | None = None
    ) -> ContextResult:
        """The whole read path. ``query_vector`` skips embedding the query (benchmarks, callers that
        already hold it)."""
        cfg = self.settings.retrieval
        recipe = self._recipe(request.recipe)
        analysis = analyze(request.query)
        intent = analysis.intent
        if query_vector is None:
            query_vector = self.embedder.embed([request.query])[0]
        # Cold matches come back first, so the searches below can already return them (S5).
        reactivated = self.cold.reactivate(tenant_id, query_vector, dry_run=request.dry_run) if self.cold else []
        rows, found = self._search(tenant_id, analysis, query_vector)
        pinned = self._candidates(self.store.pinned_rows(tenant_id, query_vector), {}, pinned=True)
        pinned_ids = {c.id for c in pinned}
        ranked = rank([c for c in self._candidates(rows, found) if c.id not in pinned_ids], cfg, recipe, intent)
        pinned_ranked = rank(pinned, cfg, recipe, intent)
        sources = self.store.sources_of(tenant_id, [r.candidate.id for r in pinned_ranked + ranked])
        chosen = pinned_ranked + self._forgetting_budget(ranked, sources, request.max_memories or cfg.max_memories)
        budget = request.token_budget or cfg.token_budget
        excerpts = self.store.excerpts_of(
            tenant_id, [r.candidate.id for r in chosen], per_memory=cfg.l2_excerpts, chars=cfg.l2_excerpt_chars
        )
        memories, index, tokens = self._token_budget(chosen, sources, excerpts, budget)
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
            reactivated=reactivated,
        )

    def search(self, tenant_id: str, request: SearchRequest) -> SearchResult:
        """Rank memories for a query with every score component; reads only (no reinforcement, no log)."""
        cfg = self.settings.retrieval
        recipe = self._recipe(request.recipe)
        analysis = analyze(request.query)
        query_vector = self.embedder.embed([request.query])[0]
        rows, found = self._search(tenant_id, analysis, query_vector)
        ranked = rank(self._candidates(rows, found), cfg, recipe, analysis.intent)[: request.limit]
        sources = self.store.sources_of(tenant_id, [r.candidate.id for r in ranked])
        return SearchResult(
            query=request.query,
            intent=analysis.intent,
            recipe=request.recipe or cfg.default_recipe,
            memories=[_scored(r, "L1", sources) for r in ranked],
        )

    def _recipe(self, name: str | None) -> StandardRecipe | IntentAdaptiveRecipe:
        try:
            return self.settings.retrieval.recipe(name)
        except KeyError as exc:
            known = ", ".join(sorted(self.settings.retrieval.recipes))
            raise UnknownRecipe(f"unknown scoring recipe {name!r}; configured: {known}") from exc

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
                self.store.vector_search,
                tenant_id,
                query_vector,
                k=cfg.vector_k,
                ef_search=cfg.hnsw_ef_search,
                exact_scan_max_rows=cfg.exact_scan_max_rows,
            )
            text_jobs = [
                pool.submit(
                    self.store.text_search, tenant_id, analysis.terms(phrase), k=cfg.text_k, cap=cfg.text_match_cap
                )
                for phrase in analysis.phrases
            ]
            vector_rows = vector_job.result()
            text_rows = [row for job in text_jobs for row in job.result()]
        for row in vector_rows:
            found.setdefault(row["id"], {})["vector"] = max(float(row["vector_sim"]), 0.0)
        top_rank = max((float(r["rank"]) for r in text_rows), default=0.0) or 1.0
        for row in text_rows:
            # A verbatim occurrence of the phrase scores 1; otherwise the rank relative to the best.
            # (A bounded boost instead cost 2.7 points of LoCoMo R@10: kept as it is.)
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

    def _candidates(
        self, rows: list[dict], found: dict[object, dict[str, float]], *, pinned: bool = False
    ) -> list[Candidate]:
        """Bands (S5): strong always, fading only when relevant, forgotten never (pinned
        ``always_load`` memories are in context whatever their band)."""
        cfg, decay = self.settings.retrieval, self.settings.decay
        now = datetime.now(UTC)
        out = []
        for row in rows:
            band = band_of(row["strength"], decay)
            methods = found.get(row["id"], {})
            vector = max(float(row["vector_sim"]), 0.0)
            relevant = vector >= cfg.fading_relevance_floor or "text" in methods
            if not pinned and (band is Band.forgotten or (band is not Band.strong and not relevant)):
                continue
            out.append(
                Candidate(
                    id=row["id"],
                    strength=float(row["strength"]),
                    hours_since_access=(now - row["last_accessed_at"]).total_seconds() / 3600.0,
                    importance=row["importance"],
                    access_count=row["access_count"],
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
    def _token_budget(
        chosen: list[Ranked], sources: dict, excerpts: dict, budget: int
    ) -> tuple[list[ScoredMemory], list[str], int]:
        """Tiers (S6.6): every chosen memory is first listed by label (L0); then, best first and
        while the budget lasts, they are raised to L2 (definition plus source excerpts) or L1
        (definition). What is left stays in the final L0 index."""
        l0 = [estimate_tokens(r.candidate.payload["label"]) + 2 for r in chosen]
        while chosen and sum(l0) > budget:
            chosen, l0 = chosen[:-1], l0[:-1]
        used = sum(l0)
        tiers: list[str] = []
        raising = True
        for r, base in zip(chosen, l0, strict=True):
            row = r.candidate.payload
            l1 = estimate_tokens(f"{row['label']}: {row['definition']}") + 4
            l2 = l1 + sum(estimate_tokens(e) + 2 for e in excerpts.get(row["id"], []))
            tier = "L0"
            if raising and excerpts.get(row["id"]) and used - base + l2 <= budget:
                tier, used = "L2", used - base + l2
            elif raising and used - base + l1 <= budget:
                tier, used = "L1", used - base + l1
            else:
                raising = False  # the budget is spent: the rest stay in the index
            tiers.append(tier)
        memories = [
            _scored(r, tier, sources, excerpts.get(r.candidate.id, []) if tier == "L2" else [])
            for r, tier in zip(chosen, tiers, strict=True)
        ]
        index = [m.label for m in memories if m.tier_used == "L0"]
        return memories, index, used


def _scored(r: Ranked, tier: str, sources: dict, excerpts: list[str] | None = None) -> ScoredMemory:
    row = r.candidate.payload
    return ScoredMemory(
        id=row["id"],
        label=row["label"],
        definition=row["definition"] if tier != "L0" else "",
        type=row["type"],
        importance=row["importance"],
        band=row["band"],
        tier_used=tier,
        source_ids=sources.get(row["id"], []),
        excerpts=excerpts or [],
        always_load=bool(row.get("always_load")),
        score=r.score,
    )


def assemble(query: str, memories: list[ScoredMemory], index: list[str], fmt: str) -> str:
    """Attention positioning (S6.7): always_load memories, rules and standing preferences first,
    then the rest by relevance, the L0 index last."""
    full = [m for m in memories if m.tier_used != "L0"]
    first = [m for m in full if m.always_load or m.type in ("rule", "preference")]
    ordered = first + [m for m in full if m not in first]
    if fmt == "json":
        return json.dumps(
            {
                "memories": [
                    {"label": m.label, "type": m.type, "definition": m.definition, "excerpts": m.excerpts}
                    for m in ordered
                ],
                "index": index,
            }
        )
    if fmt == "plain":
        lines = [f"{m.label} ({m.type}): {m.definition}" + "".join(f" | {e}" for e in m.excerpts) for m in ordered]
        if index:
            lines.append("Also known: " + "; ".join(index))
        return "\n".join(lines)
    lines = ["## Relevant memory", ""]
    for m in ordered:
        lines.append(f"- **{m.label}** ({m.type}): {m.definition}")
        lines += [f"  > {excerpt}" for excerpt in m.excerpts]
    if index:
        lines += ["", "## Also in memory", "", ", ".join(index)]
    return "\n".join(lines)
