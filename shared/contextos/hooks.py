"""``contextos hook <event>`` and ``contextos hooks install``: capture for coding agents (S11).

A coding agent runs a command at the moments of its session and hands it a JSON object on stdin.
Each agent's events map onto the conversation path: the session's start injects the project's
context block, each prompt and each answer is buffered as a turn, the end flushes the session into
memory. Memories of a project carry the tag ``project:<folder name>``, so the next session in that
folder starts with what the last ones taught.

Three agents, as their hook formats are documented: Claude Code (``.claude/settings.local.json``),
Codex CLI (``.codex/hooks.json``: no session-end event, so the sweeper's idle flush ends a Codex
session) and Cursor (``.cursor/hooks.json``: camelCase events, the answer arrives whole in
``afterAgentResponse``). A hook must never break the agent it serves: every failure is one line on
stderr and exit 0 (with the allow answer where the agent waits for one).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Action = Literal["start", "prompt", "answer", "end"]
_NOT_IN_A_SESSION_ID = re.compile(r"[^A-Za-z0-9_.:@-]")
SESSION_START_TOKENS = 1500


@dataclass(frozen=True)
class Agent:
    """One coding agent's hook dialect: its event names, where its settings live, how it answers."""

    name: str
    events: dict[str, Action]
    settings_file: str  # relative to the project folder
    # how the injected context is written back at session start, and on a prompt (None: it takes none there)
    start_context: Callable[[str, str], dict[str, Any]]
    prompt_context: Callable[[str, str], dict[str, Any]] | None = None
    # what the agent must read back even when the hook failed (an event that waits for a verdict)
    allow: dict[str, dict[str, Any]] = field(default_factory=dict)
    matchers: dict[str, str] = field(default_factory=dict)


def _hook_specific(event: str, block: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}


CLAUDE = Agent(
    name="claude",
    events={"SessionStart": "start", "UserPromptSubmit": "prompt", "Stop": "answer", "SessionEnd": "end"},
    # settings.local.json: Claude Code's per-person file, kept out of version control (it may hold a key)
    settings_file=".claude/settings.local.json",
    start_context=_hook_specific,
    prompt_context=_hook_specific,
)
CODEX = Agent(
    name="codex",
    events={"SessionStart": "start", "UserPromptSubmit": "prompt", "Stop": "answer"},
    settings_file=".codex/hooks.json",
    start_context=_hook_specific,
    prompt_context=_hook_specific,
    matchers={"SessionStart": "startup|resume"},
)
CURSOR = Agent(
    name="cursor",
    events={
        "sessionStart": "start",
        "beforeSubmitPrompt": "prompt",
        "afterAgentResponse": "answer",
        "sessionEnd": "end",
    },
    settings_file=".cursor/hooks.json",
    start_context=lambda _event, block: {"additional_context": block},
    allow={"beforeSubmitPrompt": {"continue": True}},
)
AGENTS = {agent.name: agent for agent in (CLAUDE, CODEX, CURSOR)}
HOOK_EVENTS = sorted({event for agent in AGENTS.values() for event in agent.events})


def project_tag(cwd: str | None) -> str:
    name = Path(cwd or os.getcwd()).name or "root"
    return "project:" + _NOT_IN_A_SESSION_ID.sub("-", name.lower())[:80]


def session_id_of(payload: dict[str, Any], agent: Agent = CLAUDE) -> str:
    raw = str(payload.get("session_id") or payload.get("conversation_id") or "unknown")
    return (f"{agent.name}-" + _NOT_IN_A_SESSION_ID.sub("-", raw))[:200]


def folder_of(payload: dict[str, Any]) -> str | None:
    """The project folder: ``cwd`` (Claude Code, Codex), else Cursor's first workspace root."""
    roots = payload.get("workspace_roots")
    if payload.get("cwd"):
        return str(payload["cwd"])
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return None


