"""The management API's models (S11): listing, editing, forgetting and restoring memories,
listing and forgetting documents, uploads, and the memory graph. Pure pydantic."""

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, StrictBool, model_validator
from pydantic.json_schema import SkipJsonSchema

from contextos.cursors import TIME_ID_CURSOR
from contextos.modelbase import JSON_INTEGER, NOT_SPACES_PATTERN, BaseModel
from contextos.models import Band, DocumentStatus, MemoryType
from contextos.scopes import ScopeFilter


class MemoryListQuery(ScopeFilter):
    """``GET /v1/memories``: every given filter must hold; newest first; cursor pagination."""

    band: Band | None = None
    type: MemoryType | None = None
    state: Literal["active", "superseded", "archived", "forgotten"] | None = None
    tier: Literal["hot", "cold"] | None = None
    prefix: str | None = Field(default=None, min_length=1, max_length=200, description="Label starts with this.")
    limit: int = Field(default=50, ge=1, le=500)
    cursor: str | None = Field(default=None, max_length=200, pattern=TIME_ID_CURSOR)


class MemoryListItem(BaseModel):
    id: UUID
    label: str
    definition: str
    type: str
    importance: int
    strength: float
    band: Band
    tier: str
    state: str
    provenance: str
    always_load: bool
    protected: bool
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    version: int
    created_at: datetime
    updated_at: datetime
    superseded_by: UUID | None = None
    forgotten_at: datetime | None = Field(default=None, description="set on a forgotten memory (restorable)")


class MemoryPage(BaseModel):
    memories: list[MemoryListItem]
    next_cursor: str | None = None


_NOT_CLEARABLE = ("label", "definition", "importance", "type", "always_load", "protected")


class MemoryPatch(BaseModel):
    """``PATCH /v1/memories/{id}``: only the fields given change. A protected memory refuses every
    edit unless ``unlock`` is true (unprotecting it is an edit too).

    ``null`` means "clear it" where a memory can be without the field (its owner scopes, tags,
    metadata); a memory always has a label, a definition, a type, an importance and its two flags,
    so ``null`` for those is a 422, as the schema says (they are not nullable in it)."""

    # at least one field to change (``unlock`` alone changes nothing): the schema says so
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": [name]} for name in (*_NOT_CLEARABLE, "tags", "metadata", "user_id", "agent_id", "run_id")
            ]
        },
    )

    label: Annotated[str, Field(min_length=1, max_length=200)] | SkipJsonSchema[None] = None
    definition: Annotated[str, Field(min_length=1, max_length=8000)] | SkipJsonSchema[None] = None
    importance: Annotated[int, Field(ge=1, le=10), JSON_INTEGER] | SkipJsonSchema[None] = None
    type: MemoryType | SkipJsonSchema[None] = None
    tags: list[str] | None = Field(default=None, max_length=50, description="null clears them")
    metadata: dict[str, Any] | None = Field(default=None, description="null clears it")
    always_load: StrictBool | SkipJsonSchema[None] = None
    protected: StrictBool | SkipJsonSchema[None] = None
    user_id: str | None = Field(default=None, min_length=1, max_length=200, description="null clears it")
    agent_id: str | None = Field(default=None, min_length=1, max_length=200, description="null clears it")
    run_id: str | None = Field(default=None, min_length=1, max_length=200, description="null clears it")
    unlock: StrictBool = Field(default=False, description="Required to edit a protected memory.")

    @model_validator(mode="after")
    def _required_fields_are_not_cleared(self) -> "MemoryPatch":
        cleared = sorted(
            name for name in _NOT_CLEARABLE if name in self.model_fields_set and getattr(self, name) is None
        )
        if cleared:
            raise ValueError(f"{', '.join(cleared)} cannot be null: leave a field out to keep its current value")
        return self

    def changes(self) -> dict[str, Any]:
        changes = {k: v for k, v in self.model_dump(exclude_unset=True, mode="json").items() if k != "unlock"}
        if "tags" in changes and changes["tags"] is None:
            changes["tags"] = []
        if "metadata" in changes and changes["metadata"] is None:
            changes["metadata"] = {}
        return changes


class MemoryEdited(BaseModel):
    id: UUID
    version: int
    changed: list[str]
    reembedded: bool


class MemoryForgotten(BaseModel):
    id: UUID
    forgotten: bool
    cold_copy_removed: bool


RestoreMode = Literal["current", "both"]


