"""``contextos mcp`` as a person pastes it into an agent's settings: started from any folder, it
finds the running ``contextos dev`` (or the URL it is given) and serves its tools; with nothing to
serve it says so in one line, and it never creates an empty store where it was started."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from mcp.client.client import Client as McpClient
from mcp.client.stdio import StdioServerParameters

from tests.conftest import REPO
from tests.e2e.test_local_stack import http, stack  # noqa: F401  (the module's stack fixture)


def pasted_env(**extra: str) -> dict[str, str]:
    """A shell's environment: nothing of the suite's own configuration but where stacks say they are."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTOS_")}
    env["CONTEXTOS_LOCAL_STACK_POINTER"] = os.environ["CONTEXTOS_LOCAL_STACK_POINTER"]
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "shared"), str(REPO)])
    return env | extra


def call_tools(params: StdioServerParameters) -> tuple[str, str]:
    async def run() -> tuple[str, str]:
        async with McpClient(params, read_timeout_seconds=120) as client:
            saved = await client.call_tool(
                "save_memory", {"label": "Anywhere standup", "definition": "The standup moved to 10:15 on Mondays."}
            )
            assert not saved.is_error, saved.content
            context = await client.call_tool("get_context", {"query": "when is the Monday standup?"})
            assert not context.is_error, context.content
            return saved.structured_content["memory_id"], str(context.content)

    return asyncio.run(run())


def test_stdio_mcp_from_another_folder_serves_the_running_stack(stack, tmp_path: Path):  # noqa: F811
    elsewhere = tmp_path / "some-project"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "contextos.cli", "mcp"], env=pasted_env(), cwd=str(elsewhere)
    )
    memory_id, context = call_tools(params)
    assert "Anywhere standup" in context
    status, body = http(stack, "GET", f"/v1/memories/{memory_id}")
    assert status == 200 and body["label"] == "Anywhere standup"
    assert not (elsewhere / ".contextos").exists()


def test_stdio_mcp_takes_the_api_from_the_environment(stack, tmp_path: Path):  # noqa: F811
    env = pasted_env(
        CONTEXTOS_API_URL=stack.api_url,
        CONTEXTOS_API_KEY="ctx_local_dev_key",
        CONTEXTOS_LOCAL_STACK_POINTER=str(tmp_path / "none.json"),
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "contextos.cli", "mcp"], env=env, cwd=str(tmp_path)
    )
    _, context = call_tools(params)
    assert "standup" in context.lower()


def test_with_nothing_to_serve_it_says_so_and_creates_nothing(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "contextos.cli", "mcp"],
        env=pasted_env(CONTEXTOS_LOCAL_STACK_POINTER=str(tmp_path / "none.json")),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "contextos mcp: no ContextOS to serve: start `make dev` (or `contextos dev`), or pass --api-url /"
        " set CONTEXTOS_API_URL"
    ]
    assert not (tmp_path / ".contextos").exists()
