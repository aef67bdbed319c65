"""Markdown to plain-ish text: frontmatter out unparsed, images out, links to their text, emphasis
markers out, headings and fenced code kept. Every pattern is linear: no class in a repeated
group can cross the delimiter that ends it, so a 10 MB line costs one pass per pattern.
"""

from __future__ import annotations

import re

_FRONTMATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_FRONTMATTER_TITLE = re.compile(r"title:[ \t]*(.+)")
_FRONTMATTER_TITLE_LINES = 100
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_REFERENCE_DEFINITION = re.compile(r" {0,3}\[[^\[\]\n]*\]:\s")
_IMAGE = re.compile(r"!\[[^\[\]\n]*\](?:\([^()\n]*\)|\[[^\[\]\n]*\])")
_LINK = re.compile(r"\[([^\[\]\n]*)\](?:\([^()\n]*\)|\[[^\[\]\n]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^<>\s]*)>")
_STAR_OPEN = re.compile(r"(?<![\w*\\])\*{1,3}(?=[^\s*])")
_STAR_CLOSE = re.compile(r"(?<=[^\s*\\])\*{1,3}(?![\w*])")
_UNDERSCORE_PAIR = re.compile(r"(?<![\w\\])(_{1,2})(?=\S)([^_\n]*?[^\s_])\1(?!\w)")
_STRIKE_PAIR = re.compile(r"~~(?=\S)([^~\n]*?[^\s~])~~")


def strip_frontmatter(text: str) -> tuple[str, str | None]:
    """Drop a leading '---' block without parsing it (a YAML alias bomb stays inert); keep its title."""
    first_newline = text.find("\n")
    if first_newline < 0 or text[:first_newline].rstrip() != "---":
        return text, None
    end = _FRONTMATTER_END.search(text, first_newline + 1)
    if end is None:
        return text, None
    block = text[first_newline + 1 : end.start()]
    return text[end.end() :], _frontmatter_title(block)


def _frontmatter_title(block: str) -> str | None:
    """A plain 'title: ...' scalar by line matching only; anchors, aliases and tags are ignored."""
    for line in block.split("\n", _FRONTMATTER_TITLE_LINES)[:_FRONTMATTER_TITLE_LINES]:
        match = _FRONTMATTER_TITLE.match(line)
        if match:
            value = match.group(1).strip().strip("'\"").strip()
            if value and value[0] not in "&*!|>[{":
                return value[:200]
    return None


def clean_markdown(text: str) -> str:
    """Inline noise out of prose lines; fenced code blocks pass through untouched."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            out.append(line)
            if _closes_fence(line, fence):
                fence = None
            continue
        opener = _FENCE_OPEN.match(line)
        if opener:
            fence = opener.group(1)
            out.append(line)
            continue
        if _REFERENCE_DEFINITION.match(line):
            continue
        out.append(_clean_inline(line))
    return "\n".join(out)


def _closes_fence(line: str, fence: str) -> bool:
    marker = line.strip()
    return len(marker) >= len(fence) and marker == fence[0] * len(marker)


def _clean_inline(line: str) -> str:
    """Transform only outside inline code spans (`...`), so code keeps its stars and underscores."""
    if "`" not in line:
        return _clean_prose(line)
    pieces = line.split("`")
    return "`".join(_clean_prose(piece) if index % 2 == 0 else piece for index, piece in enumerate(pieces))


def _clean_prose(text: str) -> str:
    if "[" in text:
        text = _IMAGE.sub("", text)
        text = _LINK.sub(r"\1", text)
    if "<" in text:
        text = _AUTOLINK.sub(r"\1", text)
    if "*" in text:
        text = _STAR_CLOSE.sub("", _STAR_OPEN.sub("", text))
    if "_" in text:
        text = _UNDERSCORE_PAIR.sub(r"\2", text)
    if "~~" in text:
        text = _STRIKE_PAIR.sub(r"\1", text)
    return text
