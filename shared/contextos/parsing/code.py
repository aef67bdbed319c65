"""Source code is kept verbatim: indentation and punctuation are its meaning."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean_code(text: str) -> str:
    """Only line endings, control characters and trailing spaces change."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")