class MemoryRestored(BaseModel):
    id: UUID
    restored: Literal["supersession", "forget"]
    state: str
    # undoing a supersession: "current" (this one holds again; the newer one is superseded by it)
    # or "both" (both hold, linked as a conflict governance lists); None for a forget
    mode: RestoreMode | None = None
    superseded: list[UUID] = Field(default_factory=list)  # the newer version this restore superseded ("current")
    conflicts_with: UUID | None = None  # the newer version it now stands beside ("both")


class DocumentListQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: DocumentStatus | None = None
    user_id: str | None = Field(default=None, max_length=200)
    limit: int = Field(default=50, ge=1, le=500)
    cursor: str | None = Field(default=None, max_length=200, pattern=TIME_ID_CURSOR)


class DocumentListItem(BaseModel):
    id: UUID
    filename: str | None
    source_type: str | None
    status: DocumentStatus
    error: str | None = None
    provenance: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime


class DocumentPage(BaseModel):
    documents: list[DocumentListItem]
    next_cursor: str | None = None


class DocumentForgotten(BaseModel):
    """What forgetting a document removed: memories it alone taught, occurrences it added to
    memories that other sources still hold, and its raw copies."""

    id: UUID
    memories_forgotten: int
    memories_kept: int
    items_removed: int
    cold_copies_removed: int
    raw_objects_removed: int


class UploadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filename: str = Field(min_length=1, max_length=512)
    content_type: str | None = Field(default=None, max_length=255)


class UploadTicket(BaseModel):
    """PUT the file's bytes to ``url`` (with ``headers``) before ``expires_at``; ingestion follows."""

    url: str
    method: Literal["PUT"] = "PUT"
    key: str
    document_id: UUID = Field(
        description="The document the upload becomes (GET /v1/documents/{id}); an already-ingested content "
        "answers with its existing document instead."
    )
    headers: dict[str, str] = Field(default_factory=dict)
    expires_at: datetime


class GraphNode(BaseModel):
    id: UUID
    label: str
    type: str
    band: Band
    importance: int
    community: int | None = None
    hops: int = 0


class GraphEdge(BaseModel):
    src: UUID
    dst: UUID
    type: str
    weight: float


class MemoryGraph(BaseModel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool = False


class GraphColumns(BaseModel):
    """A page of the tenant's graph as columns (``GET /v1/graph/columns``): the memories and edges of
    ``GET /v1/graph`` for the same ``offset`` and ``limit``, without a name per value. Memory ``i``
    of the page is ``ids[i]``, ``labels[i]``, ``types[i]``, ``bands[i]``, ``importance[i]``,
    ``communities[i]``; its rank in the tenant's graph is ``offset + i``. Edge ``j`` goes from the
    memory ranked ``edge_src[j]`` to the one ranked ``edge_dst[j]``: one end on this page, the
    other on it or an earlier page, so the pages 0..k hold each edge among their memories once."""

    offset: int
    ids: list[UUID]
    labels: list[str]
    types: list[str]
    bands: list[Band]
    importance: list[int]
    communities: list[int | None] = Field(description="Louvain community, null until governance has computed it")
    edge_src: list[int] = Field(description="rank of each edge's source memory")
    edge_dst: list[int] = Field(description="rank of each edge's destination memory")
    edge_types: list[str]
    edge_weights: list[float]
    truncated: bool = Field(description="more memories follow this page (ask again with offset + limit)")

    @model_validator(mode="after")
    def _columns_align(self) -> "GraphColumns":
        nodes = {len(self.ids), len(self.labels), len(self.types), len(self.bands), len(self.importance)}
        edges = {len(self.edge_src), len(self.edge_dst), len(self.edge_types), len(self.edge_weights)}
        if len(nodes | {len(self.communities)}) != 1 or len(edges) != 1:
            raise ValueError("every node column and every edge column has one value per node or edge")
        return self


class ErasureRequest(BaseModel):
    """``POST /v1/erasure/user``: the user scope to erase."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=200, pattern=NOT_SPACES_PATTERN)


class TenantErasureRequest(BaseModel):
    """``POST /v1/erasure/tenant``: ``confirm`` repeats the caller's tenant id."""

    model_config = ConfigDict(extra="forbid")

    confirm: str = Field(min_length=1, max_length=200)


class ErasureReport(BaseModel):
    """What an erasure removed (rows by table; S3 objects) — the audit chain holds a tombstone per row."""

    scope: Literal["user", "tenant"]
    counts: dict[str, int]
    objects_deleted: int
