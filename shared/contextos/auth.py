"""The API-key authorizer's logic: a presented key → an IAM policy carrying the tenant context."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerRequestEvent,
    APIGatewayAuthorizerResponse,
)

from contextos.observability import logger
from contextos.services.keys import KeyService


def presented_key(headers: dict[str, str]) -> str | None:
    """``Authorization: Bearer <key>`` or ``x-api-key: <key>`` (header names are case-insensitive)."""
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    if key := lowered.get("x-api-key"):
        return key.strip()
    auth = lowered.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def authorize_request(keys: KeyService, event: APIGatewayAuthorizerRequestEvent) -> dict:
    """Allow every API route for a known key, with its tenant in the context; deny anything else."""
    arn = event.parsed_arn
    identity = keys.identify(presented_key(event.headers) or "")
    response = APIGatewayAuthorizerResponse(
        principal_id=identity.name if identity else "anonymous",
        region=arn.region,
        aws_account_id=arn.aws_account_id,
        api_id=arn.api_id,
        stage=arn.stage,
        context=(
            {
                "tenant_id": identity.tenant_id,
                "principal": identity.principal,
                "key_name": identity.name,
                "provenance_ceiling": identity.provenance_ceiling,
            }
            if identity
            else None
        ),
    )
    if identity is None:
        logger.info("API key refused")
        response.deny_all_routes()
    else:
        response.allow_all_routes()
    return response.asdict()
