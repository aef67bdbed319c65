"""Typed rows: what the stores return, column by column, declared beside the ports that return them.

TypedDicts over the pool's dict rows: the row a statement returns is the
row the caller reads, no copy, and mypy checks the columns a caller asks for. ``rows_of``/``row_of``
name the type of a statement's rows in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, TypedDict, TypeVar, cast
from uuid import UUID

R = TypeVar("R")


def rows_of(kind: type[R], rows: Sequence[dict[str, Any]]) -> list[R]:
    """The statement's rows, as ``kind`` (a TypedDict naming its columns)."""
    return cast(list[R], list(rows))


def row_of(kind: type[R], row: Mapping[str, Any] | None) -> R | None:
    return cast(R | None, row)


# -- documents ---------------------------------------------------------------------------------
class ClaimedDocument(TypedDict):
    """A document a worker claimed: what it needs to process it."""

    id: UUID
    filename: str | None
    content_type: str | None
    provenance: str
    raw_text: str | None
    source_s3_key: str | None
    upload_s3_key: str | None
    attempts: int
    counts: dict  # what the way in already recorded (the firewall's counts of a submitted text)


class DocumentMemory(TypedDict):
    """A memory a document taught."""

    id: UUID
    label: str
    type: str
    importance: int
    state: str


# -- reads -------------------------------------------------------------------------------------
class MemorySourceRow(TypedDict):
    """One occurrence behind a memory (memory → documents and sessions)."""

    document_id: UUID | None
    filename: str | None
    session_id: str | None
    message_from: int | None
    message_to: int | None
    label: str
    definition: str
    importance: int
    created_at: datetime


class VectorHit(TypedDict):
    id: UUID
    vector_sim: float


class PhraseHit(TypedDict):
    """A key phrase's hit (``phrase_no``: which phrase, the verbatim one first)."""

    phrase_no: int
    id: UUID
    rank: float
    label_match: bool


class TextHit(TypedDict):
    """A BM25 hit: its score, the query terms it matched, and whether it is a cold stub."""

    id: UUID
    score: float
    matched: Any
    cold: bool


class SubjectPair(TypedDict):
    a: UUID
    b: UUID


class WalkRow(TypedDict):
    id: UUID
    weight: float


# A candidate pool row: the scoring row of a memory, its exact cosine, walk weight, sources and
# excerpts (the columns of ``contextos.store.history.candidate_pool_sql``, read by the scorer).
PoolRow = dict[str, Any]


class MemoryOwnership(TypedDict):
    """The columns a person sets on a memory beside its text: flags, owner scope, tags, metadata."""

    always_load: bool
    protected: bool
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    tags: list[str]
    metadata: dict[str, Any]


class MemoryText(MemoryOwnership):
    """What every read of a memory's own row carries: its id and text, beside its ownership."""

    id: UUID
    label: str
    definition: str
    type: str
    importance: int


class MemoryDetail(MemoryText):
    """A memory with every column the detail view shows, and its strength now."""

    norm_key: str
    strength_anchor: float
    strength_anchor_at: datetime
    strength: float
    band: str
    access_count: int
    last_accessed_at: datetime
    tier: str
    state: str
    provenance: str
    base_trust: float
    embedder_id: str | None
    decay_rate: float
    next_transition_at: datetime | None
    created_at: datetime
    updated_at: datetime
    strength_now: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    superseded_by: UUID | None
    version: int


# -- governance --------------------------------------------------------------------------------
class ReviewRow(TypedDict):
    """A review queue item (``candidate``: the held candidate as stored, with its signals)."""

    id: UUID
    candidate: dict[str, Any]
    provenance: str
    trust: float
    reason: str
    document_id: UUID | None
    session_id: str | None
    status: Literal["pending", "promoted", "rejected"]
    decided_by: str | None
    decided_at: datetime | None
    decision_reason: str | None
    created_at: datetime


class DecidedReview(TypedDict):
    id: UUID
    candidate: dict[str, Any]
    provenance: str
    trust: float
    document_id: UUID | None
    session_id: str | None


class VersionRow(TypedDict):
    """One version in a supersession chain."""

    id: UUID
    label: str
    definition: str
    state: str
    provenance: str
    base_trust: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    superseded_by: UUID | None
    ingest_seq: int


class AuditEvent(TypedDict):
    chain_seq: int | None
    at: datetime
    actor: str
    action: str
    memory_id: UUID | None
    reason: str | None
    details: dict[str, Any]


class AuditEntry(TypedDict):
    """An audit row with the columns its hash covers (``details_text``: the details as hashed)."""

    tenant_id: str
    seq: int
    chain_seq: int  # a page starts after a place in the chain: unchained rows are not on it
    id: UUID
    at: datetime
    actor: str
    action: str
    memory_id: UUID | None
    reason: str | None
    details: dict[str, Any]
    details_text: str
    prev_hash: str
    hash: str


class UnchainedRow(TypedDict):
    seq: int
    id: UUID


class ChainHead(TypedDict):
    chain_seq: int
    hash: str


# -- lifecycle -------------------------------------------------------------------------------
class ReminderRow(TypedDict):
    """An open (or acknowledged) reminder with its memory's exact strength now."""

    id: UUID
    memory_id: UUID
    label: str
    type: str
    strength_at_open: float
    strength: float
    tier: str
    state: str
    opened_at: datetime
    acknowledged_at: datetime | None


