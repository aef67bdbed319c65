"""Domain models shared by every layer: pure pydantic, no AWS, no database driver."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, StrictBool, StrictFloat, model_validator
from pydantic.json_schema import SkipJsonSchema

from contextos.instants import Instant
from contextos.modelbase import BASE64_PATTERN, JSON_INTEGER, NOT_BLANK_PATTERN, BaseModel
from contextos.scopes import ScopeFilter


class MemoryType(StrEnum):
    problem = "problem"
    decision = "decision"
    fact = "fact"
    entity = "entity"
    event = "event"
    preference = "preference"
    code = "code"
    rule = "rule"
    skill = "skill"
    task = "task"
    context = "context"
    scratch = "scratch"


class Provenance(StrEnum):
    """Where a candidate came from (S7); base trust lives in configuration."""

    user_turn = "user_turn"
    user_upload = "user_upload"
    agent_turn = "agent_turn"
    tool_output = "tool_output"
    third_party = "third_party"
    external_doc = "external_doc"
    web_content = "web_content"


BASE_TRUST: dict[Provenance, float] = {
    Provenance.user_turn: 1.0,
    Provenance.user_upload: 0.9,
    Provenance.agent_turn: 0.7,
    Provenance.tool_output: 0.6,
    Provenance.third_party: 0.55,
    Provenance.external_doc: 0.4,
    Provenance.web_content: 0.3,
}


class DocumentStatus(StrEnum):
    queued = "queued"
    processing = "processing"
    done = "done"
    failed = "failed"


class Band(StrEnum):
    strong = "strong"
    fading = "fading"
    critical = "critical"
    forgotten = "forgotten"


class Concept(BaseModel):
    """One concept as an extractor returns it (S4 step 3)."""

    label: str
    definition: str
    type: str = "fact"
    importance: int = 5
    related: list[str] = Field(default_factory=list)
    # Who said it, when one source mixes speakers (S8: by speaker role); None = the source's own.
    provenance: Provenance | None = None
    # The source's own passages about it beyond the definition (the L2 tier, searchable as text).
    excerpts: list[str] = Field(default_factory=list)
    # What is kept verbatim (a turn, a document's passage) has a merge key of its own
    # (``normalization.is_verbatim_key``), set by the pipeline, never by an extractor; None = the
    # key of its label.
    key: str | None = Field(default=None, exclude=True)


class ValidationReport(BaseModel):
    """What validation accepted and why it rejected the rest (S4 step 4)."""

    accepted: list[Concept] = Field(default_factory=list)
    rejected: dict[str, int] = Field(default_factory=dict)
    dropped_related: int = 0

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


class ParsedDocument(BaseModel):
    text: str
    source_type: str
    domain: str
    title: str | None = None


class DocumentJob(BaseModel):
    """The ingest queue's own message: a document row already exists and waits for work."""

    kind: Literal["document"] = "document"
    tenant_id: str
    document_id: UUID


class DocumentRecord(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: UUID
    filename: str | None
    source_type: str | None
    domain: str | None
    provenance: str
    status: DocumentStatus
    error: str | None = None
    counts: dict[str, Any] = Field(default_factory=dict)
    content_hash: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)


class MemoryCandidate(BaseModel):
    """A validated concept with its embedding, ready for the store (S4 step 7)."""

    norm_key: str
    label: str
    definition: str
    type: str
    importance: int
    related_keys: list[str] = Field(default_factory=list)
    embedding: list[float]
    decay_rate: float
    provenance: Provenance
    base_trust: float
    excerpts: list[str] = Field(default_factory=list)  # the concept's source excerpts
    said_at: datetime | None = None  # when it was said: its strength anchor and valid_from; None = now


class StoreResult(BaseModel):
    created: int = 0
    merged: int = 0
    items: int = 0
    edges: int = 0
    memory_ids: list[UUID] = Field(default_factory=list)
    already_stored: bool = False  # the source was stored before (a redelivered conversation job)


class ScoreBreakdown(BaseModel):
    """Every component of a memory's score, so a context result can be inspected (S6.8)."""

    vector: float = 0.0
    text: float = 0.0  # BM25 divided by the query's best text match
    bm25: float = 0.0  # the raw BM25 score, which the calibrated relevance reads
    graph: float = 0.0
    semantic: float = 0.0
    strength: float = 0.0
    recency: float = 0.0
    importance: float = 0.0  # intent-adaptive recipe only
    frequency: float = 0.0  # intent-adaptive recipe only
    bonus: float = 0.0
    relevance: float = 0.0
    probability: float = 0.0
    methods: list[str] = Field(default_factory=list)
    recipe: str = "standard"
    trust: float = 0.0  # composite trust at read time (S7); reported, and a filter with min_trust


