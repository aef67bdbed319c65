"""The hostile corpus (SPEC S4): every case ends as a clear 4xx, a `failed` document with a
reason, or a safely ingested document — never a crashed handler, a blocked batch or a half-written
document."""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass

import pytest
from contextos import container
from contextos.local.events import sqs_event
from contextos.local.handlers import invoke

from tests import hostile
from tests.helpers import call_api, run_queue

RUNBOOK_TEXT = (
    "# Runbook\n\nThe circuit breaker opens after five failed calls. The circuit breaker protects the payment "
    "service from cascading failures.\n"
)


@dataclass(frozen=True)
class Upload:
    """A file dropped into the upload bucket: it must end as a document with this status."""

    name: str
    data: bytes
    status: str  # "failed" or "done"
    reason: str = ""  # regex the failure reason must match


DROPS = {
    "corrupt_pdf": Upload("report.pdf", b"%PDF-1.7\n" + hostile.random_bytes(4000), "failed", r"pdf"),
    "truncated_pdf": Upload("cut.pdf", hostile.pdf_with_text("Truncated document")[:150], "failed", r"pdf"),
    "encrypted_pdf": Upload("secret.pdf", hostile.encrypted_pdf(), "failed", r"encrypt"),
    "pdf_without_text": Upload("scan.pdf", hostile.blank_pdf(), "failed", r"text"),
    "valid_pdf": Upload(
        "ok.pdf",
        hostile.pdf_with_text(
            "The circuit breaker protects the payment service from "
            "cascading failures. The circuit breaker opens after five "
            "failed calls."
        ),
        "done",
    ),
    "docx_zip_bomb": Upload("bomb.docx", hostile.docx_zip_bomb(), "failed", r"zip|compress|uncompressed|large"),
    "zip_named_docx": Upload("fake.docx", hostile.zip_without_document(), "failed", r"docx|word|zip|unsupported"),
    "zero_byte_upload": Upload("empty.txt", b"", "failed", r"empty"),
    "binary_junk_named_txt": Upload(
        "notes.txt", hostile.random_bytes(5000), "failed", r"binary|unsupported|utf-8|text"
    ),
    "elf_named_markdown": Upload("readme.md", hostile.ELF, "failed", r"binary|unsupported|elf|executable"),
    "png_named_txt": Upload("photo.txt", hostile.PNG, "failed", r"binary|unsupported|png|image"),
    "invalid_utf8": Upload("latin1.txt", "café crème brûlée au menu".encode("latin-1"), "failed", r"utf-8"),
    "nul_bytes": Upload("nul.txt", b"hello\x00world\x00" * 50, "failed", r"binary|nul|unsupported"),
    "only_control_characters": Upload("ctrl.txt", b"\x07\x08\x0b\x0c\x1b" * 20, "failed", r"no text|empty"),
    "ten_megabyte_single_line": Upload("line.txt", b"word " * 2_000_000, "failed", r"extraction calls|too"),
    "megabyte_single_token": Upload("token.txt", b"a" * 1_000_000, "done"),
    "yaml_alias_bomb_frontmatter": Upload("release.md", hostile.YAML_ALIAS_BOMB.encode(), "done"),
    "prompt_injection": Upload("vendor.md", hostile.PROMPT_INJECTION.encode(), "done"),
    "html_with_script": Upload("status.html", hostile.HTML_WITH_SCRIPT.encode(), "done"),
    "deeply_nested_html": Upload("deep.html", hostile.DEEP_HTML.encode(), "done"),
    "utf16_with_bom": Upload("utf16.txt", RUNBOOK_TEXT.encode("utf-16"), "done"),
    "odd_characters_in_key": Upload("ünïcødé 100% + plan (v2) 'quoted'.md", RUNBOOK_TEXT.encode(), "done"),
}


def documents(tenant: str) -> list[dict]:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute(
            """SELECT d.id, d.filename, d.status, d.error,
                      (SELECT count(*) FROM memory_items i WHERE i.document_id = d.id) AS items
               FROM documents d"""
        ).fetchall()


@pytest.mark.parametrize("case", list(DROPS), ids=list(DROPS))
def test_a_hostile_file_dropped_in_the_bucket_ends_clearly(
    case, configured, tenant, s3, sqs, local_aws, drain_ingest_queue
):
    upload = DROPS[case]
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/{upload.name}", Body=upload.data)
    started = time.monotonic()
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    assert time.monotonic() - started < 60
    [doc] = documents(tenant)
    assert doc["filename"] == upload.name
    assert doc["status"] == upload.status, doc["error"]
    if upload.status == "failed":
        assert re.search(upload.reason, doc["error"], re.IGNORECASE), doc["error"]
        assert doc["items"] == 0  # nothing half-written
    # The queue is empty afterwards: nothing is left to crash-loop.
    time.sleep(1.1)
    assert run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn, rounds=1) == 0


def test_a_script_in_html_never_reaches_memory(configured, tenant, s3, sqs, local_aws, drain_ingest_queue):
    s3.put_object(
        Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/status.html", Body=hostile.HTML_WITH_SCRIPT.encode()
    )
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    with container.database().tenant_tx(tenant) as conn:
        text = conn.execute("SELECT raw_text FROM documents").fetchone()["raw_text"]
        definitions = " ".join(r["definition"] for r in conn.execute("SELECT definition FROM memories"))
    assert "exfiltrate" not in text and "exfiltrate" not in definitions
    assert "status page" in text.lower()