class AcknowledgedReminder(TypedDict):
    id: UUID
    memory_id: UUID
    strength: float
    opened_at: datetime
    acknowledged_at: datetime


# -- the graph -------------------------------------------------------------------------------
class GraphNodeRow(TypedDict):
    """A live memory of a graph read (``hops``: 0 in the tenant's graph; ``community`` once computed)."""

    id: UUID
    label: str
    type: str
    importance: int
    hops: int
    strength: float
    band: str
    community: int | None


class GraphEdgeRow(TypedDict):
    src_id: UUID
    dst_id: UUID
    type: str
    weight: float


class GraphColumnsRow(TypedDict):
    """A page of the tenant's graph as columns (one row): node ``i`` is ``ids[i]``, ``labels[i]`` …
    and has rank ``offset + i``; edge ``j`` joins the nodes ranked ``edge_src[j]`` and ``edge_dst[j]``."""

    truncated: bool
    ids: list[UUID]
    labels: list[str]
    types: list[str]
    bands: list[str]
    importance: list[int]
    communities: list[int | None]
    edge_src: list[int]
    edge_dst: list[int]
    edge_types: list[str]
    edge_weights: list[float]


# -- conversations -----------------------------------------------------------------------------
class AppendedMessage(TypedDict):
    """A buffered message's seq and its session's counters after the append."""

    seq: int
    message_count: int
    flushed_through: int


class TurnRow(TypedDict):
    seq: int
    role: str
    content: str
    provenance: str
    said_at: datetime  # occurred_at, else when it was buffered


class FlushRow(TypedDict):
    """One claimed range of a session (``conversations.FLUSH_COLUMNS``)."""

    session_id: str
    message_from: int
    message_to: int
    trigger: str
    status: str
    error: str | None
    counts: dict[str, Any]
    attempts: int


class SessionRow(TypedDict):
    id: str
    status: str
    message_count: int
    flushed_through: int
    last_message_at: datetime | None
    ended_at: datetime | None
    created_at: datetime


class SessionDetail(SessionRow):
    flushes: list[FlushRow]


class SessionListRow(SessionRow):
    """A listed session with its flushes' summed counts."""

    flushes: int
    flushes_pending: int
    flushes_done: int
    flushes_failed: int
    memories_created: int
    memories_merged: int
    held_for_review: int


class TaughtMemoryRow(TypedDict):
    """A memory a session's flushes fed, and whether one of them created it."""

    id: UUID
    label: str
    type: str
    state: str
    outcome: str  # admitted | merged
    message_from: int
    message_to: int
    superseded: list[UUID]


class HeldFromSessionRow(TypedDict):
    review_id: UUID
    label: str
    reason: str
    trust: float
    status: str


class SessionTaught(TypedDict):
    session_id: str
    memories: list[TaughtMemoryRow]
    held: list[HeldFromSessionRow]


# -- keys --------------------------------------------------------------------------------------
class KeyIdentity(TypedDict):
    """What a live key says about its caller."""

    tenant_id: str
    name: str
    principal: str
    provenance_ceiling: str
    verbs: list[str] | None
    scope_user_id: str | None
    scope_agent_id: str | None
    scope_tags: list[str]


class UploadTicketRow(TypedDict):
    """What a presigned upload carries to the ingest function."""

    document_id: UUID
    provenance: str
    user_id: str | None
    agent_id: str | None
    tags: list[str]


class KeyListRow(KeyIdentity):
    key_hash_prefix: str
    created_at: datetime
    revoked_at: datetime | None


# -- management --------------------------------------------------------------------------------
class MemoryListRow(MemoryText):
    """A listed memory (``management.LIST_COLUMNS`` with its strength and band)."""

    tier: str
    state: str
    provenance: str
    version: int
    created_at: datetime
    updated_at: datetime
    strength: float
    band: str
    superseded_by: UUID | None
    forgotten_at: datetime | None


class DocumentListRow(TypedDict):
    id: UUID
    filename: str | None
    source_type: str | None
    status: str
    error: str | None
    provenance: str
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    tags: list[str]
    created_at: datetime
    updated_at: datetime


class LockedMemory(MemoryText):
    """A memory's row and its vector, locked for an edit, forget or restore."""

    norm_key: str
    state: str
    tier: str
    version: int
    superseded_by: UUID | None
    forgotten_at: datetime | None
    forgotten_state: str | None
    cold_object_key: str | None
    embedding: Any  # pgvector's value (a numpy array), None for a cold memory
    band_keys: list[int] | None
    embedder_id: str | None


class LockedDocument(TypedDict):
    id: UUID
    status: str
    raw_s3_key: str | None
    source_s3_key: str | None
    upload_s3_key: str | None


class ReembedRow(TypedDict):
    id: UUID
    label: str
    definition: str


# -- the event outbox ------------------------------------------------------------------------
class AuditEventRow(TypedDict):
    chain_seq: int
    action: str
    memory_id: UUID | None
    label: str | None
    at: datetime
    actor: str
    reason: str | None


class ReminderEventRow(TypedDict):
    id: UUID
    memory_id: UUID
    label: str | None
    opened_at: datetime
