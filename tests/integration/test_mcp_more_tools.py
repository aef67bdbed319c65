"""The tools added for issue #31 (edit, restore, history with as_of, forget a document, scope and
tag filters, as_of on reads) through the real MCP client, on the real database and services."""

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import uuid4

from contextos import container
from contextos.mcp.backend import Caller
from contextos.mcp.run import local_backend
from contextos.mcp.server import build_server
from mcp.client.client import Client

from tests.integration.test_mcp_server import data, tool_error


def _server(tenant: str):
    return build_server(local_backend(Caller(tenant_id=tenant, subject="mcp-tests", kind="user")))


def test_edit_history_restore_and_filters(configured, tenant):
    before = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()

    async def run() -> None:
        async with Client(_server(tenant), raise_exceptions=False) as client:
            save = {"label": "Deploy window", "definition": "Deploys happen on Tuesday mornings.", "tags": ["ops"]}
            memory_id = data(await client.call_tool("save_memory", save))["memory_id"]
            other = {"label": "Lunch spot", "definition": "The team lunches at the noodle bar.", "tags": ["team"]}
            other_id = data(await client.call_tool("save_memory", other))["memory_id"]

            tagged = data(await client.call_tool("search_memories", {"query": "deploys lunch", "tags": ["ops"]}))
            assert [m["id"] for m in tagged["memories"]] == [memory_id]
            block = data(await client.call_tool("get_context", {"query": "when do we deploy?", "tags": ["team"]}))
            assert memory_id not in {m["id"] for m in block["memories"]}
            past = data(await client.call_tool("get_context", {"query": "when do we deploy?", "as_of": before}))
            assert past["memories"] == []

            edited = data(
                await client.call_tool(
                    "edit_memory", {"memory_id": memory_id, "definition": "Deploys happen on Thursday mornings."}
                )
            )
            assert edited["changed"] == ["definition"] and edited["reembedded"] is True
            detail = data(await client.call_tool("get_memory", {"memory_id": memory_id}))
            assert "Thursday" in detail["definition"] and detail["tags"] == ["ops"]  # the rest is untouched
            cleared = data(await client.call_tool("edit_memory", {"memory_id": memory_id, "clear": ["tags"]}))
            assert cleared["changed"] == ["tags"]
            assert data(await client.call_tool("get_memory", {"memory_id": memory_id}))["tags"] == []
            assert tool_error(await client.call_tool("edit_memory", {"memory_id": memory_id}))["code"] == (
                "validation_error"
            )

            history = data(await client.call_tool("memory_history", {"memory_id": memory_id}))
            assert [v["id"] for v in history["versions"]] == [memory_id]
            assert [e["action"] for e in history["events"]].count("edited") == 2
            then = data(await client.call_tool("memory_history", {"memory_id": memory_id, "as_of": before}))
            assert then["versions"] == [] and then["events"] == []
            bad = tool_error(await client.call_tool("memory_history", {"memory_id": memory_id, "as_of": "soon"}))
            assert bad["code"] == "validation_error"

            assert data(await client.call_tool("forget_memory", {"memory_id": other_id}))["forgotten"] is True
            restored = data(await client.call_tool("restore_memory", {"memory_id": other_id}))
            assert restored["restored"] == "forget" and restored["state"] == "active"
            found = data(await client.call_tool("search_memories", {"query": "noodle bar lunch"}))
            assert other_id in {m["id"] for m in found["memories"]}

            missing = tool_error(await client.call_tool("forget_document", {"document_id": str(uuid4())}))
            assert missing["code"] == "not_found" and missing["status"] == 404

    asyncio.run(run())


def test_forget_document_removes_what_only_it_taught(configured, tenant):
    from contextos.models import DocumentCreate

    accepted = container.ingestion().submit(
        tenant, DocumentCreate(text="The release train leaves every second Wednesday at noon.")
    )

    async def run() -> dict:
        async with Client(_server(tenant), raise_exceptions=False) as client:
            return data(await client.call_tool("forget_document", {"document_id": str(accepted.id)}))

    forgotten = asyncio.run(run())
    assert forgotten["id"] == str(accepted.id) and forgotten["memories_kept"] == 0
