"""Every sample in events/ goes through its real handler: the same files `sam local invoke` uses."""

import json
from pathlib import Path

import pytest
from contextos import container
from contextos.conversations import MessageCreate
from contextos.errors import NotFound
from contextos.local.handlers import invoke
from contextos.models import Provenance

from tests.conftest import REPO

EVENTS = sorted((REPO / "events").glob("*.json"))
SAMPLE_TENANT = "events-tenant"
SAMPLE_SESSION = "sample-session"  # events/conversation__sqs_flush_job.json flushes its messages 1-4
SAMPLE_TURNS = [
    ("user", "Our staging cluster runs on Kubernetes in eu-west-1. Deploys go out every Tuesday."),
    ("assistant", "Noted: the staging cluster is Kubernetes in eu-west-1, with Tuesday deploys."),
    ("user", "I prefer blue-green deployment for the staging cluster, never in-place upgrades."),
    ("assistant", "Understood. Blue-green deployment keeps the staging cluster available during deploys."),
]


def test_every_function_has_at_least_one_sample_event():
    functions = {p.name for p in (REPO / "functions").iterdir() if (p / "handler.py").exists()}
    covered = {p.name.split("__", 1)[0] for p in EVENTS}
    assert functions <= covered, f"functions without a sample event: {functions - covered}"


@pytest.fixture
def prepared(configured, s3, local_aws, drain_ingest_queue):
    """What the samples refer to: the sample API key, and the uploaded object of the S3 sample."""
    container.keys().create(
        SAMPLE_TENANT, "sample", principal="user", provenance_ceiling=Provenance.user_turn, key="ctx_sample_events_key"
    )
    s3.put_object(
        Bucket=local_aws.upload_bucket,
        Key="uploads/events-tenant/team notes.md",
        Body=b"# Team notes\n\nOn-call rotation changes every Monday. The on-call rotation covers nights.\n",
    )
    conversations = container.conversations()
    try:
        conversations.get(SAMPLE_TENANT, SAMPLE_SESSION)
    except NotFound:  # the first test of the session buffers the sample conversation and ends it
        for role, content in SAMPLE_TURNS:
            conversations.append(
                SAMPLE_TENANT, Provenance.user_turn, SAMPLE_SESSION, MessageCreate(role=role, content=content)
            )
        conversations.end(SAMPLE_TENANT, SAMPLE_SESSION)


@pytest.mark.parametrize("path", EVENTS, ids=lambda p: p.stem)
def test_each_sample_event_is_handled_by_its_function(prepared, path: Path, request: pytest.FixtureRequest):
    function = path.name.split("__", 1)[0]
    event = json.loads(path.read_text())
    if function == "governance":  # the daily report walks every tenant of its database: the sample's alone
        request.getfixturevalue("configured_alone")
        container.conversations().append(
            SAMPLE_TENANT, Provenance.user_turn, SAMPLE_SESSION, MessageCreate(role="user", content=SAMPLE_TURNS[0][1])
        )
    result = invoke(function, event)
    match function:
        case "api":
            assert result["statusCode"] in (200, 202, 404)
            assert "error" not in json.loads(result["body"]) or result["statusCode"] == 404
        case "authorizer":
            assert result["principalId"] == "sample"
            assert result["policyDocument"]["Statement"][0]["Effect"] == "Allow"
            assert result["context"]["tenant_id"] == SAMPLE_TENANT
        case "ingest" | "conversation":
            assert result == {"batchItemFailures": []}
        case "lifecycle":
            assert result["tenants"] >= 1 and "materialized" in result
        case "governance":
            assert result["tenants"] == 1 and result["failed"] == [] and result["reports"] == result["tenants"]
        case "sweeper":
            assert result["tenants"] >= 1 and result["send_failures"] == 0
        case "events":
            assert result["tenants"] >= 1 and result["published"] == sum(result["by_kind"].values())
        case "migrate":
            assert result["PhysicalResourceId"] == "contextos-schema"
        case _:
            pytest.fail(f"no expectation for {function}")


def test_the_s3_sample_ingests_the_uploaded_file(prepared):
    invoke("ingest", json.loads((REPO / "events" / "ingest__sqs_s3_upload.json").read_text()))
    with container.database().tenant_tx(SAMPLE_TENANT) as conn:
        doc = conn.execute(
            "SELECT status, filename FROM documents WHERE upload_s3_key = %s", ["uploads/events-tenant/team notes.md"]
        ).fetchone()
    assert doc == {"status": "done", "filename": "team notes.md"}


def test_the_conversation_sample_distils_the_sample_session(prepared):
    invoke("conversation", json.loads((REPO / "events" / "conversation__sqs_flush_job.json").read_text()))
    session = container.conversations().get(SAMPLE_TENANT, SAMPLE_SESSION)
    assert [(f.message_from, f.message_to, f.trigger, f.status) for f in session.flushes] == [(1, 4, "end", "done")]
    with container.database().tenant_tx(SAMPLE_TENANT) as conn:
        items = conn.execute(
            "SELECT DISTINCT message_from, message_to FROM memory_items WHERE session_id = %s", [SAMPLE_SESSION]
        ).fetchall()
    assert items == [{"message_from": 1, "message_to": 4}]


def test_an_unknown_api_key_is_refused_with_the_message_api_gateway_maps_to_401(prepared):
    event = json.loads((REPO / "events" / "authorizer__request.json").read_text())
    event["headers"]["Authorization"] = "Bearer ctx_not_a_key"
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        invoke("authorizer", event)
