"""Ingestion: upload bucket → ingest queue → ingest function; conversation queue → conversation.

Both consumers report partial batch failures, so one bad document never fails its neighbours
(S4); retries and the DLQ are the queue's business, not the handler's.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from constructs import Construct

from infra.catalog import BY_NAME, UPLOAD_PREFIX
from infra.components.queues import WorkQueue, messaging_key, visibility_for
from infra.nag import acknowledge

INGEST_BATCH_SIZE = 5  # documents are heavy: a few per invocation keeps the timeout honest
INGEST_BATCH_WINDOW_SECONDS = 5
CONVERSATION_BATCH_SIZE = 10
# Caps concurrent consumers so a burst of uploads cannot exhaust database connections or
# Bedrock throughput; SQS simply holds the backlog.
INGEST_MAX_CONCURRENCY = 10
CONVERSATION_MAX_CONCURRENCY = 5


class Ingestion(Construct):
    """The two work queues; `connect` wires their consumers once the functions exist."""

    def __init__(self, scope: Construct, construct_id: str):
        super().__init__(scope, construct_id)
        self.key: kms.Key = messaging_key(self, "MessagingKey")
        key = self.key
        self.ingest = WorkQueue(
            self,
            "Ingest",
            key=key,
            visibility_timeout=visibility_for(BY_NAME["ingest"].timeout_seconds, INGEST_BATCH_WINDOW_SECONDS),
        )
        self.conversation = WorkQueue(
            self,
            "Conversation",
            key=key,
            visibility_timeout=visibility_for(BY_NAME["conversation"].timeout_seconds),
        )

    def connect(
        self,
        *,
        upload_bucket: s3.Bucket,
        ingest: lambda_.IFunction,
        conversation: lambda_.IFunction,
    ) -> None:
        """S3 notification for new uploads, and the two event source mappings."""
        upload_bucket.add_event_notification(
            s3.EventType.OBJECT_CREATED,
            s3n.SqsDestination(self.ingest.queue),
            s3.NotificationKeyFilter(prefix=UPLOAD_PREFIX),
        )
        self._acknowledge_notifications_handler()
        # Plain mappings rather than SqsEventSource: that helper also calls grant_consume_messages,
        # adding a second, unconditioned kms:Decrypt to the role; the catalog grants already cover it.
        lambda_.EventSourceMapping(
            self,
            "IngestConsumer",
            target=ingest,
            event_source_arn=self.ingest.queue.queue_arn,
            batch_size=INGEST_BATCH_SIZE,
            max_batching_window=Duration.seconds(INGEST_BATCH_WINDOW_SECONDS),
            report_batch_item_failures=True,
            max_concurrency=INGEST_MAX_CONCURRENCY,
        )
        lambda_.EventSourceMapping(
            self,
            "ConversationConsumer",
            target=conversation,
            event_source_arn=self.conversation.queue.queue_arn,
            batch_size=CONVERSATION_BATCH_SIZE,
            report_batch_item_failures=True,
            max_concurrency=CONVERSATION_MAX_CONCURRENCY,
        )

    def _acknowledge_notifications_handler(self) -> None:
        """CDK configures bucket notifications through its own singleton Lambda; scope to it."""
        stack = Stack.of(self)
        handler = next((c for c in stack.node.children if c.node.id.startswith("BucketNotificationsHandler")), None)
        if handler is None:
            return
        acknowledge(
            handler,
            "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "aws-cdk-lib's bucket-notification handler role; it only writes its own logs with this policy.",
        )
        acknowledge(
            handler,
            "IAM5[Resource::*]",
            "s3:PutBucketNotification is granted on '*' by aws-cdk-lib's notification handler, which "
            "runs only during deployment to configure this stack's upload bucket.",
        )
