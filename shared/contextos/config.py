"""Settings: one pydantic-settings model, read lazily through a cached accessor.

Every number the spec calls a default lives here, overridable by ``CONTEXTOS_*`` environment
variables (nested with ``__``, e.g. ``CONTEXTOS_RETRIEVAL__MAX_MEMORIES=30``). Nothing reads the
environment at import time.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

Dialect = Literal["postgres", "cockroach"]


DecayPolicyName = Literal["exponential", "weibull"]


class WeibullSettings(BaseModel):
    """S5 alternative policy: freshness = exp(−(days/η)^shape), η = base · min(1 + step·accesses, cap)."""

    shape: float = 0.8
    scale_base_days: float = 7.0
    scale_access_step: float = 0.5
    scale_cap: float = 5.0
    archive_below: float = 0.15


class DecaySettings(BaseModel):
    """S5 decay: the exponential policy (daily λ by importance, scaled per type), bands, reinforcement,
    and which policy (exponential or Weibull) each tenant uses."""

    rate_high_importance: float = 0.10  # importance 8-10
    rate_mid_importance: float = 0.15  # importance 5-7
    rate_low_importance: float = 0.20  # importance 1-4
    type_multipliers: dict[str, float] = Field(
        default_factory=lambda: {"fact": 0.5, "rule": 0.25, "preference": 0.75, "event": 1.5}
    )
    initial_strength: float = 1.0
    merge_boost: float = 0.3  # a key-match merge reinforces like an access
    reinforce_keep: float = 0.7  # S <- 0.7 S + 0.3
    band_strong: float = 0.70
    band_fading: float = 0.40
    band_forgotten: float = 0.10
    # Which policy new memories of a tenant decay by; a memory keeps the policy it was created with.
    policy: DecayPolicyName = "exponential"
    tenant_policies: dict[str, DecayPolicyName] = Field(default_factory=dict)  # tenant id -> policy
    weibull: WeibullSettings = Field(default_factory=WeibullSettings)

    def policy_for(self, tenant_id: str) -> DecayPolicyName:
        return self.tenant_policies.get(tenant_id, self.policy)

    def forgotten_below(self, policy: str) -> float:
        """The strength under which a memory is forgotten (and archived): per policy."""
        return self.weibull.archive_below if policy == "weibull" else self.band_forgotten


class LifecycleSettings(BaseModel):
    """S5 scan and cold storage knobs."""

    batch_size: int = 5000  # memories per keyset batch (one transaction each)
    archive_batch_size: int = 500  # memories per cold object (one S3 PUT, one transaction)
    superseded_archive_after_days: float = 30.0  # superseded this long ago: moved to cold storage
    scratch_ttl_hours: float = 24.0  # scratch memories without their own expires_at live this long
    cold_prefix: str = "cold/"
    reactivation_cosine: float = 0.80  # a cold stub this close to a query comes back
    reactivation_strength: float = 0.5
    reactivation_max_per_query: int = 3
    max_reminders_listed: int = 200


class StandardRecipe(BaseModel):
    """S6.4: relevance = 0.4·semantic + 0.3·strength + 0.3·recency, semantic = 0.5·vector +
    0.3·text + 0.2·graph."""

    kind: Literal["standard"] = "standard"
    weight_semantic: float = 0.4
    weight_strength: float = 0.3
    weight_recency: float = 0.3
    semantic_vector: float = 0.5
    semantic_text: float = 0.3
    semantic_graph: float = 0.2


class SignalWeights(BaseModel):
    """Weights of the six signals of the intent-adaptive recipe."""

    semantic: float
    bm25: float
    graph: float
    recency: float
    importance: float
    frequency: float


class IntentAdaptiveRecipe(BaseModel):
    """S6.4's second profile: six signals weighted per query intent."""

    kind: Literal["intent_adaptive"] = "intent_adaptive"
    profiles: dict[str, SignalWeights] = Field(
        default_factory=lambda: {
            "debug": SignalWeights(semantic=0.20, bm25=0.30, graph=0.30, recency=0.10, importance=0.05, frequency=0.05),
            "brainstorm": SignalWeights(
                semantic=0.30, bm25=0.05, graph=0.05, recency=0.25, importance=0.30, frequency=0.05
            ),
            "default": SignalWeights(
                semantic=0.30, bm25=0.15, graph=0.10, recency=0.15, importance=0.20, frequency=0.10
            ),
        }
    )
    frequency_saturation: int = 20  # access count at which the frequency signal reaches 1


Recipe = Annotated[StandardRecipe | IntentAdaptiveRecipe, Field(discriminator="kind")]


