"""Capture hooks for coding agents, against the running local stack: a recorded session of each agent
(Claude Code, Codex CLI, Cursor) replayed through ``contextos hook`` becomes a flushed session whose
memories come back in the next session's injected context; ``hooks install`` writes settings that
run exactly that. Codex has no session-end hook, so its session is flushed by the sweeper once idle:
this stack sweeps every second and calls a session idle after three."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from contextos.cli import main

from tests.e2e.conftest import running_stack
from tests.e2e.test_local_stack import http

KEY = "ctx_local_dev_key"
DATA = Path(__file__).parent / "data"
IDLE_S = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    env = {"CONTEXTOS_CONVERSATION__IDLE_FLUSH_S": str(IDLE_S)}
    with running_stack(
        str(tmp_path_factory.mktemp("stack-hooks")), database_url, "e2e-hooks", env, sweep_every_s=1
    ) as s:
        yield s


def replay(events: list[dict], flags: list[str], monkeypatch, capsys) -> list[dict | None]:
    outputs = []
    for payload in events:
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload)))
        assert main(["hook", payload["hook_event_name"], *flags]) == 0
        captured = capsys.readouterr()
        assert captured.err == "", captured.err
        outputs.append(json.loads(captured.out) if captured.out.strip() else None)
    return outputs


def recorded(name: str, project: Path) -> list[dict]:
    """A recorded session's hook inputs, its paths pointed at ``project``."""
    transcript = project / "transcript.jsonl"
    if name == "claude_code":
        transcript.write_text((DATA / "claude_code_transcript.jsonl").read_text())
    lines = (DATA / f"{name}_session.jsonl").read_text().splitlines()
    return [json.loads(line.replace("{transcript}", str(transcript)).replace("{cwd}", str(project))) for line in lines]


