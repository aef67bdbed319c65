"""API Gateway → the ContextOS HTTP API (Powertools resolver; routes live in contextos.api)."""

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos.api.app import resolve
from contextos.observability import logger, metrics, tracer


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict, context: LambdaContext) -> dict:
    return resolve(event, context)
