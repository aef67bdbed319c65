"""POST /v1/documents and S3 drops → the ingest queue → functions/ingest → memories, edges and items."""

import base64
import json

import pytest
from contextos import container
from contextos.local.events import sqs_event
from contextos.local.handlers import invoke

from tests.helpers import call_api, run_queue

RUNBOOK = """# Deployment runbook

Blue-green deployment keeps two identical production environments. The router sends all traffic to one of them.
A canary release sends a small share of traffic to the new version first. Canary release catches regressions early.

## Rollback

Rollback means switching the router back to the previous environment. Blue-green deployment makes rollback fast.
We decided to use feature flags for risky changes. Feature flags let us disable a change without a deploy.
"""


def memories_of(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute("SELECT id, label, norm_key, strength_anchor, access_count FROM memories").fetchall()


def test_a_posted_document_is_queued_ingested_and_reported(configured, tenant, sqs, local_aws, drain_ingest_queue):
    status, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK, "filename": "runbook.md"})
    assert status == 202 and accepted["status"] == "queued" and accepted["duplicate"] is False

    assert run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn) == 1

    status, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert status == 200
    assert doc["status"] == "done", doc["error"]
    assert doc["source_type"] == "markdown" and doc["domain"] == "documentation"
    counts = doc["counts"]
    assert counts["memories_created"] == counts["accepted"] >= 3
    assert counts["items"] == counts["accepted"]
    assert counts["edges"] >= 1
    labels = {m["label"].lower() for m in memories_of(tenant)}
    assert {"blue-green deployment", "canary release", "feature flags"} <= labels
    with container.database().tenant_tx(tenant) as conn:
        edges = conn.execute("SELECT count(*) AS n FROM relationships WHERE type = 'related'").fetchone()["n"]
        items = conn.execute(
            "SELECT count(*) AS n FROM memory_items WHERE document_id = %s", [accepted["id"]]
        ).fetchone()["n"]
    assert edges == counts["edges"] and items == counts["items"]


def test_a_duplicate_upload_returns_the_existing_document_and_does_no_work(
    configured, tenant, sqs, local_aws, drain_ingest_queue
):
    _, first = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    before = memories_of(tenant)
    status, second = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK, "filename": "again.md"})
    assert status == 200 and second == {"id": first["id"], "status": "done", "duplicate": True}
    assert run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn) == 0
    assert memories_of(tenant) == before


def test_the_same_content_for_another_tenant_is_not_a_duplicate(configured, tenant, drain_ingest_queue):
    _, first = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    status, other = call_api("POST", "/v1/documents", "other-" + tenant, {"text": RUNBOOK})
    assert status == 202 and other["id"] != first["id"]


def test_a_second_document_merges_into_existing_memories_by_normalized_key(
    configured, tenant, sqs, local_aws, drain_ingest_queue
):
    call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    follow_up = (
        RUNBOOK.replace("# Deployment runbook", "# Deployment runbook, revised") + "\nCanary release needs metrics.\n"
    )
    _, second = call_api("POST", "/v1/documents", tenant, {"text": follow_up})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, doc = call_api("GET", f"/v1/documents/{second['id']}", tenant)
    assert doc["counts"]["memories_merged"] >= 3
    memories = memories_of(tenant)
    assert len({m["norm_key"] for m in memories}) == len(memories)
    canary = next(m for m in memories if m["label"].lower() == "canary release")
    assert canary["access_count"] == 1
    with container.database().tenant_tx(tenant) as conn:
        sources = conn.execute(
            "SELECT count(DISTINCT document_id) AS n FROM memory_items WHERE memory_id = %s", [canary["id"]]
        ).fetchone()["n"]
    assert sources == 2


def test_a_file_dropped_in_the_upload_bucket_is_ingested_through_the_s3_notification(
    configured, tenant, s3, sqs, local_aws, drain_ingest_queue
):
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/team notes+v2.md", Body=RUNBOOK.encode())
    handled = run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    assert handled >= 1
    with container.database().tenant_tx(tenant) as conn:
        doc = conn.execute("SELECT filename, status, error, upload_s3_key FROM documents").fetchone()
    assert doc["status"] == "done", doc["error"]
    assert doc["filename"] == "team notes+v2.md"
    assert doc["upload_s3_key"] == f"uploads/{tenant}/team notes+v2.md"
    assert len(memories_of(tenant)) >= 3


