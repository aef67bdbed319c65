"""The read path (S6): query → candidates → scores → budgets → an assembled context block."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from contextos.config import RelevanceRecipe
from contextos.embedding import Embedder
from contextos.errors import UnknownRecipe
from contextos.evidence import matching_excerpts, stems
from contextos.models import (
    ContextRequest,
    ContextResult,
    NearMiss,
    PriorVersion,
    ScoredMemory,
    SearchRequest,
    SearchResult,
)
from contextos.observability import metrics
from contextos.ports.reads import BM25Params, PoolRequest, ReadPort, SearchReads, VersionReads
from contextos.ports.rows import PoolRow
from contextos.query_analysis import QueryAnalysis, analyze
from contextos.scopes import ScopeFilter
from contextos.scoring import AnyRecipe, Candidate, Ranked, answer_bar, rank
from contextos.services.candidates import add_pool_scores, check_short, hot_candidates, method_scores, stub_candidates
from contextos.services.cold import ColdStorage
from contextos.services.context_block import (
    archived_evidence,
    assemble,
    forgetting_budget,
    near_miss,
    near_misses,
    said_in_a_session_about,
    scored,
    shown_once,
    sources_of,
    token_budget,
    updates_of,
)
from contextos.settings import Settings

# The read path's concurrent statement (the text search, beside the vector search on the caller's
# thread): one small pool per process, shared by every request.
_SEARCHES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="contextos-search")


@dataclass
class RetrievalService:
    settings: Settings
    store: ReadPort
    embedder: Embedder
    # (tenant, session) → the session's last turns, which inform query analysis (S8); read only
    recent_turns: Callable[[str, str], list[str]] | None = None
    cold: ColdStorage | None = None  # S5 reactivation of cold matches
    versions: VersionReads | None = None  # what ``include_history`` reads (the versions a memory superseded)

    def __post_init__(self) -> None:
        # Process-wide, and only ever lowered: see RetrievalSettings.thread_switch_interval_s.
        sys.setswitchinterval(min(sys.getswitchinterval(), self.settings.retrieval.thread_switch_interval_s))

    def context(
        self, tenant_id: str, request: ContextRequest, *, query_vector: list[float] | None = None
    ) -> ContextResult:
        """The whole read path. ``query_vector`` skips embedding the query (benchmarks, callers that
        already hold it)."""
        cfg = self.settings.retrieval
        recipe = self._recipe(request.recipe)
        turns = self.recent_turns(tenant_id, request.session_id) if request.session_id and self.recent_turns else []
        analysis = analyze(request.query, recent_turns=turns)
        intent = analysis.intent
        if query_vector is None:
            query_vector = self.embedder.embed([analysis.embedding_text(request.query)])[0]
        reads = self._reads(request.as_of, request.scope)  # S7: as_of answers from history; S11: scopes
        searching_cold = self.cold is not None and request.as_of is None
        # the stubs nearest by cosine (a stub keeps its scope), read beside the searches
        cold_job = (
            _SEARCHES.submit(self._near_stubs, tenant_id, query_vector, request.scope) if searching_cold else None
        )
        rows, found = self._search(
            tenant_id, request.query, analysis, query_vector, reads, pinned=cfg.max_pinned, with_cold=searching_cold
        )
        # S5, forgetting demotes: cold stubs near the query by cosine or found by the text search
        # compete with the hot candidates, and come back only when they rank among them
        cold = (
            self._cold_candidates(tenant_id, query_vector, found, cold_job.result(), request.scope) if cold_job else []
        )
        pinned = self._candidates([r for r in rows if r["pinned"]], {}, pinned=True, min_trust=request.min_trust)
        rows = [r for r in rows if not r["pinned"]]
        pinned_ids = {c.id for c in pinned}
        left_out: list[NearMiss] = []  # filled on a dry run only
        missed = left_out if request.dry_run else None
        hot = self._candidates(
            rows, found, min_trust=request.min_trust, historical=request.as_of is not None, cold=cold, dropped=missed
        )
        candidates = [c for c in hot if c.id not in pinned_ids]
        pairs = self._same_subject(tenant_id, candidates, recipe)
        ranked = rank(candidates, cfg, recipe, intent, pairs, updates=updates_of(candidates))
        ranked = self._relevance_floor(tenant_id, ranked, request.min_relevance, missed, stems(request.query))
        pinned_ranked = rank(pinned, cfg, recipe, intent)
        sources = sources_of(pinned_ranked + ranked)
        chosen = pinned_ranked + self._forgetting_budget(
            ranked, sources, request.max_memories or cfg.max_memories, left_out=missed
        )
        chosen, reactivated = self._reactivate(tenant_id, chosen, dry_run=request.dry_run)
        if self.cold is not None and request.as_of is not None:  # a look into the past lists close ones only
            reactivated = self.cold.reactivate(tenant_id, query_vector, dry_run=True)
        budget = request.token_budget or cfg.token_budget
        chosen, excerpts = shown_once(chosen, self._evidence(request.query, chosen))
        memories, index, tokens = token_budget(chosen, sources, excerpts, budget, left_out=missed)
        if request.include_history:
            memories = self._with_history(tenant_id, memories)
        text = assemble(request.query, memories, index, request.format)
        if not request.dry_run and request.as_of is None:  # a look into the past changes nothing
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
            abstained=not any(self._floored(m.type, m.always_load) for m in memories),
            left_out=near_misses(left_out, cfg.near_misses_per_reason),
        )

    def _near_stubs(self, tenant_id: str, query_vector: list[float], scope: ScopeFilter | None) -> list[dict]:
        assert self.cold is not None
        return self.cold.store.cold_candidates(
            tenant_id, query_vector, [], limit=self.settings.retrieval.cold_k, scope=scope
        )

    def _evidence(self, query: str, chosen: list[Ranked]) -> dict[Hashable, list[str]]:
        """L2 shows the excerpts that are evidence for this query, not merely the newest."""
        with_excerpts = [r.candidate.payload for r in chosen if r.candidate.payload["excerpts"]]
        return matching_excerpts(
            query,
            {row["id"]: row["excerpts"] for row in with_excerpts},
            self.settings.retrieval.l2_excerpts,
            {row["id"]: row["excerpt_stems"] for row in with_excerpts if row.get("excerpt_stems")},
        )

    def _floored(self, memory_type: str, always_load: bool) -> bool:
        """Whether the relevance floor applies: not to always_load memories nor to rules (S6)."""
        return not always_load and memory_type not in self.settings.retrieval.floor_exempt_types

    def _relevance_floor(
        self,
        tenant_id: str,
        ranked: list[Ranked],
        min_relevance: float | None,
        left_out: list[NearMiss] | None,
        wanted: frozenset[str] | set[str] = frozenset(),
    ) -> list[Ranked]:
        """The ranked candidates the relevance floor keeps, order kept. With the request's
        ``min_relevance`` (0 cuts none), every candidate at or above it. Otherwise the query is
        answered only when its best candidate clears the tenant's `answer_bar` (abstention), and
        then keeps every candidate at or above the lower of that bar and ``relevance_floor``. A
        kept turn of a session about the query's words (``wanted``, its stems) is never cut."""
        cfg = self.settings.retrieval
        floored = [
            self._floored(r.candidate.payload["type"], bool(r.candidate.payload.get("always_load"))) for r in ranked
        ]
        if min_relevance is not None:
            floor = min_relevance
        else:
            best = max((r.score.calibrated for r, f in zip(ranked, floored, strict=True) if f), default=0.0)
            # no bar is below its minimum: a query that cannot clear it reads no tenant size
            bar = (
                answer_bar(self.store.searchable_size(tenant_id, cfg.scope_size_cache_s), cfg)
                if best >= cfg.abstain_min_relevance
                else math.inf
            )
            floor = min(bar, cfg.relevance_floor) if best >= bar else math.inf
        kept = []
        for r, f in zip(ranked, floored, strict=True):
            if r.score.calibrated >= floor or not f or said_in_a_session_about(wanted, r.candidate.payload):
                kept.append(r)
            elif left_out is not None:
                left_out.append(near_miss(r, "relevance_floor"))
        return kept

    def search(self, tenant_id: str, request: SearchRequest) -> SearchResult:
        """Rank memories for a query with every score component; reads only (no reinforcement, no log)."""
        cfg = self.settings.retrieval
        recipe = self._recipe(request.recipe)
        analysis = analyze(request.query)
        query_vector = self.embedder.embed([request.query])[0]
        rows, found = self._search(
            tenant_id, request.query, analysis, query_vector, self._reads(request.as_of, request.scope)
        )
        candidates = self._candidates(rows, found, min_trust=request.min_trust, historical=request.as_of is not None)
        ranked = rank(candidates, cfg, recipe, analysis.intent, updates=updates_of(candidates))[: request.limit]
        sources = sources_of(ranked)
        memories = [scored(r, "L1", sources) for r in ranked]
        return SearchResult(
            query=request.query,
            intent=analysis.intent,
            recipe=request.recipe or cfg.default_recipe,
            memories=self._with_history(tenant_id, memories) if request.include_history else memories,
        )

    def _with_history(self, tenant_id: str, memories: list[ScoredMemory]) -> list[ScoredMemory]:
        """``include_history`` (S6): each memory with the versions it superseded, read in one statement."""
        if self.versions is None:
            raise RuntimeError("RetrievalService needs the version reads to include history")
        chains = self.versions.predecessors(tenant_id, [m.id for m in memories])
        return [
            m.model_copy(update={"history": [PriorVersion.model_validate(v) for v in chains.get(m.id, [])]})
            for m in memories
        ]

    def _same_subject(self, tenant_id: str, candidates: list[Candidate], recipe: AnyRecipe) -> list[tuple]:
        """The candidate pairs about the same subject, when the recipe orders updates first."""
        if not isinstance(recipe, RelevanceRecipe) or recipe.same_subject_cosine is None or len(candidates) < 2:
            return []
        rows = self.store.same_subject_pairs(
            tenant_id, [c.id for c in candidates], min_cosine=recipe.same_subject_cosine
        )
        return [(r["a"], r["b"]) for r in rows]

    @property
    def _bm25(self) -> BM25Params:
        cfg = self.settings.retrieval
        return BM25Params(
            k1=cfg.bm25_k1, b=cfg.bm25_b, extra_weight=cfg.bm25_extra_weight, df_live_max=cfg.bm25_df_live_max
        )

    def _recipe(self, name: str | None) -> AnyRecipe:
        try:
            return self.settings.retrieval.recipe(name)
        except KeyError as exc:
            known = ", ".join(sorted(self.settings.retrieval.recipes))
            raise UnknownRecipe(f"unknown scoring recipe {name!r}; configured: {known}") from exc

    def _reads(self, as_of: datetime | None, scope: ScopeFilter | None = None) -> SearchReads:
        """The current store, the same reads within a scope (S11), answered as of a past time (S7), or
        both."""
        if as_of is None and (scope is None or scope.empty):
            return self.store
        cfg = self.settings.retrieval
        return self.store.reader(
            as_of=as_of, scope=scope, exact_scan_max_rows=cfg.exact_scan_max_rows, scope_cache_s=cfg.scope_size_cache_s
        )

    def _search(
        self,
        tenant_id: str,
        query: str,
        analysis: QueryAnalysis,
        query_vector: list[float],
        reads: SearchReads | None = None,
        *,
        pinned: int = 0,
        with_cold: bool = False,
    ) -> tuple[list[PoolRow], dict[UUID, dict[str, float]]]:
        """The three searches (S6.2): vector and text concurrently (two statements on two
        connections), then one statement that walks the graph from their hits and reads every
        candidate's scoring row and sources, plus up to ``pinned`` always_load memories.

        Returns the candidates' rows (with each one's exact cosine to the query; the always_load
        ones flagged ``pinned``) and, per memory, the score each method gave it.
        """
        cfg = self.settings.retrieval
        reads = reads or self.store
        phrases = [analysis.terms(phrase) for phrase in analysis.phrases]
        extra = [s for terms in phrases for s in terms[1:]] + list(analysis.carried)
        text_job = _SEARCHES.submit(
            reads.text_rank,
            tenant_id,
            query,
            extra,
            phrases,
            k=cfg.bm25_k,
            cap=cfg.bm25_cap,
            params=self._bm25,
            with_cold=with_cold,
        )
        vector_rows = reads.vector_search(
            tenant_id,
            query_vector,
            k=cfg.vector_k,
            ef_search=cfg.hnsw_ef_search,
            exact_scan_max_rows=cfg.exact_scan_max_rows,
            scope_cache_s=cfg.scope_size_cache_s,
        )
        if len(vector_rows) < cfg.vector_k:
            check_short(reads, tenant_id, returned=len(vector_rows), k=cfg.vector_k)
        text_rows = text_job.result()
        found, cosines = method_scores(vector_rows, text_rows)
        text_rows = [r for r in text_rows if not r.get("cold")]
        seeds = [r["id"] for r in vector_rows[: cfg.graph_seeds]]
        seeds += [r["id"] for r in text_rows[: cfg.graph_seeds] if r["id"] not in seeds]
        reports = self.settings.reports
        top = [r["id"] for r in vector_rows[: reports.community_top_hits]]
        top += [r["id"] for r in text_rows[: reports.community_top_hits]]
        rows = reads.candidate_pool(
            tenant_id,
            query_vector,
            PoolRequest(
                seeds=seeds,
                found=list(found),
                top=top if reports.community_bonus > 0 else [],
                hops=cfg.graph_hops,
                fall=cfg.graph_fall,
                shared_source_weight=cfg.graph_shared_source_weight,
                k=cfg.graph_k,
                pinned=pinned,
                excerpts=cfg.l2_excerpt_pool,
                excerpt_chars=cfg.l2_excerpt_chars,
                stems=sorted(stems(query)),
                known=list(cosines),
            ),
        )
        add_pool_scores(rows, found, cosines, reports.community_bonus)
        return rows, found

    def _candidates(self, rows: list[dict], found: dict[UUID, dict[str, float]], **options: Any) -> list[Candidate]:
        """The pool's rows as candidates (``contextos.services.candidates.hot_candidates``, its options)."""
        return hot_candidates(rows, found, self.settings, **options)

    def _cold_candidates(
        self,
        tenant_id: str,
        query_vector: list[float],
        found: dict[UUID, dict[str, float]],
        near: list[dict],
        scope: ScopeFilter | None = None,
    ) -> list[Candidate]:
        """Cold stubs as candidates (band forgotten): the ``near`` ones by cosine and those the text
        search found (``found`` entries flagged ``cold``, which are removed from it; read here only
        when the cosine search did not already bring them)."""
        assert self.cold is not None
        text = {i: scores["text"] for i, scores in list(found.items()) if scores.get("cold")}
        bm25 = {i: found[i].get("bm25", 0.0) for i in text}
        for i in text:
            del found[i]
        missing = [i for i in text if i not in {r["id"] for r in near}]
        if missing:
            near = near + self.cold.store.cold_candidates(tenant_id, query_vector, missing, limit=0, scope=scope)
        return stub_candidates(near, text, bm25)

    def _reactivate(self, tenant_id: str, chosen: list[Ranked], *, dry_run: bool) -> tuple[list[Ranked], list]:
        """The chosen cold stubs come back (restored at the reactivation strength and audit-logged; a
        dry run reads them and changes nothing), at most ``reactivation_max_per_query``; the rest,
        and any whose restore failed, leave the context."""
        stubs = [r for r in chosen if r.candidate.payload.get("cold")]
        if not stubs or self.cold is None:
            return chosen, []
        limit = self.settings.lifecycle.reactivation_max_per_query
        back = self.cold.bring_back(
            tenant_id,
            [r.candidate.payload | {"similarity": r.candidate.vector} for r in stubs[:limit]],
            dry_run=dry_run,
            reason="among the query's best evidence, cosine",
            read_definition=True,
        )
        archives = {reactivation.id: archive for reactivation, archive in back}
        kept = []
        for r in chosen:
            if r.candidate.payload.get("cold"):
                if r.candidate.id not in archives:
                    continue
                archive = archives[r.candidate.id] or {}
                r.candidate.payload |= archived_evidence(archive, self.settings.retrieval.l2_excerpt_chars)
            kept.append(r)
        return kept, [reactivation for reactivation, _ in back]

    def _forgetting_budget(
        self, ranked: list[Ranked], sources: dict, limit: int, *, left_out: list[NearMiss] | None = None
    ) -> list[Ranked]:
        """At most ``limit`` memories, and no single source above its share of them (S6.5)."""
        cfg = self.settings.retrieval
        return forgetting_budget(
            ranked, sources, limit, cfg.max_share_per_source, cfg.near_misses_per_reason, left_out=left_out
        )
