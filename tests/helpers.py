"""Drive the real handlers the way AWS would: API Gateway events, SQS batches, scheduled events."""

from __future__ import annotations

import json
from typing import Any

from contextos.local.events import api_proxy_event
from contextos.local.handlers import invoke
from contextos.local.workers import QueuePoller


def call_api(
    method: str,
    path: str,
    tenant: str | None,
    body: Any = None,
    *,
    raw_body: str | None = None,
    principal: str = "user",
    ceiling: str = "user_turn",
    query: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One API call with the tenant in the authorizer context, as API Gateway passes it (a user
    credential unless ``principal``/``ceiling`` say otherwise)."""
    authorizer = (
        {
            "tenant_id": tenant,
            "principal": principal,
            "key_name": f"tests-{principal}",
            "provenance_ceiling": ceiling,
            "principalId": "tests",
        }
        if tenant
        else None
    )
    text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
    event = api_proxy_event(method, path, {"Content-Type": "application/json"}, query, text, authorizer)
    response = invoke("api", event)
    payload = response.get("body")
    return response["statusCode"], (json.loads(payload) if payload else None)


def run_queue(sqs: Any, queue_url: str, queue_arn: str, function: str = "ingest", *, rounds: int = 3) -> int:
    """Feed every waiting message to the function in real SQS batches; return how many were handled."""
    poller = QueuePoller(sqs, queue_url, queue_arn, function, wait_s=0)
    handled = 0
    for _ in range(rounds):
        n = poller.poll_once()
        handled += n
        if n == 0:
            break
    return handled
