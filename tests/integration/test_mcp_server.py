"""The MCP server driven by the real ``mcp`` client (SDK 2.x): every tool and the resources over
stdio (a ``contextos mcp`` subprocess) and streamable HTTP (the ASGI app under uvicorn), against
the real database; errors arrive as MCP errors carrying the API's stable codes."""

import asyncio
import json
import os
import socket
import sys
import threading
import time

import httpx2
import pytest
import uvicorn
from contextos import container
from contextos.mcp.run import local_backend
from contextos.mcp.server import http_app, key_identifier
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import REPO

TOOLS = {
    "get_context",
    "save_memory",
    "remember",
    "search_memories",
    "forget_memory",
    "log_session",
    "get_skill",
    "list_memories",
    "get_memory",
    "edit_memory",
    "restore_memory",
    "memory_history",
    "forget_document",
}


def data(result) -> dict:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        payload = result.structured_content
        return payload.get("result", payload) if set(payload) == {"result"} else payload
    return json.loads(result.content[0].text)


def tool_error(result) -> dict:
    """The one error shape every tool failure has: an error result carrying {code, message, status}."""
    assert result.is_error, result.content
    text = result.content[0].text
    assert "Traceback" not in text and "Error executing tool" not in text and "pydantic" not in text.lower()
    payload = json.loads(text)
    assert result.structured_content == payload and set(payload) == {"error"}
    error = payload["error"]
    assert {"code", "message", "status"} <= set(error) and error["code"] and error["message"]
    return error


async def exercise_every_tool(client: Client) -> None:
    """One pass through every tool, the resources and an error, as an agent would use them."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= TOOLS
    assert all(len(tools[name].description or "") > 80 for name in TOOLS)  # written for a model to read

    saved = data(
        await client.call_tool(
            "save_memory",
            {
                "label": "Deploy window",
                "definition": "Deploys happen on Tuesday mornings after the change review.",
                "type": "decision",
                "user_id": "ana",
            },
        )
    )
    assert saved["status"] == "admitted"
    memory_id = saved["memory_id"]
    skill = data(
        await client.call_tool(
            "save_memory",
            {
                "label": "Release",
                "definition": "To release: tag the commit, run the pipeline, watch the canary.",
                "type": "skill",
            },
        )
    )

    context = data(await client.call_tool("get_context", {"query": "when do deploys happen?", "user_id": "ana"}))
    assert "Deploy window" in context["context"] and context["memories"][0]["id"] == memory_id
    other = data(await client.call_tool("get_context", {"query": "when do deploys happen?", "user_id": "bo"}))
    assert memory_id not in {m["id"] for m in other["memories"]}

    found = data(await client.call_tool("search_memories", {"query": "deploy Tuesday", "limit": 5}))
    assert memory_id in {m["id"] for m in found["memories"]}

    listed = data(await client.call_tool("list_memories", {"type": "decision"}))
    assert [m["id"] for m in listed["memories"]] == [memory_id]

    detail = data(await client.call_tool("get_memory", {"memory_id": memory_id}))
    assert detail["label"] == "Deploy window" and detail["band"] == "strong"

    got = data(await client.call_tool("get_skill", {"name": "release"}))
    assert got["id"] == skill["memory_id"] and "canary" in got["definition"]

    logged = data(await client.call_tool("log_session", {"session_id": "s-1", "role": "user", "content": "Hi."}))
    assert logged["seq"] == 1

    # nothing polls this suite's conversation queue: the text is buffered and its flush queued
    noted = data(await client.call_tool("remember", {"text": "The canary gets five percent.", "wait_s": 0}))
    assert noted["status"] == "queued" and noted["session_id"].startswith("remember-")

    resource = await client.read_resource(f"contextos://memories/{memory_id}")
    assert json.loads(resource.contents[0].text)["id"] == memory_id

    forgotten = data(await client.call_tool("forget_memory", {"memory_id": memory_id, "reason": "user asked"}))
    assert forgotten["forgotten"] is True
    again = data(await client.call_tool("search_memories", {"query": "deploy Tuesday"}))
    assert memory_id not in {m["id"] for m in again["memories"]}

    assert tool_error(await client.call_tool("get_memory", {"memory_id": memory_id}))["status"] == 404
    assert tool_error(await client.call_tool("get_memory", {"memory_id": memory_id}))["code"] == "not_found"
    assert tool_error(await client.call_tool("get_skill", {"name": "nothing like this"}))["code"] == "not_found"
    assert tool_error(await client.call_tool("get_memory", {"memory_id": "not-an-id"}))["code"] == "validation_error"
    with pytest.raises(MCPError) as error:  # a resource has no error result: the same data on a JSON-RPC error
        await client.read_resource(f"contextos://memories/{memory_id}")
    assert error.value.data["code"] == "not_found" and error.value.data["message"]


def test_every_tool_in_process(configured, tenant):
    from contextos.mcp.backend import Caller
    from contextos.mcp.server import build_server

    server = build_server(local_backend(Caller(tenant_id=tenant, subject="tests")))

    async def run() -> None:
        async with Client(server, raise_exceptions=False) as client:
            await exercise_every_tool(client)

    asyncio.run(run())


def test_every_tool_over_stdio(configured, tenant):
    key = container.keys().create(tenant, "mcp-stdio", principal="agent")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextos.cli", "mcp", "--api-key", key],
        env=dict(os.environ) | {"PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)])},
        cwd=str(REPO),
    )

    async def run() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await exercise_every_tool(client)

    asyncio.run(run())
    with container.database().tenant_tx(tenant) as conn:
        actors = {r["actor"] for r in conn.execute("SELECT actor FROM audit_log")}
    assert "mcp-stdio" in actors  # acted as the key's identity


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mcp_http(configured):
    app = http_app(local_backend(), key_identifier(container.keys()))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=10)


def test_every_tool_over_streamable_http(mcp_http, tenant):
    key = container.keys().create(tenant, "mcp-http", principal="agent")

    async def run() -> None:
        transport = streamable_http_client(mcp_http, http_client=httpx2.AsyncClient(headers={"x-api-key": key}))
        async with Client(transport, read_timeout_seconds=60) as client:
            await exercise_every_tool(client)

    asyncio.run(run())


def test_streamable_http_refuses_a_caller_without_a_valid_key(mcp_http):
    for headers in ({}, {"x-api-key": "ctx_not_a_key"}):
        response = httpx2.post(mcp_http, headers=headers | {"content-type": "application/json"}, content=b"{}")
        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"
