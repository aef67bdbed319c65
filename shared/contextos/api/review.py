"""/v1/review: candidates the trust gate held (S7). Users promote or reject them, with a reason."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from contextos import container
from contextos.api.auth import Verb, require
from contextos.api.openapi import statuses
from contextos.cursors import SEQUENCE_CURSOR, TIME_ID_CURSOR
from contextos.governance_models import AuditPage, ReviewDecision, ReviewOutcome, ReviewPage

router = Router()


@router.get("/review", summary="Held candidates, oldest first (cursor pagination)")
def list_review(
    status: Annotated[Literal["pending", "promoted", "rejected"], Query()] = "pending",
    cursor: Annotated[
        str | None, Query(max_length=200, pattern=TIME_ID_CURSOR, description="next_cursor of the previous page")
    ] = None,
) -> ReviewPage:
    principal = require(router, Verb.review)
    return container.governance().review(principal.tenant_id, status=status, cursor=cursor)


@router.post("/review/<review_id>/promote", summary="Admit a held candidate (user credentials only)")
@statuses(409)
def promote(review_id: Annotated[UUID, Path()], body: ReviewDecision) -> ReviewOutcome:
    principal = require(router, Verb.review)
    return container.governance().promote(
        principal.tenant_id, review_id, actor=principal.subject, kind=principal.kind, reason=body.reason
    )


@router.post("/review/<review_id>/reject", summary="Discard a held candidate (user credentials only)")
@statuses(409)
def reject(review_id: Annotated[UUID, Path()], body: ReviewDecision) -> ReviewOutcome:
    principal = require(router, Verb.review)
    return container.governance().reject(
        principal.tenant_id, review_id, actor=principal.subject, kind=principal.kind, reason=body.reason
    )


@router.get("/audit", summary="The audit log in chain order (cursor pagination)")
def list_audit(
    cursor: Annotated[
        str | None, Query(max_length=18, pattern=SEQUENCE_CURSOR, description="next_cursor of the previous page")
    ] = None,
    memory_id: Annotated[UUID | None, Query()] = None,
) -> AuditPage:
    principal = require(router, Verb.audit)
    return container.governance().audit(principal.tenant_id, cursor=cursor, memory_id=memory_id)
