"""The ``ConceptExtractor`` port (S1, S4 step 3, S8) and the flow every implementation honours."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from contextos.models import Concept

if TYPE_CHECKING:
    from contextos.conversations import Turn, TurnConcept


@runtime_checkable
class ConceptExtractor(Protocol):
    """Distils a text into concepts; ``known`` are labels already extracted from earlier sections."""

    model_id: str

    def extract(self, text: str, *, domain: str, known: list[str] | None = None) -> list[Concept]: ...

    def extract_conversation(
        self, turns: list[Turn], *, known: list[str] | None = None, min_concepts: int = 3, max_concepts: int = 10
    ) -> list[TurnConcept]:
        """Distils a conversation's turns into concepts, each citing the turns that state it."""
        ...