def test_a_bucket_fed_with_outside_material_can_lower_what_a_drop_is_trusted_with(
    configured, tenant, s3, sqs, local_aws, drain_ingest_queue, monkeypatch
):
    monkeypatch.setenv("CONTEXTOS_UPLOAD_DROP_PROVENANCE", "external_doc")  # base trust 0.4 < 0.5
    container.reset()
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/vendor.md", Body=RUNBOOK.encode())
    assert run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn) >= 1
    with container.database().tenant_tx(tenant) as conn:
        doc = conn.execute("SELECT provenance, status, counts FROM documents").fetchone()
        held = conn.execute("SELECT count(*) AS n FROM review_queue WHERE status = 'pending'").fetchone()["n"]
    assert (doc["provenance"], doc["status"]) == ("external_doc", "done")
    assert memories_of(tenant) == [] and held == doc["counts"]["held_for_review"] >= 3


def test_a_poison_message_fails_only_itself(configured, tenant, drain_ingest_queue):
    _, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    good = {
        "MessageId": "good-1",
        "ReceiptHandle": "r1",
        "Body": json.dumps({"kind": "document", "tenant_id": tenant, "document_id": accepted["id"]}),
    }
    poison = {"MessageId": "poison-1", "ReceiptHandle": "r2", "Body": "{not json"}
    unknown = {"MessageId": "poison-2", "ReceiptHandle": "r3", "Body": json.dumps({"hello": "world"})}
    result = invoke("ingest", sqs_event([poison, good, unknown], "arn:aws:sqs:us-east-1:000000000000:q"))
    assert sorted(f["itemIdentifier"] for f in result["batchItemFailures"]) == ["poison-1", "poison-2"]
    _, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert doc["status"] == "done"


def test_a_redelivered_job_does_no_work_twice(configured, tenant, drain_ingest_queue):
    _, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    message = {
        "MessageId": "m-1",
        "ReceiptHandle": "r",
        "Body": json.dumps({"kind": "document", "tenant_id": tenant, "document_id": accepted["id"]}),
    }
    event = sqs_event([message], "arn:aws:sqs:us-east-1:000000000000:q")
    assert invoke("ingest", event)["batchItemFailures"] == []
    before = memories_of(tenant)
    assert invoke("ingest", event)["batchItemFailures"] == []
    assert memories_of(tenant) == before


def test_invalid_utf8_ends_as_a_failed_document_with_a_reason(configured, tenant, sqs, local_aws, drain_ingest_queue):
    payload = base64.b64encode(b"caf\xe9 \xff\xfe broken").decode()
    status, accepted = call_api("POST", "/v1/documents", tenant, {"content_base64": payload, "filename": "a.txt"})
    assert status == 202
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert doc["status"] == "failed" and "UTF-8" in doc["error"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"text": ""}, 422, "validation_error"),  # the schema says: exactly one content, not blank, base64
        ({"text": "a", "content_base64": "YQ=="}, 422, "validation_error"),
        ({"content_base64": "%%%not-base64"}, 422, "validation_error"),
        ({"text": "hello", "tenant_id": "someone-else"}, 422, "validation_error"),
        ({"text": 42}, 422, "validation_error"),
        ({"text": "x", "provenance": "root"}, 422, "validation_error"),
    ],
)
def test_bad_requests_get_a_clear_4xx_with_a_stable_code(configured, tenant, body, status, code):
    got_status, error = call_api("POST", "/v1/documents", tenant, body)
    assert got_status == status
    assert error["error"]["code"] == code


def test_an_oversized_document_is_refused_with_413(configured, tenant, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_MAX_DOCUMENT_BYTES", "1000")
    container.reset()
    status, error = call_api("POST", "/v1/documents", tenant, {"text": "x" * 1001})
    assert status == 413 and error["error"]["code"] == "payload_too_large"


def test_malformed_json_and_unknown_routes_are_4xx(configured, tenant):
    status, error = call_api("POST", "/v1/documents", tenant, raw_body="{not json")
    assert 400 <= status < 500 and "error" in error
    status, error = call_api("GET", "/v1/documents/not-a-uuid", tenant)
    assert status == 422 and error["error"]["code"] == "validation_error"
    status, error = call_api("GET", "/v1/nothing-here", tenant)
    assert status == 404 and error["error"]["code"] == "route_not_found"


def test_documents_of_another_tenant_are_not_found(configured, tenant, drain_ingest_queue):
    _, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK})
    status, error = call_api("GET", f"/v1/documents/{accepted['id']}", "other-" + tenant)
    assert status == 404 and error["error"]["code"] == "not_found"


def test_without_a_tenant_in_the_authorizer_context_the_api_answers_401(configured):
    status, error = call_api("POST", "/v1/documents", None, {"text": RUNBOOK})
    assert status == 401 and error["error"]["code"] == "unauthorized"
