"""The chat history people already have (S11): ChatGPT's and Claude's ``conversations.json`` exports
read into conversations of timed turns. Pure parsing; the import sends them through the normal
conversation path (``contextos import-chats``), so redaction, the gates and the flush apply as to
any other turn.

ChatGPT keeps a conversation as a tree (``mapping``: node → message, parent, children) whose branch
the user last saw ends at ``current_node``; an edited prompt leaves its older branch behind, which
is not part of the conversation as it stands. Claude keeps a list (``chat_messages``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

ChatFormat = Literal["chatgpt", "claude"]
_NOT_IN_A_SESSION_ID = re.compile(r"[^A-Za-z0-9_.:@-]")
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "tool": "tool"}


class NotAChatExport(ValueError):
    """The file is not a ChatGPT or Claude conversation export."""


@dataclass(frozen=True)
class ChatTurn:
    role: str
    text: str
    at: datetime


@dataclass(frozen=True)
class ChatConversation:
    source: ChatFormat
    id: str
    title: str
    turns: list[ChatTurn] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        """Stable per conversation, so a second import finds what the first one wrote."""
        return f"{self.source}-{_NOT_IN_A_SESSION_ID.sub('-', self.id)}"[:200]


def detect_format(export: Any) -> ChatFormat:
    if not isinstance(export, list) or not all(isinstance(c, dict) for c in export):
        raise NotAChatExport("a conversations.json export is a JSON list of conversations")
    if all("mapping" in c for c in export):
        return "chatgpt"
    if all("chat_messages" in c for c in export):
        return "claude"
    raise NotAChatExport("neither a ChatGPT export (conversations with 'mapping') nor a Claude one ('chat_messages')")


def read_export(export: Any, source: ChatFormat | None = None) -> list[ChatConversation]:
    """Every conversation with at least one turn, oldest first; turns in the order they were said."""
    source = source or detect_format(export)
    conversations = [_chatgpt(c) if source == "chatgpt" else _claude(c) for c in export]
    kept = [c for c in conversations if c.turns]
    return sorted(kept, key=lambda c: (c.turns[0].at, c.id))


def _chatgpt(conversation: dict[str, Any]) -> ChatConversation:
    mapping: dict[str, Any] = conversation.get("mapping") or {}
    branch: list[dict[str, Any]] = []
    node_id = conversation.get("current_node")
    seen: set[str] = set()
    while node_id and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        branch.append(node)
        node_id = node.get("parent")
    started = _epoch(conversation.get("create_time"))
    turns: list[ChatTurn] = []
    for node in reversed(branch):
        message = node.get("message") or {}
        role = _ROLES.get(((message.get("author") or {}).get("role")) or "")
        metadata = message.get("metadata") or {}
        if role is None or metadata.get("is_visually_hidden_from_conversation"):
            continue
        content = message.get("content") or {}
        parts = content.get("parts") or []
        text = "\n".join(p for p in parts if isinstance(p, str)).strip()
        if content.get("content_type", "text") != "text" or not text:
            continue
        at = _epoch(message.get("create_time")) or (turns[-1].at if turns else started)
        if at is None:
            continue
        turns.append(ChatTurn(role=role, text=text, at=at))
    ident = str(conversation.get("conversation_id") or conversation.get("id") or "")
    if not ident:
        raise NotAChatExport("a ChatGPT conversation without an id")
    return ChatConversation("chatgpt", ident, str(conversation.get("title") or ""), turns)


def _claude(conversation: dict[str, Any]) -> ChatConversation:
    turns: list[ChatTurn] = []
    for message in conversation.get("chat_messages") or []:
        role = _ROLES.get(str(message.get("sender") or ""))
        blocks = message.get("content") or []
        text = (
            "\n".join(
                b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text" and b.get("text")
            ).strip()
            or str(message.get("text") or "").strip()
        )
        at = _iso(message.get("created_at")) or _iso(conversation.get("created_at"))
        if role is None or not text or at is None:
            continue
        turns.append(ChatTurn(role=role, text=text, at=at))
    ident = str(conversation.get("uuid") or "")
    if not ident:
        raise NotAChatExport("a Claude conversation without a uuid")
    return ChatConversation("claude", ident, str(conversation.get("name") or ""), turns)


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, int | float) and value > 0:
        return datetime.fromtimestamp(value, UTC)
    return None


def _iso(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
