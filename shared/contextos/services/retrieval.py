"""The read path (S6): query → candidates → scores → budgets → an assembled context block."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, cast
from uuid import UUID

from contextos.config import RelevanceRecipe
from contextos.decay import band_of
from contextos.embedding import Embedder
from contextos.errors import UnknownRecipe
from contextos.evidence import matching_excerpts, stems
from contextos.models import (
    Band,
    ContextRequest,
    ContextResult,
    NearMiss,
    PriorVersion,
    ScoredMemory,
    SearchRequest,
    SearchResult,
)
from contextos.normalization import estimate_tokens
from contextos.observability import logger, metrics
from contextos.ports import ReadPort, SearchReads
from contextos.query_analysis import QueryAnalysis, analyze
from contextos.scopes import ScopeFilter
from contextos.scoring import AnyRecipe, Candidate, Ranked, among_best_evidence, calibrated_relevance, rank
from contextos.services.cold import ColdStorage
from contextos.settings import Settings
from contextos.store.history import HistoricalReads, PoolRequest
from contextos.store.rows import PoolRow
from contextos.store.scoped_reads import ScopedHistoricalReads, ScopedReads
from contextos.store.text_search import BM25Params
from contextos.trust import composite_trust

if TYPE_CHECKING:
    from contextos.store.repository import MemoryStore

Tier = Literal["L0", "L1", "L2"]  # S6.6: label, definition, definition and source excerpts

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
        cold_job = (  # the stubs nearest by cosine (a stub keeps its scope), read beside the searches
            _SEARCHES.submit(
                self.cold.store.cold_candidates, tenant_id, query_vector, [], limit=cfg.cold_k, scope=request.scope
            )
            if self.cold is not None and searching_cold
            else None
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
        ranked = rank(candidates, cfg, recipe, intent, pairs, updates=_updates(candidates))
        ranked = self._relevance_floor(ranked, request.min_relevance, missed)
        pinned_ranked = rank(pinned, cfg, recipe, intent)
        sources = _sources(pinned_ranked + ranked)
        chosen = pinned_ranked + self._forgetting_budget(
            ranked, sources, request.max_memories or cfg.max_memories, left_out=missed
        )
        chosen, reactivated = self._reactivate(tenant_id, chosen, dry_run=request.dry_run)
        if self.cold is not None and request.as_of is not None:  # a look into the past lists close ones only
            reactivated = self.cold.reactivate(tenant_id, query_vector, dry_run=True)
        budget = request.token_budget or cfg.token_budget
        # L2 shows the excerpts that are evidence for this query, not merely the newest
        with_excerpts = [r.candidate.payload for r in chosen if r.candidate.payload["excerpts"]]
        excerpts = matching_excerpts(
            request.query,
            {row["id"]: row["excerpts"] for row in with_excerpts},
            cfg.l2_excerpts,
            {row["id"]: row["excerpt_stems"] for row in with_excerpts if row.get("excerpt_stems")},
        )
        memories, index, tokens = self._token_budget(chosen, sources, excerpts, budget, left_out=missed)
        if request.include_history:
            memories = with_history(self.store, tenant_id, memories)
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
            left_out=_near_misses(left_out, cfg.near_misses_per_reason),
        )

    def _floored(self, memory_type: str, always_load: bool) -> bool:
        """Whether the relevance floor applies: not to always_load memories nor to rules (S6)."""
        return not always_load and memory_type not in self.settings.retrieval.floor_exempt_types

    def _relevance_floor(
        self, ranked: list[Ranked], min_relevance: float | None, left_out: list[NearMiss] | None
    ) -> list[Ranked]:
        """The ranked candidates whose calibrated relevance clears the floor (the request's
        ``min_relevance``, else the configured one), order kept; at 0 nothing is cut."""
        floor = self.settings.retrieval.relevance_floor if min_relevance is None else min_relevance
        kept = []
        for r in ranked:
            row = r.candidate.payload
            if r.score.calibrated >= floor or not self._floored(row["type"], bool(row.get("always_load"))):
                kept.append(r)
            elif left_out is not None:
                left_out.append(_near_miss(r, "relevance_floor"))
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
        ranked = rank(candidates, cfg, recipe, analysis.intent, updates=_updates(candidates))[: request.limit]
        sources = _sources(ranked)
        memories = [_scored(r, "L1", sources) for r in ranked]
        return SearchResult(
            query=request.query,
            intent=analysis.intent,
            recipe=request.recipe or cfg.default_recipe,
            memories=with_history(self.store, tenant_id, memories) if request.include_history else memories,
        )

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
        cfg = self.settings.retrieval
        if scope is not None and scope.empty:
            scope = None
        if as_of is None:
            if scope is None:
                return self.store
            # (the scoped readers return their rows as plain dicts with the port's keys)
            return cast(
                SearchReads,
                ScopedReads(cast("MemoryStore", self.store), scope, cfg.exact_scan_max_rows, cfg.scope_size_cache_s),
            )
        history = HistoricalReads(self.store.db, as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC))
        if scope is None:
            return cast(SearchReads, history)
        return cast(SearchReads, ScopedHistoricalReads(history, scope, cfg.exact_scan_max_rows))

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
            _check_short(reads, tenant_id, returned=len(vector_rows), k=cfg.vector_k)
        text_rows = text_job.result()
        found: dict[UUID, dict[str, float]] = {}
        cosines = {hit["id"]: float(hit["vector_sim"]) for hit in vector_rows}  # the pool does not recompute them
        for hit in vector_rows:
            found.setdefault(hit["id"], {})["vector"] = max(float(hit["vector_sim"]), 0.0)
        top_score = max((float(r["score"]) for r in text_rows), default=0.0) or 1.0
        for match in text_rows:  # BM25 relative to the query's best match: every recipe reads [0, 1]
            scores = found.setdefault(match["id"], {})
            scores["text"] = float(match["score"]) / top_score
            scores["bm25"] = float(match["score"])
            if match.get("cold"):
                scores["cold"] = 1.0  # a cold stub: `_cold_candidates` takes it out of the hot pool
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
        for row in rows:
            if row["vector_sim"] is None:
                row["vector_sim"] = cosines[row["id"]]
            if row["pinned"]:
                continue
            scores = found.setdefault(row["id"], {})
            if row["graph_weight"] > 0:
                scores["graph"] = max(scores.get("graph", 0.0), min(float(row["graph_weight"]), 1.0))
            if row["community"]:
                # S9: kept apart from the methods, so it does not also earn the multi-method bonus
                scores["community"] = reports.community_bonus
        return rows, found

    def _candidates(
        self,
        rows: list[dict],
        found: dict[UUID, dict[str, float]],
        *,
        pinned: bool = False,
        min_trust: float | None = None,
        historical: bool = False,
        cold: list[Candidate] | None = None,
        dropped: list[NearMiss] | None = None,
    ) -> list[Candidate]:
        """Bands (S5): strong always; fading, critical and forgotten ones only when they are among
        the query's best evidence (`among_best_evidence`: forgetting demotes). Pinned
        ``always_load`` memories are in context whatever their band; a historical read shows what
        was believed then, whatever its strength now. Composite trust (S7) for each, and
        ``min_trust`` leaves out the rest. ``dropped`` (a dry run's) receives what the band filter cut."""
        cfg, decay, governance = self.settings.retrieval, self.settings.decay, self.settings.governance
        keep_all_bands = pinned or historical
        now = datetime.now(UTC)
        out = []
        for row in rows:
            band = band_of(row["strength"], decay)
            methods = found.get(row["id"], {})
            vector = max(float(row["vector_sim"]), 0.0)
            trust = composite_trust(
                float(row["base_trust"]),
                int(row.get("corroborations") or 0),
                int(row["access_count"]),
                float(row["strength"]),
                governance,
            )
            if min_trust is not None and trust < min_trust:
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
                    graph=min(methods.get("graph", 0.0) + methods.get("community", 0.0), 1.0),
                    methods=set(methods) - {"community", "bm25"},
                    community=1.0 if "community" in methods else 0.0,
                    payload=row | {"band": band},
                    trust=trust,
                    bm25=methods.get("bm25", 0.0),
                )
            )
        out += [c for c in cold or [] if min_trust is None or c.trust >= min_trust]
        if keep_all_bands:
            return out
        kept = among_best_evidence(out, cfg)
        if dropped is not None and len(kept) < len(out):
            ids = {c.id for c in kept}
            dropped += [
                NearMiss(
                    id=c.id,
                    label=c.payload["label"],
                    relevance=calibrated_relevance(c.vector, c.bm25, cfg),
                    reason="band",
                )
                for c in out
                if c.id not in ids
            ]
        return kept

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
        now = datetime.now(UTC)
        out = []
        for row in near:
            methods = {"vector"} | ({"text"} if row["id"] in text else set())
            out.append(
                Candidate(
                    id=row["id"],
                    strength=0.0,
                    hours_since_access=(now - row["last_accessed_at"]).total_seconds() / 3600.0,
                    importance=row["importance"],
                    access_count=row["access_count"],
                    vector=max(float(row["similarity"]), 0.0),
                    text=text.get(row["id"], 0.0),
                    bm25=bm25.get(row["id"], 0.0),
                    methods=methods,
                    payload=row
                    | {"band": Band.forgotten, "definition": "", "sources": [], "excerpts": [], "cold": True},
                    trust=float(row["base_trust"]),
                )
            )
        return out

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
        """At most ``limit`` memories, and no single source above its share of them (S6.5).
        ``left_out`` (a dry run's) receives the first ones past the limit and those the cap skipped."""
        cap = max(1, int(limit * self.settings.retrieval.max_share_per_source))
        per_source: dict[str, int] = {}
        chosen: list[Ranked] = []
        for n, r in enumerate(ranked):
            if len(chosen) >= limit:
                if left_out is not None:
                    left_out += [
                        _near_miss(x, "max_memories")
                        for x in ranked[n : n + self.settings.retrieval.near_misses_per_reason]
                    ]
                break
            primary = (sources.get(r.candidate.id) or ["manual"])[0]
            if per_source.get(primary, 0) >= cap:
                if left_out is not None:
                    left_out.append(_near_miss(r, "source_cap"))
                continue
            per_source[primary] = per_source.get(primary, 0) + 1
            chosen.append(r)
        return chosen

    @staticmethod
    def _token_budget(
        chosen: list[Ranked], sources: dict, excerpts: dict, budget: int, *, left_out: list[NearMiss] | None = None
    ) -> tuple[list[ScoredMemory], list[str], int]:
        """Tiers (S6.6): every chosen memory is first listed by label (L0); then, best first and
        while the budget lasts, they are raised to L2 (definition plus source excerpts) or L1
        (definition). What is left stays in the final L0 index; what does not fit even there is
        ``left_out`` (a dry run's)."""
        l0 = [estimate_tokens(r.candidate.payload["label"]) + 2 for r in chosen]
        while chosen and sum(l0) > budget:
            if left_out is not None:
                left_out.append(_near_miss(chosen[-1], "token_budget"))
            chosen, l0 = chosen[:-1], l0[:-1]
        used = sum(l0)
        tiers: list[Tier] = []
        raising = True
        for r, base in zip(chosen, l0, strict=True):
            row = r.candidate.payload
            l1 = estimate_tokens(f"{row['label']}: {row['definition']}") + 4
            l1 += 4 if _said_at(row, sources.get(row["id"], [])) is not None else 0  # ", said 2023-05-08"
            l2 = l1 + sum(estimate_tokens(e) + 2 for e in excerpts.get(row["id"], []))
            tier: Tier = "L0"
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


