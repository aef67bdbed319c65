"""Importing the chat history people have, against the running local stack: a ChatGPT and a Claude
export become sessions through the conversation path with the turns' own times, each flushed into
memory; a second import adds nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from contextos import container
from contextos.chat_history import read_export
from contextos.cli import main

from tests.e2e.test_local_stack import http, stack  # noqa: F401  (the module's stack fixture)

KEY = "ctx_local_dev_key"
DATA = Path(__file__).parent / "data"


def summary(capsys) -> dict:
    # the stack runs in this process: its handlers' metric lines share stdout; the verb's answer is last
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def all_flushed(stack, session_ids: list[str], timeout_s: float = 600) -> None:  # noqa: F811
    pending = set(session_ids)
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        for session_id in sorted(pending):
            status, view = http(stack, "GET", f"/v1/sessions/{session_id}")
            assert status == 200, view
            if view["status"] == "ended" and view["flushes"] and all(f["status"] == "done" for f in view["flushes"]):
                pending.discard(session_id)
        time.sleep(0.5)
    assert not pending, f"{len(pending)} sessions not flushed"


@pytest.mark.parametrize("export_file", ["chatgpt_conversations.json", "claude_conversations.json"])
def test_a_chat_export_imports_with_its_times_and_a_second_import_adds_nothing(
    stack,  # noqa: F811
    capsys,
    export_file,
):
    path = DATA / export_file
    conversations = read_export(json.loads(path.read_text()))
    flags = ["--api-url", stack.api_url, "--api-key", KEY]
    assert main(["import-chats", str(path), "--user-id", "chat-importer", *flags]) == 0
    first = summary(capsys)
    turns = sum(len(c.turns) for c in conversations)
    assert first == {
        "conversations": len(conversations),
        "imported": len(conversations),
        "turns": turns,
        "unchanged": 0,
    }
    all_flushed(stack, [c.session_id for c in conversations])

    with container.database().tenant_tx("local") as conn:
        rows = conn.execute(
            "SELECT session_id, seq, occurred_at FROM messages WHERE session_id = ANY(%s) ORDER BY session_id, seq",
            [[c.session_id for c in conversations]],
        ).fetchall()
        memories = conn.execute(
            "SELECT count(*) AS n, min(valid_from) AS first FROM memories m"
            " JOIN memory_items i ON i.memory_id = m.id AND i.tenant_id = m.tenant_id"
            " WHERE i.session_id = ANY(%s)",
            [[c.session_id for c in conversations]],
        ).fetchone()
    said = {(c.session_id, n): t.at for c in conversations for n, t in enumerate(c.turns)}
    stored = {}
    for row in rows:
        stored.setdefault(row["session_id"], []).append(row["occurred_at"])
    assert sum(len(v) for v in stored.values()) == turns
    assert all(said[(sid, n)] == at for sid, ats in stored.items() for n, at in enumerate(ats))
    # the memories were true when the turns were said, not when they were imported
    assert memories["n"] > 0 and min(said.values()) <= memories["first"] <= max(said.values())

    assert main(["import-chats", str(path), *flags]) == 0
    again = summary(capsys)
    assert again == {"conversations": len(conversations), "imported": 0, "turns": 0, "unchanged": len(conversations)}


def test_a_file_that_is_not_an_export_is_one_line_and_exit_2(tmp_path: Path, capsys):
    bad = tmp_path / "conversations.json"
    bad.write_text(json.dumps({"not": "an export"}))
    assert main(["import-chats", str(bad), "--api-url", "http://127.0.0.1:9"]) == 2
    assert "is not a chat export" in capsys.readouterr().err
    assert main(["import-chats", str(tmp_path / "missing.json"), "--api-url", "http://127.0.0.1:9"]) == 2
