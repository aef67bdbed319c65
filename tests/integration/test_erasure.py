"""Erasure (S3) against the real database and moto: a user scope and a whole tenant, put in
through the API (documents inline and in S3, a presigned upload, conversation turns, manual
memories, a held candidate, cold objects), erased through the API, then searched for in every
table and bucket by the residue scanner; the audit chain still verifies."""

from __future__ import annotations

import base64
import uuid

import pytest
from contextos import container
from contextos.conversations import MessageCreate

from tests.helpers import call_api, run_queue
from tests.residue import scan


def word(tag: str) -> str:
    """A made-up word only this test writes (the scanner searches every tenant)."""
    return f"zq{tag}{uuid.uuid4().hex[:10]}"


def plant(tenant: str, user_id: str, s3, local_aws, sqs) -> list[str]:
    """Everything of ``user_id`` in ``tenant``, each carrying a needle; returns the needles."""
    w = {k: word(k) for k in ("doc", "big", "up", "turn", "manual", "held", "cold")}
    status, _ = call_api(
        "POST",
        "/v1/documents",
        tenant,
        {
            "text": f"# Release notes\n\nThe {w['doc']} service releases on Tuesdays after the canary passes.",
            "filename": "notes.md",
            "user_id": user_id,
        },
    )
    assert status == 202
    # Bytes (not text) always go to the raw bucket: the document's source object.
    big = base64.b64encode(f"The {w['big']} runbook says the failover takes four minutes.".encode()).decode()
    status, _ = call_api(
        "POST", "/v1/documents", tenant, {"content_base64": big, "filename": "big.md", "user_id": user_id}
    )
    assert status == 202
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    # A presigned upload by a key scoped to the user: the ticket carries the scope.
    key = container.keys().create(tenant, f"uploader-{uuid.uuid4().hex[:6]}", principal="user", key=None)
    identity = container.keys().identify(key)
    assert identity is not None
    from contextos.access import KeyScope
    from contextos.management_models import UploadRequest
    from contextos.models import Provenance

    ticket = container.uploads().ticket(
        tenant,
        UploadRequest(filename="up.txt"),
        provenance=Provenance.user_upload,
        scope=KeyScope(user_id=user_id).stamp(None, None, ()),
    )
    s3.put_object(
        Bucket=local_aws.upload_bucket, Key=ticket.key, Body=f"The {w['up']} dashboard lives on the ops wiki.".encode()
    )
    container.ingestion().ingest_upload(local_aws.upload_bucket, ticket.key)
    service = container.conversations()
    for i, text in enumerate([f"Our {w['turn']} cluster sits in Frankfurt.", "Thanks, noted."]):
        service.append(
            tenant,
            Provenance.user_turn,
            f"s-{user_id}",
            MessageCreate(role="user" if i == 0 else "assistant", content=text, user_id=user_id),
        )
    for label, definition in (
        (w["manual"], "The billing export runs nightly at two."),
        ("Cold fact " + w["cold"], f"The {w['cold']} archive is kept seven years."),
    ):
        status, body = call_api(
            "POST",
            "/v1/memories",
            tenant,
            {"label": label, "definition": definition, "type": "fact", "user_id": user_id},
        )
        assert status == 201, body
    status, body = call_api(
        "POST",
        "/v1/memories",
        tenant,
        {
            "label": "Web rumour",
            "definition": f"A forum says the {w['held']} vendor is folding.",
            "type": "fact",
            "provenance": "web_content",
            "user_id": user_id,
        },
    )
    assert status == 202, body  # held for review
    # The cold memory goes to the cold bucket.
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(
            """UPDATE memories SET strength_anchor = 1.0, strength_anchor_at = now() - interval '60 days',
                      next_transition_at = now() - interval '1 second'
               WHERE label LIKE %s""",
            [f"%{w['cold']}%"],
        )
    assert container.lifecycle().run(tenants=[tenant]).archived >= 1
    return list(w.values())