def _updates(candidates: list[Candidate]) -> list[tuple[UUID, UUID]]:
    """(newer, older) for every candidate the contradiction gate linked to a newer statement that
    reports a change to it (its ``updated_by``, migration 0022)."""
    return [
        (c.payload["updated_by"], c.id)
        for c in candidates
        if isinstance(c.payload, dict) and c.payload.get("updated_by") is not None
    ]


def _near_miss(r: Ranked, reason: str) -> NearMiss:
    return NearMiss.model_validate(
        {
            "id": r.candidate.id,
            "label": r.candidate.payload["label"],
            "relevance": r.score.calibrated,
            "score": r.score.relevance,
            "reason": reason,
        }
    )


def _near_misses(left_out: list[NearMiss], per_reason: int) -> list[NearMiss]:
    """The best few left-out candidates of each reason (by calibrated relevance), reasons apart."""
    by_reason: dict[str, list[NearMiss]] = {}
    for miss in left_out:
        by_reason.setdefault(miss.reason, []).append(miss)
    return [m for misses in by_reason.values() for m in sorted(misses, key=lambda m: -m.relevance)[:per_reason]]


def _sources(ranked: list[Ranked]) -> dict[UUID, list[str]]:
    """memory id → its distinct sources, as the candidate pool read them."""
    return {r.candidate.id: sorted(s for s in r.candidate.payload.get("sources") or [] if s) for r in ranked}


