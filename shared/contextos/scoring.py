"""The S6.4 scoring formula, softmax and tie-breaks. Pure: candidates in, ranked breakdowns out."""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from contextos.config import FusionRecipe, IntentAdaptiveRecipe, RelevanceRecipe, RetrievalSettings, StandardRecipe
from contextos.decay import recency
from contextos.evidence import stems
from contextos.models import ScoreBreakdown
from contextos.normalization import is_verbatim_key, turn_words

AnyRecipe = StandardRecipe | IntentAdaptiveRecipe | FusionRecipe | RelevanceRecipe


@dataclass(slots=True)
class Candidate:
    """One memory as the searches found it, before scoring."""

    id: UUID
    strength: float
    hours_since_access: float
    importance: int
    access_count: int = 0
    vector: float = 0.0
    text: float = 0.0
    graph: float = 0.0
    methods: set[str] = field(default_factory=set)
    community: float = 0.0  # 1 when it shares an S9 community with a top hit
    payload: dict[str, Any] = field(default_factory=dict)  # the store's row the candidate came from
    trust: float = 0.0  # composite trust (S7): reported, never weighted
    bm25: float = 0.0  # the raw BM25 score (the tenant's statistics), before division by the query's best


@dataclass(slots=True)
class Score:
    """A candidate's score with every component, as `ScoreBreakdown` reports it. A plain slots
    record: the read path scores ~60 candidates per query and returns at most ~20, and building
    the pydantic model for each of them was most of its Python time; `breakdown` builds it for the
    returned ones only."""

    vector: float
    text: float
    graph: float
    semantic: float
    bm25: float
    strength: float
    recency: float
    importance: float
    frequency: float
    bonus: float
    relevance: float
    methods: list[str]
    recipe: str
    trust: float
    probability: float = 0.0
    calibrated: float = 0.0  # `calibrated_relevance`: comparable across queries and tenants

    def breakdown(self) -> ScoreBreakdown:
        return ScoreBreakdown.model_validate(self.fields())

    def fields(self) -> dict[str, Any]:
        """The breakdown's fields, for a model validated from them (pydantic-core validates a dict
        ~3x faster than `model_construct` builds one in Python)."""
        return {
            "vector": self.vector,
            "text": self.text,
            "bm25": self.bm25,
            "graph": self.graph,
            "semantic": self.semantic,
            "strength": self.strength,
            "recency": self.recency,
            "importance": self.importance,
            "frequency": self.frequency,
            "bonus": self.bonus,
            "relevance": self.relevance,
            "probability": self.probability,
            "methods": self.methods,
            "recipe": self.recipe,
            "trust": self.trust,
        }


@dataclass(slots=True)
class Ranked:
    candidate: Candidate
    score: Score


def score_candidate(
    c: Candidate,
    cfg: RetrievalSettings,
    recipe: AnyRecipe | None = None,
    intent: str = "default",
    fused: float = 0.0,
) -> Score:
    """One candidate's relevance under a recipe, with every component reported. ``fused`` is the
    candidate's pool-level semantic score (`fused_semantic`, `pooled_semantic`), read by the fusion
    and relevance recipes only."""
    recipe = recipe or cfg.recipe(None)
    rec = recency(c.hours_since_access, cfg.recency_rate_per_hour)
    # Fusion already rewards a memory every search ranks high: no separate multi-method bonus.
    fusing = isinstance(recipe, FusionRecipe | RelevanceRecipe)
    bonus = 0.0 if fusing else cfg.multi_method_bonus * max(len(c.methods) - 1, 0)
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
    elif isinstance(recipe, RelevanceRecipe):
        semantic = fused
        fresh = recipe.fresh_strength * c.strength + (1.0 - recipe.fresh_strength) * rec
        relevance = semantic * (1.0 - recipe.gate + recipe.gate * fresh)
        importance = frequency = 0.0
    elif isinstance(recipe, FusionRecipe):
        semantic = fused
        relevance = (
            recipe.weight_semantic * semantic + recipe.weight_strength * c.strength + recipe.weight_recency * rec
        )
        importance = frequency = 0.0
    else:
        semantic = recipe.semantic_vector * c.vector + recipe.semantic_text * c.text + recipe.semantic_graph * c.graph
        relevance = (
            recipe.weight_semantic * semantic + recipe.weight_strength * c.strength + recipe.weight_recency * rec
        )
        importance = frequency = 0.0
    return Score(
        vector=c.vector,
        text=c.text,
        graph=c.graph,
        semantic=semantic,
        bm25=c.bm25,
        strength=c.strength,
        recency=rec,
        importance=importance,
        frequency=frequency,
        bonus=bonus,
        relevance=relevance + bonus,
        methods=sorted(c.methods),
        recipe=recipe.kind,
        trust=c.trust,
        calibrated=calibrated_relevance(c.vector, c.bm25, cfg),
    )


