"""S9 reports: the health score as a pure function of its inputs, and the report models.

Pure (no database, no AWS): the store gathers the inputs in set-based SQL, this module turns
them into a 0-100 score with every component, its definition and its inputs reported, so a
number on a dashboard can always be traced back to the rows behind it.
"""

import math
from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import Field

from contextos.config import ReportSettings
from contextos.modelbase import BaseModel


class HealthInputs(BaseModel):
    """What the store counted for one tenant (active hot memories unless said otherwise)."""

    active_memories: int = 0
    used_memories: int = 0  # active memories injected into a context within the window
    queries: int = 0  # context_log rows within the window
    mean_utilization: float | None = None  # mean of tokens_used / budget per query (each capped at 1)
    mean_strength: float | None = None  # mean current strength
    type_counts: dict[str, int] = Field(default_factory=dict)
    flagged_memories: int | None = None  # active memories the latest governance report flagged; None = no report


class HealthComponent(BaseModel):
    name: str
    weight: float
    score: float | None = Field(description="0-1; null when there is nothing to measure yet")
    definition: str
    inputs: dict[str, float | int | dict[str, int] | None]


class ConversationCounts(BaseModel):
    open_sessions: int = 0
    unflushed_messages: int = 0  # buffered messages past a session's flushed_through


class MemoryCounts(BaseModel):
    active_hot: int = 0
    active_cold: int = 0
    superseded: int = 0
    archived: int = 0
    bands: dict[str, int] = Field(default_factory=dict)  # active hot memories by current band
    types: dict[str, int] = Field(default_factory=dict)  # active hot memories by type
    pending_reviews: int = 0
    open_reminders: int = 0


class HealthReport(BaseModel):
    """``GET /v1/health``: the score, each weighted component with its inputs, and the counts."""

    score: float | None = Field(description="0-100, over the components that have data; null for an empty store")
    components: list[HealthComponent]
    window_days: int
    memories: MemoryCounts
    conversation: ConversationCounts
    governance_report_at: datetime | None = None  # the report cleanliness was measured against
    computed_at: datetime


def efficiency_score(utilization: float, cfg: ReportSettings) -> float:
    """Full marks inside the ideal band; linear to 0 below it; linear to ``efficiency_score_at_full``
    between the band's top and a budget used to the last token (a full budget means trimmed context)."""
    u = min(max(utilization, 0.0), 1.0)
    low, high = cfg.efficiency_ideal_low, cfg.efficiency_ideal_high
    if u < low:
        return u / low if low > 0 else 1.0
    if u <= high or high >= 1.0:
        return 1.0
    return 1.0 - (1.0 - cfg.efficiency_score_at_full) * (u - high) / (1.0 - high)


def type_balance(type_counts: dict[str, int], cfg: ReportSettings) -> float | None:
    """Normalized Shannon entropy of the type distribution: H / ln(K), K = max(configured types,
    types present). 1 = evenly spread over every type, 0 = a single type."""
    total = sum(n for n in type_counts.values() if n > 0)
    if total == 0:
        return None
    k = max(len(cfg.balance_types), sum(1 for n in type_counts.values() if n > 0))
    if k < 2:
        return 0.0
    entropy = -sum((n / total) * math.log(n / total) for n in type_counts.values() if n > 0)
    return entropy / math.log(k)


