"""The ``Embedder`` port (S1): texts in, L2-normalized vectors out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension."""

    model_id: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...
