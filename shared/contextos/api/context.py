"""/v1/context: the ranked, budgeted context block for a query."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from contextos import container
from contextos.api.auth import current_principal
from contextos.models import ContextRequest, ContextResult

router = Router()


@router.post("/context", summary="Build a context block (dry_run: inspect without side effects)")
def get_context(body: ContextRequest) -> ContextResult:
    principal = current_principal(router)
    return container.retrieval().context(principal.tenant_id, body)