def calibrated_relevance(cosine: float, bm25: float, cfg: RetrievalSettings) -> float:
    """A memory's relevance in [0, 1] from its absolute evidence: a logistic of its cosine to the
    query and log(1 + its raw BM25 score). Neither is divided by the query's best candidate, so an
    unrelated query's best match scores as low as it is, and a value means the same in any query
    and tenant (the BM25 idf is the tenant's own)."""
    z = cfg.relevance_intercept + cfg.relevance_cosine * max(cosine, 0.0) + cfg.relevance_bm25 * math.log1p(bm25)
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def answer_bar(memories: int, cfg: RetrievalSettings) -> float:
    """The calibrated relevance a query's best candidate must reach for the query to be answered
    in a tenant of ``memories`` (hot and cold): odds of ``exp(abstain_log_odds)`` at the reference size, growing
    as ``(N / reference) ** slope`` (a Bonferroni-like bar: the more memories, the likelier that the
    best of them matches an unrelated question by chance), and never below ``abstain_min_relevance``."""
    size = max(memories, 1) / max(cfg.abstain_size_reference, 1)
    z = cfg.abstain_log_odds + cfg.abstain_size_slope * math.log(size)
    return max(1.0 / (1.0 + math.exp(-z)), cfg.abstain_min_relevance)


def softmax(values: Sequence[float], temperature: float) -> list[float]:
    """Numerically stable softmax; a lower temperature sharpens the distribution."""
    if not values:
        return []
    t = max(temperature, 1e-6)
    top = max(values)
    exps = [math.exp((v - top) / t) for v in values]
    total = sum(exps)
    return [e / total for e in exps]


def fused_semantic(candidates: Sequence[Candidate], recipe: FusionRecipe) -> list[float]:
    """Per candidate, Σ wₘ/(k + rankₘ) over the searches that scored it, divided by Σ wₘ/(k + 1)
    so a candidate every search ranks first scores 1. Tied scores share a rank (1 + how many
    scored strictly higher): a saturated text match or a shared-session link says nothing about
    which of the tied memories is better, so an arbitrary order must not become a score."""
    weights = {"vector": recipe.semantic_vector, "text": recipe.semantic_text, "graph": recipe.semantic_graph}
    fused = [0.0] * len(candidates)
    for method, weight in weights.items():
        if weight <= 0:
            continue
        descending = sorted(-getattr(c, method) for c in candidates if getattr(c, method) > 0)
        for i, c in enumerate(candidates):
            value = getattr(c, method)
            if value > 0:
                fused[i] += weight / (recipe.rrf_k + 1 + bisect_left(descending, -value))
    best = sum(w / (recipe.rrf_k + 1) for w in weights.values() if w > 0) or 1.0
    return [f / best for f in fused]


def pooled_semantic(candidates: Sequence[Candidate], recipe: RelevanceRecipe) -> list[float]:
    """Per candidate, Σ wₘ · scoreₘ / maxₘ over the searches, each search's score divided by its best
    in this pool (a BM25 score has no fixed scale; a cosine's useful range moves per query)."""
    best_text = max((c.text for c in candidates), default=0.0) or 1.0
    best_vector = max((c.vector for c in candidates), default=0.0) or 1.0
    return [
        recipe.semantic_text * c.text / best_text
        + recipe.semantic_vector * c.vector / best_vector
        + recipe.semantic_graph * c.graph
        + recipe.semantic_community * c.community
        for c in candidates
    ]


