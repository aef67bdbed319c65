"""SQS ingest queue → documents: our own jobs and S3 upload notifications, with partial batch failures.

A batch's document jobs whose message ids have no idempotency record yet are processed first,
together (``IngestionService.process_batch``: one admission transaction per tenant); each record
then reports its own job's outcome. Each message is processed once: Powertools idempotency keyed
on the SQS message id, with its records in PostgreSQL. A redelivery of a handled message gets the
saved receipt back without calling the service; a failed message leaves no record, so the
queue's retry runs it again.
"""

from collections.abc import Mapping
from functools import partial

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSEvent, SQSRecord
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemNotFoundError
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

persistence = container.idempotency_store()


@tracer.capture_method
@idempotent_function(
    data_keyword_argument="record",
    config=idempotency_config,
    persistence_store=persistence,
    key_prefix=IDEMPOTENCY_KEY_PREFIX,
)
def record_handler(record: SQSRecord, batch: Mapping[str, Exception | None] | None = None) -> dict:
    if batch is not None and record.message_id in batch:
        if (error := batch[record.message_id]) is not None:
            raise error
    else:
        container.ingestion().handle_message(ingest_message(record.body))
    return {"messageId": record.message_id, "md5OfBody": record.md5_of_body}


def unseen(record: dict) -> bool:
    """No idempotency record for this message yet: its job may run with the batch. A message seen
    before is left to ``record_handler``, whose idempotency check answers it without a parse."""
    persistence.configure(idempotency_config, key_prefix=IDEMPOTENCY_KEY_PREFIX)
    try:
        persistence.get_record(record)
    except IdempotencyItemNotFoundError:
        return True
    return False


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict, context: LambdaContext) -> dict:
    idempotency_config.register_lambda_context(context)
    records = SQSEvent(event).records
    batch = container.ingestion().process_batch({r.message_id: r.body for r in records if unseen(r.raw_event)})
    handler = partial(record_handler, batch=batch)
    return process_partial_response(event=event, record_handler=handler, processor=processor, context=context)
