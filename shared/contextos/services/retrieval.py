"""The read path (S6): query → candidates → scores → budgets → an assembled context block."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from contextos.config import Settings
from contextos.decay import band_of
from contextos.embedding import Embedder
from contextos.models import Band, ContextRequest, ContextResult, ScoredMemory
from contextos.normalization import estimate_tokens
from contextos.observability import metrics
from contextos.scoring import Candidate, Ranked, rank
from contextos.store.repository import MemoryStore

_INTENTS: list[tuple[str, re.Pattern[str]]] = [
    (
        "debug",
        re.compile(r"\b(bug|error|exception|fail\w*|crash\w*|broken|fix|debug\w*|traceback|stack trace)\b", re.I),
    ),
    ("brainstorm", re.compile(r"\b(ideas?|brainstorm\w*|what if|alternatives?|explore|options?|could we)\b", re.I)),
    ("recall", re.compile(r"\b(what did|when did|remember|recall|last time|previously|who|which)\b", re.I)),
]


def detect_intent(query: str) -> str:
    """debug / brainstorm / recall / default, by lexical triggers (S6.1)."""
    for intent, pattern in _INTENTS:
        if pattern.search(query):
            return intent
    return "default"


@dataclass
class RetrievalService:
    settings: Settings
    store: MemoryStore
    embedder: Embedder

    def context(self, tenant_id: str, request: ContextRequest) -> ContextResult:
        cfg = self.settings.retrieval
        intent = detect_intent(request.query)
        query_vector = self.embedder.embed([request.query])[0]
        rows = self.store.vector_search(tenant_id, query_vector, k=cfg.vector_k, ef_search=cfg.hnsw_ef_search)
        ranked = rank(self._candidates(rows), cfg)
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

    def _candidates(self, rows: list[dict]) -> list[Candidate]:
        """Bands (S5): strong always, fading only when relevant, forgotten never."""
        cfg, decay = self.settings.retrieval, self.settings.decay
        now = datetime.now(UTC)
        out = []
        for row in rows:
            band = band_of(row["strength"], decay)
            vector = max(float(row["vector_sim"]), 0.0)
            if band is Band.forgotten or (band is not Band.strong and vector < cfg.fading_relevance_floor):
                continue
            out.append(
                Candidate(
                    id=row["id"],
                    strength=float(row["strength"]),
                    hours_since_access=(now - row["last_accessed_at"]).total_seconds() / 3600.0,
                    importance=row["importance"],
                    vector=vector,
                    methods={"vector"},
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
