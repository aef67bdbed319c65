"""API Gateway Lambda authorizer: a hashed API key → an IAM policy and the tenant context."""

from aws_lambda_powertools.utilities.data_classes import event_source
from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerRequestEvent,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos import container
from contextos.auth import authorize_request
from contextos.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@event_source(data_class=APIGatewayAuthorizerRequestEvent)
def lambda_handler(event: APIGatewayAuthorizerRequestEvent, context: LambdaContext) -> dict:
    return authorize_request(container.keys(), event)