def archived_evidence(archive: dict, excerpt_chars: int) -> dict:
    """What a cold memory brought back shows, as a hot one would: its definition, and as L2
    excerpts its occurrences' other definitions and source excerpts (with their stems), so the
    turns an archived episode kept still answer the query that woke it."""
    definition = (archive.get("memory") or {}).get("definition", "")
    excerpts: list[str] = []
    excerpt_stems: list[str | None] = []
    for item in archive.get("items") or []:
        if item.get("definition") and item["definition"] != definition:
            excerpts.append(item["definition"][:excerpt_chars])
            excerpt_stems.append(item.get("definition_stems"))
        texts, text_stems = item.get("excerpts") or [], item.get("excerpt_stems") or []
        excerpts += [text[:excerpt_chars] for text in texts]
        excerpt_stems += [text_stems[i] if i < len(text_stems) else None for i in range(len(texts))]
    return {"definition": definition, "excerpts": excerpts, "excerpt_stems": excerpt_stems}


def _scored(r: Ranked, tier: Tier, sources: dict, excerpts: list[str] | None = None) -> ScoredMemory:
    row = r.candidate.payload
    # Validated from a plain dict: pydantic-core does that ~3x faster than `model_construct` builds
    # a model in Python (for ~20 memories a query, the read path's largest Python cost).
    return ScoredMemory.model_validate(
        {
            "id": row["id"],
            "label": row["label"],
            "definition": row["definition"] if tier != "L0" else "",
            "type": row["type"],
            "importance": row["importance"],
            "band": row["band"],
            "tier_used": tier,
            "source_ids": sources.get(row["id"], []),
            "excerpts": excerpts or [],
            "always_load": bool(row.get("always_load")),
            "score": r.score.fields(),
            "said_at": _said_at(row, sources.get(row["id"], [])),
            "history": [],
            "relevance": r.score.calibrated,
        }
    )


