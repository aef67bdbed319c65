"""HTML to Markdown-flavoured text with a small linear-time tokenizer.

Why not ``html.parser``: on CPython 3.11 it re-scans unterminated constructs from every ``<``,
so 80 KB of ``<a `` takes about 20 s and a few hundred KB takes hours (measured; the fix,
CVE-2025-6069, is not in every runtime we ship to). This tokenizer follows the HTML5 rules for
where a tag, comment or raw-text element ends, only ever moves forward, and uses the stdlib
``html.unescape`` for entities. It needs no dependency and never recurses, so deep nesting is
harmless too.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from contextos.parsing.extracted import Extracted

_TAG_NAME = re.compile(r"[A-Za-z][^\t\n\f\r />]*")
_UNQUOTED_RUN = re.compile(r"[^>\"']*+")
_WHITESPACE = re.compile(r"\s+")
# Raw-text elements: their content is not markup and ends only at the matching end tag.
_DROPPED_RAW_TEXT = frozenset({"script", "style", "noscript", "xmp", "iframe", "noembed", "noframes"})
_KEPT_RAW_TEXT = frozenset({"textarea", "title"})
_RAW_TEXT_END = {name: re.compile(rf"</{name}(?=[\s/>])", re.IGNORECASE) for name in _DROPPED_RAW_TEXT | _KEPT_RAW_TEXT}
# Containers whose whole subtree is dropped (markup inside them is still tokenized).
_HIDDEN_CONTAINERS = frozenset({"head", "template", "svg", "math"})
_HEAD_CONTENT = frozenset({"title", "meta", "link", "style", "script", "noscript", "base", "template"})
_PARAGRAPH_TAGS = frozenset(
    {"p", "blockquote", "pre", "table", "ul", "ol", "dl", "section", "article", "header", "footer", "main",
     "aside", "nav", "figure", "hr", "details", "form", "address", "fieldset"}
)  # fmt: skip
_LINE_TAGS = frozenset(
    {"div", "br", "dt", "dd", "figcaption", "caption", "summary", "center", "tbody", "thead", "tfoot",
     "legend", "option", "body", "html"}
)  # fmt: skip
_HEADINGS = {f"h{level}": level for level in range(1, 7)}


def extract_html(markup: str) -> Extracted:
    """Visible text; headings as '#', list items as '- ', table cells joined by ' | '."""
    page = _PageText()
    length = len(markup)
    position = 0
    while position < length:
        opening = markup.find("<", position)
        if opening < 0:
            page.data(markup[position:])
            break
        if opening > position:
            page.data(markup[position:opening])
        marker = markup[opening + 1 : opening + 2]
        if markup.startswith("<!--", opening):
            close = markup.find("-->", opening + 4)
            position = length if close < 0 else close + 3
        elif marker in ("!", "?"):  # doctype, CDATA, processing instruction: a bogus comment to '>'
            close = markup.find(">", opening + 2)
            position = length if close < 0 else close + 1
        elif marker == "/":
            close = markup.find(">", opening + 2)
            if close < 0:
                break  # end of file inside an end tag: HTML5 drops it
            end_name = _TAG_NAME.match(markup, opening + 2)
            if end_name:
                page.end_tag(end_name.group().lower())
            position = close + 1
        elif (name_match := _TAG_NAME.match(markup, opening + 1)) is not None:
            close = _end_of_start_tag(markup, name_match.end())
            if close < 0:
                break  # end of file inside a tag: HTML5 drops it
            name = name_match.group().lower()
            page.start_tag(name, self_closing=markup[close - 1] == "/")
            position = close + 1
            if name in _RAW_TEXT_END:
                end_tag = _RAW_TEXT_END[name].search(markup, position)
                stop = length if end_tag is None else end_tag.start()
                page.raw_text(name, markup[position:stop])
                position = stop
        else:  # a '<' that starts no tag ("a < b") is text
            page.data("<")
            position = opening + 1
    return page.result()


def _end_of_start_tag(markup: str, position: int) -> int:
    """Index of the '>' closing a start tag, honouring quoted values; -1 at end of input."""
    length = len(markup)
    while True:
        run_start = position
        run = _UNQUOTED_RUN.match(markup, position)
        position = run.end() if run else position
        if position >= length:
            return -1
        character = markup[position]
        if character == ">":
            return position
        # A quote opens a value only right after '='; elsewhere it is part of a name (HTML5).
        if markup[run_start:position].rstrip().endswith("="):
            close = markup.find(character, position + 1)
            if close < 0:
                return -1
            position = close + 1
        else:
            position += 1


class _PageText:
    """Collects visible text while the tokenizer walks the page; never looks back."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.hidden: Counter[str] = Counter()
        self.preformatted = 0
        self.cells_in_row = 0
        self.title: str | None = None
        self.first_h1: str | None = None
        self.h1_parts: list[str] | None = None

    def start_tag(self, name: str, *, self_closing: bool) -> None:
        if self.hidden["head"] and name not in _HEAD_CONTENT:
            self.hidden["head"] = 0  # body content implicitly closes <head>
        if name in _HIDDEN_CONTAINERS:
            if not self_closing:
                self.hidden[name] += 1
            return
        if self._is_hidden():
            return
        if name in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[name] + " ")
            if name == "h1" and self.first_h1 is None:
                self.h1_parts = []
        elif name == "li":
            self.parts.append("\n- ")
        elif name == "tr":
            self.cells_in_row = 0
            self.parts.append("\n")
        elif name in ("td", "th"):
            if self.cells_in_row:
                self.parts.append(" | ")
            self.cells_in_row += 1
        elif name in _PARAGRAPH_TAGS:
            self.parts.append("\n\n")
        elif name in _LINE_TAGS:
            self.parts.append("\n")
        if name == "pre":
            self.preformatted += 1

    def end_tag(self, name: str) -> None:
        if name in _HIDDEN_CONTAINERS:
            self.hidden[name] = max(self.hidden[name] - 1, 0)
            return
        if self._is_hidden():
            return
        if name in _HEADINGS:
            self.parts.append("\n\n")
            if name == "h1" and self.h1_parts is not None:
                self.first_h1 = " ".join("".join(self.h1_parts).split())[:200] or None
                self.h1_parts = None
        elif name in _PARAGRAPH_TAGS:
            self.parts.append("\n\n")
        elif name in _LINE_TAGS:
            self.parts.append("\n")
        if name == "pre":
            self.preformatted = max(self.preformatted - 1, 0)

    def raw_text(self, name: str, content: str) -> None:
        if name == "title":
            if self.title is None:
                self.title = " ".join(html.unescape(content).split())[:200] or None
        elif name == "textarea":
            self.data(content)

    def data(self, content: str) -> None:
        if self._is_hidden() or not content:
            return
        text = html.unescape(content)
        if not self.preformatted:
            text = _WHITESPACE.sub(" ", text)
        self.parts.append(text)
        if self.h1_parts is not None:
            self.h1_parts.append(text)

    def result(self) -> Extracted:
        return Extracted("".join(self.parts), self.title or self.first_h1)

    def _is_hidden(self) -> bool:
        return any(self.hidden.values())
