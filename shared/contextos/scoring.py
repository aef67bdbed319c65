"""The S6.4 scoring formula, softmax and tie-breaks. Pure: candidates in, ranked breakdowns out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextos.config import RetrievalSettings
from contextos.decay import recency
from contextos.models import ScoreBreakdown


@dataclass(slots=True)
class Candidate:
    """One memory as the searches found it, before scoring."""

    id: object
    strength: float
    hours_since_access: float
    importance: int
    vector: float = 0.0
    text: float = 0.0
    graph: float = 0.0
    methods: set[str] = field(default_factory=set)
    payload: object = None


@dataclass(slots=True)
class Ranked:
    candidate: Candidate
    score: ScoreBreakdown


def score_candidate(c: Candidate, cfg: RetrievalSettings) -> ScoreBreakdown:
    """relevance = 0.4·semantic + 0.3·strength + 0.3·recency (+ multi-method bonus)."""
    semantic = cfg.semantic_vector * c.vector + cfg.semantic_text * c.text + cfg.semantic_graph * c.graph
    rec = recency(c.hours_since_access, cfg.recency_rate_per_hour)
    bonus = cfg.multi_method_bonus * max(len(c.methods) - 1, 0)
    relevance = cfg.weight_semantic * semantic + cfg.weight_strength * c.strength + cfg.weight_recency * rec
    return ScoreBreakdown(
        vector=c.vector,
        text=c.text,
        graph=c.graph,
        semantic=semantic,
        strength=c.strength,
        recency=rec,
        bonus=bonus,
        relevance=relevance + bonus,
        methods=sorted(c.methods),
    )


def softmax(values: Sequence[float], temperature: float) -> list[float]:
    """Numerically stable softmax; a lower temperature sharpens the distribution."""
    if not values:
        return []
    t = max(temperature, 1e-6)
    top = max(values)
    exps = [math.exp((v - top) / t) for v in values]
    total = sum(exps)
    return [e / total for e in exps]


def rank(candidates: Sequence[Candidate], cfg: RetrievalSettings) -> list[Ranked]:
    """Score, softmax-normalize and sort; ties by strength, then recency, then importance."""
    ranked = [Ranked(c, score_candidate(c, cfg)) for c in candidates]
    probabilities = softmax([r.score.relevance for r in ranked], cfg.softmax_temperature)
    for r, p in zip(ranked, probabilities, strict=True):
        r.score.probability = p
    ranked.sort(
        key=lambda r: (
            -round(r.score.relevance, 12),
            -r.score.strength,
            -r.score.recency,
            -r.candidate.importance,
        )
    )
    return ranked
