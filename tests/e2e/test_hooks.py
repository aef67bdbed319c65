"""Capture hooks for coding agents, against the running local stack: a recorded Claude Code session
replayed through ``contextos hook`` becomes a flushed session whose memories come back in the next
session's injected context; ``hooks install --claude`` writes settings that run exactly that."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from contextos.cli import main

from tests.e2e.test_local_stack import http, stack  # noqa: F401  (the module's stack fixture)

KEY = "ctx_local_dev_key"
DATA = Path(__file__).parent / "data"


def replay(events: list[dict], flags: list[str], monkeypatch, capsys) -> list[dict | None]:
    outputs = []
    for payload in events:
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload)))
        assert main(["hook", payload["hook_event_name"], *flags]) == 0
        captured = capsys.readouterr()
        assert captured.err == "", captured.err
        outputs.append(json.loads(captured.out) if captured.out.strip() else None)
    return outputs


def recorded_session(project: Path) -> list[dict]:
    transcript = project / "transcript.jsonl"
    transcript.write_text((DATA / "claude_code_transcript.jsonl").read_text())
    lines = (DATA / "claude_code_session.jsonl").read_text().splitlines()
    return [json.loads(line.replace("{transcript}", str(transcript)).replace("{cwd}", str(project))) for line in lines]


def flushed(stack, session_id: str, timeout_s: float = 120) -> dict:  # noqa: F811
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, view = http(stack, "GET", f"/v1/sessions/{session_id}")
        assert status == 200, view
        if view["status"] == "ended" and view["flushes"] and all(f["status"] == "done" for f in view["flushes"]):
            return view
        time.sleep(0.5)
    raise AssertionError(f"session {session_id} did not flush: {view}")


def test_a_replayed_claude_code_session_is_remembered_by_the_next_session_start(
    stack,  # noqa: F811
    tmp_path: Path,
    monkeypatch,
    capsys,
):
    project = tmp_path / "payments-api"
    project.mkdir()
    flags = ["--api-url", stack.api_url, "--api-key", KEY]
    events = recorded_session(project)
    replay(events, flags, monkeypatch, capsys)

    session_id = "claude-" + events[0]["session_id"]
    view = flushed(stack, session_id)
    assert view["message_count"] == 4  # two prompts, two answers; the Stop re-trigger added nothing
    status, page = http(stack, "GET", "/v1/memories?tag=project:payments-api&limit=100")
    assert status == 200 and page["memories"], page
    labels = {m["label"] for m in page["memories"]}

    start = dict(events[0], session_id="0b7d9e44-1111-4c2a-8f00-5d3e2c1b0a99")
    [injected] = replay([start], flags, monkeypatch, capsys)
    assert injected is not None and injected["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    block = injected["hookSpecificOutput"]["additionalContext"]
    assert any(label in block for label in labels), (labels, block)
    assert "webhook" in block.lower()


def test_a_hook_never_fails_the_agent(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("not json"))
    assert main(["hook", "UserPromptSubmit", "--api-url", "http://127.0.0.1:9"]) == 0
    assert "unreadable input" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"session_id": "s", "prompt": "hello there"})))
    assert main(["hook", "UserPromptSubmit", "--api-url", "http://127.0.0.1:9"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "cannot reach the API" in captured.err


def test_hooks_install_writes_claude_settings_that_run_the_hook(stack, tmp_path: Path):  # noqa: F811
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo theirs"}]}]}, "model": "x"}
    (project / ".claude" / "settings.local.json").write_text(json.dumps(theirs))
    argv = ["hooks", "install", "--claude", "--project", str(project), "--api-url", stack.api_url, "--api-key", KEY]
    assert main(argv) == 0
    assert main(argv) == 0  # a second install replaces ours, adds nothing
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert settings["model"] == "x"
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert len(settings["hooks"]["Stop"]) == 2  # theirs kept, ours once
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = {"session_id": "installed-1", "cwd": str(project), "prompt": "Where do webhook retries go at the end?"}
    done = subprocess.run(
        shlex.split(command), input=json.dumps(payload), capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    status, view = http(stack, "GET", "/v1/sessions/claude-installed-1")
    assert status == 200 and view["message_count"] == 1


@pytest.mark.parametrize("missing", ["--claude"])
def test_hooks_install_names_the_agent(tmp_path: Path, capsys, missing):
    assert main(["hooks", "install", "--project", str(tmp_path)]) == 2
    assert missing in capsys.readouterr().err
