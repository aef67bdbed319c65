"""S8: a turn carries its time (``occurred_at``); the memories a flush distils from it decay from then."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from contextos import container

from tests.helpers import call_api, run_queue
from tests.integration.test_conversations import PREFERENCE_CHAT, conversation_queue  # noqa: F401


def post_turns(tenant: str, session: str, when: datetime | None) -> None:
    for role, content in PREFERENCE_CHAT:
        body = {"role": role, "content": content} | ({"occurred_at": when.isoformat()} if when else {})
        status, result = call_api("POST", f"/v1/sessions/{session}/messages", tenant, body)
        assert status in (200, 201, 202), result


def flush(tenant: str, session: str, sqs, local_aws, take) -> None:
    status, _ = call_api("POST", f"/v1/sessions/{session}/end", tenant)
    assert status == 200
    for job in take(session):
        sqs.send_message(QueueUrl=local_aws.conversation_queue_url, MessageBody=json.dumps(job))
    run_queue(sqs, local_aws.conversation_queue_url, local_aws.conversation_queue_arn, "conversation")
    _, view = call_api("GET", f"/v1/sessions/{session}", tenant)
    assert view["flushes"][0]["status"] == "done", view["flushes"][0]


def test_a_turn_posted_with_occurred_at_decays_from_that_time(
    configured,
    tenant,
    sqs,
    local_aws,
    conversation_queue,  # noqa: F811
):
    said = datetime.now(UTC) - timedelta(days=10)
    post_turns(tenant, "imported", said)
    flush(tenant, "imported", sqs, local_aws, conversation_queue)
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute(
            "SELECT label, decay_rate, strength_anchor, strength_anchor_at, valid_from, last_accessed_at FROM memories"
        ).fetchall()
    assert rows
    for row in rows:
        assert abs((row["strength_anchor_at"] - said).total_seconds()) < 1
        assert abs((row["valid_from"] - said).total_seconds()) < 1
        assert abs((row["last_accessed_at"] - said).total_seconds()) < 1

    _, result = call_api(
        "POST", "/v1/context", tenant, {"query": "dark mode editor theme", "dry_run": True, "min_relevance": 0}
    )
    dark = next(m for m in result["memories"] if m["label"].lower() == "dark mode")
    row = next(r for r in rows if r["label"].lower() == "dark mode")
    decayed = row["strength_anchor"] * (1 - row["decay_rate"]) ** 10
    assert dark["score"]["strength"] == pytest.approx(decayed, rel=1e-3)
    assert dark["said_at"][:10] == said.date().isoformat()
    assert dark["score"]["recency"] < 1e-6  # e^(−0.1·240 h): last accessed when it was said


def test_a_turn_without_occurred_at_is_anchored_when_it_was_buffered(
    configured,
    tenant,
    sqs,
    local_aws,
    conversation_queue,  # noqa: F811
):
    before = datetime.now(UTC)
    post_turns(tenant, "live", None)
    flush(tenant, "live", sqs, local_aws, conversation_queue)
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute("SELECT strength_anchor_at FROM memories").fetchall()
    assert rows and all(before - timedelta(seconds=1) <= r["strength_anchor_at"] <= datetime.now(UTC) for r in rows)


@pytest.mark.parametrize(
    "when",
    [
        datetime.now(UTC) + timedelta(days=1),  # the future
        datetime.now(UTC) - timedelta(days=3700),  # beyond the backdating horizon
    ],
)
def test_an_occurred_at_out_of_range_is_a_4xx(configured, tenant, when):
    body = {"role": "user", "content": "hello", "occurred_at": when.isoformat()}
    status, result = call_api("POST", "/v1/sessions/s1/messages", tenant, body)
    assert status == 400 and result["error"]["code"] == "occurred_at_out_of_range"


@pytest.mark.parametrize("bad", ["yesterday", "2024-01-01T00:00:00", 12])
def test_a_malformed_or_naive_occurred_at_is_a_4xx(configured, tenant, bad):
    body = {"role": "user", "content": "hello", "occurred_at": bad}
    status, result = call_api("POST", "/v1/sessions/s1/messages", tenant, body)
    assert 400 <= status < 500 and "error" in result


CHAT_WITH_ASIDES = [
    *PREFERENCE_CHAT,
    ("user", "By the way, the office printer on floor three jams whenever duplex mode is on."),
    ("assistant", "Noted, the third floor printer dislikes duplex printing."),
    ("user", "My sister Margot arrives from Lisbon on Friday evening."),
]


def test_every_turn_of_a_flushed_session_is_reachable_by_a_query_for_its_words(
    configured,
    tenant,
    sqs,
    local_aws,
    conversation_queue,  # noqa: F811
):
    for role, content in CHAT_WITH_ASIDES:
        status, _ = call_api("POST", "/v1/sessions/chat/messages", tenant, {"role": role, "content": content})
        assert status in (200, 201, 202)
    flush(tenant, "chat", sqs, local_aws, conversation_queue)
    _, view = call_api("GET", "/v1/sessions/chat", tenant)
    counts = view["flushes"][0]["counts"]
    substantial = [c for _, c in CHAT_WITH_ASIDES if len(c.split()) >= 3]
    assert counts["turns_kept"] == len(substantial) and 3 <= counts["memories_created"] - counts["turns_kept"] <= 10
    with container.database().tenant_tx(tenant) as conn:
        turns = conn.execute("SELECT norm_key, definition FROM memories WHERE norm_key LIKE 'said:%'").fetchall()
    for content in substantial:  # each turn of substance its own memory, in its own words, once
        assert len([t for t in turns if t["definition"].endswith(content)]) == 1, content
    for role, content in CHAT_WITH_ASIDES:
        if len(content.split()) < 3:  # small talk ("Great, thanks."): evidence of nothing, not kept
            assert not any(t["definition"].endswith(content) for t in turns)
            continue
        _, result = call_api("POST", "/v1/context", tenant, {"query": content, "dry_run": True})
        assert content in result["context"], (content, result["context"])
        shown = [
            text
            for m in result["memories"]
            for text in [m["definition"], *m["excerpts"]]
            if text.endswith(content) and text.startswith("[")
        ]
        assert shown and shown[0].split("] ", 1)[0].endswith(f", {role}")  # when, and who said it
