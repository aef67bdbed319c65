"""/v1/erasure: erase a user scope or the whole tenant (S3), gated by the ``erase`` verb."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from contextos import container
from contextos.api.auth import Verb, require
from contextos.management_models import ErasureReport, ErasureRequest, TenantErasureRequest

router = Router()


@router.post("/erasure/user", summary="Erase everything of one user_id: rows, vectors, objects (audit tombstones)")
def erase_user(body: ErasureRequest) -> ErasureReport:
    principal = require(router, Verb.erase)
    return container.erasure().erase_user(principal.tenant_id, body.user_id, actor=principal.subject)


@router.post("/erasure/tenant", summary="Erase the whole tenant (confirm repeats its id); the audit chain remains")
def erase_tenant(body: TenantErasureRequest) -> ErasureReport:
    principal = require(router, Verb.erase)
    return container.erasure().erase_tenant(principal.tenant_id, actor=principal.subject, confirm=body.confirm)
