"""``contextos hook <event>`` and ``contextos hooks install``: capture for coding agents (S11).

A coding agent runs a command at the moments of its session and hands it a JSON object on stdin.
Claude Code's events map onto the conversation path: the session's start injects the project's
context block, each prompt and each answer is buffered as a turn, the end flushes the session into
memory. Memories of a project carry the tag ``project:<folder name>``, so the next session in that
folder starts with what the last ones taught.

A hook must never break the agent it serves: every failure is one line on stderr and exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
_NOT_IN_A_SESSION_ID = re.compile(r"[^A-Za-z0-9_.:@-]")
SESSION_START_TOKENS = 1500


def project_tag(cwd: str | None) -> str:
    name = Path(cwd or os.getcwd()).name or "root"
    return "project:" + _NOT_IN_A_SESSION_ID.sub("-", name.lower())[:80]


def session_id_of(payload: dict[str, Any]) -> str:
    raw = str(payload.get("session_id") or "unknown")
    return ("claude-" + _NOT_IN_A_SESSION_ID.sub("-", raw))[:200]


def last_assistant_text(payload: dict[str, Any]) -> str | None:
    """The answer the agent just gave: the payload's own field, else the transcript's last assistant
    entry (Claude Code's JSONL transcript: ``{"type": "assistant", "message": {"content": [...]}}``)."""
    text = payload.get("last_assistant_message")
    if isinstance(text, str) and text.strip():
        return text
    path = payload.get("transcript_path")
    if not path or not Path(path).is_file():
        return None
    last: str | None = None
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        content = (entry.get("message") or {}).get("content")
        if isinstance(content, str):
            parts = [content]
        else:
            parts = [c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
        joined = "\n".join(p for p in parts if p).strip()
        if joined:
            last = joined
    return last


class HookRunner:
    """One hook call against a ContextOS API (``client``: the SDK's ``Client``)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        handler: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
            "SessionStart": self.session_start,
            "UserPromptSubmit": self.prompt,
            "Stop": self.answer,
            "SessionEnd": self.session_end,
        }
        return handler[event](payload)

    def session_start(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        tag = project_tag(payload.get("cwd"))
        project = tag.removeprefix("project:")
        result = self.client.context(
            f"{project}: decisions, preferences, conventions and open work",
            scope={"tags": [tag]},
            token_budget=SESSION_START_TOKENS,
            **self._standing_context(),
        )
        return _added_context("SessionStart", result.context)

    def prompt(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return None
        session = session_id_of(payload)
        self.client.append_message(session, "user", prompt, tags=[project_tag(payload.get("cwd"))])
        result = self.client.context(prompt, session_id=session, token_budget=SESSION_START_TOKENS)
        return _added_context("UserPromptSubmit", result.context)

    def answer(self, payload: dict[str, Any]) -> None:
        if payload.get("stop_hook_active"):
            return None  # the agent is continuing because of a Stop hook: the answer is not final yet
        text = last_assistant_text(payload)
        if text:
            self.client.append_message(
                session_id_of(payload), "assistant", text, tags=[project_tag(payload.get("cwd"))]
            )
        return None

    def session_end(self, payload: dict[str, Any]) -> None:
        self.client.end_session(session_id_of(payload))
        return None

    @staticmethod
    def _standing_context() -> dict[str, Any]:
        # A session start asks no question: it wants the project's standing memory, not an answer,
        # so nothing is held back for lack of relevance to the (generic) query.
        return {"min_relevance": 0.0}


def _added_context(event: str, block: str | None) -> dict[str, Any] | None:
    if not block or not block.strip():
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}


def api_target(api_url: str | None, api_key: str | None) -> tuple[str, str] | None:
    """Flags, then ``CONTEXTOS_API_URL`` / ``CONTEXTOS_API_KEY``, then the running ``contextos dev``."""
    url = api_url or os.environ.get("CONTEXTOS_API_URL")
    key = api_key or os.environ.get("CONTEXTOS_API_KEY")
    if url:
        return url, key or ""
    from contextos.local.stack import running_stack

    state = running_stack()
    if state is None:
        return None
    return state["api_url"], key or state["api_key"]


def cmd_hook(args: argparse.Namespace) -> int:
    """Read the agent's JSON from stdin, act, print what the agent should add to its context."""
    import httpx

    from contextos.sdk import ApiError, Client

    event = args.event
    try:
        payload = json.loads(sys.stdin.read() or "{}")
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
    except ValueError as exc:
        print(f"contextos hook {event}: unreadable input: {exc}", file=sys.stderr)
        return 0
    target = api_target(args.api, args.key)
    if target is None:
        print(f"contextos hook {event}: no API (set CONTEXTOS_API_URL or run `contextos dev`)", file=sys.stderr)
        return 0
    try:
        with Client(target[0], api_key=target[1], max_retries=1, timeout_s=args.timeout) as client:
            output = HookRunner(client).run(event, payload)
    except ApiError as exc:
        print(f"contextos hook {event}: {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 0
    except httpx.HTTPError as exc:
        print(f"contextos hook {event}: cannot reach the API at {target[0]}: {exc}", file=sys.stderr)
        return 0
    if output is not None:
        print(json.dumps(output))
    return 0


def claude_settings(command: list[str]) -> dict[str, Any]:
    """The ``hooks`` block of Claude Code's settings that runs ``command + [event]`` at each event."""
    return {
        event: [{"hooks": [{"type": "command", "command": shlex.join([*command, event]), "timeout": 30}]}]
        for event in HOOK_EVENTS
    }


def install_claude(settings_path: Path, command: list[str]) -> Path:
    """Merge our hooks into a Claude Code settings file; other hooks and settings are kept, and a
    second install replaces ours instead of adding them twice."""
    settings: dict[str, Any] = {}
    if settings_path.exists():
        settings = json.loads(settings_path.read_text(encoding="utf-8") or "{}")
    hooks = settings.setdefault("hooks", {})
    marker = shlex.join(_hook_base())  # ours, whatever flags an earlier install gave
    for event, entries in claude_settings(command).items():
        kept = [
            entry
            for entry in hooks.get(event, [])
            if not any(str(h.get("command", "")).startswith(marker) for h in entry.get("hooks", []))
        ]
        hooks[event] = kept + entries
    settings_path.parent.mkdir(parents=True, exist_ok=True)
    settings_path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return settings_path


def hook_command(api_url: str | None, api_key: str | None) -> list[str]:
    """An absolute command: the agent runs hooks from its own folder and environment."""
    command = _hook_base()
    if api_url:
        command += ["--api-url", api_url]
    if api_key:
        command += ["--api-key", api_key]
    return command


def _hook_base() -> list[str]:
    return [sys.executable, "-m", "contextos.cli", "hook"]


def cmd_hooks_install(args: argparse.Namespace) -> int:
    if not args.claude:
        print("contextos hooks install: name the agent (--claude)", file=sys.stderr)
        return 2
    folder = Path(args.project or os.getcwd()).resolve()
    if not folder.is_dir():
        print(f"contextos: no such folder: {folder}", file=sys.stderr)
        return 2
    # settings.local.json: Claude Code's per-person file, kept out of version control (it may hold a key)
    path = install_claude(folder / ".claude" / "settings.local.json", hook_command(args.api, args.key))
    print(path)
    return 0


def register(sub: Any, api_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    hook = sub.add_parser("hook", help="run a coding agent's hook: JSON on stdin, context on stdout")
    hook.add_argument("event", choices=HOOK_EVENTS)
    hook.add_argument("--timeout", type=float, default=20.0, help="seconds for each API call")
    api_flags(hook)
    hook.set_defaults(func=cmd_hook)

    hooks = sub.add_parser("hooks", help="install the capture hooks into a coding agent's settings")
    hooks_sub = hooks.add_subparsers(dest="action", required=True)
    install = hooks_sub.add_parser("install", help="write the agent's hook settings for this project")
    install.add_argument("--claude", action="store_true", help="Claude Code (.claude/settings.local.json)")
    install.add_argument("--project", help="the project folder (default: the current one)")
    api_flags(install)
    install.set_defaults(func=cmd_hooks_install)
