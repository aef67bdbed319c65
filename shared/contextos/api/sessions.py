"""/v1/sessions: buffer a conversation's turns, list and read sessions, end one (S8). Chat time only reads
and buffers: extraction happens later, in the conversation function."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from contextos import container
from contextos.api.auth import Verb, require
from contextos.api.openapi import statuses
from contextos.conversations import (
    SESSION_ID_PATTERN,
    MessageAppended,
    MessageCreate,
    SessionListQuery,
    SessionMemories,
    SessionPage,
    SessionView,
)
from contextos.cursors import TIME_SESSION_CURSOR

router = Router()
SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN)]


@router.post("/sessions/<session_id>/messages", summary="Append one turn (role, content, optional provenance)")
@statuses(201, 409)
def append_message(session_id: SessionId, body: MessageCreate) -> Response[MessageAppended]:
    principal = require(router, Verb.write)
    appended = container.conversations().append(principal.tenant_id, principal.provenance_ceiling, session_id, body)
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=appended.model_dump(mode="json"))


@router.get("/sessions/<session_id>", summary="A session's buffer and what became of each flushed range")
def get_session(session_id: SessionId) -> SessionView:
    return container.conversations().get(require(router, Verb.read).tenant_id, session_id)


@router.get(
    "/sessions/<session_id>/memories",
    summary="What a session taught: each memory its flushes created or merged into, and what they held for review",
)
def get_session_memories(session_id: SessionId) -> SessionMemories:
    return container.conversations().taught(require(router, Verb.read).tenant_id, session_id)


@router.post("/sessions/<session_id>/end", summary="End a session and flush its unflushed turns into memory")
def end_session(session_id: SessionId) -> SessionView:
    return container.conversations().end(require(router, Verb.write).tenant_id, session_id)


@router.get("/sessions", summary="List sessions, newest first, with status and counts (status filter, cursor)")
def list_sessions(
    status: Annotated[Literal["open", "ended"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[
        str | None, Query(max_length=300, pattern=TIME_SESSION_CURSOR, description="next_cursor of the previous page")
    ] = None,
) -> SessionPage:
    query = SessionListQuery(status=status, limit=limit, cursor=cursor)
    return container.conversations().list_sessions(require(router, Verb.read).tenant_id, query)