class RetrievalSettings(BaseModel):
    """S6 knobs: recipes (weights as data), budgets and search breadth."""

    recipes: dict[str, Recipe] = Field(
        default_factory=lambda: {"standard": StandardRecipe(), "intent_adaptive": IntentAdaptiveRecipe()}
    )
    default_recipe: str = "standard"

    vector_k: int = 20
    text_k: int = 10  # per key phrase
    text_match_cap: int = 500  # matches ranked per query form of a phrase (bounds broad phrases)
    graph_seeds: int = 10  # top hits of each of the vector and text searches that seed the walk
    graph_hops: int = 2
    graph_fall: float = 0.5  # weight multiplier per hop (times the edge's own weight)
    graph_shared_source_weight: float = 0.3  # implicit edge: two memories from one document/session
    graph_k: int = 20
    hnsw_ef_search: int = 100
    exact_scan_max_rows: int = 20_000  # below this many hot rows in scope, scan exactly (FIELD-NOTES)
    recency_rate_per_hour: float = 0.1
    multi_method_bonus: float = 0.05
    softmax_temperature: float = 0.1
    fading_relevance_floor: float = 0.35  # fading memories need at least this vector similarity
    max_memories: int = 20
    max_share_per_source: float = 0.6
    token_budget: int = 1500
    l2_excerpts: int = 2  # source excerpts shown under an L2 memory
    l2_excerpt_chars: int = 300

    def recipe(self, name: str | None) -> StandardRecipe | IntentAdaptiveRecipe:
        """The named recipe (the default when None); an unknown name is a clear error."""
        key = name or self.default_recipe
        if key not in self.recipes:
            raise KeyError(key)
        return self.recipes[key]


class ExtractionSettings(BaseModel):
    """S4 step 3-4 knobs for the extractor and validation."""

    window_tokens: int = 12_000
    max_calls_per_document: int = 40  # beyond this a document fails with a clear reason
    max_concepts_per_call: int = 12
    min_definition_chars: int = 30
    generic_modifiers: list[str] = Field(
        default_factory=lambda: [
            "system",
            "approach",
            "method",
            "methods",
            "technique",
            "framework",
            "model",
            "process",
            "strategy",
            "concept",
            "mechanism",
        ]
    )


class MergeSettings(BaseModel):
    """S4 step 7: when a new concept joins an existing memory instead of creating one."""

    near_duplicate_cosine: float = 0.93  # nearest memory of the same type at or above this merges
    settle_batch: int = 200  # fresh vectors moved into the ANN index after each document
    related_edge_weight: float = 0.5
    related_edge_step: float = 0.25


class BedrockSettings(BaseModel):
    """Model ids for the Bedrock adapters."""

    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    embedding_dimensions: int = 1024
    extractor_model_id: str = "amazon.nova-pro-v1:0"
    judge_model_id: str = "amazon.nova-pro-v1:0"
    max_tokens: int = 4096


class Settings(BaseSettings):
    """All of ContextOS's configuration."""

    model_config = SettingsConfigDict(env_prefix="CONTEXTOS_", env_nested_delimiter="__", extra="ignore")

    # Database: an explicit URL, a Secrets Manager secret (in AWS), or the embedded default.
    database_url: str | None = None
    database_secret_arn: str | None = None
    database_host: str | None = None  # e.g. the RDS Proxy endpoint, preferred over the secret's host
    database_name: str | None = None
    database_dialect: Dialect = "postgres"
    data_dir: Path = Path(".contextos")
    pool_min_size: int = 1
    pool_max_size: int = 8
    secret_max_age_s: int = 300

    # AWS resources (moto in the local stack and the tests).
    region: str = "us-east-1"
    upload_bucket: str = "contextos-uploads"
    upload_prefix: str = "uploads/"
    raw_bucket: str | None = None  # defaults to the upload bucket
    raw_prefix: str = "raw/"
    cold_bucket: str = "contextos-cold"
    ingest_queue_url: str | None = None
    local_queue_prefix: str = "contextos"  # queue names in the local stack's moto
    conversation_queue_url: str | None = None

    # Models.
    embedder: Literal["local", "bedrock"] = "local"
    extractor: Literal["local", "bedrock"] = "local"
    judge: Literal["local", "bedrock"] = "local"
    bedrock: BedrockSettings = Field(default_factory=BedrockSettings)

    # Documents.
    max_document_bytes: int = 20 * 1024 * 1024
    inline_text_max_bytes: int = 256 * 1024

    decay: DecaySettings = Field(default_factory=DecaySettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    merge: MergeSettings = Field(default_factory=MergeSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)

    @property
    def raw_bucket_name(self) -> str:
        return self.raw_bucket or self.upload_bucket

    @property
    def embedding_dimensions(self) -> int:
        """The vector column's dimension follows the configured embedder (S1)."""
        return self.bedrock.embedding_dimensions if self.embedder == "bedrock" else 384


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    return Settings()


def reset_settings() -> None:
    """Forget cached settings (tests and the local stack change the environment)."""
    get_settings.cache_clear()