def test_instructions_inside_a_document_are_treated_as_data(configured, tenant, sqs, local_aws, drain_ingest_queue):
    call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK_TEXT})
    call_api("POST", "/v1/documents", tenant, {"text": hostile.PROMPT_INJECTION})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    docs = {str(d["id"]): d for d in documents(tenant)}
    assert all(d["status"] == "done" for d in docs.values())
    with container.database().tenant_tx(tenant) as conn:
        labels = {r["label"].lower() for r in conn.execute("SELECT label FROM memories")}
        held = {r["candidate"]["label"].lower() for r in conn.execute("SELECT candidate FROM review_queue")}
    assert "circuit breaker" in labels  # nothing was deleted
    # A document carrying instructions to an agent is held for a user's review (S7), not admitted.
    assert "vendor portal" in held and "vendor portal" not in labels


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"text": ""}, 422, "validation_error"),  # the document declares non-blank text and base64's form
        ({"content_base64": ""}, 422, "validation_error"),
        ({"content_base64": "!!!not base64!!!"}, 422, "validation_error"),
        ({"text": "   \n\t  "}, 422, "validation_error"),
        ({"text": "x", "provenance": "system"}, 422, "validation_error"),
        (["not", "an", "object"], 422, "validation_error"),
    ],
    ids=[
        "empty_text",
        "zero_byte_base64",
        "invalid_base64",
        "whitespace_only",
        "unknown_provenance",
        "json_array_body",
    ],
)
def test_hostile_api_requests_get_a_clear_4xx(configured, tenant, body, status, code):
    got, error = call_api("POST", "/v1/documents", tenant, body)
    assert got == status and error["error"]["code"] == code
    assert documents(tenant) == []


def test_an_oversized_upload_is_refused_through_the_api_and_fails_from_the_bucket(
    configured, tenant, s3, sqs, local_aws, drain_ingest_queue, monkeypatch
):
    monkeypatch.setenv("CONTEXTOS_MAX_DOCUMENT_BYTES", "10000")
    container.reset()
    status, error = call_api(
        "POST", "/v1/documents", tenant, {"content_base64": base64.b64encode(b"x" * 10_001).decode()}
    )
    assert status == 413 and error["error"]["code"] == "payload_too_large"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/big.txt", Body=b"y" * 10_001)
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    [doc] = documents(tenant)
    assert doc["status"] == "failed" and "limit" in doc["error"]


def test_path_traversal_filenames_keep_only_their_last_component(
    configured, tenant, sqs, local_aws, drain_ingest_queue
):
    _, accepted = call_api("POST", "/v1/documents", tenant, {"text": RUNBOOK_TEXT, "filename": "../../etc/passwd"})
    _, doc = call_api("GET", f"/v1/documents/{accepted['id']}", tenant)
    assert doc["filename"] == "passwd"


@pytest.mark.parametrize(
    "key",
    [
        "uploads/../escape.md",
        "uploads//no-tenant.md",
        "uploads/bad tenant!/x.md",
        "elsewhere/x.md",
        "uploads/onlytenant",
    ],
)
def test_s3_keys_outside_a_tenant_prefix_are_ignored_without_failing_the_batch(configured, key):
    before = container.stores().tenants.tenant_ids()
    record = {
        "eventName": "ObjectCreated:Put",
        "s3": {"bucket": {"name": "contextos-uploads"}, "object": {"key": key, "size": 10}},
    }
    message = {"MessageId": "m", "ReceiptHandle": "r", "Body": json.dumps({"Records": [record]})}
    result = invoke("ingest", sqs_event([message], "arn:aws:sqs:us-east-1:000000000000:q"))
    assert result == {"batchItemFailures": []}
    assert container.stores().tenants.tenant_ids() == before


def test_the_same_object_notified_twice_becomes_one_document(configured, tenant, s3, local_aws, drain_ingest_queue):
    key = f"uploads/{tenant}/twice.md"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=key, Body=RUNBOOK_TEXT.encode())
    record = {
        "eventName": "ObjectCreated:Put",
        "s3": {"bucket": {"name": local_aws.upload_bucket}, "object": {"key": key.replace(" ", "+")}},
    }
    messages = [
        {"MessageId": f"m{i}", "ReceiptHandle": f"r{i}", "Body": json.dumps({"Records": [record]})} for i in range(2)
    ]
    result = invoke("ingest", sqs_event(messages, "arn:aws:sqs:us-east-1:000000000000:q"))
    assert result == {"batchItemFailures": []}
    assert len(documents(tenant)) == 1


def test_a_poison_message_does_not_block_the_rest_of_a_hostile_batch(configured, tenant, s3, local_aws):
    good_key = f"uploads/{tenant}/good.md"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=good_key, Body=RUNBOOK_TEXT.encode())
    bad_key = f"uploads/{tenant}/bomb.docx"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=bad_key, Body=hostile.docx_zip_bomb(50))

    def s3_message(i: int, key: str) -> dict:
        record = {
            "eventName": "ObjectCreated:Put",
            "s3": {"bucket": {"name": local_aws.upload_bucket}, "object": {"key": key}},
        }
        return {"MessageId": f"s{i}", "ReceiptHandle": f"r{i}", "Body": json.dumps({"Records": [record]})}

    poison = {"MessageId": "poison", "ReceiptHandle": "rp", "Body": "\x00\xff not json"}
    result = invoke(
        "ingest",
        sqs_event([s3_message(1, bad_key), poison, s3_message(2, good_key)], "arn:aws:sqs:us-east-1:000000000000:q"),
    )
    assert result == {"batchItemFailures": [{"itemIdentifier": "poison"}]}
    statuses = {d["filename"]: d["status"] for d in documents(tenant)}
    assert statuses == {"good.md": "done", "bomb.docx": "failed"}
