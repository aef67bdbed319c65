"""/v1/settings/privacy: the tenant's write-firewall policy (S7 "What never gets in")."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from contextos import container
from contextos.api.auth import Verb, require
from contextos.api.openapi import statuses
from contextos.governance_models import PrivacySettings

router = Router()


@router.get("/settings/privacy", summary="The tenant's redaction policy (redact, hold or reject)")
def get_privacy() -> PrivacySettings:
    return container.firewall().settings(require(router, Verb.read).tenant_id)


@router.patch("/settings/privacy", summary="Set the tenant's redaction policy (user credentials only)")
@statuses(403)
def patch_privacy(body: PrivacySettings) -> PrivacySettings:
    principal = require(router, Verb.write)
    return container.firewall().set_settings(principal.tenant_id, body, actor=principal.subject, kind=principal.kind)
