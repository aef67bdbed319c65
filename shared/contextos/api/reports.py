"""/v1/health and /v1/governance (S9): the tenant's health score and latest governance report."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from contextos import container
from contextos.api.auth import Verb, require
from contextos.reports import GovernanceReport, HealthReport

router = Router()


@router.get("/health", summary="Health score 0-100 with each component, its definition and its inputs")
def get_health() -> HealthReport:
    return container.reports().health(require(router, Verb.read).tenant_id)


@router.get(
    "/governance",
    summary="The latest governance report: decay, conflict and consolidation candidates, god nodes, communities",
)
def get_governance() -> GovernanceReport:
    return container.reports().governance(require(router, Verb.read).tenant_id)