class PriorVersion(BaseModel):
    """A version a memory superseded (directly or down the chain), newest first."""

    id: UUID
    label: str
    definition: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None


class ScoredMemory(BaseModel):
    id: UUID
    label: str
    definition: str
    type: str
    importance: int
    band: Band
    tier_used: Literal["L0", "L1", "L2"] = "L1"
    source_ids: list[str] = Field(default_factory=list)
    excerpts: list[str] = Field(default_factory=list)  # L2: what the sources said
    always_load: bool = False
    score: ScoreBreakdown
    history: list[PriorVersion] = Field(default_factory=list)  # with include_history: what it superseded
    said_at: datetime | None = None  # a conversation memory's own time (when it was said), shown with it
    # calibrated: the same value means the same evidence in every query and tenant (S6 relevance floor)
    relevance: float = Field(default=0.0, ge=0.0, le=1.0)


class NearMiss(BaseModel):
    """A candidate a dry run shows as left out of the context, and why (S6, explain what was left out)."""

    id: UUID
    label: str
    relevance: float = Field(ge=0.0, le=1.0)  # calibrated, as on a returned memory
    score: float | None = None  # the recipe's ranking score; None when it was cut before ranking (band)
    reason: Literal["relevance_floor", "token_budget", "band", "source_cap", "max_memories"]


class Reactivation(BaseModel):
    """A cold memory that matched the query (S5): restored from cold storage, or in a dry run only
    listed (``restored`` false, nothing changed)."""

    id: UUID
    label: str
    similarity: float
    restored: bool


class ContextResult(BaseModel):
    query: str
    intent: str
    format: str
    context: str
    tokens_used: int
    token_budget: int
    dry_run: bool
    memories: list[ScoredMemory]
    index: list[str] = Field(default_factory=list)
    reactivated: list[Reactivation] = Field(default_factory=list)
    # nothing besides always_load memories and rules cleared the relevance floor
    abstained: bool = False
    left_out: list[NearMiss] = Field(default_factory=list)  # dry run only: the near misses, with the reason


class LifecycleReport(BaseModel):
    tenants: int = 0
    materialized: int = 0  # due memories whose strength, band and next transition were written
    changed_band: int = 0
    bands: dict[str, int] = Field(default_factory=dict)  # the band each changed memory entered
    reminders_opened: int = 0
    archived: int = 0
    expired: int = 0
    failed_tenants: list[str] = Field(default_factory=list)  # retried by the next scan
    stage_s: dict[str, float] = Field(default_factory=dict)  # seconds per stage, summed over tenants
    vectors_indexed: int = 0  # fresh vectors moved into the ANN index
    housekeeping: int = 0  # rows removed by housekeeping chores
    common_lexemes: int = 0  # words too common in large tenants to search by (S6.2), recounted
    vector_indexes_built: int = 0  # tenants that got an ANN index of their own
    vector_indexes_dropped: int = 0  # tenants that shrank below the line and lost it
    elapsed_s: float = 0.0


class DocumentCreate(BaseModel):
    """``POST /v1/documents``: text, or base64 bytes with a filename (S11)."""

    # Exactly one of the two contents, not blank: the schema says so and the model enforces it.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {"required": ["text"], "properties": {"content_base64": False}},
                {"required": ["content_base64"], "properties": {"text": False}},
            ]
        },
    )

    text: Annotated[str, Field(pattern=NOT_BLANK_PATTERN)] | SkipJsonSchema[None] = Field(
        default=None, description="Plain text or markdown."
    )
    content_base64: Annotated[str, Field(min_length=4, pattern=BASE64_PATTERN)] | SkipJsonSchema[None] = Field(
        default=None, description="The file's bytes, base64-encoded."
    )
    filename: str | None = Field(default=None, max_length=1024)
    content_type: str | None = Field(default=None, max_length=255)
    provenance: Provenance = Provenance.user_upload
    metadata: dict[str, Any] = Field(default_factory=dict)
    user_id: str | None = Field(default=None, min_length=1, max_length=200, description="Its memories belong to.")
    agent_id: str | None = Field(default=None, min_length=1, max_length=200)
    run_id: str | None = Field(default=None, min_length=1, max_length=200)
    tags: list[str] = Field(default_factory=list, max_length=50)

    @model_validator(mode="after")
    def _one_content(self) -> "DocumentCreate":
        given = [name for name in ("text", "content_base64") if name in self.model_fields_set]
        if len(given) != 1 or getattr(self, given[0]) is None:
            raise ValueError("give exactly one of 'text' or 'content_base64' (not null)")
        return self


