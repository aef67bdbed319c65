"""Failures: transient ones retry and reach the DLQ after 3 receives; raw text lives where it should."""

import base64
import time

import pytest
from contextos import container

from tests.helpers import call_api, run_queue
from tests.integration.test_ingest_pipeline import RUNBOOK


def test_a_transient_failure_is_retried_then_lands_in_the_dlq_and_the_document_ends_failed(
    configured, tenant, sqs, s3, local_aws, drain_ingest_queue, monkeypatch
):
    body = {"content_base64": base64.b64encode(RUNBOOK.encode()).decode(), "filename": "runbook.md"}
    status, accepted = call_api("POST", "/v1/documents", tenant, body)
    assert status == 202
    # The raw bucket becomes unreachable between upload and processing: a dependency outage.
    monkeypatch.setenv("CONTEXTOS_RAW_BUCKET", "bucket-that-does-not-exist")
    container.reset()
    receives = 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and receives < 3:
        receives += run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn, rounds=1)
        _, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
        if receives < 3:
            assert doc["status"] == "queued" and doc["error"].startswith("transient")
        time.sleep(1.1)  # the test queue's visibility timeout
    assert receives == 3
    _, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert doc["status"] == "failed" and "gave up after 3 attempts" in doc["error"]
    time.sleep(1.1)
    assert run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn, rounds=1) == 0
    dlq = sqs.receive_message(QueueUrl=local_aws.ingest_dlq_url, MaxNumberOfMessages=10).get("Messages", [])
    assert any(accepted["id"] in m["Body"] for m in dlq)


def test_small_text_is_kept_inline_and_large_text_in_the_raw_bucket(
    configured, tenant, sqs, s3, local_aws, drain_ingest_queue, monkeypatch
):
    monkeypatch.setenv("CONTEXTOS_INLINE_TEXT_MAX_BYTES", "400")
    container.reset()
    small = "Canary release sends a small share of traffic to the new version first. Canary release is safe."
    _, small_doc = call_api("POST", "/v1/documents", tenant, {"text": small})
    _, large_doc = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    with container.database().tenant_tx(tenant) as conn:
        rows = {
            str(r["id"]): r
            for r in conn.execute("SELECT id, raw_text, raw_s3_key, source_s3_key, status FROM documents")
        }
    assert rows[small_doc["id"]]["raw_text"].startswith("Canary release")
    assert rows[small_doc["id"]]["raw_s3_key"] is None
    large = rows[large_doc["id"]]
    assert large["status"] == "done" and large["raw_text"] is None
    assert large["raw_s3_key"] == f"raw/{tenant}/{large_doc['id']}/text.txt"
    stored = s3.get_object(Bucket=local_aws.upload_bucket, Key=large["raw_s3_key"])["Body"].read().decode()
    assert "Blue-green deployment keeps two identical production environments" in stored
    assert large["source_s3_key"].startswith(f"raw/{tenant}/")


def test_documents_and_memories_point_at_each_other(configured, tenant, sqs, local_aws, drain_ingest_queue):
    _, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK, "filename": "runbook.md"})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    status, taught = call_api("GET", f"/v1/documents/{accepted['id']}/memories", tenant)
    assert status == 200 and len(taught["memories"]) >= 3
    memory_id = next(m["id"] for m in taught["memories"] if m["label"].lower() == "canary release")
    status, memory = call_api("GET", f"/v1/memories/{memory_id}", tenant)
    assert status == 200
    assert memory["band"] == "strong" and 0.99 < memory["strength"] <= 1.0
    assert [s["document_id"] for s in memory["sources"]] == [accepted["id"]]
    assert memory["sources"][0]["filename"] == "runbook.md"
    assert call_api("GET", f"/v1/memories/{memory_id}", "other-" + tenant)[0] == 404
    assert call_api("GET", f"/v1/documents/{accepted['id']}/memories", "other-" + tenant)[0] == 404


@pytest.mark.parametrize("calls_allowed", [1])
def test_a_document_needing_more_extraction_calls_than_allowed_fails_with_the_reason(
    configured, tenant, sqs, local_aws, drain_ingest_queue, monkeypatch, calls_allowed
):
    monkeypatch.setenv("CONTEXTOS_EXTRACTION__WINDOW_TOKENS", "50")
    monkeypatch.setenv("CONTEXTOS_EXTRACTION__MAX_CALLS_PER_DOCUMENT", str(calls_allowed))
    container.reset()
    _, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert doc["status"] == "failed" and "extraction calls" in doc["error"]


def test_a_long_document_is_extracted_section_by_section_and_deduplicated_once(
    configured, tenant, sqs, local_aws, drain_ingest_queue, monkeypatch
):
    monkeypatch.setenv("CONTEXTOS_EXTRACTION__WINDOW_TOKENS", "80")
    container.reset()
    _, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK + "\n" + RUNBOOK.replace("#", "##")})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert doc["status"] == "done", doc["error"]
    counts = doc["counts"]
    assert counts["extraction_calls"] > 1
    assert counts["accepted"] == counts["memories_created"] + counts["memories_merged"]
    _, taught = call_api("GET", f"/v1/documents/{accepted['id']}/memories", tenant)
    labels = [m["label"].lower() for m in taught["memories"]]
    assert len(labels) == len(set(labels))
