"""EventBridge (every 4 h) → the lifecycle scan. Safe to run twice: batches skip locked rows."""

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos import container
from contextos.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def lambda_handler(event: EventBridgeEvent, context: LambdaContext) -> dict:
    logger.info("lifecycle scan triggered", extra={"rule": event.resources, "time": event.time})
    return container.lifecycle().run().model_dump()
