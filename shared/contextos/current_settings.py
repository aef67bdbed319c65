"""The process-wide settings: read from the environment on first use, then cached.

Apart from ``contextos.settings`` (the model) because pydantic-settings is heavy to import: a
function's import pays only for this module and the plain models of ``contextos.config``; the
first read loads the model.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextos.settings import Settings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    from contextos.settings import Settings

    return Settings()


def reset_settings() -> None:
    """Forget cached settings (tests and the local stack change the environment)."""
    get_settings.cache_clear()
