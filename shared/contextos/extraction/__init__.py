"""The ``ConceptExtractor`` port (S1, S4 step 3) and the flow every implementation honours."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from contextos.models import Concept


@runtime_checkable
class ConceptExtractor(Protocol):
    """Distils a text into concepts; ``known`` are labels already extracted from earlier sections."""

    model_id: str

    def extract(self, text: str, *, domain: str, known: list[str] | None = None) -> list[Concept]: ...