def _said_at(row: dict, sources: list[str]) -> datetime | None:
    """When a memory from a conversation was said (its ``valid_from``: a turn's own time, or its
    flush's), so a "when" question finds the date beside the answer. Document knowledge has no
    such moment worth the tokens."""
    if any(s.startswith("session:") for s in sources):
        return row.get("valid_from")
    return None


def _heading(m: ScoredMemory) -> str:
    """``type`` or ``type, said <date>``: what the block says about a memory besides its text."""
    return f"{m.type}, said {m.said_at:%Y-%m-%d}" if m.said_at is not None else m.type


def assemble(query: str, memories: list[ScoredMemory], index: list[str], fmt: str) -> str:
    """Attention positioning (S6.7): always_load memories, rules and standing preferences first,
    then the rest by relevance, the L0 index last."""
    full = [m for m in memories if m.tier_used != "L0"]
    first = [m for m in full if m.always_load or m.type in ("rule", "preference")]
    leading = {m.id for m in first}
    ordered = first + [m for m in full if m.id not in leading]
    if fmt == "json":
        return json.dumps(
            {
                "memories": [
                    {"label": m.label, "type": m.type, "definition": m.definition, "excerpts": m.excerpts}
                    | ({"said_at": m.said_at.isoformat()} if m.said_at is not None else {})
                    for m in ordered
                ],
                "index": index,
            }
        )
    if fmt == "plain":
        lines = [f"{m.label} ({_heading(m)}): {m.definition}" + "".join(f" | {e}" for e in m.excerpts) for m in ordered]
        if index:
            lines.append("Also known: " + "; ".join(index))
        return "\n".join(lines)
    lines = ["## Relevant memory", ""]
    for m in ordered:
        lines.append(f"- **{m.label}** ({_heading(m)}): {m.definition}")
        lines += [f"  > {excerpt}" for excerpt in m.excerpts]
    if index:
        lines += ["", "## Also in memory", "", ", ".join(index)]
    return "\n".join(lines)


def with_history(store: ReadPort, tenant_id: str, memories: list[ScoredMemory]) -> list[ScoredMemory]:
    """``include_history`` (S6): each memory with the versions it superseded, read in one statement."""
    from contextos.store.management import ManagementStore

    chains = ManagementStore(store.db, store.decay).predecessors(tenant_id, [m.id for m in memories])
    return [
        m.model_copy(update={"history": [PriorVersion.model_validate(v) for v in chains.get(m.id, [])]})
        for m in memories
    ]


def _check_short(reads: SearchReads, tenant_id: str, *, returned: int, k: int) -> None:
    """S6: the vector search returns k rows whenever k exist in scope. A short answer where more
    rows were searchable (a plan that filtered after an ANN scan, an index that lost rows) is logged
    and counted, never silent; asked only after a short answer, counting at most k rows."""
    held = reads.searchable_rows(tenant_id, at_most=k)
    if returned >= held:
        return
    logger.warning(
        "vector search came up short",
        extra={
            "tenant_id": tenant_id,
            "returned": returned,
            "searchable": held,
            "k": k,
            "reader": type(reads).__name__,
        },
    )
    metrics.add_metric(name="VectorSearchShort", unit="Count", value=1)
