"""EventBridge (every 5 minutes) → flush idle sessions and resend lost claims. Safe to run twice."""

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos import container
from contextos.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def lambda_handler(event: EventBridgeEvent, context: LambdaContext) -> dict:
    logger.info("session sweep triggered", extra={"rule": event.resources, "time": event.time})
    return container.conversations().sweep().model_dump(exclude={"flushes"})
