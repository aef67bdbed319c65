"""The S6.4 scoring formula, softmax and tie-breaks. Pure: candidates in, ranked breakdowns out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextos.config import IntentAdaptiveRecipe, RetrievalSettings, StandardRecipe
from contextos.decay import recency
from contextos.models import ScoreBreakdown


@dataclass(slots=True)
class Candidate:
    """One memory as the searches found it, before scoring."""

    id: object
    strength: float
    hours_since_access: float
    importance: int
    access_count: int = 0
    vector: float = 0.0
    text: float = 0.0
    graph: float = 0.0
    methods: set[str] = field(default_factory=set)
    payload: object = None
    trust: float = 0.0  # composite trust (S7): reported, never weighted


@dataclass(slots=True)
class Ranked:
    candidate: Candidate
    score: ScoreBreakdown


def score_candidate(
    c: Candidate,
    cfg: RetrievalSettings,
    recipe: StandardRecipe | IntentAdaptiveRecipe | None = None,
    intent: str = "default",
) -> ScoreBreakdown:
    """One candidate's relevance under a recipe, with every component reported."""
    recipe = recipe or cfg.recipe(None)
    rec = recency(c.hours_since_access, cfg.recency_rate_per_hour)
    bonus = cfg.multi_method_bonus * max(len(c.methods) - 1, 0)
    if isinstance(recipe, IntentAdaptiveRecipe):
        w = recipe.profiles.get(intent) or recipe.profiles["default"]
        importance = c.importance / 10.0
        frequency = min(1.0, math.log1p(c.access_count) / math.log1p(recipe.frequency_saturation))
        relevance = (
            w.semantic * c.vector
            + w.bm25 * c.text
            + w.graph * c.graph
            + w.recency * rec
            + w.importance * importance
            + w.frequency * frequency
        )
        semantic = c.vector
    else:
        semantic = recipe.semantic_vector * c.vector + recipe.semantic_text * c.text + recipe.semantic_graph * c.graph
        relevance = (
            recipe.weight_semantic * semantic + recipe.weight_strength * c.strength + recipe.weight_recency * rec
        )
        importance = frequency = 0.0
    return ScoreBreakdown(
        vector=c.vector,
        text=c.text,
        graph=c.graph,
        semantic=semantic,
        strength=c.strength,
        recency=rec,
        importance=importance,
        frequency=frequency,
        bonus=bonus,
        relevance=relevance + bonus,
        methods=sorted(c.methods),
        recipe=recipe.kind,
        trust=c.trust,
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


def rank(
    candidates: Sequence[Candidate],
    cfg: RetrievalSettings,
    recipe: StandardRecipe | IntentAdaptiveRecipe | None = None,
    intent: str = "default",
) -> list[Ranked]:
    """Score, softmax-normalize and sort; ties by strength, then recency, then importance."""
    ranked = [Ranked(c, score_candidate(c, cfg, recipe, intent)) for c in candidates]
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