def rank(
    candidates: Sequence[Candidate],
    cfg: RetrievalSettings,
    recipe: AnyRecipe | None = None,
    intent: str = "default",
    same_subject: Iterable[tuple[UUID, UUID]] = (),
    updates: Iterable[tuple[UUID, UUID]] = (),
) -> list[Ranked]:
    """Score, softmax-normalize and sort; ties by strength, then recency, then importance.
    ``updates`` holds (newer, older) pairs the contradiction gate linked (`updates_first`)."""
    if isinstance(recipe, FusionRecipe):
        fused = fused_semantic(candidates, recipe)
    elif isinstance(recipe, RelevanceRecipe):
        fused = pooled_semantic(candidates, recipe)
    else:
        fused = [0.0] * len(candidates)
    ranked = [Ranked(c, score_candidate(c, cfg, recipe, intent, f)) for c, f in zip(candidates, fused, strict=True)]
    if isinstance(recipe, RelevanceRecipe):
        fresher_first(ranked, recipe, same_subject)
    if cfg.correction_min_shared:
        corrections_first(ranked, cfg.correction_min_shared)
    updates_first(ranked, updates)
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


_DEFAULT_RELEVANCE = RelevanceRecipe()  # read only: the default relevance weights


def among_best_evidence(candidates: Sequence[Candidate], cfg: RetrievalSettings) -> list[Candidate]:
    """S5, forgetting demotes: strong memories are always candidates; a fading, critical or forgotten
    one stays only when it is among the query's best evidence by relevance alone, decided against
    the query's own candidates (at least ``demoted_relevance_share`` of the best pooled semantic
    score, `pooled_semantic` with the default relevance weights), and has some evidence of its
    own: a text match or a cosine of at least ``demoted_min_cosine``. So an unrelated query keeps
    none of them, whatever its best candidate."""
    semantic = pooled_semantic(candidates, _DEFAULT_RELEVANCE)
    best = max(semantic, default=0.0)
    keep = []
    for c, s in zip(candidates, semantic, strict=True):
        band = c.payload.get("band") if isinstance(c.payload, dict) else None
        if (
            band is None
            or band == "strong"
            or ((c.text > 0 or c.vector >= cfg.demoted_min_cosine) and s >= cfg.demoted_relevance_share * best)
        ):
            keep.append(c)
    return keep


def fresher_first(ranked: list[Ranked], recipe: RelevanceRecipe, same_subject: Iterable[tuple[UUID, UUID]]) -> None:
    """Two candidates about the same subject (``same_subject``: pairs of ids whose embeddings are at
    least ``same_subject_cosine`` apart), one clearly fresher: the older one is placed just below
    the fresher one unless it is more than ``same_subject_margin`` more relevant. Only such pairs
    move; memories about different things keep their order by relevance (S6.4: relevance gates)."""
    by_id = {r.candidate.id: r for r in ranked}
    lowered: dict[UUID, float] = {}
    for a, b in same_subject:
        if a not in by_id or b not in by_id:
            continue
        x, y = by_id[a], by_id[b]
        fresh, old = (x, y) if x.candidate.strength >= y.candidate.strength else (y, x)
        if (
            fresh.candidate.strength - old.candidate.strength >= recipe.same_subject_strength_gap
            and fresh.score.relevance < old.score.relevance <= fresh.score.relevance * (1 + recipe.same_subject_margin)
        ):
            below = fresh.score.relevance * (1 - 1e-6)
            lowered[old.candidate.id] = min(lowered.get(old.candidate.id, below), below)
    for memory_id, relevance in lowered.items():
        by_id[memory_id].score.relevance = relevance


