"""The write firewall at every way in (S7 "What never gets in"), on the real stack: a planted
secret or personal datum never reaches a row, an object or a log — documents (text, DOCX through
``content_base64``, an upload-bucket file), conversation turns and their flush, manual memories
(REST and MCP ``save_memory``), edits, workspace imports — and the tenant's policy decides:
``redact`` (placeholders, counts on the document, an audit entry of kinds and counts), ``hold``
(masked, to review) and ``reject`` (``contains_secret``)."""

import asyncio
import base64
import io
import json
import logging

import docx
import pytest
from contextos import container

from benchmarks.privacy_fixtures import planted
from tests.helpers import call_api, run_queue
from tests.residue import scan

VALUES = {p.kind: p for p in planted(19 * 3, seed=7)}
AWS, GITHUB, EMAIL, CARD, PASSWORD = (
    VALUES["secret:aws_access_key"],
    VALUES["secret:github_token"],
    VALUES["pii:email"],
    VALUES["pii:card"],
    VALUES["secret:password_prose"],
)
FACTS = (
    "# Release runbook\n\nReleases happen every Tuesday after the change review.\n"
    "The on-call engineer approves each release in the deploy channel.\n"
)
DOCUMENT = FACTS + "\n".join(p.sentence for p in (AWS, GITHUB, EMAIL, CARD, PASSWORD)) + "\n"
NEEDLES = [p.value for p in (AWS, GITHUB, EMAIL, CARD, PASSWORD)]


def residue(s3, local_aws, caplog, needles=NEEDLES) -> list:
    return scan(
        needles,
        database_url=container.get_settings().database_url,
        s3=s3,
        buckets=[local_aws.upload_bucket, local_aws.cold_bucket],
        logs={"captured": caplog.text},
    )


def set_policy(tenant: str, policy: str) -> None:
    status, body = call_api("PATCH", "/v1/settings/privacy", tenant, {"redaction_policy": policy})
    assert status == 200 and body == {"redaction_policy": policy}, body


