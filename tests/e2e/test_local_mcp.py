"""The local stack serves MCP over streamable HTTP beside its API: an agent with the dev key
connects with the real mcp client, saves a memory, and the API sees it."""

import asyncio

import httpx2
import pytest
from contextos import Client
from mcp.client.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import running_stack

KEY = "ctx_local_dev_key"


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    with running_stack(str(tmp_path_factory.mktemp("stack-mcp")), database_url, "e2e-mcp") as running:
        yield running


def test_an_agent_saves_over_mcp_and_the_api_reads_it(stack):
    url = stack.state()["mcp_url"]

    async def run() -> str:
        # the first tool call embeds and admits: give it the same minute as the read timeout, not
        # httpx's default five seconds, which a busy machine exceeds
        http = httpx2.AsyncClient(headers={"x-api-key": KEY}, timeout=60)
        transport = streamable_http_client(url, http_client=http)
        async with McpClient(transport, read_timeout_seconds=60) as client:
            saved = await client.call_tool(
                "save_memory", {"label": "Standup time", "definition": "The team standup is at 9:30 every weekday."}
            )
            assert not saved.is_error, saved.content
            return saved.structured_content["memory_id"]

    memory_id = asyncio.run(run())
    with Client(stack.api_url, api_key=KEY) as ctx:
        assert ctx.get_memory(memory_id).label == "Standup time"
        assert "Standup time" in ctx.context("when is the standup?").context
