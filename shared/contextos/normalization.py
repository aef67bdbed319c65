"""Text normalization and the normalized memory key (S4 step 7). Pure functions."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACES = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Format characters that render as nothing: a label pasted with one must key like the label without.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))


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


# The merge key of what is kept verbatim, a conversation's turn (``contextos.conversations.turn_key``)
# or a document's passage (``contextos.passages.passage_key``), starts so; a label's key never
# does, since normalization drops the colon.
VERBATIM_KEY_PREFIX = "said:"


def is_verbatim_key(key: str) -> bool:
    """Whether a merge key is a kept turn's or passage's: what was said or written is kept as it
    was, one memory each, never joined to another memory nor judged against one (only linked as
    updated by a later one)."""
    return key.startswith(VERBATIM_KEY_PREFIX)


# A kept turn's ``[time, speaker]`` prefix (``contextos.conversations.turn_excerpt``): a role's
# words, after a day and time when it has them.
_TURN_PREFIX = re.compile(r"^\[(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}, )?(?:user|assistant|tool|third party|system)\] ")


def turn_words(definition: str) -> str:
    """A kept turn's definition without its ``[time, speaker]`` prefix: what was said. Any other
    text (a document's passage) as it is."""
    return _TURN_PREFIX.sub("", definition, count=1)


# A kept turn's excerpts (``contextos.conversations.keep_every_turn``): its session's header, and
# the turn it follows (what it answers), each searchable beside the turn's own words.
SESSION_HEADER_PREFIX = "Session "
FOLLOWS_PREFIX = "After: "


def norm_key(label: str, generic_modifiers: Iterable[str] = ()) -> str:
    """Lowercase, punctuation out, generic modifiers out, plurals folded, words sorted and joined.

    "The Retrieval-System" and "retrieval system" share one key, and so do "feature flag" and
    "Feature Flags". A label made only of modifiers keeps them, so it never collapses to nothing.
    """
    words = [singular(w) for w in _PUNCT.sub(" ", label_form(label).lower()).split()]
    modifiers = _modifier_set(tuple(generic_modifiers))
    kept = [w for w in words if w not in modifiers] or words
    return " ".join(sorted(kept))


def label_form(label: str) -> str:
    """The form a label is compared in: NFKC (so NFD accents, full-width letters and ligatures
    read as their plain letters) with the invisible format characters dropped."""
    return unicodedata.normalize("NFKC", label.translate(_INVISIBLE))


@lru_cache(maxsize=64)
def _modifier_set(generic_modifiers: tuple[str, ...]) -> frozenset[str]:
    return frozenset(singular(m.lower()) for m in generic_modifiers)


def singular(word: str) -> str:
    """A light English plural fold, applied the same way to both sides of every comparison."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "os")):
        return word[:-1]
    return word


CONNECTORS = frozenset("a an and as at by for from in into of on or the to via with".split())


_LABEL_WORD = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+'’-]*[0-9A-Za-z+]|[0-9A-Za-z]")
# A month or a weekday alone recurs (every February is another); a date with its day is one thing.
_CALENDAR = frozenset(
    "january february march april may june july august september october november december"
    " monday tuesday wednesday thursday friday saturday sunday".split()
)

# A key's source mark (``source_mark``): one source's own instance of a common noun. Key words never
# hold "#", as normalization drops punctuation.
SOURCE_MARK = "#"


def names_one_thing(label: str, text: str, generic_modifiers: Iterable[str] = ()) -> bool:
    """Whether a label is a name — one person, product, place, standard, release — rather than a
    common noun each source has its own of ("Installation", "Performance", "Hard work"). Read from
    the label's head word (connectors and trailing generic modifiers aside): it holds a digit
    ("Python 3.9", "May 17th") or a capital past its first letter ("AWS", "NumPy"), or the source's
    own text writes the head capitalised in running text, after a word or a comma ("… on Stack
    Overflow", "cool, Caroline!"), not where a sentence, a heading or a bullet starts. A head in
    lower case ("Python package", "dance studio") is a common noun, and so is a month or a weekday
    alone ("February"; "May 17th" is a date)."""
    modifiers = _modifier_set(tuple(generic_modifiers))
    words = [w for w in _LABEL_WORD.findall(label_form(label)) if w.lower() not in CONNECTORS]
    while len(words) > 1 and singular(words[-1].lower()) in modifiers:
        words.pop()
    if not words:
        return False
    head = words[-1]
    if len(words) == 1 and head.lower() in _CALENDAR:
        return False
    if any(ch.isdigit() for ch in head) or any(ch.isupper() for ch in head[1:]):
        return True
    if not head[0].isupper():
        return False
    text = label_form(text)
    for match in re.finditer(rf"(?<![0-9A-Za-z]){re.escape(head)}(?![0-9A-Za-z])", text):
        # running text goes on from a word or a comma; a sentence, a heading or a bullet starts anew
        previous = text[: match.start()].rstrip()[-1:]
        if previous.isalnum() or previous == ",":
            return True
    return False


def source_mark(tag: str) -> str:
    """The part of a key that keeps a common noun to its source (a document, a session)."""
    return f" {SOURCE_MARK}{tag}"


def initials(label: str) -> str | None:
    """ "Group Relative Policy Optimization" → "grpo" (connector words skipped); None for one word."""
    words = [w for w in _PUNCT.sub(" ", label_form(label)).split() if w.lower() not in CONNECTORS]
    if len(words) < 2:
        return None
    return "".join(w[0] for w in words).lower()


def acronyms(label: str) -> list[str]:
    """The acronym tokens in a label: "GRPO training method" → ["grpo"]."""
    return sorted(
        {
            w.lower()
            for w in _PUNCT.sub(" ", label_form(label)).split()
            if 2 <= len(w) <= 8 and w.isupper() and w.isalpha()
        }
    )


def estimate_tokens(text: str) -> int:
    """A cheap, stable token estimate (about 4 characters a token, at least one a word)."""
    if not text:
        return 0
    return max(len(text.split()), (len(text) + 3) // 4)


def collapse_spaces(text: str) -> str:
    return _SPACES.sub(" ", text).strip()