def audit_entries(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute("SELECT action, details FROM audit_log ORDER BY seq").fetchall()


@pytest.fixture(autouse=True)
def _logs(caplog):
    caplog.set_level(logging.INFO)


def test_a_posted_document_keeps_its_facts_and_counts_but_no_value(
    configured, tenant, sqs, s3, local_aws, drain_ingest_queue, caplog
):
    status, accepted = call_api("POST", "/v1/documents", tenant, {"text": DOCUMENT, "filename": "runbook.md"})
    assert status == 202, accepted
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, document = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert document["status"] == "done", document["error"]
    assert document["counts"]["redactions"] == {
        "pii:card": 1,
        "pii:email": 1,
        "secret:aws_access_key": 1,
        "secret:github_token": 1,
        "secret:password": 1,
    }
    assert residue(s3, local_aws, caplog) == []
    _, memories = call_api("GET", "/v1/memories", tenant)
    labels = [m["label"] for m in memories["memories"]]
    assert labels and not any("[" in label or "secret:" in label or "pii:" in label for label in labels)
    _, context = call_api("POST", "/v1/context", tenant, {"query": "when do releases happen?", "dry_run": True})
    assert "Tuesday" in json.dumps(context)
    entries = [e for e in audit_entries(tenant) if e["action"] == "redacted"]
    assert entries and entries[0]["details"]["counts"]["secret:github_token"] == 1
    assert entries[0]["details"]["way_in"] == "document"


def test_a_docx_sent_as_base64_and_a_dropped_file_leave_no_raw_object_with_a_value(
    configured, tenant, sqs, s3, local_aws, drain_ingest_queue, caplog
):
    document = docx.Document()
    for line in DOCUMENT.splitlines():
        document.add_paragraph(line)
    buffer = io.BytesIO()
    document.save(buffer)
    body = {"content_base64": base64.b64encode(buffer.getvalue()).decode(), "filename": "runbook.docx"}
    status, accepted = call_api("POST", "/v1/documents", tenant, body)
    assert status == 202, accepted
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/notes.md", Body=DOCUMENT.encode() + b"\nv2")
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, listed = call_api("GET", "/v1/documents", tenant)
    assert {d["status"] for d in listed["documents"]} == {"done"}, listed
    assert residue(s3, local_aws, caplog) == []


def test_turns_are_redacted_before_the_buffer_and_their_flush_stores_no_value(
    configured, tenant, sqs, s3, local_aws, caplog
):
    for text in (f"Our deploys use {AWS.sentence}", f"Write to {EMAIL.value} about the card {CARD.value}."):
        status, body = call_api("POST", "/v1/sessions/s1/messages", tenant, {"role": "user", "content": text})
        assert status == 201, body
    with container.database().tenant_tx(tenant) as conn:
        stored = [r["content"] for r in conn.execute("SELECT content FROM messages ORDER BY seq").fetchall()]
    assert "[secret:aws_access_key]" in stored[0] and "[pii:email]" in stored[1] and "[pii:card]" in stored[1]
    call_api("POST", "/v1/sessions/s1/end", tenant)
    run_queue(sqs, local_aws.conversation_queue_url, local_aws.conversation_queue_arn, "conversation")
    assert residue(s3, local_aws, caplog) == []


def test_manual_memories_rest_mcp_and_edits_are_redacted_and_never_labelled_with_a_value(
    configured, tenant, s3, local_aws, caplog
):
    status, body = call_api(
        "POST", "/v1/memories", tenant, {"label": f"Deploy key {AWS.value}", "definition": AWS.sentence}
    )
    assert status == 201, body
    memory_id = body["memory_id"]
    _, detail = call_api("GET", f"/v1/memories/{memory_id}", tenant)
    assert detail["label"] == "Deploy key"
    assert detail["definition"] == AWS.sentence.replace(AWS.value, "[secret:aws_access_key]")
    status, edited = call_api("PATCH", f"/v1/memories/{memory_id}", tenant, {"definition": GITHUB.sentence})
    assert status == 200, edited

    from contextos.mcp.backend import Caller
    from contextos.mcp.run import local_backend
    from contextos.mcp.server import build_server
    from mcp.client.client import Client

    server = build_server(local_backend(Caller(tenant_id=tenant, subject="tests")))

    async def save() -> None:
        async with Client(server, raise_exceptions=False) as client:
            result = await client.call_tool("save_memory", {"label": EMAIL.value, "definition": EMAIL.sentence})
            assert not result.is_error, result.content

    asyncio.run(save())
    _, listed = call_api("GET", "/v1/memories", tenant)
    labels = {m["label"] for m in listed["memories"]}
    assert len(labels) == 2 and not any("@" in label or "[" in label for label in labels), labels
    assert residue(s3, local_aws, caplog) == []


def test_a_workspace_import_is_redacted_in_its_label_body_and_sources(
    configured, tenant, s3, local_aws, caplog, tmp_path
):
    content = f"---\ntype: fact\nl0: Billing contact\n---\nBilling questions go to {EMAIL.value}; {PASSWORD.sentence}\n"
    status, report = call_api(
        "POST", "/v1/import", tenant, {"files": [{"path": "03-projects/billing.md", "content": content}]}
    )
    assert status == 200, report
    assert report["files"][0]["status"] == "created", report
    assert residue(s3, local_aws, caplog) == []
    assert container.workspace().export_dir(tenant, tmp_path) == 1
    assert "[pii:email]" in "".join(p.read_text() for p in tmp_path.rglob("*.md"))
    assert scan(NEEDLES, paths=[tmp_path]) == []


def test_reject_refuses_turns_and_memories_with_contains_secret_and_fails_documents(
    configured, tenant, sqs, s3, local_aws, drain_ingest_queue, caplog
):
    set_policy(tenant, "reject")
    status, body = call_api("POST", "/v1/sessions/s1/messages", tenant, {"role": "user", "content": GITHUB.sentence})
    assert status == 422 and body["error"]["code"] == "contains_secret", body
    assert "secret:github_token" in body["error"]["message"]
    status, body = call_api("POST", "/v1/memories", tenant, {"label": "Deploy", "definition": AWS.sentence})
    assert status == 422 and body["error"]["code"] == "contains_secret"
    status, accepted = call_api("POST", "/v1/documents", tenant, {"text": DOCUMENT})
    assert status == 202 and accepted["status"] == "failed", accepted
    _, document = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert document["error"].startswith("contains_secret") and document["counts"]["redactions"]["pii:email"] == 1
    # a clean text still gets in
    status, body = call_api(
        "POST", "/v1/memories", tenant, {"label": "Release day", "definition": "Releases are on Tuesday."}
    )
    assert status == 201, body
    assert residue(s3, local_aws, caplog) == []
    assert {"rejected_secret", "privacy_policy_set"} <= {e["action"] for e in audit_entries(tenant)}


def test_hold_sends_what_carried_a_secret_to_review_masked(configured, tenant, s3, local_aws, caplog):
    set_policy(tenant, "hold")
    status, body = call_api("POST", "/v1/memories", tenant, {"label": "Deploy key", "definition": AWS.sentence})
    assert status == 202 and body["status"] == "held", body
    _, review = call_api("GET", "/v1/review", tenant)
    [item] = review["items"]
    assert "[secret:aws_access_key]" in json.dumps(item) and "contains_secret" in json.dumps(item)
    status, clean = call_api(
        "POST", "/v1/memories", tenant, {"label": "Release day", "definition": "Releases are on Tuesday."}
    )
    assert status == 201 and clean["status"] == "admitted"
    assert residue(s3, local_aws, caplog) == []


def test_the_policy_defaults_to_redact_and_only_a_user_may_change_it(configured, tenant):
    assert call_api("GET", "/v1/settings/privacy", tenant) == (200, {"redaction_policy": "redact"})
    status, body = call_api(
        "PATCH", "/v1/settings/privacy", tenant, {"redaction_policy": "reject"}, principal="agent", ceiling="agent_turn"
    )
    assert status == 403, body
    status, body = call_api("PATCH", "/v1/settings/privacy", tenant, {"redaction_policy": "sometimes"})
    assert status in (400, 422) and "error" in body
    assert call_api("GET", "/v1/settings/privacy", tenant) == (200, {"redaction_policy": "redact"})


def test_hold_sends_a_documents_and_a_flushes_memories_to_review_masked(
    configured, tenant, sqs, s3, local_aws, drain_ingest_queue, caplog
):
    set_policy(tenant, "hold")
    status, accepted = call_api("POST", "/v1/documents", tenant, {"text": DOCUMENT, "filename": "runbook.md"})
    assert status == 202, accepted
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, document = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert document["status"] == "done", document["error"]
    _, memories = call_api("GET", "/v1/memories", tenant)
    assert memories["memories"] == []  # nothing admitted: all of it waits for a person
    _, review = call_api("GET", "/v1/review", tenant)
    assert review["items"] and all("contains_secret" in item["reason"] for item in review["items"])
    for text in (f"Our deploys use {AWS.sentence}", "Releases happen every Tuesday after the change review."):
        call_api("POST", "/v1/sessions/held/messages", tenant, {"role": "user", "content": text})
    call_api("POST", "/v1/sessions/held/end", tenant)
    run_queue(sqs, local_aws.conversation_queue_url, local_aws.conversation_queue_arn, "conversation")
    _, memories = call_api("GET", "/v1/memories", tenant)
    assert memories["memories"] == []
    assert residue(s3, local_aws, caplog) == []


def test_reject_fails_a_dropped_file_and_deletes_it(configured, tenant, sqs, s3, local_aws, drain_ingest_queue, caplog):
    set_policy(tenant, "reject")
    key = f"uploads/{tenant}/notes.md"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=key, Body=DOCUMENT.encode())
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, listed = call_api("GET", "/v1/documents", tenant)
    [document] = listed["documents"]
    assert document["status"] == "failed" and document["error"].startswith("contains_secret"), document
    assert s3.list_objects_v2(Bucket=local_aws.upload_bucket, Prefix=key).get("KeyCount") == 0
    assert residue(s3, local_aws, caplog) == []
