"""``contextos import-chats FILE``: a ChatGPT or Claude export through the conversation path (S11).

Each conversation becomes a session whose id comes from the conversation's own id, its turns are
posted with the time they were said (``occurred_at``), and ending the session flushes it into
memory as any conversation is. A second import finds each session already there and adds nothing;
an import cut short resumes at the first turn the session does not hold yet."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextos.chat_history import ChatConversation, NotAChatExport, read_export


def import_conversation(client: Any, conversation: ChatConversation, tags: list[str], scope: dict[str, Any]) -> int:
    """Post the turns the session does not hold yet and end it; the number of turns posted."""
    from contextos.sdk import ApiError

    try:
        view = client.get_session(conversation.session_id)
    except ApiError as exc:
        if exc.status != 404:
            raise
        held, ended = 0, False
    else:
        held, ended = view.message_count, view.status == "ended"
    if ended:
        return 0
    for turn in conversation.turns[held:]:
        client.append_message(
            conversation.session_id, turn.role, turn.text, occurred_at=turn.at.isoformat(), tags=tags, **scope
        )
    client.end_session(conversation.session_id)
    return len(conversation.turns) - held


def cmd_import_chats(args: argparse.Namespace, sdk: Callable[[argparse.Namespace], tuple[Any, Any]]) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from contextos.sdk import ApiError

    path = Path(args.file)
    if not path.is_file():
        print(f"contextos: no such file: {path}", file=sys.stderr)
        return 2
    try:
        conversations = read_export(json.loads(path.read_text(encoding="utf-8")), args.format)
    except (UnicodeDecodeError, json.JSONDecodeError, NotAChatExport) as exc:
        print(f"contextos: {path} is not a chat export: {exc}", file=sys.stderr)
        return 2
    scope = {k: v for k, v in {"user_id": args.user_id, "agent_id": args.agent_id}.items() if v}
    client, target = sdk(args)
    imported = turns = 0
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    try:
        with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task(f"importing {path.name}", total=len(conversations))
            for conversation in conversations:
                posted = import_conversation(client, conversation, [f"chat:{conversation.source}"], scope)
                imported += posted > 0
                turns += posted
                bar.advance(task)
    except ApiError as exc:
        print(f"error {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        client.close()
        target.close()
    summary = {"conversations": len(conversations), "imported": imported, "turns": turns}
    print(json.dumps(summary | {"unchanged": len(conversations) - imported}))
    return 0


def register(
    sub: Any,
    api_flags: Callable[[argparse.ArgumentParser], None],
    sdk: Callable[[argparse.Namespace], tuple[Any, Any]],
) -> None:
    chats = sub.add_parser("import-chats", help="import a ChatGPT or Claude conversations.json export as sessions")
    chats.add_argument("file")
    chats.add_argument("--format", choices=["chatgpt", "claude"], help="default: detected from the file")
    chats.add_argument("--user-id", help="the person these conversations belong to (a scope)")
    chats.add_argument("--agent-id")
    api_flags(chats)
    chats.set_defaults(func=lambda a: cmd_import_chats(a, sdk))
