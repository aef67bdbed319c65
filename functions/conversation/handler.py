"""SQS conversation queue → memories: one flushed session range per message, partial batch failures.

Exactly once without an idempotency table: the flush row is the ledger. A job is taken only while
its range is pending or queued, and its memories are stored in the transaction that marks it done,
so a redelivered message finds it done and does nothing.
"""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos import container
from contextos.messages import FlushRecord
from contextos.observability import logger, metrics, tracer

processor = BatchProcessor(event_type=EventType.SQS, model=FlushRecord)


@tracer.capture_method
def record_handler(record: FlushRecord) -> None:
    container.conversations().handle_message(record.body)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict, context: LambdaContext) -> dict:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