def health_components(inputs: HealthInputs, cfg: ReportSettings) -> list[HealthComponent]:
    """The five S9 components, each 0-1 (or None when it has nothing to measure)."""
    n = inputs.active_memories
    coverage = inputs.used_memories / n if n else None
    efficiency = (
        efficiency_score(inputs.mean_utilization, cfg)
        if inputs.queries and inputs.mean_utilization is not None
        else None
    )
    freshness = min(max(inputs.mean_strength, 0.0), 1.0) if n and inputs.mean_strength is not None else None
    balance = type_balance(inputs.type_counts, cfg)
    cleanliness = 1.0 - min(inputs.flagged_memories, n) / n if n and inputs.flagged_memories is not None else None
    days = cfg.window_days
    return [
        HealthComponent(
            name="coverage",
            weight=cfg.weight_coverage,
            score=coverage,
            definition=f"share of active hot memories injected into at least one context in the last {days} days",
            inputs={"active_memories": n, "used_memories": inputs.used_memories},
        ),
        HealthComponent(
            name="efficiency",
            weight=cfg.weight_efficiency,
            score=efficiency,
            definition=(
                f"mean tokens used / budget per context query in the last {days} days: 1 inside "
                f"[{cfg.efficiency_ideal_low}, {cfg.efficiency_ideal_high}], linear to 0 below, linear to "
                f"{cfg.efficiency_score_at_full} at a full budget"
            ),
            inputs={"queries": inputs.queries, "mean_utilization": inputs.mean_utilization},
        ),
        HealthComponent(
            name="freshness",
            weight=cfg.weight_freshness,
            score=freshness,
            definition="mean current strength of active hot memories",
            inputs={"active_memories": n, "mean_strength": inputs.mean_strength},
        ),
        HealthComponent(
            name="balance",
            weight=cfg.weight_balance,
            score=balance,
            definition="Shannon entropy of the type distribution / ln(max(configured types, types present))",
            inputs={"types": dict(inputs.type_counts)},
        ),
        HealthComponent(
            name="cleanliness",
            weight=cfg.weight_cleanliness,
            score=cleanliness,
            definition="share of active hot memories not flagged by the latest governance report",
            inputs={"active_memories": n, "flagged_memories": inputs.flagged_memories},
        ),
    ]


def health_score(components: list[HealthComponent]) -> float | None:
    """100 × the weighted mean of the components that have data (weights renormalized over them)."""
    measured = [c for c in components if c.score is not None and c.weight > 0]
    total_weight = sum(c.weight for c in measured)
    if not total_weight:
        return None
    return round(100.0 * sum(c.weight * (c.score or 0.0) for c in measured) / total_weight, 2)


# -- governance report -----------------------------------------------------------------------


class MemoryRef(BaseModel):
    id: UUID
    label: str
    type: str
    importance: int


class DecayCandidate(MemoryRef):
    strength: float
    last_accessed_at: datetime


class ConflictCandidate(BaseModel):
    a: MemoryRef
    b: MemoryRef
    found_by: Literal["contradicts_edge", "judge"]
    similarity: float | None = None
    confidence: float | None = None
    reason: str


class ConsolidationCluster(BaseModel):
    """Near duplicates that could become one memory; ``keep`` is the suggested survivor."""

    members: list[MemoryRef]
    keep: UUID
    min_similarity: float
    max_similarity: float
    verified: bool = Field(description="the judge saw every pair and found no contradiction (false: over its budget)")


class GodNode(MemoryRef):
    degree: int


class Community(BaseModel):
    id: int
    size: int
    sample_labels: list[str]


class DecaySection(BaseModel):
    total: int
    items: list[DecayCandidate]


class ConflictSection(BaseModel):
    total: int
    pairs_judged: int
    judge_failures: int = 0  # pairs the judge could not answer (a transient failure ends judging for the run)
    items: list[ConflictCandidate]


class ConsolidationSection(BaseModel):
    total: int
    near_duplicate_pairs: int
    items: list[ConsolidationCluster]


class GodNodeSection(BaseModel):
    total: int
    items: list[GodNode]


class CommunitySection(BaseModel):
    total: int
    memories_in_communities: int
    explicit_edges: int
    implicit_edges: int
    edges_used: int
    truncated: bool = Field(description="more edges than community_max_edges: only the heaviest were used")
    modularity: float | None
    items: list[Community]


class GovernanceReport(BaseModel):
    """``GET /v1/governance``: what the daily job found for one tenant."""

    id: UUID | None = None
    computed_at: datetime
    trigger: Literal["schedule", "on_demand", "cli"]
    decay_candidates: DecaySection
    conflict_candidates: ConflictSection
    consolidation: ConsolidationSection
    god_nodes: GodNodeSection
    communities: CommunitySection
    flagged_memories: int
    thresholds: dict[str, float | int | bool]
    elapsed_s: float


class GovernanceRunReport(BaseModel):
    """What one run of the daily job did over every tenant."""

    tenants: int = 0
    reports: int = 0
    failed: list[str] = Field(default_factory=list)
    elapsed_s: float = 0.0
