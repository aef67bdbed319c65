"""Lifecycle events on the real database and moto's EventBridge: each kind of decision a memory goes
through (admitted, superseded, held, promoted, forgotten, reactivated, reminder due) reaches a rule's
target on the bus once, with the memory's label and never its text; a second relay adds nothing."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
from contextos import container
from contextos.current_settings import get_settings

from tests.helpers import call_api

KINDS = {
    "memory.admitted",
    "memory.superseded",
    "memory.held",
    "memory.promoted",
    "memory.forgotten",
    "memory.reactivated",
    "reminder.due",
}


def observer(endpoint: str, tenant: str):
    """An SQS queue behind a rule that matches this tenant's events on the bus."""
    events = boto3.client("events", region_name="us-east-1", endpoint_url=endpoint)
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    name = f"observer-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    bus = get_settings().event_bus_name
    events.put_rule(
        Name=name,
        EventBusName=bus,
        EventPattern=json.dumps({"source": ["contextos"], "detail": {"tenant_id": [tenant]}}),
    )
    events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])

    def received() -> list[dict]:
        out = []
        while True:
            batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
            if not batch:
                return out
            for message in batch:
                out.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    return received


SCENARIO_LABELS = {
    "Payments service timeout",
    "Vendor discount code",
    "Old office address",
    "Canary release",
    "Quarterly planning",
}


def every_kind(api, tenant: str) -> dict[str, str]:
    """Take one memory through each kind of decision (``api(method, path, body) -> (status, body)``);
    the ids the events must name."""

    def remember(label: str, definition: str, **extra) -> dict:
        status, body = api("POST", "/v1/memories", {"label": label, "definition": definition, **extra})
        assert status in (201, 202), body
        return body

    first = remember("Payments service timeout", "The payments service times out after 30 seconds.")
    newer = remember("Payments service timeout", "The payments service times out after 45 seconds.")
    assert newer["superseded"] == [first["memory_id"]]
    held = remember("Vendor discount code", "A forum post says the vendor gives a discount.", provenance="web_content")
    assert held["status"] == "held"
    status, promoted = api("POST", f"/v1/review/{held['review_id']}/promote", {"reason": "checked"})
    assert status == 200, promoted
    gone = remember("Old office address", "The office used to be on Rua Augusta.")
    assert api("DELETE", f"/v1/memories/{gone['memory_id']}", None)[0] == 200
    canary = remember("Canary release", "Canary releases send five percent of traffic to the new version.")
    fading = remember("Quarterly planning", "Quarterly planning happens in the first week of each quarter.")
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(  # thirty unused days: forgotten, so the scan moves it to cold storage
            """UPDATE memories SET strength_anchor = 1.0, strength_anchor_at = now() - interval '30 days',
                      next_transition_at = now() - interval '1 second' WHERE id = %s""",
            [canary["memory_id"]],
        )
        conn.execute(  # critical now: the scan opens a reminder
            """UPDATE memories SET strength_anchor = 0.3, strength_anchor_at = now(),
                      next_transition_at = now() - interval '1 second' WHERE id = %s""",
            [fading["memory_id"]],
        )
    container.lifecycle().run()
    status, context = api(
        "POST", "/v1/context", {"query": "Canary release: canary releases send five percent of traffic"}
    )
    assert status == 200 and [r["label"] for r in context["reactivated"]] == ["Canary release"], context
    return {"superseded": first["memory_id"], "reminder": fading["memory_id"]}


def check_events(events: list[dict], tenant: str, ids: dict[str, str]) -> None:
    kinds = {e["detail"]["kind"] for e in events}
    assert kinds == KINDS, kinds
    assert len({e["detail"]["id"] for e in events}) == len(events)  # each once
    by_kind = {e["detail"]["kind"]: e for e in events}
    assert by_kind["memory.superseded"]["detail"]["memory_id"] == ids["superseded"]
    assert by_kind["memory.held"]["detail"]["label"] == "Vendor discount code"
    assert by_kind["memory.forgotten"]["detail"]["label"] == "Old office address"
    assert by_kind["reminder.due"]["detail"]["memory_id"] == ids["reminder"]
    assert by_kind["memory.reactivated"]["detail-type"] == "Memory Reactivated"
    for event in events:
        assert event["source"] == "contextos" and event["detail"]["version"] == "1"
        assert event["detail"]["tenant_id"] == tenant
        text = json.dumps(event)
        assert "seconds" not in text and "Rua Augusta" not in text and "five percent" not in text  # no definitions


def test_every_lifecycle_kind_reaches_the_bus_once_with_labels_only(configured, tenant, local_aws):
    received = observer(local_aws.endpoint, tenant)
    ids = every_kind(lambda method, path, body: call_api(method, path, tenant, body), tenant)
    report = container.event_relay().run([tenant])
    events = received()
    check_events(events, tenant, ids)
    assert report.published == len(events)
    assert container.event_relay().run([tenant]).published == 0
    assert received() == []


def test_the_relay_skips_nothing_when_the_bus_refuses(configured, tenant, local_aws):
    from contextos.errors import TransientError
    from contextos.services.events import EventRelay
    from contextos.store.events import EventOutboxStore

    class DownBus:
        def put(self, entries: list[dict]) -> None:
            raise TransientError("the bus is down")

    received = observer(local_aws.endpoint, tenant)
    assert (
        call_api("POST", "/v1/memories", tenant, {"label": "Release train", "definition": "Every second Friday."})[0]
        == 201
    )
    down = EventRelay(EventOutboxStore(container.database()), DownBus(), get_settings().event_bus_name, list)
    with pytest.raises(TransientError):
        down.run([tenant])
    assert received() == []
    assert container.event_relay().run([tenant]).by_kind == {"memory.admitted": 1}
    assert [e["detail"]["label"] for e in received()] == ["Release train"]