@pytest.fixture
def planted(configured, tenant, s3, local_aws, sqs, drain_ingest_queue):
    mine = plant(tenant, "alice", s3, local_aws, sqs)
    others = plant(tenant, "bob", s3, local_aws, sqs)
    return mine, others


def residue(database_url: str, s3, local_aws, needles: list[str]):
    return scan(needles, database_url=database_url, s3=s3, buckets=[local_aws.upload_bucket, local_aws.cold_bucket])


def verifies(tenant: str) -> bool:
    return container.governance().verify(tenant).ok


def test_the_plant_is_found_before_erasure(planted, database_url, s3, local_aws):
    """The scanner sees every needle where it was put (else an empty scan would prove nothing)."""
    mine, _ = planted
    hits = residue(database_url, s3, local_aws, mine)
    assert {h.needle for h in hits} == set(mine)
    assert any(h.where.startswith("s3:") for h in hits)  # raw, upload and cold objects hold them too


def test_erasing_a_user_scope_leaves_nothing_of_it_and_keeps_the_others(planted, tenant, database_url, s3, local_aws):
    mine, others = planted
    status, report = call_api("POST", "/v1/erasure/user", tenant, {"user_id": "alice"})
    assert status == 200, report
    assert (
        report["counts"]["memories"] >= 4 and report["counts"]["documents"] == 3 and report["counts"]["sessions"] == 1
    )
    assert report["objects_deleted"] >= 2
    assert residue(database_url, s3, local_aws, mine) == []
    # Bob's content is all still there.
    assert {h.needle for h in residue(database_url, s3, local_aws, others)} == set(others)
    assert verifies(tenant)
    with container.database().tenant_tx(tenant) as conn:
        tombstones = conn.execute("SELECT details FROM audit_log WHERE action = 'erased'").fetchall()
        summary = conn.execute("SELECT details FROM audit_log WHERE action = 'user_scope_erased'").fetchone()
    assert len(tombstones) >= sum(report["counts"][k] for k in ("memories", "documents", "sessions"))
    assert all(set(t["details"]) == {"table", "row_sha256"} for t in tombstones)
    assert "alice" not in str(summary["details"])  # the scope is hashed, never named


def test_erasing_a_tenant_leaves_nothing_of_it_and_the_chain_verifies(planted, tenant, database_url, s3, local_aws):
    mine, others = planted
    other_tenant = f"t-{uuid.uuid4().hex[:12]}"
    keep = word("keep")
    status, _ = call_api(
        "POST", "/v1/memories", other_tenant, {"label": f"The {keep} rota", "definition": "Weekly.", "type": "fact"}
    )
    assert status == 201
    status, body = call_api("POST", "/v1/erasure/tenant", tenant, {"confirm": "someone-else"})
    assert status == 400 and body["error"]["code"] == "bad_request"
    status, report = call_api("POST", "/v1/erasure/tenant", tenant, {"confirm": tenant})
    assert status == 200, report
    assert residue(database_url, s3, local_aws, mine + others) == []
    assert verifies(tenant) and verifies(other_tenant)
    assert {h.needle for h in residue(database_url, s3, local_aws, [keep])} == {keep}
    with container.database().tenant_tx(tenant) as conn:
        left = {
            t: conn.execute(f"SELECT count(*) AS n FROM {t} WHERE tenant_id = %s", [tenant]).fetchone()["n"]
            for t in ("memories", "documents", "sessions", "messages", "memory_items", "memory_vectors", "review_queue")
        }
    assert set(left.values()) == {0}, left


def test_erasure_needs_the_erase_verb(configured, tenant):
    status, body = call_api(
        "POST", "/v1/erasure/user", tenant, {"user_id": "alice"}, principal="agent", ceiling="agent_turn"
    )
    assert status == 403 and body["error"]["code"] == "forbidden"
    status, body = call_api(
        "POST", "/v1/erasure/tenant", tenant, {"confirm": tenant}, principal="agent", ceiling="agent_turn"
    )
    assert status == 403 and body["error"]["code"] == "forbidden"
