"""Queues: ingest and conversation work queues, each with its dead-letter queue.

Visibility timeouts are derived from the consumer's timeout (AWS guidance: at least six times
the function timeout) so a slow batch is never handed to a second consumer mid-flight.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

MAX_RECEIVE_COUNT = 3  # S4: a transiently failing message lands in the DLQ after 3 receives
VISIBILITY_FACTOR = 6


def visibility_for(function_timeout_seconds: int, batching_window_seconds: int = 0) -> Duration:
    """Six times the consumer timeout plus its batching window."""
    return Duration.seconds(VISIBILITY_FACTOR * function_timeout_seconds + batching_window_seconds)


def messaging_key(scope: Construct, construct_id: str) -> kms.Key:
    """The key for queues and the alarm topic.

    Separate from the storage key: S3 needs a statement in the queue key's policy that names the
    upload bucket, and the upload bucket names the storage key, so one shared key is a cycle.
    """
    return kms.Key(
        scope,
        construct_id,
        description="ContextOS messaging at rest: SQS queues and the alarm topic",
        enable_key_rotation=True,
    )


class WorkQueue(Construct):
    """A KMS-encrypted, TLS-only queue with a DLQ after three receives."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        key: kms.IKey,
        visibility_timeout: Duration,
    ):
        super().__init__(scope, construct_id)
        self.dlq = sqs.Queue(
            self,
            "Dlq",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            data_key_reuse=Duration.hours(1),
            enforce_ssl=True,
            visibility_timeout=visibility_timeout,
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=MAX_RECEIVE_COUNT),
        )
