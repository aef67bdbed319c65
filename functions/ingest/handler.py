"""SQS ingest queue → documents: our own jobs and S3 upload notifications, with partial batch failures.

Each message is processed once: Powertools idempotency keyed on the SQS message id, with its
records in PostgreSQL. A redelivery of a handled message gets the saved receipt back without
calling the service; a failed message leaves no record, so the queue's retry runs it again.
"""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos import container
from contextos.messages import ingest_message
from contextos.observability import logger, metrics, tracer
from contextos.store.idempotency import on_replay

processor = BatchProcessor(event_type=EventType.SQS)

# A message id is remembered for the ingest queue's retention (4 days): no copy of a message can
# be delivered after that. The fixed prefix keeps keys the same however the module is loaded.
IDEMPOTENCY_KEY_PREFIX = "contextos-ingest"
idempotency_config = IdempotencyConfig(
    event_key_jmespath="messageId", expires_after_seconds=4 * 24 * 60 * 60, response_hook=on_replay
)


@tracer.capture_method
@idempotent_function(
    data_keyword_argument="record",
    config=idempotency_config,
    persistence_store=container.idempotency_store(),
    key_prefix=IDEMPOTENCY_KEY_PREFIX,
)
def record_handler(record: SQSRecord) -> dict:
    container.ingestion().handle_message(ingest_message(record.body))
    return {"messageId": record.message_id, "md5OfBody": record.md5_of_body}


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict, context: LambdaContext) -> dict:
    idempotency_config.register_lambda_context(context)
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
