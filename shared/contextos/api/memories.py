"""/v1/memories: a memory with its exact strength and every source it came from."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from pydantic import StringConstraints

from contextos import container
from contextos.access import authorize
from contextos.api.auth import Verb, require
from contextos.api.openapi import statuses
from contextos.cursors import TIME_ID_CURSOR
from contextos.errors import BadRequest
from contextos.governance_models import MemoryAdmission, MemoryCreate, MemoryHistory
from contextos.management_models import (
    GraphColumns,
    MemoryEdited,
    MemoryForgotten,
    MemoryGraph,
    MemoryListQuery,
    MemoryPage,
    MemoryPatch,
    MemoryRestored,
    RestoreMode,
)
from contextos.models import Band, MemoryDetail, MemoryType
from contextos.scopes import METADATA_FILTER, ScopeFilter, metadata_filters

router = Router()


@router.get("/memories/<memory_id>", summary="A memory, its current strength and band, and its sources")
def get_memory(memory_id: Annotated[UUID, Path()]) -> MemoryDetail:
    return container.memories().get(require(router, Verb.read).tenant_id, memory_id)


@router.post("/memories", summary="Write a memory by hand: capped provenance, the trust and contradiction gates")
@statuses(200, 201, 202)
def create_memory(body: MemoryCreate) -> Response[MemoryAdmission]:
    principal = require(router, Verb.write)
    if not principal.scope.empty:
        body = body.model_copy(update=principal.scope.stamp(body.user_id, body.agent_id, body.tags))
    admission = container.governance().create_memory(
        principal.tenant_id, body, actor=principal.subject, ceiling=principal.provenance_ceiling
    )
    return Response(
        status_code={"admitted": 201, "merged": 200, "held": 202}[admission.status],
        content_type=content_types.APPLICATION_JSON,
        body=admission.model_dump(mode="json"),
    )


@router.get("/memories/<memory_id>/history", summary="The supersession chain through a memory, with its audit trail")
def memory_history(memory_id: Annotated[UUID, Path()]) -> MemoryHistory:
    return container.governance().history(require(router, Verb.read).tenant_id, memory_id)


@router.get("/memories", summary="List memories with filters (band, type, state, tier, scope, tags, metadata, prefix)")
def list_memories(
    band: Annotated[Band | None, Query()] = None,
    type: Annotated[MemoryType | None, Query()] = None,
    state: Annotated[
        Literal["active", "superseded", "archived", "forgotten"] | None,
        Query(description="forgotten: the memories a forget removed from every read (restorable)"),
    ] = None,
    tier: Annotated[Literal["hot", "cold"] | None, Query()] = None,
    user_id: Annotated[str | None, Query(max_length=200)] = None,
    agent_id: Annotated[str | None, Query(max_length=200)] = None,
    run_id: Annotated[str | None, Query(max_length=200)] = None,
    tag: Annotated[list[str] | None, Query(description="Repeat for all-of")] = None,
    metadata: Annotated[
        list[Annotated[str, StringConstraints(pattern=METADATA_FILTER)]] | None,
        Query(description="key=value, repeat for more"),
    ] = None,
    prefix: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, pattern=TIME_ID_CURSOR, description="next_cursor of the previous page")
    ] = None,
) -> MemoryPage:
    try:
        meta = metadata_filters(metadata)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    query = MemoryListQuery(
        band=band,
        type=type,
        state=state,
        tier=tier,
        user_id=user_id,
        agent_id=agent_id,
        run_id=run_id,
        tags=tag or [],
        metadata=meta,
        prefix=prefix,
        limit=limit,
        cursor=cursor,
    )
    principal = require(router, Verb.read)
    if not principal.scope.empty and (confined := principal.scope.confine(query)) is not None:
        query = query.model_copy(update=confined.model_dump(include={"user_id", "agent_id", "tags"}))
    return container.memories().list(principal.tenant_id, query)


@router.patch("/memories/<memory_id>", summary="Edit a memory (re-embeds, keeps the replaced version, audited)")
@statuses(409)
def edit_memory(memory_id: Annotated[UUID, Path()], body: MemoryPatch) -> MemoryEdited:
    principal = require(router, Verb.edit)
    if body.unlock:
        authorize(principal, Verb.unlock)
    return container.memories().edit(principal.tenant_id, memory_id, body, actor=principal.subject)


@router.delete("/memories/<memory_id>", summary="Forget a memory: gone from every read, audited, cold copy removed")
def forget_memory(
    memory_id: Annotated[UUID, Path()], reason: Annotated[str | None, Query(max_length=500)] = None
) -> MemoryForgotten:
    principal = require(router, Verb.forget)
    return container.memories().forget(
        principal.tenant_id, memory_id, actor=principal.subject, reason=reason, only_own=principal.forgets_only_own()
    )


@router.post("/memories/<memory_id>/restore", summary="Undo a forget or a supersession (audited)")
@statuses(403, 409)
def restore_memory(
    memory_id: Annotated[UUID, Path()],
    mode: Annotated[
        RestoreMode,
        Query(description="undoing a supersession: `current` (this one holds again) or `both` (a conflict)"),
    ] = "current",
) -> MemoryRestored:
    principal = require(router, Verb.edit)
    return container.memories().restore(principal.tenant_id, memory_id, actor=principal.subject, mode=mode)


@router.get("/memories/<memory_id>/graph", summary="The typed, weighted graph within `hops` edges of a memory")
def memory_graph(
    memory_id: Annotated[UUID, Path()],
    hops: Annotated[int, Query(ge=1, le=3)] = 2,
    limit: Annotated[int, Query(ge=1, le=500)] = 200,
) -> MemoryGraph:
    return container.memories().graph(require(router, Verb.read).tenant_id, memory_id, hops=hops, limit=limit)


@router.get(
    "/graph",
    summary="A page of the tenant's memories, most important first, and the edges to them from this or earlier pages",
)
def tenant_graph(
    limit: Annotated[int, Query(ge=1, le=1000)] = 300,
    offset: Annotated[int, Query(ge=0, le=1_000_000, description="memories to skip: the next page")] = 0,
    user_id: Annotated[str | None, Query(max_length=200)] = None,
    agent_id: Annotated[str | None, Query(max_length=200)] = None,
    run_id: Annotated[str | None, Query(max_length=200)] = None,
    tag: Annotated[list[str] | None, Query(description="Repeat for all-of")] = None,
) -> MemoryGraph:
    scope = ScopeFilter(user_id=user_id, agent_id=agent_id, run_id=run_id, tags=tag or [])
    return container.memories().tenant_graph(
        require(router, Verb.read).tenant_id, limit=limit, offset=offset, scope=scope
    )


@router.get(
    "/graph/columns",
    summary="The same page of the tenant's graph as columns, up to 5,000 memories a reply, each edge as two ranks",
)
def tenant_graph_columns(
    limit: Annotated[int, Query(ge=1, le=5000)] = 5000,
    offset: Annotated[int, Query(ge=0, le=1_000_000, description="memories to skip: the next page")] = 0,
    user_id: Annotated[str | None, Query(max_length=200)] = None,
    agent_id: Annotated[str | None, Query(max_length=200)] = None,
    run_id: Annotated[str | None, Query(max_length=200)] = None,
    tag: Annotated[list[str] | None, Query(description="Repeat for all-of")] = None,
) -> GraphColumns:
    scope = ScopeFilter(user_id=user_id, agent_id=agent_id, run_id=run_id, tags=tag or [])
    return container.memories().tenant_graph_columns(
        require(router, Verb.read).tenant_id, limit=limit, offset=offset, scope=scope
    )
