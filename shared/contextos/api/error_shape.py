"""The one error shape every 4xx/5xx answers with: built by ``api.app``, described by ``api.openapi``."""

from __future__ import annotations

from typing import Any

from contextos.modelbase import BaseModel


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    """Every 4xx/5xx carries this shape; ``code`` is stable, ``message`` is for people."""

    error: ErrorBody
