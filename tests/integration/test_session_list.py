"""GET /v1/sessions against the real database and moto: newest first, status and flush counts,
keyset pages that neither repeat nor skip, one tenant's sessions only, and clear 4xx on bad input."""

import base64
import json

from contextos import container

from tests.helpers import call_api, run_queue
from tests.integration.test_conversations import PREFERENCE_CHAT, conversation_queue, say, service  # noqa: F401


def _ids(page: dict) -> list[str]:
    return [s["id"] for s in page["sessions"]]


def _created_order(tenant: str) -> list[str]:
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute("SELECT id FROM sessions ORDER BY created_at DESC, id DESC").fetchall()
    return [r["id"] for r in rows]


def test_sessions_are_listed_newest_first_with_status_and_what_their_flushes_made(
    configured,
    tenant,
    service,  # noqa: F811
    sqs,
    local_aws,
    conversation_queue,  # noqa: F811
):
    say(service, tenant, "editor", PREFERENCE_CHAT)
    say(service, tenant, "still-talking", [("user", "What is on my calendar tomorrow?")])
    call_api("POST", "/v1/sessions/editor/end", tenant)
    for job in conversation_queue("editor"):
        sqs.send_message(QueueUrl=local_aws.conversation_queue_url, MessageBody=json.dumps(job))
    run_queue(sqs, local_aws.conversation_queue_url, local_aws.conversation_queue_arn, "conversation")

    status, page = call_api("GET", "/v1/sessions", tenant)
    assert status == 200 and page["next_cursor"] is None
    assert _ids(page) == _created_order(tenant) == ["still-talking", "editor"]
    open_, ended = page["sessions"]
    assert (open_["status"], open_["message_count"], open_["flushed_through"]) == ("open", 1, 0)
    assert open_["counts"] == {
        "flushes": 0,
        "flushes_pending": 0,
        "flushes_done": 0,
        "flushes_failed": 0,
        "memories_created": 0,
        "memories_merged": 0,
        "held_for_review": 0,
    }
    assert (ended["status"], ended["message_count"], ended["flushed_through"]) == ("ended", 6, 6)
    assert ended["ended_at"] is not None
    # The list's counts are the session view's flush counts, summed.
    _, view = call_api("GET", "/v1/sessions/editor", tenant)
    (flush,) = view["flushes"]
    assert flush["status"] == "done", flush["error"]
    assert ended["counts"]["flushes"] == ended["counts"]["flushes_done"] == 1
    assert ended["counts"]["flushes_pending"] == ended["counts"]["flushes_failed"] == 0
    assert ended["counts"]["memories_created"] == flush["counts"]["memories_created"] >= 3
    assert ended["counts"]["memories_merged"] == flush["counts"]["memories_merged"]
    assert ended["counts"]["held_for_review"] == flush["counts"]["held_for_review"]

    _, only_open = call_api("GET", "/v1/sessions", tenant, query={"status": "open"})
    assert _ids(only_open) == ["still-talking"]
    _, only_ended = call_api("GET", "/v1/sessions", tenant, query={"status": "ended"})
    assert _ids(only_ended) == ["editor"]


def test_a_queued_flush_counts_as_pending_until_the_job_runs(configured, tenant, service, conversation_queue):  # noqa: F811
    say(service, tenant, "waiting", PREFERENCE_CHAT[:2])
    call_api("POST", "/v1/sessions/waiting/end", tenant)
    conversation_queue("waiting")  # taken off the queue, never run
    _, page = call_api("GET", "/v1/sessions", tenant)
    (session,) = page["sessions"]
    assert session["counts"]["flushes"] == session["counts"]["flushes_pending"] == 1
    assert session["counts"]["flushes_done"] == session["counts"]["memories_created"] == 0


def test_pages_follow_the_cursor_without_repeating_or_skipping_a_session(configured, tenant, service):  # noqa: F811
    names = [f"page-{i}" for i in range(7)]
    for name in names:
        say(service, tenant, name, [("user", f"Turn of {name}.")])
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = {"limit": "3"} | ({"cursor": cursor} if cursor else {})
        status, page = call_api("GET", "/v1/sessions", tenant, query=query)
        assert status == 200 and len(page["sessions"]) <= 3
        seen += _ids(page)
        pages += 1
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert pages == 3
    assert seen == _created_order(tenant) and sorted(seen) == sorted(names)


def test_a_tenant_sees_only_its_own_sessions(configured, tenant, service):  # noqa: F811
    other = f"{tenant}-other"
    say(service, tenant, "mine", [("user", "Mine.")])
    say(service, other, "theirs", [("user", "Theirs.")])
    assert _ids(call_api("GET", "/v1/sessions", tenant)[1]) == ["mine"]
    assert _ids(call_api("GET", "/v1/sessions", other)[1]) == ["theirs"]
    # A cursor names a position, not a tenant: replaying another tenant's cannot reveal its rows.
    say(service, other, "theirs-2", [("user", "Theirs too.")])
    _, first = call_api("GET", "/v1/sessions", other, query={"limit": "1"})
    _, replayed = call_api("GET", "/v1/sessions", tenant, query={"cursor": first["next_cursor"]})
    assert "theirs" not in _ids(replayed) and "theirs-2" not in _ids(replayed)


def test_bad_list_parameters_are_clear_4xx(configured, tenant):
    forged = base64.urlsafe_b64encode(json.dumps(["not a date", "x"]).encode()).decode()
    wrong_shape = base64.urlsafe_b64encode(json.dumps(["2026-01-01T00:00:00+00:00", 7]).encode()).decode()
    nul = base64.urlsafe_b64encode(json.dumps(["2026-01-01T00:00:00+00:00", "a\u0000b"]).encode()).decode()
    for query in ({"cursor": "%%%"}, {"cursor": forged}, {"cursor": wrong_shape}, {"cursor": nul}):
        status, body = call_api("GET", "/v1/sessions", tenant, query=query)  # not the declared form
        assert status == 422 and body["error"]["code"] == "validation_error", (query, body)
    for query in ({"status": "archived"}, {"limit": "0"}, {"limit": "501"}, {"limit": "many"}):
        status, body = call_api("GET", "/v1/sessions", tenant, query=query)
        assert status == 422 and body["error"]["code"] == "validation_error", (query, body)
    status, body = call_api("GET", "/v1/sessions", None)
    assert status in (401, 403)
