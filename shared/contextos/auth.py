"""The API-key authorizer's logic: a presented key → an IAM policy carrying the tenant context.

No key, a malformed one or an unknown one is a 401: API Gateway answers 401 when a Lambda
authorizer fails with exactly "Unauthorized". A known key always gets its tenant's context;
what it may not do there (an agent promoting a held candidate, say) is the API's 403.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerRequestEvent,
    APIGatewayAuthorizerResponse,
)

from contextos.observability import logger
from contextos.services.keys import KeyService

UNAUTHORIZED = "Unauthorized"  # the message API Gateway maps to 401
MAX_KEY_CHARS = 512


class KeyRefused(Exception):
    """Raised to API Gateway for a missing, malformed or unknown key; it answers 401."""

    def __init__(self) -> None:
        super().__init__(UNAUTHORIZED)


def presented_key(headers: dict[str, str]) -> str | None:
    """``Authorization: Bearer <key>`` or ``x-api-key: <key>`` (header names are case-insensitive)."""
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    if key := lowered.get("x-api-key"):
        return key.strip()
    auth = lowered.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def well_formed(key: str | None) -> bool:
    return key is not None and 0 < len(key) <= MAX_KEY_CHARS and key.isascii() and key.isprintable()


def authorize_request(keys: KeyService, event: APIGatewayAuthorizerRequestEvent) -> dict:
    """Allow every API route for a known key, with its tenant in the context; refuse anything else."""
    arn = event.parsed_arn
    key = presented_key(event.headers)
    identity = keys.identify(key) if key and well_formed(key) else None
    if identity is None:
        logger.info("API key refused", extra={"presented": key is not None})
        raise KeyRefused()
    response = APIGatewayAuthorizerResponse(
        principal_id=identity.name,
        region=arn.region,
        aws_account_id=arn.aws_account_id,
        api_id=arn.api_id,
        stage=arn.stage,
        context={
            "tenant_id": identity.tenant_id,
            "principal": identity.principal,
            "key_name": identity.name,
            "provenance_ceiling": identity.provenance_ceiling,
            # Authorizer context values are strings: the verbs comma-joined ("" = the defaults).
            "verbs": ",".join(identity.verbs) if identity.verbs is not None else "",
            "verbs_set": "1" if identity.verbs is not None else "",
            "scope_user_id": identity.scope_user_id or "",
            "scope_agent_id": identity.scope_agent_id or "",
            "scope_tags": ",".join(identity.scope_tags),
        },
    )
    response.allow_all_routes()
    return response.asdict()
