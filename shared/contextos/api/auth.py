"""Who is calling: read only from the API Gateway authorizer context, never from the body or path.
What the caller may do is `contextos.access.authorize`: every route names its verb here."""

from __future__ import annotations

from typing import cast

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from contextos.access import KeyScope, Principal, Verb, authorize, parse_verbs
from contextos.errors import BadRequest, Unauthorized
from contextos.models import Provenance
from contextos.tenancy import valid_tenant

TENANT_CLAIM = "custom:tenant_id"

__all__ = ["Principal", "Verb", "current_principal", "require"]


def current_principal(router: BaseRouter) -> Principal:
    """The caller as the authorizer described it: a Lambda authorizer's context or Cognito claims."""
    event = cast(APIGatewayProxyEvent, router.current_event)  # the one resolver is a REST resolver
    authorizer = event.request_context.authorizer
    context = authorizer.get_context() if authorizer else {}
    claims = authorizer.claims if authorizer else {}
    verbs: frozenset[str] | None = None
    scope = KeyScope()
    if context.get("tenant_id"):
        tenant_id = str(context["tenant_id"])
        kind = str(context.get("principal", "agent"))
        subject = str(context.get("key_name") or authorizer.principal_id or "api-key")
        ceiling = str(context.get("provenance_ceiling") or Provenance.agent_turn.value)
        try:
            verbs = parse_verbs(_csv(context.get("verbs"))) if context.get("verbs_set") else None
        except BadRequest as exc:
            raise Unauthorized("the authorizer gave unknown verbs") from exc
        scope = KeyScope(
            user_id=str(context.get("scope_user_id") or "") or None,
            agent_id=str(context.get("scope_agent_id") or "") or None,
            tags=tuple(_csv(context.get("scope_tags"))),
        )
    elif claims.get(TENANT_CLAIM):
        tenant_id = str(claims[TENANT_CLAIM])
        kind, subject, ceiling = "user", str(claims.get("sub", "user")), Provenance.user_turn.value
    else:
        raise Unauthorized("no tenant in the authorizer context")
    if not valid_tenant(tenant_id):
        raise Unauthorized("the authorizer gave an invalid tenant id")
    try:
        provenance_ceiling = Provenance(ceiling)
    except ValueError as exc:
        raise Unauthorized("the authorizer gave an unknown provenance ceiling") from exc
    return Principal(
        tenant_id=tenant_id, kind=kind, subject=subject, provenance_ceiling=provenance_ceiling, verbs=verbs, scope=scope
    )


def require(router: BaseRouter, verb: Verb) -> Principal:
    """The caller, if the permission matrix lets it ``verb``; 403 ``forbidden`` otherwise."""
    return authorize(current_principal(router), verb)


def _csv(value: object) -> list[str]:
    return [v for v in str(value or "").split(",") if v]
