"""/v1/memories: a memory with its exact strength and every source it came from."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from contextos import container
from contextos.api.auth import current_principal
from contextos.models import MemoryDetail

router = Router()


@router.get("/memories/<memory_id>", summary="A memory, its current strength and band, and its sources")
def get_memory(memory_id: Annotated[UUID, Path()]) -> MemoryDetail:
    return container.memories().get(current_principal(router).tenant_id, memory_id)
