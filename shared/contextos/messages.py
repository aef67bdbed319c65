"""The SQS records the queue functions receive, typed: a body is parsed and validated before it
reaches its service, and a body that fits no message fails that record alone.

The conversation function parses in ``BatchProcessor(model=FlushRecord)``. The ingest function
parses after its idempotency check (``ingest_message``): a redelivered message id gets its saved
result back whatever its body, so the body must not be parsed before that check.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from pydantic import Json, TypeAdapter

from contextos.conversations import FlushJob
from contextos.jobs import IngestMessage

_INGEST_MESSAGE: TypeAdapter[IngestMessage] = TypeAdapter(IngestMessage)


class FlushRecord(SqsRecordModel):
    body: Json[FlushJob]


def ingest_message(body: str) -> IngestMessage:
    """An ingest queue body as its message: a document job, an S3 notification or S3's test event."""
    return _INGEST_MESSAGE.validate_json(body)
