"""The README's MCP snippet and the router files' MCP configs, pasted as a person would: copied
into a fresh folder, the client started exactly as written (stdio; and the HTTP URL and header
the README gives), every tool called. The only substitutions are this machine's: the absolute
path of ``contextos`` for the README's placeholder, the stack's URL, and ``PYTHONPATH`` so the
executable runs this checkout's code."""

from __future__ import annotations

import asyncio
import json
import os
import re
import tomllib
import uuid
from pathlib import Path

import httpx2
import pytest
from contextos.cli import main
from contextos.cli_workspace import contextos_command
from mcp.client.client import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO
from tests.e2e.conftest import running_stack
from tests.integration.test_mcp_server import TOOLS

KEY = "ctx_local_dev_key"
EVERY_TOOL = TOOLS  # the server's whole tool list, one copy


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    with running_stack(str(tmp_path_factory.mktemp("stack-pasted")), database_url, "e2e-pasted") as running:
        yield running


def readme_snippet() -> dict:
    section = (REPO / "README.md").read_text().split("**An agent over MCP.**", 1)[1]
    return json.loads(re.search(r"```json\n(.*?)```", section, re.DOTALL)[1])


def _ok(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def call_every_tool(client: McpClient) -> None:
    assert {t.name for t in (await client.list_tools()).tools} >= EVERY_TOOL
    tag = uuid.uuid4().hex[:8]
    saved = _ok(
        await client.call_tool(
            "save_memory",
            {"label": f"Pasted {tag}", "definition": f"The pasted snippet {tag} reaches the stack.", "tags": [tag]},
        )
    )
    memory_id = saved["memory_id"]
    _ok(await client.call_tool("save_memory", {"label": f"Skill {tag}", "definition": "Run it.", "type": "skill"}))
    assert memory_id in {
        m["id"] for m in _ok(await client.call_tool("get_context", {"query": f"pasted {tag}"}))["memories"]
    }
    found = _ok(await client.call_tool("search_memories", {"query": f"pasted snippet {tag}", "tags": [tag]}))
    assert [m["id"] for m in found["memories"]] == [memory_id]
    assert _ok(await client.call_tool("list_memories", {"tags": [tag]}))["memories"][0]["id"] == memory_id
    assert _ok(await client.call_tool("get_memory", {"memory_id": memory_id}))["label"] == f"Pasted {tag}"
    assert "Run it" in _ok(await client.call_tool("get_skill", {"name": f"Skill {tag}"}))["definition"]
    _ok(await client.call_tool("edit_memory", {"memory_id": memory_id, "importance": 8}))
    assert _ok(await client.call_tool("memory_history", {"memory_id": memory_id}))["events"]
    _ok(await client.call_tool("log_session", {"session_id": f"s-{tag}", "role": "user", "content": "Hello."}))
    said = f"Decision {tag}: the staging cluster {tag} is rebuilt every Sunday night from the main branch."
    ended = _ok(
        await client.call_tool("log_session", {"session_id": f"s-{tag}", "role": "user", "content": said, "end": True})
    )
    assert ended["session"]["status"] == "ended" and ended["session"]["flushes"]
    note = f"The release calendar {tag} lives in the team wiki; releases {tag} need two approvals."
    remembered = _ok(await client.call_tool("remember", {"text": note, "tags": [tag]}))
    taught = {m["id"] for m in remembered["admitted"] + remembered["merged"]}
    assert remembered["status"] == "done" and taught, remembered
    again = _ok(await client.call_tool("remember", {"text": note, "tags": [tag]}))
    assert not again["admitted"] and {m["id"] for m in again["merged"]} == taught, again
    _ok(await client.call_tool("forget_memory", {"memory_id": memory_id}))
    assert _ok(await client.call_tool("restore_memory", {"memory_id": memory_id}))["state"] == "active"
    missing = await client.call_tool("forget_document", {"document_id": str(uuid.uuid4())})
    assert missing.is_error and json.loads(missing.content[0].text)["error"]["code"] == "not_found"


def run_stdio(server: dict, folder: Path, api_url: str) -> None:
    env = dict(server.get("env") or {})
    env["CONTEXTOS_API_URL"] = api_url  # the test stack's port, not 8787
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "shared"), str(REPO)])
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env, cwd=str(folder))

    async def run() -> None:
        async with McpClient(params, read_timeout_seconds=120) as client:
            await call_every_tool(client)

    asyncio.run(run())


def test_the_readme_snippet_over_stdio_from_a_fresh_folder(stack, tmp_path: Path):
    server = readme_snippet()["mcpServers"]["contextos"]
    assert server["args"] == ["mcp"] and set(server["env"]) == {"CONTEXTOS_API_URL", "CONTEXTOS_API_KEY"}
    assert Path(server["command"]).is_absolute() and Path(server["command"]).name == "contextos"
    server["command"] = contextos_command()  # the README's placeholder path → this machine's
    folder = tmp_path / "fresh"
    folder.mkdir()
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"contextos": server}}))
    run_stdio(json.loads((folder / ".mcp.json").read_text())["mcpServers"]["contextos"], folder, stack.api_url)
    assert not (folder / ".contextos").exists()


def test_the_readme_http_url_and_header(stack):
    section = (REPO / "README.md").read_text().split("**An agent over MCP.**", 1)[1]
    url, header = re.search(r'--transport http contextos\s+(\S+) --header "([^"]+)"', section).groups()
    name, value = (part.strip() for part in header.split(":", 1))
    assert url == "http://127.0.0.1:8787/mcp" and value == KEY
    served = stack.state()["mcp_url"]  # the test stack's port

    async def run() -> None:
        http = httpx2.AsyncClient(headers={name: value}, timeout=60)
        async with McpClient(streamable_http_client(served, http_client=http), read_timeout_seconds=60) as client:
            await call_every_tool(client)

    asyncio.run(run())


@pytest.mark.parametrize("tool", ["claude", "agents", "cursor"])
def test_the_router_files_mcp_config_from_a_fresh_folder(stack, tmp_path: Path, capsys, tool):
    folder = tmp_path / "project"
    assert main(["export", str(folder), "--router", tool, "--api-url", stack.api_url, "--api-key", KEY]) == 0
    capsys.readouterr()
    if tool == "agents":
        server = tomllib.loads((folder / ".codex" / "config.toml").read_text())["mcp_servers"]["contextos"]
    else:
        path = folder / (".mcp.json" if tool == "claude" else ".cursor/mcp.json")
        server = json.loads(path.read_text())["mcpServers"]["contextos"]
    assert Path(server["command"]).is_absolute() and server["env"] == {
        "CONTEXTOS_API_URL": stack.api_url,
        "CONTEXTOS_API_KEY": KEY,
    }
    run_stdio(server, folder, stack.api_url)
