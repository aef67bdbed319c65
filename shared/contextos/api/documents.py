"""/v1/documents: put documents in, see what became of them."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from contextos import container
from contextos.api.auth import Verb, require
from contextos.api.openapi import statuses
from contextos.current_settings import get_settings
from contextos.cursors import TIME_ID_CURSOR
from contextos.management_models import DocumentForgotten, DocumentListQuery, DocumentPage, UploadRequest, UploadTicket
from contextos.models import DocumentAccepted, DocumentCreate, DocumentMemories, DocumentRecord, DocumentStatus
from contextos.trust import claim_provenance

router = Router()


@router.post("/documents", summary="Submit a document (text, markdown, or base64 bytes)")
@statuses(200, 202)
def create_document(body: DocumentCreate) -> Response[DocumentAccepted]:
    principal = require(router, Verb.write)
    # governance: a credential cannot claim more trust than its provenance ceiling
    claimed = body.provenance if "provenance" in body.model_fields_set else None
    provenance = claim_provenance(claimed, body.provenance, principal.provenance_ceiling, get_settings().governance)
    if provenance is not body.provenance:
        body = body.model_copy(
            update={"provenance": provenance, "metadata": body.metadata | {"claimed_provenance": body.provenance.value}}
        )
    if not principal.scope.empty:
        body = body.model_copy(update=principal.scope.stamp(body.user_id, body.agent_id, body.tags))
    accepted = container.ingestion().submit(principal.tenant_id, body)
    return Response(
        status_code=200 if accepted.duplicate else 202,
        content_type=content_types.APPLICATION_JSON,
        body=accepted.model_dump(mode="json"),
    )


@router.get("/documents/<document_id>", summary="A document's status and per-step counts")
def get_document(document_id: Annotated[UUID, Path()]) -> DocumentRecord:
    principal = require(router, Verb.read)
    return container.ingestion().get(principal.tenant_id, document_id)


@router.get("/documents/<document_id>/memories", summary="Every memory a document taught")
def get_document_memories(document_id: Annotated[UUID, Path()]) -> DocumentMemories:
    return container.memories().of_document(require(router, Verb.read).tenant_id, document_id)


@router.get("/documents", summary="List documents, newest first (status filter, cursor)")
def list_documents(
    status: Annotated[DocumentStatus | None, Query()] = None,
    user_id: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, pattern=TIME_ID_CURSOR, description="next_cursor of the previous page")
    ] = None,
) -> DocumentPage:
    query = DocumentListQuery(status=status, user_id=user_id, limit=limit, cursor=cursor)
    return container.memories().list_documents(require(router, Verb.read).tenant_id, query)


@router.delete("/documents/<document_id>", summary="Forget a document and everything only it taught (counts)")
def forget_document(document_id: Annotated[UUID, Path()]) -> DocumentForgotten:
    principal = require(router, Verb.forget_document)
    return container.memories().forget_document(principal.tenant_id, document_id, actor=principal.subject)


@router.post("/uploads", summary="A presigned S3 PUT URL for a large file; ingestion starts when it lands")
@statuses(201)
def create_upload(body: UploadRequest) -> Response[UploadTicket]:
    principal = require(router, Verb.write)
    # The ticket carries the credential's ceiling and scope: the ingest function applies them.
    ticket = container.uploads().ticket(
        principal.tenant_id,
        body,
        provenance=principal.provenance_ceiling,
        scope=principal.scope.stamp(None, None, ()),
    )
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=ticket.model_dump(mode="json"))
