"""``remember`` (free text through the conversation path) and ``log_session``'s end, in process on
this machine's store with no conversation queue configured — what ``contextos mcp`` over stdio
runs in a folder that holds a store: the flush is distilled there, for real, when it is claimed."""

import asyncio

import pytest
from contextos import container
from contextos.mcp.backend import Caller
from contextos.mcp.run import local_backend
from contextos.mcp.server import build_server
from contextos.models import Provenance
from mcp.client.client import Client

from tests.integration.test_mcp_server import data

NOTE = (
    "Our deploys happen on Tuesday mornings after the change review. "
    "Ana owns the payments service and its on-call rota."
)


@pytest.fixture
def no_queue(configured, monkeypatch):
    monkeypatch.delenv("CONTEXTOS_CONVERSATION_QUEUE_URL")
    container.reset()
    yield
    container.reset()


def _server(tenant: str, ceiling: Provenance = Provenance.user_turn):
    return build_server(local_backend(Caller(tenant_id=tenant, subject="mcp-tests", kind="user", ceiling=ceiling)))


def test_remember_admits_then_says_merged_with_the_memory_it_joined(no_queue, tenant):
    async def run() -> tuple[dict, dict]:
        async with Client(_server(tenant), raise_exceptions=False) as client:
            first = data(await client.call_tool("remember", {"text": NOTE, "tags": ["ops"]}))
            again = data(await client.call_tool("remember", {"text": NOTE, "tags": ["ops"]}))
            return first, again

    first, again = asyncio.run(run())
    assert first["status"] == "done" and first["admitted"] and not first["merged"] and not first["held"]
    labels = {m["label"] for m in first["admitted"]}
    assert "Payments service" in labels, labels
    assert again["status"] == "done" and not again["admitted"]
    assert {m["id"] for m in again["merged"]} == {m["id"] for m in first["admitted"]}
    with container.database().tenant_tx(tenant) as conn:
        tags = {r["tags"][0] for r in conn.execute("SELECT tags FROM memories WHERE tenant_id = %s", [tenant])}
    assert tags == {"ops"}  # the scope given to remember reaches what it taught


def test_saving_a_memory_again_says_merged_with_the_memory_it_joined(configured, tenant):
    fact = {"label": "Deploy window", "definition": "Deploys happen on Tuesday mornings after the change review."}

    async def run() -> tuple[dict, dict]:
        async with Client(_server(tenant), raise_exceptions=False) as client:
            return data(await client.call_tool("save_memory", fact)), data(await client.call_tool("save_memory", fact))

    first, again = asyncio.run(run())
    assert first["status"] == "admitted" and again["status"] == "merged"
    assert again["memory_id"] == first["memory_id"]


def test_remember_from_a_low_trust_caller_is_held_for_review(no_queue, tenant):
    async def run() -> dict:
        async with Client(_server(tenant, Provenance.web_content), raise_exceptions=False) as client:
            return data(await client.call_tool("remember", {"text": NOTE}))

    outcome = asyncio.run(run())
    assert outcome["status"] == "done" and not outcome["admitted"] and not outcome["merged"]
    assert outcome["held"] and all(h["review_id"] and "trust" in h["reason"] for h in outcome["held"])
    pending = container.governance().review(tenant).items
    assert {h["review_id"] for h in outcome["held"]} == {str(i.id) for i in pending}


def test_remember_redacts_a_secret_before_anything_is_stored(no_queue, tenant):
    secret = "AKIAIOSFODNN7EXAMPLE"

    async def run() -> dict:
        async with Client(_server(tenant), raise_exceptions=False) as client:
            return data(await client.call_tool("remember", {"text": f"{NOTE} The deploy key is {secret}."}))

    assert asyncio.run(run())["status"] == "done"
    with container.database().tenant_tx(tenant) as conn:
        stored = conn.execute(
            """SELECT string_agg(definition, ' ') AS text FROM memories WHERE tenant_id = %(t)s
               UNION ALL SELECT string_agg(content, ' ') FROM messages WHERE tenant_id = %(t)s""",
            {"t": tenant},
        ).fetchall()
    assert all(secret not in (row["text"] or "") for row in stored)


def test_log_session_end_flushes_the_session_here_when_no_queue_is_configured(no_queue, tenant):
    turns = [
        ("user", "We chose PostgreSQL with pgvector for the memory store because it runs embedded locally."),
        ("assistant", "Noted: the memory store is PostgreSQL with pgvector, embedded on a laptop."),
    ]

    async def run() -> dict:
        async with Client(_server(tenant), raise_exceptions=False) as client:
            for role, content in turns[:-1]:
                data(await client.call_tool("log_session", {"session_id": "s-end", "role": role, "content": content}))
            role, content = turns[-1]
            return data(
                await client.call_tool(
                    "log_session", {"session_id": "s-end", "role": role, "content": content, "end": True}
                )
            )

    ended = asyncio.run(run())
    assert ended["session"]["status"] == "ended"
    assert [f["status"] for f in ended["session"]["flushes"]] == ["done"]
    taught = container.conversations().taught(tenant, "s-end")
    assert taught.memories and all(m.outcome == "admitted" for m in taught.memories)


def test_over_stdio_on_this_machines_store_an_ended_session_and_a_remembered_note_are_learned(configured, tenant):
    """``contextos mcp`` in a folder with a store and no ``contextos dev`` running: no queue URL in
    its environment, so the flushes are distilled in the server process."""
    import os
    import sys

    from mcp.client.stdio import StdioServerParameters

    from tests.conftest import REPO

    key = container.keys().create(tenant, "mcp-stdio", principal="user", provenance_ceiling=Provenance.user_turn)
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTOS_CONVERSATION_QUEUE_URL"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextos.cli", "mcp", "--api-key", key],
        env=env | {"PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)])},
        cwd=str(REPO),
    )

    async def run() -> tuple[dict, dict]:
        async with Client(params, read_timeout_seconds=180) as client:
            turn = {"session_id": "stdio-end", "role": "user", "content": "The release train leaves on Wednesdays."}
            ended = data(await client.call_tool("log_session", turn | {"end": True}))
            noted = data(await client.call_tool("remember", {"text": NOTE}))
            return ended, noted

    ended, noted = asyncio.run(run())
    assert [f["status"] for f in ended["session"]["flushes"]] == ["done"]
    assert noted["status"] == "done" and noted["admitted"]
    assert container.conversations().taught(tenant, "stdio-end").memories
