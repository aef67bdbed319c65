"""What each format extractor hands back before normalization."""

from __future__ import annotations

from typing import NamedTuple


class Extracted(NamedTuple):
    text: str
    title: str | None = None
