"""Fault injection (SPEC S14): a real worker process is SIGKILLed at each step of ingestion, of a
conversation flush and of cold archival, then the work is restarted. Nothing is lost, nothing is
duplicated, and the tenant's audit chain still verifies.

The kill is the operating system's, not an exception: ``CONTEXTOS_CRASH_AT`` names the step (see
``contextos.faults``), the subprocess dies there with SIGKILL, its open transaction is rolled
back by PostgreSQL and its SQS message comes back after the visibility timeout, as in AWS.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from contextos import container
from contextos.faults import ARCHIVE_STEPS, CRASH_AT_ENV, FLUSH_STEPS, INGEST_STEPS

from tests.conftest import REPO
from tests.helpers import call_api, run_queue
from tests.integration.test_cold_storage import assert_each_memory_exactly_once, forget, snapshot

# How long a dead worker's claim (and its idempotency record, which expires with the function's
# timeout) blocks a redelivery; the queues' visibility timeout is 1 s in the suite.
STALE_S = 2
DOCUMENT = (
    "# Payments runbook\n\nThe circuit breaker opens after five failed calls to the card processor. "
    "The circuit breaker protects the payment service from cascading failures.\n\n"
    "## Retries\n\nThe idempotency key makes a retried charge safe. Each idempotency key is kept for 24 hours.\n"
)
# One time for every run's turns: a kept turn shows when it was said, so the reference and a
# rerun must say the same.
SAID_AT = (datetime.now(UTC) - timedelta(hours=1)).replace(second=0, microsecond=0).isoformat()
TURNS = [
    ("user", "Our staging cluster runs on Kubernetes in eu-west-1. Deploys go out every Tuesday."),
    ("assistant", "Noted: the staging cluster is Kubernetes in eu-west-1, with Tuesday deploys."),
    ("user", "I prefer blue-green deployment for the staging cluster, never in-place upgrades."),
    ("assistant", "Understood. Blue-green deployment keeps the staging cluster available during deploys."),
]


@pytest.fixture
def short_claims(configured, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_DOCUMENT_STALE_PROCESSING_S", str(STALE_S))
    monkeypatch.setenv("CONTEXTOS_CONVERSATION__STALE_PROCESSING_S", str(STALE_S))
    monkeypatch.setenv("CONTEXTOS_LOCAL_SERVER__FUNCTION_TIMEOUT_S", str(STALE_S))
    container.reset()


def crash_worker(step: str, *args: str) -> subprocess.CompletedProcess:
    """Run the worker in a fresh process that is killed at ``step``; it must die there."""
    env = dict(os.environ)
    env[CRASH_AT_ENV] = step
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "shared"), str(REPO), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "tests.fault_worker", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == -signal.SIGKILL, f"the worker was not killed at {step}: {done.stdout}{done.stderr}"
    return done


def empty_queue(sqs, url: str) -> None:
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", []):
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )


def waiting(sqs, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


def restart(sqs, url: str, arn: str, function: str) -> None:
    """A fresh delivery after the dead worker's claim and the message's visibility have lapsed."""
    time.sleep(STALE_S + 0.5)
    deadline = time.monotonic() + 30
    while waiting(sqs, url) and time.monotonic() < deadline:
        run_queue(sqs, url, arn, function, rounds=1)
        time.sleep(0.3)
    assert waiting(sqs, url) == 0, "the message was neither processed nor settled"


def knowledge(tenant: str) -> dict:
    """What the work taught, free of ids and clocks: memories, their sources and the audit actions."""
    with container.database().tenant_tx(tenant) as conn:
        memories = conn.execute("SELECT label, definition, type, state FROM memories ORDER BY label").fetchall()
        items = conn.execute("SELECT count(*) AS n FROM memory_items").fetchone()["n"]
        edges = conn.execute("SELECT count(*) AS n FROM relationships").fetchone()["n"]
        review = conn.execute("SELECT count(*) AS n FROM review_queue").fetchone()["n"]
        actions = conn.execute("SELECT action FROM audit_log").fetchall()
    return {
        "memories": [tuple(m.values()) for m in memories],
        "items": items,
        "edges": edges,
        "held": review,
        "audit": Counter(a["action"] for a in actions),
    }


def assert_chain_verifies(tenant: str) -> None:
    report = container.governance().verify(tenant)
    assert report.ok, report.problems
    assert report.entries > 0


# -- ingestion -------------------------------------------------------------------------------------
def ingest_document(tenant: str) -> str:
    status, accepted = call_api("POST", "/v1/documents", tenant, {"text": DOCUMENT, "filename": "runbook.md"})
    assert status == 202
    return accepted["id"]


@pytest.fixture
def reference_ingest(short_claims, sqs, local_aws):
    """The same document ingested without a fault, in a tenant of its own."""
    empty_queue(sqs, local_aws.ingest_queue_url)
    tenant = "t-fault-reference-ingest"
    if not knowledge(tenant)["memories"]:
        ingest_document(tenant)
        run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn, "ingest")
    expected = knowledge(tenant)
    assert len(expected["memories"]) >= 2
    return expected


@pytest.mark.parametrize("step", INGEST_STEPS)
def test_a_worker_killed_during_ingestion_loses_and_duplicates_nothing(step, tenant, reference_ingest, sqs, local_aws):
    url, arn = local_aws.ingest_queue_url, local_aws.ingest_queue_arn
    document_id = ingest_document(tenant)
    crash_worker(step, "ingest", url, arn)

    _, document = call_api("GET", f"/v1/documents/{document_id}", tenant)
    if step == "store:after_commit":
        assert document["status"] == "done"  # committed; only the queue's delete was lost
    else:
        assert document["status"] == "processing"  # the dead worker's claim
        assert knowledge(tenant)["memories"] == []  # nothing half-written

    restart(sqs, url, arn, "ingest")
    _, document = call_api("GET", f"/v1/documents/{document_id}", tenant)
    assert document["status"] == "done", document["error"]
    assert knowledge(tenant) == reference_ingest
    assert waiting(sqs, local_aws.ingest_dlq_url) == 0
    assert_chain_verifies(tenant)


@pytest.mark.parametrize("step", INGEST_STEPS)
def test_a_worker_killed_during_a_scoped_ingestion_leaves_no_memory_unscoped(
    step, tenant, short_claims, sqs, local_aws
):
    """S11: a document's memories take its scope in their own transaction; no kill between two
    steps can leave them stored but unscoped (once, the scope was written after the commit)."""
    url, arn = local_aws.ingest_queue_url, local_aws.ingest_queue_arn
    empty_queue(sqs, url)
    body = {"text": DOCUMENT, "filename": "runbook.md", "user_id": "ada", "tags": ["payments"]}
    status, accepted = call_api("POST", "/v1/documents", tenant, body)
    assert status == 202
    crash_worker(step, "ingest", url, arn)
    restart(sqs, url, arn, "ingest")
    _, document = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert document["status"] == "done", document["error"]
    with container.database().tenant_tx(tenant) as conn:
        scopes = conn.execute("SELECT label, user_id, tags FROM memories WHERE state = 'active'").fetchall()
    assert len(scopes) >= 2
    assert [m for m in scopes if m["user_id"] != "ada" or "payments" not in m["tags"]] == []


# -- conversation flush ------------------------------------------------------------------------------
def end_conversation(tenant: str, session: str) -> None:
    for role, content in TURNS:
        body = {"role": role, "content": content, "occurred_at": SAID_AT}
        status, _ = call_api("POST", f"/v1/sessions/{session}/messages", tenant, body)
        assert status == 201
    status, view = call_api("POST", f"/v1/sessions/{session}/end", tenant)
    assert status == 200 and [f["status"] for f in view["flushes"]] == ["queued"]


@pytest.fixture
def reference_flush(short_claims, sqs, local_aws):
    empty_queue(sqs, local_aws.conversation_queue_url)
    tenant = "t-fault-reference-flush"
    if not knowledge(tenant)["memories"]:
        end_conversation(tenant, "staging")
        run_queue(sqs, local_aws.conversation_queue_url, local_aws.conversation_queue_arn, "conversation")
    expected = knowledge(tenant)
    assert len(expected["memories"]) >= 2
    return expected


@pytest.mark.parametrize("step", FLUSH_STEPS)
def test_a_worker_killed_during_a_conversation_flush_loses_and_duplicates_nothing(
    step, tenant, reference_flush, sqs, local_aws
):
    url, arn = local_aws.conversation_queue_url, local_aws.conversation_queue_arn
    end_conversation(tenant, "staging")
    crash_worker(step, "conversation", url, arn)

    _, session = call_api("GET", "/v1/sessions/staging", tenant)
    expected_status = "done" if step == "store:after_commit" else "processing"
    assert [f["status"] for f in session["flushes"]] == [expected_status]
    if expected_status == "processing":
        assert knowledge(tenant)["memories"] == []

    restart(sqs, url, arn, "conversation")
    _, session = call_api("GET", "/v1/sessions/staging", tenant)
    assert [f["status"] for f in session["flushes"]] == ["done"], session["flushes"]
    assert knowledge(tenant) == reference_flush
    assert waiting(sqs, local_aws.conversation_dlq_url) == 0
    assert_chain_verifies(tenant)


# -- cold archival ------------------------------------------------------------------------------------
@pytest.mark.parametrize("step", ARCHIVE_STEPS)
def test_a_worker_killed_during_cold_archival_leaves_each_memory_exactly_once(step, tenant, short_claims, s3):
    from tests.integration.test_cold_storage import RELATED, SPECS
    from tests.integration.test_merging import candidates, store_concepts

    store_concepts(container.stores(), tenant, candidates(container.embedder(), SPECS, related=RELATED))
    before = snapshot(tenant)
    forgotten = ["Canary release", "Feature flags", "Rollback plan"]
    forget(tenant, forgotten)

    crash_worker(step, "archive", tenant)
    assert assert_each_memory_exactly_once(tenant, s3, before)["cold"] == []  # rolled back with the process

    assert container.lifecycle().run(tenants=[tenant]).archived == 3  # the next scan
    assert sorted(assert_each_memory_exactly_once(tenant, s3, before)["cold"]) == forgotten
    assert_chain_verifies(tenant)
