"""Text normalization and the normalized memory key (S4 step 7). Pure functions."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACES = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def normalize_text(text: str) -> str:
    """NFC, no control characters, collapsed runs of blank lines and spaces."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    lines = [" ".join(line.split()) for line in text.split("\n")]
    out: list[str] = []
    blank = False
    for line in lines:
        if not line:
            if not blank and out:
                out.append("")
            blank = True
            continue
        out.append(line)
        blank = False
    return "\n".join(out).strip()


def norm_key(label: str, generic_modifiers: Iterable[str] = ()) -> str:
    """Lowercase, punctuation out, generic modifiers out, words sorted and joined.

    "The Retrieval-System" and "retrieval system" share one key. A label made only of
    modifiers keeps them, so it never collapses to an empty key.
    """
    words = _PUNCT.sub(" ", label.lower()).split()
    modifiers = {m.lower() for m in generic_modifiers}
    kept = [w for w in words if w not in modifiers] or words
    return " ".join(sorted(kept))


def estimate_tokens(text: str) -> int:
    """A cheap, stable token estimate (about 4 characters a token, at least one a word)."""
    if not text:
        return 0
    return max(len(text.split()), (len(text) + 3) // 4)


def collapse_spaces(text: str) -> str:
    return _SPACES.sub(" ", text).strip()
