"""Lambda events in their real AWS shapes, built for the local stack (and mirrored in events/)."""

from __future__ import annotations

import hashlib
import time
import uuid
from datetime import UTC, datetime

ACCOUNT = "000000000000"
STAGE = "local"
API_ID = "localapi"


def _request_context(method: str, path: str, source_ip: str) -> dict:
    return {
        "accountId": ACCOUNT,
        "apiId": API_ID,
        "stage": STAGE,
        "resourcePath": "/{proxy+}",
        "httpMethod": method,
        "path": f"/{STAGE}{path}",
        "protocol": "HTTP/1.1",
        "requestId": str(uuid.uuid4()),
        "requestTimeEpoch": int(time.time() * 1000),
        "identity": {"sourceIp": source_ip, "userAgent": "contextos-local"},
    }


def authorizer_request_event(
    method: str, path: str, headers: dict[str, str], query: dict[str, str] | None, source_ip: str = "127.0.0.1"
) -> dict:
    """The REQUEST authorizer event API Gateway sends before invoking the API function."""
    return {
        "type": "REQUEST",
        "methodArn": f"arn:aws:execute-api:us-east-1:{ACCOUNT}:{API_ID}/{STAGE}/{method}{path}",
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": query or {},
        "multiValueQueryStringParameters": {k: [v] for k, v in (query or {}).items()},
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": {},
        "requestContext": _request_context(method, path, source_ip),
    }


def api_proxy_event(
    method: str,
    path: str,
    headers: dict[str, str],
    query: dict[str, str] | None,
    body: str | None,
    authorizer: dict | None,
    source_ip: str = "127.0.0.1",
) -> dict:
    """A REST API (v1) Lambda proxy event, with the authorizer's context where API Gateway puts it."""
    context = _request_context(method, path, source_ip)
    if authorizer is not None:
        context["authorizer"] = authorizer
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": context,
        "body": body,
        "isBase64Encoded": False,
    }


def sqs_event(messages: list[dict], queue_arn: str, region: str = "us-east-1") -> dict:
    """An SQS → Lambda event from ``receive_message`` results."""
    records = []
    for m in messages:
        attributes = m.get("Attributes", {})
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {
                    "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
                    "SentTimestamp": attributes.get("SentTimestamp", str(int(time.time() * 1000))),
                    "SenderId": attributes.get("SenderId", ACCOUNT),
                    "ApproximateFirstReceiveTimestamp": attributes.get(
                        "ApproximateFirstReceiveTimestamp", str(int(time.time() * 1000))
                    ),
                },
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody") or hashlib.md5(m["Body"].encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


def scheduled_event(rule_name: str, region: str = "us-east-1") -> dict:
    """An EventBridge "Scheduled Event" as a rate() rule delivers it."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{ACCOUNT}:rule/{rule_name}"],
        "detail": {},
    }


class LocalLambdaContext:
    """Enough of the Lambda context object for Powertools and the handlers."""

    def __init__(self, function_name: str, timeout_s: float = 60) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(int((self._deadline - time.monotonic()) * 1000), 0)
