"""Models of governance (S7, S3): held candidates, review decisions, history and the audit chain."""

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field

from contextos.modelbase import JSON_INTEGER, BaseModel
from contextos.models import MemoryCandidate, MemoryType, Provenance, StoreResult
from contextos.redaction import RedactionPolicy
from contextos.scopes import Scope


class HeldCandidate(BaseModel):
    """A candidate the trust gate kept out of memory: it waits in the review queue."""

    candidate: MemoryCandidate
    trust: float
    reason: str
    signals: list[str] = Field(default_factory=list)


class ReviewItem(BaseModel):
    """``GET /v1/review``: one held candidate (its text is shown to the reviewing user only)."""

    id: UUID
    label: str
    definition: str
    type: str
    provenance: str
    trust: float
    reason: str
    signals: list[str] = Field(default_factory=list)
    document_id: UUID | None = None
    session_id: str | None = None
    status: Literal["pending", "promoted", "rejected"]
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_reason: str | None = None
    created_at: datetime


class ReviewPage(BaseModel):
    items: list[ReviewItem]
    next_cursor: str | None = None


class ReviewDecision(BaseModel):
    """``POST /v1/review/{id}/promote`` and ``/reject``: who decides is the credential; why is this."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=3, max_length=2000)


class ReviewOutcome(BaseModel):
    id: UUID
    status: Literal["promoted", "rejected"]
    memory_ids: list[UUID] = Field(default_factory=list)
    store: StoreResult | None = None


class MemoryCreate(BaseModel):
    """``POST /v1/memories``: a memory written by hand; the provenance is capped by the credential."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=200)
    definition: str = Field(min_length=1, max_length=8000)
    type: MemoryType = MemoryType.fact
    importance: Annotated[int, Field(ge=1, le=10), JSON_INTEGER] = 5
    provenance: Provenance | None = Field(
        default=None, description="Where it came from; defaults to (and is capped by) the credential's ceiling."
    )
    user_id: str | None = Field(default=None, min_length=1, max_length=200)
    agent_id: str | None = Field(default=None, min_length=1, max_length=200)
    run_id: str | None = Field(default=None, min_length=1, max_length=200)
    tags: list[str] = Field(default_factory=list, max_length=50)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def scope(self) -> Scope:
        return Scope(
            user_id=self.user_id, agent_id=self.agent_id, run_id=self.run_id, tags=self.tags, metadata=self.metadata
        )


class MemoryAdmission(BaseModel):
    """What became of a manual memory: admitted (a new memory, or one that superseded an older
    one), merged (it restated a memory already known: ``memory_id`` is the memory it joined), or held
    for review (``review_id``)."""

    status: Literal["admitted", "merged", "held"]
    memory_id: UUID | None = None
    review_id: UUID | None = None
    provenance: Provenance
    trust: float
    superseded: list[UUID] = Field(default_factory=list)
    corroborated: list[UUID] = Field(default_factory=list)


class MemoryVersion(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: UUID
    label: str
    definition: str
    state: str
    provenance: str
    base_trust: float
    valid_from: datetime
    valid_to: datetime | None = None
    recorded_at: datetime
    superseded_at: datetime | None = None
    superseded_by: UUID | None = None
    ingest_seq: int


class AuditEntry(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    chain_seq: int | None
    at: datetime
    actor: str
    action: str
    memory_id: UUID | None = None
    reason: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class MemoryHistory(BaseModel):
    """``GET /v1/memories/{id}/history``: the supersession chain, oldest first, with its audit trail."""

    memory_id: UUID
    versions: list[MemoryVersion]
    events: list[AuditEntry]


class AuditPage(BaseModel):
    entries: list[AuditEntry]
    next_cursor: str | None = None


class ChainProblem(BaseModel):
    chain_seq: int | None
    kind: Literal["edited", "missing", "reordered", "inserted", "unchained", "head_mismatch"]
    detail: str


class ChainReport(BaseModel):
    """``contextos audit verify``: one tenant's chain, intact or with where it breaks."""

    tenant_id: str
    entries: int
    ok: bool
    head_seq: int | None = None
    problems: list[ChainProblem] = Field(default_factory=list)


class PrivacySettings(BaseModel):
    """A tenant's write-firewall policy (S7): ``redact`` (the default) stores typed placeholders,
    ``hold`` also sends what carried a secret to the review queue, ``reject`` refuses it with
    ``contains_secret``."""

    model_config = ConfigDict(extra="forbid")

    redaction_policy: RedactionPolicy = RedactionPolicy.redact