def flushed(stack, session_id: str, *, ended: bool, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, view = http(stack, "GET", f"/v1/sessions/{session_id}")
        assert status == 200, view
        done = view["flushes"] and all(f["status"] == "done" for f in view["flushes"])
        if done and view["flushed_through"] == view["message_count"] and (view["status"] == "ended" or not ended):
            return view
        time.sleep(0.5)
    raise AssertionError(f"session {session_id} did not flush: {view}")


# agent, recording, the flag, whether its session ends by itself, what its next start injects, where
AGENTS = [
    ("claude", "claude_code", [], True, "webhook", lambda out: out["hookSpecificOutput"]["additionalContext"]),
    (
        "codex",
        "codex",
        ["--agent", "codex"],
        False,
        "invoice",
        lambda out: out["hookSpecificOutput"]["additionalContext"],
    ),
    ("cursor", "cursor", ["--agent", "cursor"], True, "flag", lambda out: out["additional_context"]),
]


@pytest.mark.parametrize(
    ("agent", "recording", "flag", "ends", "topic", "injected"), AGENTS, ids=[a[0] for a in AGENTS]
)
def test_a_replayed_session_is_remembered_by_the_next_session_start(
    stack, tmp_path: Path, monkeypatch, capsys, agent, recording, flag, ends, topic, injected
):
    project = tmp_path / f"{agent}-project"
    project.mkdir()
    flags = [*flag, "--api-url", stack.api_url, "--api-key", KEY]
    events = recorded(recording, project)
    outputs = replay(events, flags, monkeypatch, capsys)
    if agent == "cursor":  # Cursor waits for a verdict on each prompt: always "continue"
        prompts = [o for e, o in zip(events, outputs, strict=True) if e["hook_event_name"] == "beforeSubmitPrompt"]
        assert prompts and all(o == {"continue": True} for o in prompts)

    raw = events[0].get("session_id") or events[0]["conversation_id"]
    view = flushed(stack, f"{agent}-{raw}", ended=ends)
    assert view["message_count"] == 4  # two prompts, two answers; a Stop re-trigger adds nothing
    tag = f"project:{agent}-project"
    status, page = http(stack, "GET", f"/v1/memories?tag={tag}&limit=100")
    assert status == 200 and page["memories"], page
    labels = {m["label"] for m in page["memories"]}

    start = dict(events[0], session_id="0b7d9e44-1111-4c2a-8f00-5d3e2c1b0a99", conversation_id="next-conversation")
    [output] = replay([start], flags, monkeypatch, capsys)
    assert output is not None
    block = injected(output)
    assert any(label in block for label in labels), (labels, block)
    assert topic in block.lower()


def test_a_hook_never_fails_the_agent(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("not json"))
    assert main(["hook", "UserPromptSubmit", "--api-url", "http://127.0.0.1:9"]) == 0
    assert "unreadable input" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"session_id": "s", "prompt": "hello there"})))
    assert main(["hook", "UserPromptSubmit", "--api-url", "http://127.0.0.1:9"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "cannot reach the API" in captured.err
    # Cursor waits for a verdict on a prompt: it gets "continue" even when the API is down
    prompt = {"conversation_id": "c", "prompt": "hello there", "workspace_roots": [str(tmp_path)]}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(prompt)))
    assert main(["hook", "beforeSubmitPrompt", "--agent", "cursor", "--api-url", "http://127.0.0.1:9"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"continue": True} and "cannot reach the API" in captured.err
    monkeypatch.setattr("sys.stdin", io.StringIO("{}"))
    assert main(["hook", "SessionEnd", "--agent", "codex", "--api-url", "http://127.0.0.1:9"]) == 0
    assert "codex has no SessionEnd hook" in capsys.readouterr().err


# agent flag, settings file, a foreign hook entry already there, the prompt event and its input
INSTALLS = [
    (
        "--claude",
        ".claude/settings.local.json",
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo theirs"}]}]}, "model": "x"},
        "UserPromptSubmit",
        {"session_id": "installed-1", "prompt": "Where do webhook retries go at the end?"},
        "claude-installed-1",
    ),
    (
        "--codex",
        ".codex/hooks.json",
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo theirs"}]}]}},
        "UserPromptSubmit",
        {"session_id": "installed-2", "turn_id": "t", "prompt": "Where do webhook retries go at the end?"},
        "codex-installed-2",
    ),
    (
        "--cursor",
        ".cursor/hooks.json",
        {"version": 1, "hooks": {"sessionEnd": [{"command": "echo theirs"}]}},
        "beforeSubmitPrompt",
        {"conversation_id": "installed-3", "prompt": "Where do webhook retries go at the end?", "attachments": []},
        "cursor-installed-3",
    ),
]


@pytest.mark.parametrize(
    ("flag", "settings", "theirs", "event", "payload", "session"), INSTALLS, ids=["claude", "codex", "cursor"]
)
def test_hooks_install_writes_settings_that_run_the_hook(
    stack, tmp_path: Path, flag, settings, theirs, event, payload, session
):
    project = tmp_path / "repo"
    path = project / settings
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(theirs))
    argv = ["hooks", "install", flag, "--project", str(project), "--api-url", stack.api_url, "--api-key", KEY]
    assert main(argv) == 0
    assert main(argv) == 0  # a second install replaces ours, adds nothing
    written = json.loads(path.read_text())
    assert {k: v for k, v in written.items() if k != "hooks"} == {k: v for k, v in theirs.items() if k != "hooks"}
    for their_event, entries in theirs["hooks"].items():
        assert written["hooks"][their_event][0] == entries[0] and len(written["hooks"][their_event]) == 2
    [entry] = written["hooks"][event]
    command = entry["command"] if flag == "--cursor" else entry["hooks"][0]["command"]
    done = subprocess.run(
        shlex.split(command),
        input=json.dumps(payload | {"cwd": str(project), "workspace_roots": [str(project)]}),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    status, view = http(stack, "GET", f"/v1/sessions/{session}")
    assert status == 200 and view["message_count"] == 1


def test_hooks_install_names_the_agent(tmp_path: Path, capsys):
    assert main(["hooks", "install", "--project", str(tmp_path)]) == 2
    assert "--claude, --codex or --cursor" in capsys.readouterr().err