class DocumentAccepted(BaseModel):
    id: UUID
    status: DocumentStatus
    duplicate: bool


class ContextRequest(BaseModel):
    """``POST /v1/context``."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=8000)
    max_memories: Annotated[int, Field(ge=1, le=200), JSON_INTEGER] | None = None
    token_budget: Annotated[int, Field(ge=16, le=200_000), JSON_INTEGER] | None = None
    format: Literal["markdown", "json", "plain"] = "markdown"
    dry_run: StrictBool = False
    session_id: str | None = Field(default=None, max_length=200)
    recipe: str | None = Field(default=None, max_length=100, description="A configured scoring recipe.")
    as_of: Instant | None = Field(
        default=None, description="Answer with what was believed at this time (bi-temporal history, S7)."
    )
    min_trust: StrictFloat | None = Field(
        default=None, ge=0.0, le=1.0, description="Leave out memories below this trust."
    )
    min_relevance: StrictFloat | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Leave out memories below this calibrated relevance (default: the configured floor; 0 cuts none).",
    )
    scope: ScopeFilter | None = Field(default=None, description="Only memories of this user/agent/run, tags, metadata.")
    include_history: StrictBool = Field(default=False, description="Show each memory's superseded versions (S6).")


class SearchRequest(BaseModel):
    """``POST /v1/search``: rank memories for a query, with no side effects."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=8000)
    limit: Annotated[int, Field(ge=1, le=200), JSON_INTEGER] = 20
    recipe: str | None = Field(default=None, max_length=100)
    as_of: Instant | None = Field(
        default=None, description="Answer with what was believed at this time (bi-temporal history, S7)."
    )
    min_trust: StrictFloat | None = Field(
        default=None, ge=0.0, le=1.0, description="Leave out memories below this trust."
    )
    scope: ScopeFilter | None = Field(default=None, description="Only memories of this user/agent/run, tags, metadata.")
    include_history: StrictBool = Field(default=False, description="Show each memory's superseded versions (S6).")


class SearchResult(BaseModel):
    query: str
    intent: str
    recipe: str
    memories: list[ScoredMemory]


class MemorySource(BaseModel):
    """One occurrence behind a memory: where it came from and what that source said."""

    model_config = ConfigDict(from_attributes=True)

    document_id: UUID | None = None
    filename: str | None = None
    session_id: str | None = None
    message_from: int | None = None  # the session's message range it came from
    message_to: int | None = None
    label: str
    definition: str
    importance: int
    created_at: datetime


class MemoryDetail(BaseModel):
    """``GET /v1/memories/{id}``: the memory, its exact current strength and all its sources."""

    id: UUID
    label: str
    definition: str
    type: str
    importance: int
    strength: float
    band: Band
    access_count: int
    last_accessed_at: datetime
    tier: str
    state: str
    provenance: str
    base_trust: float
    embedder_id: str
    created_at: datetime
    updated_at: datetime
    sources: list[MemorySource]
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    recorded_at: datetime | None = None
    superseded_at: datetime | None = None
    superseded_by: UUID | None = None
    always_load: bool = False
    protected: bool = False
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    version: int = 1


class MemorySummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: UUID
    label: str
    type: str
    importance: int
    state: str


class DocumentMemories(BaseModel):
    """``GET /v1/documents/{id}/memories``: everything a document taught."""

    document_id: UUID
    memories: list[MemorySummary]


class Reminder(BaseModel):
    """A memory that entered the critical band (S5), with its exact strength now."""

    model_config = ConfigDict(from_attributes=True)

    id: UUID
    memory_id: UUID
    label: str
    type: str
    strength_at_open: float
    strength: float
    tier: str
    state: str
    opened_at: datetime
    acknowledged_at: datetime | None = None


class ReminderPage(BaseModel):
    reminders: list[Reminder]
    next_cursor: str | None = None


class ReminderAcknowledged(BaseModel):
    id: UUID
    memory_id: UUID
    acknowledged_at: datetime
