"""ContextOS: a persistent, decaying, governed memory layer for AI agents.

``from contextos import Client`` (or ``AsyncClient``, ``ApiError``) loads only the SDK and the
pure models: the server side stays unimported until something asks for it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "AsyncClient", "Client"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from contextos import sdk

        return getattr(sdk, name)
    raise AttributeError(f"module 'contextos' has no attribute {name!r}")
