"""/v1/reminders: memories that entered the critical band (S5), and acknowledging them."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from contextos import container
from contextos.api.auth import Verb, require
from contextos.cursors import TIME_ID_CURSOR
from contextos.models import ReminderAcknowledged, ReminderPage

router = Router()


@router.get("/reminders", summary="Reminders for memories that became critical, newest first (open only by default)")
def list_reminders(
    include_acknowledged: Annotated[bool, Query()] = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, pattern=TIME_ID_CURSOR, description="next_cursor of the previous page")
    ] = None,
) -> ReminderPage:
    return container.lifecycle().reminders(
        require(router, Verb.read).tenant_id, include_acknowledged=include_acknowledged, limit=limit, cursor=cursor
    )


@router.post("/reminders/<reminder_id>/acknowledge", summary="Acknowledge a reminder (idempotent)")
def acknowledge_reminder(reminder_id: Annotated[UUID, Path()]) -> ReminderAcknowledged:
    return container.lifecycle().acknowledge(require(router, Verb.write).tenant_id, reminder_id)
