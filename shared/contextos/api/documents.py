"""/v1/documents: put documents in, see what became of them."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from contextos import container
from contextos.api.auth import current_principal
from contextos.api.openapi import statuses
from contextos.config import get_settings
from contextos.models import DocumentAccepted, DocumentCreate, DocumentMemories, DocumentRecord
from contextos.trust import cap_provenance

router = Router()


@router.post("/documents", summary="Submit a document (text, markdown, or base64 bytes)")
@statuses(200, 202)
def create_document(body: DocumentCreate) -> Response[DocumentAccepted]:
    principal = current_principal(router)
    # governance (issue #6): a credential cannot claim more trust than its provenance ceiling
    provenance = cap_provenance(body.provenance, principal.provenance_ceiling, get_settings().governance)
    if provenance is not body.provenance:
        body = body.model_copy(
            update={"provenance": provenance, "metadata": body.metadata | {"claimed_provenance": body.provenance.value}}
        )
    accepted = container.ingestion().submit(principal.tenant_id, body)
    return Response(
        status_code=200 if accepted.duplicate else 202,
        content_type=content_types.APPLICATION_JSON,
        body=accepted.model_dump(mode="json"),
    )


@router.get("/documents/<document_id>", summary="A document's status and per-step counts")
def get_document(document_id: Annotated[UUID, Path()]) -> DocumentRecord:
    principal = current_principal(router)
    return container.ingestion().get(principal.tenant_id, document_id)


@router.get("/documents/<document_id>/memories", summary="Every memory a document taught")
def get_document_memories(document_id: Annotated[UUID, Path()]) -> DocumentMemories:
    return container.memories().of_document(current_principal(router).tenant_id, document_id)
