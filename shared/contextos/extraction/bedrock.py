"""Concept extraction with Bedrock Converse; JSON enforced through a forced tool call."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from contextos.bedrock_calls import Backoff, call
from contextos.conversations import Turn, TurnConcept
from contextos.errors import PermanentError
from contextos.extraction.prompts import concepts_v1 as prompt
from contextos.extraction.prompts import conversation_v1
from contextos.models import Concept


def converse(client: Any, request: dict, backoff: Backoff | None = None) -> dict:
    """Call Converse with retries on throttling; transient and permanent failures sorted."""
    return call(client.converse, backoff or Backoff(), "Bedrock Converse", **request)


def tool_input(response: dict, tool_name: str) -> dict:
    """The forced tool call's input; falls back to a JSON object in a text block."""
    for block in response.get("output", {}).get("message", {}).get("content", []):
        if "toolUse" in block and block["toolUse"].get("name") == tool_name:
            return block["toolUse"]["input"]
    for block in response.get("output", {}).get("message", {}).get("content", []):
        text = block.get("text", "")
        start, end = text.find("{"), text.rfind("}")
        if start >= 0 and end > start:
            try:
                return json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                continue
    raise PermanentError("the model returned no structured answer")


class BedrockConceptExtractor:
    def __init__(self, client: Any, *, model_id: str, max_tokens: int = 4096, max_concepts: int = 12) -> None:
        self._client = client
        self.model_id = model_id
        self._max_tokens = max_tokens
        self._max_concepts = max_concepts

    def build_request(self, text: str, *, domain: str, known: list[str] | None = None) -> dict:
        return {
            "modelId": self.model_id,
            "system": [{"text": prompt.SYSTEM}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"text": prompt.render(text, domain=domain, known=known or [], max_concepts=self._max_concepts)}
                    ],
                }
            ],
            "inferenceConfig": {"maxTokens": self._max_tokens, "temperature": 0.0},
            "toolConfig": {"tools": [prompt.tool_spec()], "toolChoice": {"tool": {"name": prompt.TOOL_NAME}}},
        }

    def extract(self, text: str, *, domain: str = "general", known: list[str] | None = None) -> list[Concept]:
        response = converse(self._client, self.build_request(text, domain=domain, known=known))
        try:
            parsed = prompt.ConceptsResponse.model_validate(tool_input(response, prompt.TOOL_NAME))
        except ValidationError as exc:
            raise PermanentError(f"the model's concepts did not match the schema: {exc.error_count()} errors") from exc
        return [Concept(**c.model_dump()) for c in parsed.concepts]

    def build_conversation_request(
        self, turns: list[Turn], *, known: list[str] | None = None, min_concepts: int = 3, max_concepts: int = 10
    ) -> dict:
        text = conversation_v1.render(turns, known=known or [], min_concepts=min_concepts, max_concepts=max_concepts)
        return {
            "modelId": self.model_id,
            "system": [{"text": conversation_v1.SYSTEM}],
            "messages": [{"role": "user", "content": [{"text": text}]}],
            "inferenceConfig": {"maxTokens": self._max_tokens, "temperature": 0.0},
            "toolConfig": {
                "tools": [conversation_v1.tool_spec()],
                "toolChoice": {"tool": {"name": conversation_v1.TOOL_NAME}},
            },
        }

    def extract_conversation(
        self, turns: list[Turn], *, known: list[str] | None = None, min_concepts: int = 3, max_concepts: int = 10
    ) -> list[TurnConcept]:
        request = self.build_conversation_request(
            turns, known=known, min_concepts=min_concepts, max_concepts=max_concepts
        )
        response = converse(self._client, request)
        try:
            parsed = conversation_v1.ConversationResponse.model_validate(
                tool_input(response, conversation_v1.TOOL_NAME)
            )
        except ValidationError as exc:
            raise PermanentError(
                f"the model's conversation memories did not match the schema: {exc.error_count()} errors"
            ) from exc
        facts = [
            TurnConcept(
                label=f.label,
                definition=f.statement,
                type="fact",
                importance=f.importance,
                related=[f.about] if f.about.strip() and f.about.strip() != f.label.strip() else [],
                turns=f.turns,
                fact=True,
            )
            for f in parsed.facts
        ]
        return [*(TurnConcept(**c.model_dump()) for c in parsed.concepts), *facts]
