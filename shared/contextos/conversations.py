"""Conversation memory (S8), the pure part: messages, sessions, flush jobs, speaker provenance.

No database, no AWS: the API's request and response models, the queue's job, the turns an
extractor reads, and the rules that give each message its provenance within a credential's
ceiling.
"""

import hashlib
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from itertools import pairwise
from typing import Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field

from contextos.cursors import TIME_SESSION_CURSOR
from contextos.errors import BadRequest, OccurredAtOutOfRange, ProvenanceAboveCeiling
from contextos.instants import Instant
from contextos.modelbase import BaseModel
from contextos.models import BASE_TRUST, Concept, Provenance
from contextos.normalization import FOLLOWS_PREFIX, SESSION_HEADER_PREFIX, VERBATIM_KEY_PREFIX

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$")
SESSION_ID_PATTERN = _SESSION_ID.pattern  # the API's path parameter says the same


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    tool = "tool"
    system = "system"
    third_party = "third_party"


class FlushTrigger(StrEnum):
    end = "end"  # POST /v1/sessions/{id}/end
    idle = "idle"  # the sweeper: no message for the idle threshold
    size = "size"  # an append brought the unflushed messages to the threshold


# S7/S8: who said it. System turns are written by whoever set the agent up, never by the user.
DEFAULT_PROVENANCE: dict[Role, Provenance] = {
    Role.user: Provenance.user_turn,
    Role.assistant: Provenance.agent_turn,
    Role.tool: Provenance.tool_output,
    Role.system: Provenance.agent_turn,
    Role.third_party: Provenance.third_party,
}


def message_provenance(role: Role, requested: Provenance | None, ceiling: Provenance) -> Provenance:
    """The provenance a message is stored with.

    An explicit claim above the credential's ceiling is refused (S7: an agent's key cannot claim
    ``user_turn``); a role's default above the ceiling is lowered to the ceiling, because the
    credential cannot vouch for more than it is trusted with.
    """
    if requested is not None:
        if BASE_TRUST[requested] > BASE_TRUST[ceiling]:
            raise ProvenanceAboveCeiling(
                f"this credential may claim provenance up to {ceiling.value!r}; {requested.value!r} is above it",
                details={"requested": requested.value, "ceiling": ceiling.value},
            )
        return requested
    default = DEFAULT_PROVENANCE[role]
    return ceiling if BASE_TRUST[default] > BASE_TRUST[ceiling] else default


def check_session_id(session_id: str, max_chars: int) -> str:
    if not session_id or len(session_id) > max_chars or not _SESSION_ID.match(session_id):
        raise BadRequest(
            f"a session id is 1-{max_chars} characters: letters, digits and _ . : @ -, starting with a letter or digit"
        )
    return session_id


class MessageCreate(BaseModel):
    """``POST /v1/sessions/{id}/messages``: one turn of the conversation."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = Field(min_length=1)
    provenance: Provenance | None = Field(
        default=None, description="Who vouches for it; defaults by role, never above the credential's ceiling."
    )
    user_id: str | None = Field(default=None, min_length=1, max_length=200, description="The session's user.")
    agent_id: str | None = Field(default=None, min_length=1, max_length=200)
    run_id: str | None = Field(default=None, min_length=1, max_length=200)
    tags: list[str] = Field(default_factory=list, max_length=50)
    occurred_at: Instant | None = Field(
        default=None,
        description="When the turn was said (imported history): not in the future, not beyond the configured"
        " backdating horizon. Its memories decay from then. Default: now.",
    )


class MessageAppended(BaseModel):
    session_id: str
    seq: int
    provenance: Provenance
    message_count: int
    flushed_through: int
    flush: "FlushView | None" = None  # the flush this append triggered (the size threshold), if any


class FlushView(BaseModel):
    message_from: int
    message_to: int
    trigger: FlushTrigger
    status: str
    error: str | None = None
    counts: dict[str, Any] = Field(default_factory=dict)


class SessionView(BaseModel):
    """``GET /v1/sessions/{id}``: the buffer's state and what became of each flushed range."""

    id: str
    status: Literal["open", "ended"]
    message_count: int
    flushed_through: int
    last_message_at: datetime | None
    ended_at: datetime | None
    created_at: datetime
    flushes: list[FlushView] = Field(default_factory=list)


class TaughtMemory(BaseModel):
    """A memory a session's flushes fed: one it created, or an existing one a turn's concept merged into."""

    id: UUID
    label: str
    type: str
    state: str
    outcome: Literal["admitted", "merged"]
    message_from: int  # the turns it was learned from
    message_to: int
    superseded: list[UUID] = Field(default_factory=list)  # older memories it replaced (the contradiction gate)


