"""AWS adapters at the edge: S3 blobs and SQS queues. The domain core never imports boto3."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from contextos.errors import NotFound, PayloadTooLarge, TransientError


@contextmanager
def _reading(bucket: str, key: str) -> Iterator[None]:
    """S3 read failures as domain errors: a missing object is NotFound, anything else transient."""
    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in {"NoSuchKey", "404", "NotFound"}:
            raise NotFound(f"s3://{bucket}/{key} does not exist") from exc
        raise TransientError(f"could not read s3://{bucket}/{key}: {code}") from exc
    except BotoCoreError as exc:
        raise TransientError(f"could not read s3://{bucket}/{key}") from exc


class S3BlobStore:
    """Raw documents, uploads and cold memories."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def put(self, bucket: str, key: str, data: bytes, *, content_type: str = "application/octet-stream") -> None:
        try:
            self._client.put_object(Bucket=bucket, Key=key, Body=data, ContentType=content_type)
        except (ClientError, BotoCoreError) as exc:
            raise TransientError(f"could not write s3://{bucket}/{key}") from exc

    def get(self, bucket: str, key: str, *, max_bytes: int | None = None) -> bytes:
        """Read an object; refuse (without reading it) one larger than ``max_bytes``."""
        with _reading(bucket, key):
            if max_bytes is not None:
                head = self._client.head_object(Bucket=bucket, Key=key)
                if head["ContentLength"] > max_bytes:
                    raise PayloadTooLarge(
                        f"object is {head['ContentLength']} bytes; the limit is {max_bytes}",
                        details={"size": head["ContentLength"]},
                    )
            return self._client.get_object(Bucket=bucket, Key=key)["Body"].read()

    def get_range(self, bucket: str, key: str, start: int, end: int) -> bytes:
        """Bytes ``start``..``end`` (inclusive) of an object: one ranged GET."""
        with _reading(bucket, key):
            return self._client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end}")["Body"].read()

    def delete(self, bucket: str, key: str) -> None:
        """Remove an object (S3 answers a missing key with success too)."""
        try:
            self._client.delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise TransientError(f"could not delete s3://{bucket}/{key}") from exc

    def delete_prefix(self, bucket: str, prefix: str) -> int:
        """Remove every object under ``prefix`` (a page of up to 1,000 per request); how many."""
        deleted = 0
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    self._client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                    deleted += len(keys)
        except (ClientError, BotoCoreError) as exc:
            raise TransientError(f"could not delete s3://{bucket}/{prefix}*") from exc
        return deleted

    def presigned_put(self, bucket: str, key: str, *, content_type: str | None, expires_s: int) -> str:
        """A URL that lets its holder PUT this one object until it expires (signed locally, no call)."""
        params = {"Bucket": bucket, "Key": key} | ({"ContentType": content_type} if content_type else {})
        return self._client.generate_presigned_url("put_object", Params=params, ExpiresIn=expires_s)


class SqsQueue:
    """A queue the domain puts jobs on (ingest, conversation)."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self.queue_url = queue_url

    def send(self, message: dict) -> str:
        try:
            response = self._client.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(message, default=str))
        except (ClientError, BotoCoreError) as exc:
            raise TransientError("could not enqueue the job") from exc
        return response["MessageId"]

    def send_many(self, messages: list[dict]) -> list[bool]:
        """Send in batches of ten (SQS's limit); return, per message, whether it was accepted."""
        accepted: list[bool] = []
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            try:
                response = self._client.send_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[{"Id": str(i), "MessageBody": json.dumps(m, default=str)} for i, m in enumerate(chunk)],
                )
            except (ClientError, BotoCoreError):
                accepted += [False] * len(chunk)
                continue
            ok = {entry["Id"] for entry in response.get("Successful", [])}
            accepted += [str(i) in ok for i in range(len(chunk))]
        return accepted


class EventBridgeBus:
    """Lifecycle events onto an EventBridge bus (S11): one PutEvents call per batch of at most ten."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def put(self, entries: list[dict]) -> None:
        try:
            answer = self._client.put_events(Entries=entries)
        except (ClientError, BotoCoreError) as exc:
            raise TransientError("could not put lifecycle events on the bus") from exc
        if answer.get("FailedEntryCount"):
            codes = sorted({e.get("ErrorCode", "?") for e in answer.get("Entries", []) if e.get("ErrorCode")})
            raise TransientError(f"the bus refused {answer['FailedEntryCount']} lifecycle events: {', '.join(codes)}")
