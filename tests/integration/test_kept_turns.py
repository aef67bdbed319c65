"""S8: a flushed session's turns stay findable as memories of their own, beside the concepts drawn
from them; a question about the session's topic finds the turn that answers it."""

from contextos import container

from tests.helpers import call_api
from tests.integration.test_conversations import conversation_queue  # noqa: F401
from tests.integration.test_turn_time import flush

PLANNING_CHAT = [
    ("user", "We need to plan the team offsite for the platform group in March."),
    ("assistant", "Happy to help. Where would you like to hold the offsite?"),
    ("user", "Lisbon, because most of the group can fly there directly."),
    ("assistant", "Lisbon works. How many people are coming?"),
    ("user", "Fourteen people, and Priya is vegetarian so the dinners need options."),
    ("assistant", "Noted: fourteen attendees and vegetarian options at every dinner."),
    ("user", "Tomasz owns the hotel booking and must confirm it by February 10."),
    ("assistant", "Tomasz books the hotel, confirmation due February 10."),
]


def post(tenant: str, session: str, chat: list[tuple[str, str]]) -> None:
    for role, content in chat:
        status, result = call_api(
            "POST", f"/v1/sessions/{session}/messages", tenant, {"role": role, "content": content}
        )
        assert status in (200, 201, 202), result


def test_what_was_said_is_found_by_a_question_only_the_session_answers(
    configured,
    tenant,
    sqs,
    local_aws,
    conversation_queue,  # noqa: F811
):
    post(tenant, "offsite", PLANNING_CHAT)
    flush(tenant, "offsite", sqs, local_aws, conversation_queue)
    asked = {
        "Who is vegetarian?": "Priya is vegetarian",
        "Who owns the hotel booking?": "Tomasz owns the hotel booking",
        "By when must the hotel be confirmed?": "by February 10",
        "Which city is the offsite in?": "Lisbon, because",
    }
    for question, answer in asked.items():
        _, result = call_api("POST", "/v1/context", tenant, {"query": question, "dry_run": True})
        assert answer in result["context"], (question, result["context"])
        assert not result.get("abstained"), question


def test_a_kept_turn_is_never_superseded_by_a_later_one(
    configured,
    tenant,
    sqs,
    local_aws,
    conversation_queue,  # noqa: F811
):
    post(tenant, "monday", [("user", "The deploy window is Tuesday afternoon for the payments service.")])
    flush(tenant, "monday", sqs, local_aws, conversation_queue)
    moved = "The deploy window moved from Tuesday to Thursday afternoon for the payments service."
    post(tenant, "friday", [("user", moved)])
    flush(tenant, "friday", sqs, local_aws, conversation_queue)
    with container.database().tenant_tx(tenant) as conn:
        turns = conn.execute(
            "SELECT definition, superseded_by, forgotten_at FROM memories WHERE norm_key LIKE 'turn:%'"
        ).fetchall()
    # both turns kept as said: what was said on Monday was said, whatever changed since
    assert len(turns) == 2 and all(t["superseded_by"] is None and t["forgotten_at"] is None for t in turns)
    _, result = call_api("POST", "/v1/context", tenant, {"query": "When is the deploy window?", "dry_run": True})
    assert moved in result["context"]