class HeldFromSession(BaseModel):
    """A candidate a session's flush held for review (the trust gate, or the redaction policy's hold)."""

    review_id: UUID
    label: str
    reason: str
    trust: float
    status: Literal["pending", "promoted", "rejected"]


class SessionMemories(BaseModel):
    """``GET /v1/sessions/{id}/memories``: what a session taught, as its flushes left it."""

    session_id: str
    memories: list[TaughtMemory]
    held: list[HeldFromSession]


class SessionListQuery(BaseModel):
    """``GET /v1/sessions``: newest first, optionally one status, a page at a time."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["open", "ended"] | None = None
    limit: int = Field(default=50, ge=1, le=500)
    cursor: str | None = Field(default=None, max_length=300, pattern=TIME_SESSION_CURSOR)


class SessionCounts(BaseModel):
    """What a session's flushes have done so far (summed over its ranges)."""

    flushes: int = 0
    flushes_pending: int = 0  # claimed, queued or being distilled
    flushes_done: int = 0
    flushes_failed: int = 0
    memories_created: int = 0
    memories_merged: int = 0
    held_for_review: int = 0


class SessionListItem(BaseModel):
    id: str
    status: Literal["open", "ended"]
    message_count: int
    flushed_through: int
    last_message_at: datetime | None
    ended_at: datetime | None
    created_at: datetime
    counts: SessionCounts


class SessionPage(BaseModel):
    sessions: list[SessionListItem]
    next_cursor: str | None = None


class FlushJob(BaseModel):
    """The conversation queue's message: one claimed range of one session."""

    kind: Literal["conversation_flush"] = "conversation_flush"
    tenant_id: str
    session_id: str
    message_from: int = Field(ge=1)
    message_to: int = Field(ge=1)


class Turn(BaseModel):
    """One message as an extractor reads it."""

    seq: int
    role: Role
    content: str
    provenance: Provenance
    said_at: datetime | None = None  # the turn's own time (``occurred_at``, else when it was buffered)


class TurnConcept(Concept):
    """A concept from a conversation, with the turns (message seqs) that state it."""

    turns: list[int] = Field(default_factory=list)
    # When it was said (the last turn that states it): its decay and validity start there; None = now.
    # Set by the flush, never by an extractor: not part of an extractor's output.
    said_at: datetime | None = Field(default=None, exclude=True)
    # A fact a person stated (a need, an owner, a deadline...), not one of the flush's 3-10
    # concepts: not capped by ``conversation.max_concepts`` (S8).
    fact: bool = Field(default=False, exclude=True)


def said_at(concept: TurnConcept, turns: dict[int, Turn], fallback: datetime | None) -> datetime | None:
    """When a concept was said: the last turn that states it (its latest mention is where its decay
    starts, as a reinforcement would have left it), else the flushed range's last turn."""
    times = [t for seq in concept.turns if seq in turns and (t := turns[seq].said_at) is not None]
    return max(times) if times else fallback


def turn_excerpt(turn: Turn) -> str:
    """A turn as evidence: when, who, and exactly what was said. The speaker sits inside the
    brackets (``[2023-05-08 13:56, user]``): a leading ``Assistant:`` reads as text addressed to a
    model, which the trust gate rightly counts against it."""
    when = f"{turn.said_at:%Y-%m-%d %H:%M}, " if turn.said_at is not None else ""
    return f"[{when}{turn.role.value.replace('_', ' ')}] {' '.join(turn.content.split())}"


def turn_label(session_id: str, seq: int) -> str:
    """A kept turn's label: which turn of which session (four words whatever the id, as validation
    wants; ``turn_key`` is what keeps two turns apart, not this)."""
    slug = "-".join(re.sub(r"[^0-9A-Za-z]+", " ", session_id).split())[:40].strip("-") or "session"
    return f"Turn {seq} of {slug}"


def turn_key(turn: Turn) -> str:
    """A kept turn's merge key: who said what, never a label's words
    (``contextos.normalization.is_verbatim_key``). The same words from the same role are one memory
    (a note remembered twice, a message pasted again reinforce it, each occurrence with its own
    session's header); any other turn is a memory of its own."""
    said = f"{turn.role.value}\n{' '.join(turn.content.lower().split())}"
    return f"{VERBATIM_KEY_PREFIX}{hashlib.blake2b(said.encode(), digest_size=12).hexdigest()}"


def session_header(session_id: str, turns: list[Turn], topics: list[str]) -> str:
    """The context every turn of a flushed range carries as searchable text: its session, its day
    and what it was about (the range's concepts), so a question naming the session's topic finds
    the turn that answers it although the turn itself never says the topic's word."""
    said = [t.said_at for t in turns if t.said_at is not None]
    day = f" on {min(said):%Y-%m-%d}" if said else ""
    about = f", about {', '.join(topics)}" if topics else ""
    return f"{SESSION_HEADER_PREFIX}{session_id}{day}{about}"