# How people correct themselves in a chat ("actually make it the 16th", "we're pushing it a
# week", "so 10 it is, not 9"): broader than the contradiction gate's cue (`reports_a_change`),
# which writes a link; this one only orders a read, and hides nothing.
_CORRECTION = re.compile(
    r"\b(now|no longer|any ?more|instead|actually|after all|change of plans?|changed?|changing|moved?|moves"
    r"|moving|pushed|pushing|postponed|bumped|bumping|switched|switching|rebooked|rescheduled|replaced|raised"
    r"|lowered|increased|decreased|reduced|dropped|down to|up to|goes to|new date|took over|taking over"
    r"|taken over|update|updated|decided|not \w+ any ?more|not \$?\d[\w.,:]*|so \$?\d[\w.,:]* it is)\b"
)


def says_a_correction(words: str) -> bool:
    """Whether a turn's words carry a correction cue (`_CORRECTION`)."""
    return _CORRECTION.search(words.lower()) is not None


# The cue's single words as stems, for a cold stub, which keeps only its text's lexemes (the
# English stop words, "now", "no longer", "any more", are not among them).
_CORRECTION_STEMS = frozenset(stems(" ".join(cue for cue in _CORRECTION.pattern[3:-3].split("|") if cue.isalpha())))


def _says_a_correction(row: dict) -> bool:
    if row.get("cold"):
        return not _CORRECTION_STEMS.isdisjoint(_words(row))
    return says_a_correction(turn_words(row["definition"]))


def corrections_first(ranked: list[Ranked], min_shared: int) -> None:
    """A kept turn that says a correction ranks just above the best-ranked candidate said before
    it that shares at least ``min_shared`` content words with it: in a conversation, what was said
    later about the same thing is what holds now ("we changed our minds on 2am ... so 1am pacific"
    over "say 2am pacific"). Turns are taken oldest first, so a chain of corrections ends newest
    on top. Only such turns move; nothing is hidden."""

    def said(r: Ranked) -> Any:
        return r.candidate.payload.get("valid_from") if isinstance(r.candidate.payload, dict) else None

    turns = [
        r
        for r in ranked
        if isinstance(r.candidate.payload, dict)
        and is_verbatim_key(r.candidate.payload.get("norm_key") or "")
        and said(r) is not None
        and _says_a_correction(r.candidate.payload)
    ]
    if not turns:
        return
    words = {r.candidate.id: _words(r.candidate.payload) for r in ranked if isinstance(r.candidate.payload, dict)}
    for newer in sorted(turns, key=said):
        above = [
            r
            for r in ranked
            if r.score.relevance > newer.score.relevance
            and (when := said(r)) is not None
            and when < said(newer)
            and len(words.get(r.candidate.id, set()) & words[newer.candidate.id]) >= min_shared
        ]
        if above:
            top = max(r.score.relevance for r in above)
            newer.score.relevance = max(top * (1 + 1e-6), top + 1e-9)


def _words(row: dict) -> set[str]:
    """A candidate's content stems: of a turn's own words, or the lexemes a cold stub keeps of its
    text (PostgreSQL's English stems, the same Snowball stemmer)."""
    if row.get("cold"):  # the stub's lexemes are of its label too ("Turn 5 of plan-offsite-s2"): not said
        return set(row.get("lexemes") or []) - stems(row.get("label") or "")
    return stems(turn_words(row["definition"]))


def updates_first(ranked: list[Ranked], updates: Iterable[tuple[UUID, UUID]]) -> None:
    """A memory the contradiction gate found updated by a newer one (``updates``: (newer, older)
    pairs, the stored ``updated_by`` pointers) is placed just below its update when both are
    candidates and it would otherwise rank above it. Nothing else moves, and nothing is hidden: a
    question about the older state still finds the older memory, right after the newer one. A chain
    of updates keeps its order (newest first) when applied newest to oldest."""
    by_id = {r.candidate.id: r for r in ranked}
    pairs = [(by_id[n], by_id[o]) for n, o in updates if n in by_id and o in by_id and n != o]
    for _ in range(len(pairs)):  # a chain a → b → c settles in at most len(pairs) passes
        moved = False
        for newer, older in pairs:
            if older.score.relevance >= newer.score.relevance:
                older.score.relevance = newer.score.relevance * (1 - 1e-6)
                moved = True
        if not moved:
            break
