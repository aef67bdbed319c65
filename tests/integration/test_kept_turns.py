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


def test_a_kept_turn_is_never_superseded_by_a_later_one_only_linked_as_updated(
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
            "SELECT id, definition, superseded_by, forgotten_at, updated_by FROM memories WHERE norm_key LIKE 'said:%'"
            " ORDER BY valid_from"
        ).fetchall()
    # both turns kept as said: what was said on Monday was said, whatever changed since
    assert len(turns) == 2 and all(t["superseded_by"] is None and t["forgotten_at"] is None for t in turns)
    monday, friday = turns
    assert monday["updated_by"] == friday["id"] and friday["updated_by"] is None  # linked as its update
    _, result = call_api("POST", "/v1/context", tenant, {"query": "When is the deploy window?", "dry_run": True})
    context = result["context"]
    assert moved in context and context.index(moved) < context.index("The deploy window is Tuesday afternoon")


def _stubbed_bedrock(answers: list[dict]):
    """The Bedrock extractor over a Stubber'd client answering ``answers`` (record_conversation_memories
    inputs) in turn: the real Converse response shape, no network."""
    from botocore.stub import Stubber
    from contextos.extraction.bedrock import BedrockConceptExtractor

    from tests.unit.test_bedrock_adapters import bedrock_runtime_client, converse_response

    client = bedrock_runtime_client()
    stubber = Stubber(client)
    for answer in answers:
        use = {"toolUse": {"toolUseId": "tooluse_1", "name": "record_conversation_memories", "input": answer}}
        stubber.add_response("converse", converse_response([use]))
    stubber.activate()
    return BedrockConceptExtractor(client, model_id="amazon.nova-pro-v1:0"), stubber


def _fact(label: str, statement: str, about: str, turns: list[int], kind: str = "other") -> dict:
    return {"about": about, "label": label, "statement": statement, "kind": kind, "importance": 6, "turns": turns}


def test_facts_are_memories_beside_the_concepts_and_a_changed_fact_supersedes_the_old(
    configured,
    tenant,
    conversation_queue,  # noqa: F811
):
    from contextos.conversations import FlushJob, MessageCreate
    from contextos.models import Provenance

    service = container.conversations()
    topics = "Alpha Bravo Charlie Delta Echo Foxtrot Golf Hotel India Juliet Kilo".split()
    priya = {
        "label": "Priya",
        "definition": "Priya is a member of the platform group coming to the offsite.",
        "type": "entity",
        "importance": 8,
        "turns": [2],
    }
    first = {
        "concepts": [
            priya,
            *(
                {
                    "label": f"Project {name}",
                    "definition": f"Project {name} is one of the platform group's running projects this quarter.",
                    "type": "entity",
                    "importance": 5,
                    "turns": [1],
                }
                for name in topics
            ),
        ],
        "facts": [
            _fact("Priya dietary need", "Priya is vegetarian.", "Priya", [2], "need"),
            _fact("Hotel booking owner", "Tomasz owns the hotel booking.", "Hotel booking", [3], "owner"),
            _fact("Payments deploy window", "The payments deploy window is Tuesday afternoon.", "Payments", [4]),
        ],
    }
    second = {
        "concepts": [],
        "facts": [
            _fact(
                "Payments deploy window",
                "The payments deploy window moved from Tuesday to Thursday afternoon.",
                "Payments",
                [1],
                "change",
            )
        ],
    }
    extractor, stubber = _stubbed_bedrock([first, second])
    service.extractor = lambda: extractor
    sessions = {
        "monday": [
            "Here are the twelve projects we run this quarter, Alpha through Lima.",
            "For the offsite dinners: Priya is vegetarian.",
            "Tomasz owns the hotel booking for the offsite.",
            "The payments deploy window is Tuesday afternoon.",
        ],
        "friday": ["Heads up: the payments deploy window moved from Tuesday to Thursday afternoon."],
    }
    for session, said in sessions.items():
        for content in said:
            service.append(tenant, Provenance.user_turn, session, MessageCreate(role="user", content=content))
        service.end(tenant, session)
        (job,) = conversation_queue(session)
        service.process(FlushJob.model_validate(job))
    stubber.assert_no_pending_responses()
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute(
            "SELECT id, label, type, definition, superseded_by FROM memories WHERE norm_key NOT LIKE 'said:%'"
        ).fetchall()
        edges = conn.execute(
            "SELECT s.label AS source, t.label AS target FROM relationships r JOIN memories s ON s.id = r.src_id"
            " JOIN memories t ON t.id = r.dst_id WHERE r.type = 'related'"
        ).fetchall()
    labels = [r["label"] for r in rows]
    concepts = [r for r in rows if r["type"] == "entity"]
    assert len(concepts) == 10 and "Priya" in labels  # the seeds' 3-10 concepts, the most important first
    facts = {r["definition"]: r for r in rows if r["type"] == "fact"}
    assert {"Priya is vegetarian.", "Tomasz owns the hotel booking."} <= set(facts)  # not capped by them
    old = facts["The payments deploy window is Tuesday afternoon."]
    new = facts["The payments deploy window moved from Tuesday to Thursday afternoon."]
    assert old["superseded_by"] == new["id"] and new["superseded_by"] is None  # through the contradiction gate
    assert {"source": "Priya dietary need", "target": "Priya"} in [dict(e) for e in edges]  # linked to its entity
    _, result = call_api(
        "POST", "/v1/context", tenant, {"query": "When is the payments deploy window?", "dry_run": True}
    )
    assert result["context"].index("Thursday afternoon") < result["context"].index("Tuesday afternoon")


def test_a_later_turn_that_corrects_an_earlier_one_is_read_first(
    configured,
    tenant,
    sqs,
    local_aws,
    conversation_queue,  # noqa: F811
):
    """Through the flush, the correction said in a later session ranks above the turn it corrects,
    which stays in the block after it (nothing is hidden)."""
    post(
        tenant,
        "dag-1",
        [
            ("user", "Can you help me plan a nightly airflow job that pulls shopify orders into snowflake?"),
            ("assistant", "Sure. When should the orders job run each night?"),
            ("user", "after midnight pacific, that's the store's timezone. say 2am pacific"),
        ],
    )
    flush(tenant, "dag-1", sqs, local_aws, conversation_queue)
    post(tenant, "dag-2", [("user", "back on the orders dag. we changed our minds on 2am, so 1am pacific")])
    flush(tenant, "dag-2", sqs, local_aws, conversation_queue)
    _, result = call_api(
        "POST", "/v1/context", tenant, {"query": "What time does the orders job run?", "dry_run": True}
    )
    block = result["context"]
    assert "so 1am pacific" in block and "say 2am pacific" in block, block
    assert block.index("so 1am pacific") < block.index("say 2am pacific"), block
