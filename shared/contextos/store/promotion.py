"""A promotion (S7): a user vouches for a held candidate, decided and admitted in one transaction,
so the decision, its audit row and the memory land together (or not at all)."""

from __future__ import annotations

from dataclasses import dataclass

from contextos.models import MemoryCandidate
from contextos.ports.admission import Promotion
from contextos.ports.rows import DecidedReview
from contextos.scopes import Scope
from contextos.sources import ConceptSource, DocumentSource, SessionSource
from contextos.store.db import Conn
from contextos.store.governance import GovernanceStore
from contextos.store.scopes import source_scope


@dataclass(frozen=True)
class Promoted:
    """The held candidate, where it came from and the scope its memory keeps."""

    candidate: MemoryCandidate
    source: ConceptSource | None
    scope: Scope


def decide_promotion(conn: Conn, tenant_id: str, promotion: Promotion) -> Promoted | None:
    """Mark the review item promoted (audit-logged) and return its candidate; None when it is not
    pending (or not there)."""
    row = GovernanceStore.decide(
        conn, tenant_id, promotion.review_id, status="promoted", actor=promotion.actor, reason=promotion.reason
    )
    if row is None:
        return None
    payload = {k: v for k, v in row["candidate"].items() if k in MemoryCandidate.model_fields}
    candidate = MemoryCandidate.model_validate(payload)
    return Promoted(candidate, _origin(row, candidate), _held_scope(conn, tenant_id, row))


def _origin(row: DecidedReview, candidate: MemoryCandidate) -> ConceptSource | None:
    """Where a held candidate came from, so its promoted memory's items point there."""
    messages = row["candidate"].get("messages")
    if row["document_id"]:
        return DocumentSource(document_id=row["document_id"], provenance=candidate.provenance)
    if row["session_id"] and messages:
        return SessionSource(
            session_id=row["session_id"],
            message_from=messages[0],
            message_to=messages[1],
            provenance=candidate.provenance,
        )
    return None


def _held_scope(conn: Conn, tenant_id: str, row: DecidedReview) -> Scope:
    """The scope of what a held candidate came from (S11): a manual write's own, else its
    document's or session's; its promoted memory keeps it."""
    kept = row["candidate"].get("scope")
    if kept:
        return Scope.model_validate(kept)
    return source_scope(conn, tenant_id, row["document_id"], row["session_id"])
