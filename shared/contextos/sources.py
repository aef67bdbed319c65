"""Where admitted concepts come from: a document, or a range of a conversation session.

Admission (``contextos.services.admission``) and the store are source-agnostic; a source says
what its memory_items point at, what provenance its concepts carry unless they say otherwise,
and what the store finishes in the same transaction as the memories (the document's status and
counts, or the conversation flush that makes a redelivered job a no-op). Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from contextos.models import Provenance


@dataclass(frozen=True, slots=True)
class DocumentSource:
    """A document being ingested (S4); the store marks it done with its counts."""

    document_id: UUID
    provenance: Provenance
    source_type: str = "text"
    domain: str = "general"
    counts: dict[str, Any] = field(default_factory=dict)
    raw_text: str | None = None
    raw_s3_key: str | None = None


@dataclass(frozen=True, slots=True)
class SessionSource:
    """A flushed range of a conversation (S8); the store marks the flush done with its counts."""

    session_id: str
    message_from: int
    message_to: int
    provenance: Provenance = Provenance.agent_turn  # for a concept whose speaker is unknown
    counts: dict[str, Any] = field(default_factory=dict)


ConceptSource = DocumentSource | SessionSource