def last_assistant_text(payload: dict[str, Any]) -> str | None:
    """The answer the agent just gave: the payload's own field (Claude Code's and Codex's
    ``last_assistant_message``, Cursor's ``text``), else the transcript's last assistant entry
    (Claude Code's JSONL ``{"type": "assistant", "message": {"content": [...]}}``, Cursor's
    ``{"role": "assistant", "message": {...}}``)."""
    for key in ("last_assistant_message", "text"):
        text = payload.get(key)
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
        if not isinstance(entry, dict) or "assistant" not in (entry.get("type"), entry.get("role")):
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

    def __init__(self, client: Any, agent: Agent = CLAUDE) -> None:
        self.client = client
        self.agent = agent

    def run(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        handler: dict[Action, Callable[[str, dict[str, Any]], dict[str, Any] | None]] = {
            "start": self.session_start,
            "prompt": self.prompt,
            "answer": self.answer,
            "end": self.session_end,
        }
        return handler[self.agent.events[event]](event, payload)

    def session_start(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        tag = project_tag(folder_of(payload))
        project = tag.removeprefix("project:")
        result = self.client.context(
            f"{project}: decisions, preferences, conventions and open work",
            scope={"tags": [tag]},
            token_budget=SESSION_START_TOKENS,
            **self._standing_context(),
        )
        return self._added(self.agent.start_context, event, result.context)

    def prompt(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        prompt = payload.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return self.agent.allow.get(event)
        session = session_id_of(payload, self.agent)
        self.client.append_message(session, "user", prompt, tags=[project_tag(folder_of(payload))])
        if self.agent.prompt_context is None:  # the agent cannot take context here: the start gave it
            return self.agent.allow.get(event)
        result = self.client.context(prompt, session_id=session, token_budget=SESSION_START_TOKENS)
        return self._added(self.agent.prompt_context, event, result.context)

    def answer(self, event: str, payload: dict[str, Any]) -> None:
        if payload.get("stop_hook_active"):
            return None  # the agent is continuing because of a Stop hook: the answer is not final yet
        text = last_assistant_text(payload)
        if text:
            self.client.append_message(
                session_id_of(payload, self.agent), "assistant", text, tags=[project_tag(folder_of(payload))]
            )
        return None

    def session_end(self, event: str, payload: dict[str, Any]) -> None:
        self.client.end_session(session_id_of(payload, self.agent))
        return None

    def _added(
        self, shape: Callable[[str, str], dict[str, Any]], event: str, block: str | None
    ) -> dict[str, Any] | None:
        if not block or not block.strip():
            return self.agent.allow.get(event)
        return self.agent.allow.get(event, {}) | shape(event, block)

    @staticmethod
    def _standing_context() -> dict[str, Any]:
        # A session start asks no question: it wants the project's standing memory, not an answer,
        # so nothing is held back for lack of relevance to the (generic) query.
        return {"min_relevance": 0.0}


def api_target(api_url: str | None, api_key: str | None) -> tuple[str, str] | None:
    """Flags, then ``CONTEXTOS_API_URL`` / ``CONTEXTOS_API_KEY``, then the running ``contextos dev``."""
    url = api_url or os.environ.get("CONTEXTOS_API_URL")
    key = api_key or os.environ.get("CONTEXTOS_API_KEY")
    if url:
        return url, key or ""
    from contextos.local.running import running_stack

    state = running_stack()
    if state is None:
        return None
    return state["api_url"], key or state["api_key"]


def cmd_hook(args: argparse.Namespace) -> int:
    """Read the agent's JSON from stdin, act, print what the agent should read back."""
    agent, event = AGENTS[args.agent], args.event
    try:
        payload = _payload(agent, event, sys.stdin.read())
    except ValueError as exc:
        return _failed(agent, event, f"unreadable input: {exc}")
    target = api_target(args.api, args.key)
    if target is None:
        return _failed(agent, event, "no API (set CONTEXTOS_API_URL or run `contextos dev`)")
    import httpx

    from contextos.sdk import ApiError, Client

    try:
        with Client(target[0], api_key=target[1], max_retries=1, timeout_s=args.timeout) as client:
            output = HookRunner(client, agent).run(event, payload)
    except ApiError as exc:
        return _failed(agent, event, f"{exc.status} {exc.code}: {exc.message}")
    except httpx.HTTPError as exc:
        return _failed(agent, event, f"cannot reach the API at {target[0]}: {exc}")
    if output is not None:
        print(json.dumps(output))
    return 0


def _payload(agent: Agent, event: str, text: str) -> dict[str, Any]:
    if event not in agent.events:
        raise ValueError(f"{agent.name} has no {event} hook (its hooks: {', '.join(agent.events)})")
    payload = json.loads(text or "{}")
    if not isinstance(payload, dict):
        raise ValueError("the hook input is not a JSON object")
    return payload


def _failed(agent: Agent, event: str, why: str) -> int:
    """One line on stderr, the agent's allow answer if it waits for one, and exit 0."""
    print(f"contextos hook {event}: {why}", file=sys.stderr)
    if event in agent.allow:
        print(json.dumps(agent.allow[event]))
    return 0


def hook_entries(agent: Agent, command: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The agent's ``hooks`` block that runs ``command + [event, --agent name]`` at each of its events."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for event in agent.events:
        line = shlex.join([*command, event, *(["--agent", agent.name] if agent is not CLAUDE else [])])
        if agent is CURSOR:  # Cursor's entries are flat: {"command": ...}
            entries[event] = [{"command": line}]
            continue
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": line, "timeout": 30}]}
        if event in agent.matchers:
            entry = {"matcher": agent.matchers[event]} | entry
        entries[event] = [entry]
    return entries


def install(agent: Agent, folder: Path, command: list[str]) -> Path:
    """Merge our hooks into the agent's settings file in ``folder``: other hooks and settings are
    kept, and a second install replaces ours instead of adding them twice."""
    path = folder / agent.settings_file
    settings: dict[str, Any] = {}
    if path.exists():
        settings = json.loads(path.read_text(encoding="utf-8") or "{}")
    if agent is CURSOR:
        settings.setdefault("version", 1)
    hooks = settings.setdefault("hooks", {})
    marker = shlex.join(_hook_base())  # ours, whatever flags an earlier install gave
    for event, entries in hook_entries(agent, command).items():
        kept = [entry for entry in hooks.get(event, []) if not _ours(entry, marker)]
        hooks[event] = kept + entries
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return path


def _ours(entry: dict[str, Any], marker: str) -> bool:
    commands = [entry.get("command", "")] + [h.get("command", "") for h in entry.get("hooks", [])]
    return any(str(c).startswith(marker) for c in commands)


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
    chosen = [AGENTS[name] for name in AGENTS if getattr(args, name)]
    if not chosen:
        print("contextos hooks install: name the agent (--claude, --codex or --cursor)", file=sys.stderr)
        return 2
    folder = Path(args.project or os.getcwd()).resolve()
    if not folder.is_dir():
        print(f"contextos: no such folder: {folder}", file=sys.stderr)
        return 2
    for agent in chosen:
        path = install(agent, folder, hook_command(args.api, args.key))
        print(path)
        if args.key and agent is not CLAUDE:
            print(
                f"contextos hooks install: {path} holds the API key; keep it out of version control "
                "(or install without --api-key and set CONTEXTOS_API_KEY where the agent runs)",
                file=sys.stderr,
            )
    return 0


def register(sub: Any, api_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    hook = sub.add_parser("hook", help="run a coding agent's hook: JSON on stdin, what the agent reads on stdout")
    hook.add_argument("event", choices=HOOK_EVENTS)
    hook.add_argument("--agent", choices=sorted(AGENTS), default=CLAUDE.name, help="whose hook this is")
    hook.add_argument("--timeout", type=float, default=20.0, help="seconds for each API call")
    api_flags(hook)
    hook.set_defaults(func=cmd_hook)

    hooks = sub.add_parser("hooks", help="install the capture hooks into a coding agent's settings")
    hooks_sub = hooks.add_subparsers(dest="action", required=True)
    installer = hooks_sub.add_parser("install", help="write the agent's hook settings for this project")
    for agent in AGENTS.values():
        installer.add_argument(f"--{agent.name}", action="store_true", help=f"{agent.name} ({agent.settings_file})")
    installer.add_argument("--project", help="the project folder (default: the current one)")
    api_flags(installer)
    installer.set_defaults(func=cmd_hooks_install)
