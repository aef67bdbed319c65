"""EventBridge (every minute) → the lifecycle events' relay: new decisions onto the event bus.
Safe to run twice: a position moves only after its events were accepted (at least once)."""

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos import container
from contextos.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def lambda_handler(event: EventBridgeEvent, context: LambdaContext) -> dict:
    report = container.event_relay().run()
    logger.info("lifecycle events relayed", extra={"published": report.published, "by_kind": report.by_kind})
    return report.model_dump()
