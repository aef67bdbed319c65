"""/v1/export and /v1/import: the markdown workspace (S10) as an archive, and files back in."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import ConfigDict, Field, StrictBool

from contextos import container
from contextos.access import authorize
from contextos.api.auth import Verb, require
from contextos.errors import PayloadTooLarge
from contextos.modelbase import JSON_INTEGER, BaseModel
from contextos.workspace.model import ImportReport, ImportRequest, SyncReport, WorkspaceFile
from contextos.workspace.router import RouterTool

router = Router()

# A Lambda response carries at most 6 MB; bigger workspaces stream through `contextos export`.
MAX_ARCHIVE_BYTES = 5 * 1024 * 1024


class RouterFiles(BaseModel):
    files: list[WorkspaceFile]


class SyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[WorkspaceFile] = Field(max_length=20_000)
    unlock: list[UUID] = Field(default_factory=list, description="protected memories this sync may change")
    deleted: list[UUID] = Field(
        default_factory=list,
        max_length=20_000,
        description="memories whose files the client deleted since its last sync: never written back",
    )
    prune: StrictBool = Field(default=False, description="forget the deleted files' memories (needs the forget verb)")


class RouterRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: RouterTool
    token_budget: Annotated[int, Field(ge=200, le=100_000), JSON_INTEGER] = 4000


@router.get(
    "/export",
    summary="The memory store as a markdown workspace: a tar.gz (or zip) of one file per memory",
    responses={
        200: {"description": "the archive", "content": {"application/gzip": {}, "application/zip": {}}},
        413: {"description": "the archive is over what one response may carry: use `contextos export`"},
    },
)
def export_workspace(format: Annotated[Literal["tar", "zip"], Query()] = "tar"):  # binary: no return model to serialize
    tenant_id = require(router, Verb.export).tenant_id
    data = bytearray()
    for chunk in container.workspace().archive(tenant_id, format):
        data += chunk
        if len(data) > MAX_ARCHIVE_BYTES:
            raise PayloadTooLarge(
                f"the workspace archive is over {MAX_ARCHIVE_BYTES} bytes; use `contextos export DIR` instead"
            )
    return Response(
        status_code=200,
        content_type="application/zip" if format == "zip" else "application/gzip",
        body=bytes(data),
        headers={"Content-Disposition": f'attachment; filename="workspace.{"zip" if format == "zip" else "tar.gz"}"'},
    )


@router.post("/import", summary="Create or update memories from workspace files; a report line per file")
def import_workspace(body: ImportRequest) -> ImportReport:
    principal = require(router, Verb.import_)
    if body.unlock:
        authorize(principal, Verb.unlock)
    return container.workspace().import_files(
        principal.tenant_id,
        [(f.path, f.data()) for f in body.files],
        actor=principal.subject,
        ceiling=principal.provenance_ceiling,
        unlock=body.unlock,
        restore=body.restore,
    )


@router.post("/workspace/sync", summary="Sync workspace files both ways: edits in, new and changed memories out")
def sync_workspace(body: SyncRequest) -> SyncReport:
    principal = require(router, Verb.import_)
    authorize(principal, Verb.export)  # a sync writes the tenant's memories back out
    if body.unlock:
        authorize(principal, Verb.unlock)
    forget = None
    if body.prune and body.deleted:
        authorize(principal, Verb.forget)
        memories = container.memories()

        def forget(memory_id: UUID) -> object:
            return memories.forget(
                principal.tenant_id,
                memory_id,
                actor=principal.subject,
                reason="its file was deleted from the workspace",
                only_own=principal.forgets_only_own(),
            )

    return container.workspace().sync(
        principal.tenant_id,
        [(f.path, f.data()) for f in body.files],
        actor=principal.subject,
        ceiling=principal.provenance_ceiling,
        unlock=body.unlock,
        deleted=body.deleted,
        forget=forget,
    )


@router.post("/workspace/router", summary="A router file (CLAUDE.md, AGENTS.md, .cursorrules) and its MCP config")
def router_files(body: RouterRequest) -> RouterFiles:
    tenant_id = require(router, Verb.read).tenant_id
    return RouterFiles(files=container.workspace().router(tenant_id, body.tool, token_budget=body.token_budget))
