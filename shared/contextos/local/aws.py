"""An in-process moto server holding the buckets and queues, wired like the CDK stack wires AWS."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

QUEUE_MAX_RECEIVES = 3


@dataclass
class LocalAws:
    endpoint: str
    upload_bucket: str
    cold_bucket: str
    ingest_queue_url: str
    ingest_queue_arn: str
    ingest_dlq_url: str
    conversation_queue_url: str
    conversation_queue_arn: str
    server: Any  # moto.server.ThreadedMotoServer
    conversation_dlq_url: str = ""

    def stop(self) -> None:
        self.server.stop()


def use_fake_credentials(endpoint: str, region: str) -> None:
    """Point every boto3 client of this process at the moto endpoint with throwaway credentials."""
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": region,
            "AWS_REGION": region,
        }
    )
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)


def start_local_aws(
    *,
    region: str,
    upload_bucket: str,
    cold_bucket: str,
    upload_prefix: str,
    queue_prefix: str = "contextos",
    visibility_timeout_s: int = 30,
    port: int = 0,
    event_bus: str = "contextos-memory-events",
) -> LocalAws:
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    host, bound_port = server.get_host_and_port()
    endpoint = f"http://{host}:{bound_port}"
    use_fake_credentials(endpoint, region)
    s3 = boto3.client("s3", region_name=region, endpoint_url=endpoint)
    sqs = boto3.client("sqs", region_name=region, endpoint_url=endpoint)

    def queue(name: str) -> tuple[str, str, str]:
        dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        url = sqs.create_queue(
            QueueName=name,
            Attributes={
                "VisibilityTimeout": str(visibility_timeout_s),
                "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": QUEUE_MAX_RECEIVES}),
            },
        )["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, arn, dlq_url

    ingest_url, ingest_arn, ingest_dlq = queue(f"{queue_prefix}-ingest")
    conversation_url, conversation_arn, conversation_dlq = queue(f"{queue_prefix}-conversation")
    for bucket in (upload_bucket, cold_bucket):
        s3.create_bucket(Bucket=bucket)
    bus = boto3.client("events", region_name=region, endpoint_url=endpoint)
    if event_bus not in {b["Name"] for b in bus.list_event_buses()["EventBuses"]}:
        bus.create_event_bus(Name=event_bus)  # moto's state is per process: another stack may have made it
    s3.put_bucket_notification_configuration(
        Bucket=upload_bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": ingest_arn,
                    "Events": ["s3:ObjectCreated:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": upload_prefix}]}},
                }
            ]
        },
    )
    return LocalAws(
        endpoint=endpoint,
        upload_bucket=upload_bucket,
        cold_bucket=cold_bucket,
        ingest_queue_url=ingest_url,
        ingest_queue_arn=ingest_arn,
        ingest_dlq_url=ingest_dlq,
        conversation_queue_url=conversation_url,
        conversation_queue_arn=conversation_arn,
        server=server,
        conversation_dlq_url=conversation_dlq,
    )
