"""No way above a key's ceiling (S7): an agent key (ceiling ``agent_turn``) stores nothing above
``agent_turn`` through any way in — a presigned upload (document or workspace file), a workspace
import, MCP, a document, a turn — and a promotion keeps the candidate's own provenance."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.models import Provenance

from tests.integration.test_permissions import rest


def at_most_agent(provenances: list[str]) -> bool:
    trust = get_settings().governance.trust_of
    return bool(provenances) and all(trust(p) <= trust(Provenance.agent_turn) for p in provenances)


def memory_provenances(tenant: str) -> list[str]:
    with container.database().tenant_tx(tenant) as conn:
        return [r["provenance"] for r in conn.execute("SELECT provenance FROM memories WHERE tenant_id = %s", [tenant])]


@pytest.fixture
def agent_key(configured, tenant) -> str:
    return container.keys().create(tenant, "agent", principal="agent", provenance_ceiling=Provenance.agent_turn)


def upload(key: str, s3, bucket: str, filename: str, data: bytes) -> dict:
    status, ticket = rest(key, "POST", "/v1/uploads", {"filename": filename})
    assert status == 201, ticket
    s3.put_object(Bucket=bucket, Key=ticket["key"], Body=data)
    container.ingestion().ingest_upload(bucket, ticket["key"])  # what the bucket's notification runs
    return ticket


def test_a_presigned_upload_by_an_agent_key_records_its_ceiling_and_the_promised_document(
    agent_key, tenant, s3, local_aws
):
    text = b"# Deploys\n\nThe payments service deploys on Thursdays after the canary has run for an hour.\n"
    ticket = upload(agent_key, s3, local_aws.upload_bucket, "deploys.md", text)
    status, document = rest(agent_key, "GET", f"/v1/documents/{ticket['document_id']}")
    assert status == 200, document
    assert document["provenance"] == "agent_turn" and document["status"] == "done", document
    assert at_most_agent(memory_provenances(tenant))


def test_a_presigned_upload_carries_the_key_scope(configured, tenant, s3, local_aws):
    from contextos.access import KeyScope

    key = container.keys().create(tenant, "scoped", principal="agent", scope=KeyScope(user_id="u-7", agent_id="bot"))
    ticket = upload(key, s3, local_aws.upload_bucket, "notes.md", b"# Notes\n\nThe backup job runs at midnight UTC.\n")
    with container.database().tenant_tx(tenant) as conn:
        row = conn.execute("SELECT user_id, agent_id FROM documents WHERE id = %s", [ticket["document_id"]]).fetchone()
    assert (row["user_id"], row["agent_id"]) == ("u-7", "bot")


def test_a_workspace_file_uploaded_by_an_agent_key_cannot_claim_a_user_turn(agent_key, tenant, s3, local_aws):
    data = b"---\nl0: Deploy freeze\ntype: rule\nprovenance: user_turn\n---\nNo deploys on Fridays.\n"
    upload(agent_key, s3, local_aws.upload_bucket, "freeze.md", data)
    assert memory_provenances(tenant) == ["agent_turn"]


def test_a_drop_without_a_ticket_gets_the_buckets_configured_provenance(configured, tenant, s3, local_aws):
    key = f"uploads/{tenant}/{uuid.uuid4().hex}/dropped.md"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=key, Body=b"# Dropped\n\nThe VPN rotates keys monthly.\n")
    record = container.ingestion().ingest_upload(local_aws.upload_bucket, key)
    assert record is not None and record.provenance == container.ingestion().settings.upload_drop_provenance.value


def test_a_workspace_import_by_an_agent_key_is_capped_at_its_ceiling(configured, tenant):
    key = container.keys().create(tenant, "importer", principal="agent", verbs=["read", "write", "import"])
    files = [
        {
            "path": "08-rules/r.md",
            "content": "---\nl0: Review rule\ntype: rule\nprovenance: user_turn\n---\nTwo reviewers.\n",
        }
    ]
    status, report = rest(key, "POST", "/v1/import", {"files": files})
    assert status == 200 and report["files"][0]["status"] == "created", report
    assert memory_provenances(tenant) == ["agent_turn"]
    # The default agent key may not import at all.
    default = container.keys().create(tenant, "plain", principal="agent")
    status, body = rest(default, "POST", "/v1/import", {"files": files})
    assert status == 403 and body["error"]["details"]["verb"] == "import"


def test_mcp_writes_by_an_agent_key_are_capped(agent_key, tenant):
    from contextos.mcp.run import local_backend
    from contextos.mcp.server import build_server, key_identifier
    from mcp.client.client import Client

    caller = key_identifier(container.keys())(agent_key)
    server = build_server(local_backend(caller))

    async def run() -> None:
        async with Client(server, raise_exceptions=False) as client:
            result = await client.call_tool(
                "save_memory",
                {"label": "On-call rota", "definition": "The rota changes every Monday morning.", "type": "fact"},
            )
            assert not result.is_error, result.content

    asyncio.run(run())
    assert memory_provenances(tenant) == ["agent_turn"]


def test_documents_and_turns_by_an_agent_key_are_capped(agent_key, tenant):
    # an explicit claim above the ceiling is refused, on every way in, with the same answer
    for path, body in (
        ("/v1/documents", {"text": "Backups run nightly.", "provenance": "user_turn"}),
        ("/v1/sessions/s-1/messages", {"role": "user", "content": "Hi.", "provenance": "user_turn"}),
        ("/v1/memories", {"label": "Backup time", "definition": "Backups run nightly.", "provenance": "user_turn"}),
    ):
        status, refused = rest(agent_key, "POST", path, body)
        assert status == 403 and refused["error"]["code"] == "provenance_above_ceiling", (path, refused)
    # an unstated provenance is the key's ceiling at most
    status, body = rest(agent_key, "POST", "/v1/documents", {"text": "Backups run nightly."})
    assert status == 202
    status, document = rest(agent_key, "GET", f"/v1/documents/{body['id']}")
    assert document["provenance"] == "agent_turn"
    status, body = rest(agent_key, "POST", "/v1/sessions/s-1/messages", {"role": "user", "content": "Hi."})
    assert status == 201 and body["provenance"] == "agent_turn"


def test_a_promotion_keeps_the_candidates_provenance_and_needs_the_review_verb(agent_key, tenant):
    status, held = rest(
        agent_key,
        "POST",
        "/v1/memories",
        {
            "label": "Vendor rumour",
            "definition": "A forum says the vendor is folding soon.",
            "type": "fact",
            "provenance": "web_content",
        },
    )
    assert status == 202, held
    review_id = held["review_id"]
    status, body = rest(agent_key, "POST", f"/v1/review/{review_id}/promote", {"reason": "looks right"})
    assert status == 403 and body["error"]["details"]["verb"] == "review"
    person = container.keys().create(tenant, "person", principal="user", provenance_ceiling=Provenance.user_turn)
    status, body = rest(person, "POST", f"/v1/review/{review_id}/promote", {"reason": "checked with the vendor"})
    assert status == 200, body
    assert memory_provenances(tenant) == ["web_content"]  # the person vouched; the source stays what it was
