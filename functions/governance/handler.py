"""EventBridge (daily) → the governance report of every tenant (S9). Safe to run twice: each run
stores a new report and replaces the tenant's communities in one transaction."""

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos import container
from contextos.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_source(data_class=EventBridgeEvent)
def lambda_handler(event: EventBridgeEvent, context: LambdaContext) -> dict:
    logger.info("governance run triggered", extra={"rule": event.resources, "time": event.time})
    return container.reports().run_all().model_dump()
