"""Every MCP tool fails in the one shape (an error result carrying the API's stable code and a
message): once with an argument its schema refuses, once with a NUL in a string argument."""

import asyncio

import pytest
from contextos.mcp.backend import Caller
from contextos.mcp.run import local_backend
from contextos.mcp.server import build_server
from mcp.client.client import Client

from tests.integration.test_mcp_server import tool_error

MEMORY_ID = "00000000-0000-4000-8000-000000000001"

# tool: (arguments its schema refuses, arguments with a NUL in a string)
BAD_CALLS = {
    "get_context": ({"query": "deploys", "token_budget": 1}, {"query": "deploys\x00"}),
    "save_memory": ({"label": "", "definition": "x"}, {"label": "Deploy", "definition": "Tuesdays\x00"}),
    "remember": ({"text": "Deploys are on Tuesdays.", "wait_s": 500}, {"text": "Deploys\x00 are on Tuesdays."}),
    "search_memories": ({"query": "deploys", "limit": 0}, {"query": "deploys", "user_id": "ana\x00"}),
    "forget_memory": ({"reason": "no id"}, {"memory_id": MEMORY_ID, "reason": "asked\x00"}),
    "log_session": (
        {"session_id": "s", "role": "narrator", "content": "Hi."},
        {"session_id": "s", "role": "user", "content": "Hi\x00."},
    ),
    "get_skill": ({"name": ["release"]}, {"name": "release\x00"}),
    "list_memories": ({"type": "gossip"}, {"tags": ["ok", "bad\x00"]}),
    "get_memory": ({}, {"memory_id": MEMORY_ID + "\x00"}),
    "edit_memory": ({"memory_id": MEMORY_ID, "importance": 11}, {"memory_id": MEMORY_ID, "label": "Deploy\x00"}),
    "restore_memory": ({"memory_id": 7}, {"memory_id": MEMORY_ID + "\x00"}),
    "memory_history": ({"memory_id": MEMORY_ID, "as_of": 3.5}, {"memory_id": MEMORY_ID, "as_of": "2026\x00"}),
    "forget_document": ({"document": MEMORY_ID}, {"document_id": "\x00"}),
}


def test_every_tool_is_covered(configured, tenant):
    server = build_server(local_backend(Caller(tenant_id=tenant, subject="tests")))

    async def names() -> set[str]:
        async with Client(server) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert asyncio.run(names()) == set(BAD_CALLS)


@pytest.mark.parametrize("tool", sorted(BAD_CALLS))
def test_a_bad_argument_and_a_nul_answer_in_the_one_shape(configured, tenant, tool):
    bad_schema, with_nul = BAD_CALLS[tool]
    server = build_server(local_backend(Caller(tenant_id=tenant, subject="tests")))

    async def run() -> tuple[dict, dict]:
        async with Client(server, raise_exceptions=False) as client:
            refused = tool_error(await client.call_tool(tool, bad_schema))
            return refused, tool_error(await client.call_tool(tool, with_nul))

    schema_error, nul_error = asyncio.run(run())
    assert schema_error["code"] == "validation_error" and schema_error["status"] == 422
    assert all(d["loc"][0] == "arguments" and "input" not in d for d in schema_error["details"])
    assert nul_error["code"] == "invalid_character" and nul_error["status"] == 422
    assert nul_error["details"]["loc"][0] == "arguments" and "NUL" in nul_error["message"]


def test_an_unknown_tool_is_the_same_shape(configured, tenant):
    server = build_server(local_backend(Caller(tenant_id=tenant, subject="tests")))

    async def run() -> dict:
        async with Client(server, raise_exceptions=False) as client:
            return tool_error(await client.call_tool("no_such_tool", {}))

    assert asyncio.run(run())["code"] == "unknown_tool"
