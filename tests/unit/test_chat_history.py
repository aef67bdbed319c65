"""Reading ChatGPT's and Claude's conversation exports: the branch the user saw, real times, roles."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from contextos.chat_history import NotAChatExport, detect_format, read_export

DATA = Path(__file__).resolve().parents[1] / "e2e" / "data"


def load(name: str) -> list:
    return json.loads((DATA / name).read_text())


def test_a_chatgpt_export_reads_the_branch_the_user_last_saw_with_its_times():
    export = load("chatgpt_conversations.json")
    assert detect_format(export) == "chatgpt"
    conversations = read_export(export)
    assert len(conversations) == len(export) >= 50
    for conversation in conversations:
        roles = [t.role for t in conversation.turns]
        assert roles == ["user", "assistant"] * (len(roles) // 2)  # the hidden system node is left out
        assert all(not t.text.startswith("(an earlier wording") for t in conversation.turns)  # the edited branch
        times = [t.at for t in conversation.turns]
        assert times == sorted(times) and times[0].year in (2025, 2026) and times[0].tzinfo is UTC
        assert conversation.session_id.startswith("chatgpt-")
    by_id = {c["conversation_id"]: c for c in export}
    for conversation in conversations:
        messages = [n["message"] for n in by_id[conversation.id]["mapping"].values() if n["message"]]
        said = {
            datetime.fromtimestamp(m["create_time"], UTC): m["content"]["parts"][0]
            for m in messages
            if m["create_time"]
        }
        assert all(said[t.at] == t.text for t in conversation.turns)  # each turn keeps its own time


def test_a_claude_export_reads_every_message_in_order_with_its_times():
    export = load("claude_conversations.json")
    assert detect_format(export) == "claude"
    conversations = read_export(export)
    assert len(conversations) == len(export) >= 50
    by_id = {c["uuid"]: c for c in export}
    for conversation in conversations:
        messages = by_id[conversation.id]["chat_messages"]
        assert [t.text for t in conversation.turns] == [m["text"] for m in messages]
        assert [t.role for t in conversation.turns] == [
            "user" if m["sender"] == "human" else "assistant" for m in messages
        ]
        assert conversation.turns[0].at == datetime.fromisoformat(messages[0]["created_at"].replace("Z", "+00:00"))
    assert [c.turns[0].at for c in conversations] == sorted(c.turns[0].at for c in conversations)


@pytest.mark.parametrize("export", [{}, [1, 2], [{"title": "x"}], "text"])
def test_anything_else_is_not_a_chat_export(export):
    with pytest.raises(NotAChatExport):
        read_export(export)