def follows(turn: Turn, chars: int) -> str:
    """The context a kept turn carries of the turn before it (the question it answers, most
    often): "Porto's out" is found by "which city did we rule out?" after "Which cities are you
    considering?". Its words only, at most ``chars``."""
    return FOLLOWS_PREFIX + " ".join(turn.content.split())[:chars]


def keep_every_turn(
    concepts: list[TurnConcept],
    turns: list[Turn],
    *,
    session_id: str,
    acceptable: Callable[[TurnConcept], bool],
    min_words: int = 3,
    hub_turns: int = 4,
    topics: int = 3,
    follows_chars: int = 240,
) -> tuple[list[TurnConcept], list[TurnConcept]]:
    """What a flush keeps besides its concepts (S8): every turn of substance as its own memory,
    and each concept pointing at the turns that state it.

    Returns (concepts, turns). A concept shows a turn it states as an excerpt when it is the most
    specific acceptable concept stating it (fewest turns; the more important on a tie) and is no
    hub: a concept stating more than ``hub_turns`` turns (a speaker's name, a theme through every
    session) merges across every flush, so its text would fill and drop what came later. Every
    concept names its turns as ``related``. A turn of fewer than ``min_words`` words that no
    concept states ("Hi!", "Great, thanks.") is evidence of nothing and is not kept. Each kept turn
    is an ``event`` memory keyed by what was said (``turn_key``): its definition is the turn's own
    words (``turn_excerpt``), its excerpts the session's header (``session_header``) and the turn
    it follows (``follows``), searchable, never shown with it."""
    cited = {s for c in concepts for s in c.turns}
    before = {t.seq: prev for prev, t in pairwise(turns)}  # small talk included: "Which city?"
    turns = [t for t in turns if len(t.content.split()) >= min_words or t.seq in cited]
    by_seq = {t.seq: t for t in turns}
    stated = [{s for s in c.turns if s in by_seq} for c in concepts]  # the kept turns each states
    specific = [acceptable(c) and len(mine) <= hub_turns for c, mine in zip(concepts, stated, strict=True)]
    claimed: dict[int, int] = {}  # turn seq → index of the concept that shows it
    keepers = [(len(stated[i]), i) for i in range(len(concepts)) if specific[i] and stated[i]]
    for _, i in sorted(keepers):
        for seq in concepts[i].turns:
            if seq in by_seq:
                claimed.setdefault(seq, i)
    out = []
    for i, concept in enumerate(concepts):
        mine = [turn_excerpt(by_seq[seq]) for seq in sorted(claimed) if claimed[seq] == i]
        points_at = [turn_label(session_id, s) for s in sorted(set(concept.turns)) if s in by_seq]
        related = [*concept.related, *(r for r in points_at if r not in concept.related)]
        out.append(concept.model_copy(update={"excerpts": [*concept.excerpts, *mine], "related": related}))
    # the session's topics: its most important specific concepts (a hub names every session; a fact
    # is one thing said, not a topic)
    by_importance = sorted(enumerate(concepts), key=lambda ic: -int(ic[1].importance))
    named = [c.label for i, c in by_importance if specific[i] and not c.fact][:topics]
    header = session_header(session_id, turns, named)
    kept = [
        TurnConcept(
            label=turn_label(session_id, t.seq),
            definition=turn_excerpt(t),
            type="event",
            importance=5,
            turns=[t.seq],
            excerpts=[header, *([follows(before[t.seq], follows_chars)] if t.seq in before else [])],
            key=turn_key(t),
            related=[turn_label(session_id, turns[i - 1].seq)] if i else [],
        )
        for i, t in enumerate(turns)
    ]
    return out, kept


def check_occurred_at(occurred_at: datetime, skew_s: int, max_age_days: int, now: datetime | None = None) -> None:
    """A message's ``occurred_at`` lies between the backdating horizon and the clock (plus skew)."""
    now = now or datetime.now(UTC)
    if occurred_at > now + timedelta(seconds=skew_s):
        raise OccurredAtOutOfRange(f"occurred_at {occurred_at.isoformat()} is in the future")
    if occurred_at < now - timedelta(days=max_age_days):
        raise OccurredAtOutOfRange(f"occurred_at {occurred_at.isoformat()} is more than {max_age_days} days ago")


def speaker_provenance(concept: TurnConcept, turns: dict[int, Turn], fallback: Provenance) -> Provenance:
    """A concept's provenance is its speaker's: the earliest turn that states it.

    Who said it first is who it came from; a later echo (the agent repeating the user's
    preference, the user accepting a tool's claim) neither raises nor lowers it.
    """
    stated = sorted(seq for seq in concept.turns if seq in turns)
    return turns[stated[0]].provenance if stated else fallback
