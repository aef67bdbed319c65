"""/v1/memories: a memory with its exact strength and every source it came from."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from contextos import container
from contextos.api.auth import current_principal
from contextos.api.openapi import statuses
from contextos.governance_models import MemoryAdmission, MemoryCreate, MemoryHistory
from contextos.models import MemoryDetail

router = Router()


@router.get("/memories/<memory_id>", summary="A memory, its current strength and band, and its sources")
def get_memory(memory_id: Annotated[UUID, Path()]) -> MemoryDetail:
    return container.memories().get(current_principal(router).tenant_id, memory_id)


@router.post("/memories", summary="Write a memory by hand: capped provenance, the trust and contradiction gates")
@statuses(201, 202)
def create_memory(body: MemoryCreate) -> Response[MemoryAdmission]:
    principal = current_principal(router)
    admission = container.governance().create_memory(
        principal.tenant_id, body, actor=principal.subject, ceiling=principal.provenance_ceiling
    )
    return Response(
        status_code=201 if admission.status == "admitted" else 202,
        content_type=content_types.APPLICATION_JSON,
        body=admission.model_dump(mode="json"),
    )


@router.get("/memories/<memory_id>/history", summary="The supersession chain through a memory, with its audit trail")
def memory_history(memory_id: Annotated[UUID, Path()]) -> MemoryHistory:
    return container.governance().history(current_principal(router).tenant_id, memory_id)
