"""S4 step 2: section boundaries by domain, and packing sections into bounded chunks.

Every boundary test is a line-anchored regex run only on lines short enough to be a heading,
and packing works level by level (paragraphs, lines, sentences, hard cuts), so both are linear
in the size of the text: a 10 MB single line costs one pass per level.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from contextos.normalization import estimate_tokens

MAX_HEADING_CHARS = 200
_MAX_TITLE_CHARS = 120


@dataclass(frozen=True, slots=True)
class Section:
    """A run of consecutive lines; ``text`` includes the heading line that opened it."""

    title: str | None
    text: str


# -- boundary patterns (used by detect_domain too) --------------------------------------------
_NUMBER_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred)"
)
_ORDINAL = rf"(?:\d{{1,4}}|[ivxlc]{{1,8}}|{_NUMBER_WORD}(?:[- ]{_NUMBER_WORD})?)\b"
_MARKDOWN_PREFIX = r"(?:#{1,6}[ \t]+)?"
MARKDOWN_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(\S.*)")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_PAPER_SECTION_NAMES = (
    r"abstract|introduction|background|related\s+work|prior\s+work|preliminaries|materials\s+and\s+methods|"
    r"methods?|methodology|approach|proposed\s+method|experimental\s+setup|experimental\s+results|experiments?|"
    r"evaluation|results\s+and\s+discussion|results|discussion|analysis|conclusions?(?:\s+and\s+future\s+work)?|"
    r"limitations|future\s+work|acknowledge?ments?|references|bibliography|appendix(?:\s+\w{1,3})?|appendices"
)
PAPER_HEADING = re.compile(
    rf"{_MARKDOWN_PREFIX}(?:(?:\d{{1,2}}(?:\.\d{{1,2}})*|[IVX]{{1,5}})\.?[ \t]+)?({_PAPER_SECTION_NAMES})"
    r"[ \t]*[:.]?[ \t]*$",
    re.IGNORECASE,
)
_INLINE_ABSTRACT = re.compile(rf"{_MARKDOWN_PREFIX}(abstract)[ \t]*[:—–-]", re.IGNORECASE)
CHAPTER_LINE = re.compile(
    rf"{_MARKDOWN_PREFIX}(?:chapter|chap\.)[ \t]+{_ORDINAL}(?P<rest>.*)$|"
    rf"{_MARKDOWN_PREFIX}(?:part|book)[ \t]+{_ORDINAL}(?P<part_rest>.*)$|"
    rf"{_MARKDOWN_PREFIX}(?:prologue|epilogue|preface|foreword|afterword|introduction)[ \t]*$",
    re.IGNORECASE,
)
NUMBERED_SUBSECTION = re.compile(rf"{_MARKDOWN_PREFIX}\d{{1,2}}\.\d{{1,2}}(?:\.\d{{1,2}})?\.?[ \t]+(?P<rest>[A-Z].*)$")
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\b\.?"
)
_WEEKDAY = (
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thur|thu|fri|sat|sun)\b\.?"
)
TIMESTAMP_LINE = re.compile(
    rf"""[ \t]*(?:[#>*-]+[ \t]*)?[\[(]?(?:
        \d{{4}}-\d{{2}}-\d{{2}}
      | \d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}\b
      | {_WEEKDAY},?[ \t]+\d{{1,2}}(?:st|nd|rd|th)?[ \t]+{_MONTH}
      | {_WEEKDAY},?[ \t]+{_MONTH}[ \t]+\d{{1,2}}\b
      | \d{{1,2}}(?:st|nd|rd|th)?[ \t]+{_MONTH}
      | {_MONTH}[ \t]+\d{{1,2}}(?:st|nd|rd|th)?\b
      | \d{{1,2}}:\d{{2}}\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_TOPIC_LINE = re.compile(r"[A-Za-z][^:]{0,58}:[ \t]*$")
_CODE_DEFINITION = re.compile(
    r"""(?:
        (?:async[ \t]+)?def[ \t]+\w | class[ \t]+\w | module[ \t]+\w | object[ \t]+\w | trait[ \t]+\w
      | (?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?function\b
      | (?:export[ \t]+)?(?:default[ \t]+)?(?:abstract[ \t]+)?class[ \t]+\w
      | (?:export[ \t]+)?(?:const|let|var)[ \t]+\w+[ \t]*=[ \t]*(?:async[ \t]*)?(?:\([^)]*\)|\w+)[ \t]*=>
      | (?:export[ \t]+)?(?:interface|type|enum|namespace|declare)[ \t]+\w
      | func[ \t] | fun[ \t] | (?:case|data|sealed|open|abstract|inner|final)[ \t]+class[ \t]
      | (?:pub(?:\([\w:]+\))?[ \t]+)?(?:async[ \t]+)?(?:unsafe[ \t]+)?(?:fn|struct|enum|trait|impl|mod|union)\b
      | (?:public|private|protected|internal|static|final|abstract|sealed|partial)\b.*\b
        (?:class|interface|enum|record|struct)[ \t]+\w
      | (?:extension|protocol|struct)[ \t]+\w
      | (?i:(?:create|alter|drop)[ \t]+(?:or[ \t]+replace[ \t]+)?
        (?:table|view|index|function|procedure|trigger|type|schema)\b)
      | function[ \t]+\w+ | \w+[ \t]*\(\)[ \t]*\{
    )""",
    re.VERBOSE,
)
_CODE_PREAMBLE = ("@", "#", "//", "/*", "*", " *", "--")
_C_KEYWORDS = frozenset(
    {"if", "for", "while", "switch", "return", "else", "do", "case", "goto", "sizeof", "typedef", "using", "throw"}
)
_C_DECLARATION_HEAD = re.compile(r"[\w*&:<>, \t]+")


def split_sections(text: str, domain: str) -> list[Section]:
    """Sections by the domain's boundaries; text before the first boundary is its own section.

    Nothing is lost: the non-blank lines of all sections, in order, are the input's non-blank lines.
    """
    lines = text.split("\n")
    finder = _BOUNDARY_FINDERS.get(domain)
    if finder is None:
        return _split_paragraphs(lines)
    return _cut(lines, finder(lines))


def pack_sections(
    sections: Iterable[Section], max_tokens: int, estimate: Callable[[str], int] = estimate_tokens
) -> list[str]:
    """Consecutive sections grouped into chunks of at most ``max_tokens``; an oversized section is
    split by paragraphs, then lines, then sentences, then hard character cuts."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    return _pack((section.text for section in sections), max_tokens, estimate, level=0)


# -- splitting ---------------------------------------------------------------------------------
def _cut(lines: Sequence[str], boundaries: list[tuple[int, str | None]]) -> list[Section]:
    starts = [(0, None), *boundaries] if not boundaries or boundaries[0][0] != 0 else boundaries
    sections: list[Section] = []
    for position, (start, title) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else len(lines)
        section = _section(lines, start, end, title)
        if section is not None:
            sections.append(section)
    return sections


def _section(lines: Sequence[str], start: int, end: int, title: str | None) -> Section | None:
    """Lines [start, end) without leading and trailing blank lines; None when all are blank."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if start == end:
        return None
    return Section(title=title, text="\n".join(lines[start:end]))


def _split_paragraphs(lines: Sequence[str]) -> list[Section]:
    sections: list[Section] = []
    start = 0
    for index, line in enumerate(lines):
        if not line.strip():
            section = _section(lines, start, index, None)
            if section is not None:
                sections.append(section)
            start = index + 1
    section = _section(lines, start, len(lines), None)
    if section is not None:
        sections.append(section)
    return sections


def _clean_title(line: str) -> str:
    return " ".join(line.strip().lstrip("#").strip().rstrip(":").split())[:_MAX_TITLE_CHARS]


def _heading_candidates(lines: Sequence[str]) -> Iterable[tuple[int, str]]:
    """Short lines outside fenced code blocks, as (index, stripped line)."""
    fence: str | None = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if fence is not None:
            if stripped and stripped == fence[0] * len(stripped) and len(stripped) >= len(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]
            continue
        if stripped and len(stripped) <= MAX_HEADING_CHARS:
            yield index, stripped


def _paper_boundaries(lines: Sequence[str]) -> list[tuple[int, str | None]]:
    found: list[tuple[int, str | None]] = []
    for index, line in _heading_candidates(lines):
        markdown = MARKDOWN_HEADING.match(line)
        if (markdown and len(markdown.group(1)) <= 2) or PAPER_HEADING.match(line):
            found.append((index, _clean_title(line)))
        elif _INLINE_ABSTRACT.match(line):
            found.append((index, "Abstract"))
    return found


def _chapter_title(line: str) -> str | None:
    match = CHAPTER_LINE.match(line)
    if match is None:
        return None
    rest = (match.group("rest") or match.group("part_rest") or "").lstrip(" \t:.-—–").rstrip()
    if _reads_like_prose(rest):
        return None  # "Chapter 4 describes, at length, how ..." is a sentence, not a heading
    return _clean_title(line)


def is_chapter_heading(line: str) -> bool:
    """A 'Chapter N' line (not a part, prologue or prose sentence): the signal for books."""
    match = CHAPTER_LINE.match(line)
    return match is not None and match.group("rest") is not None and _chapter_title(line) is not None


def _reads_like_prose(rest: str, *, allow_short_sentences: bool = True) -> bool:
    """Headings are short and do not end like sentences or clauses."""
    words = len(rest.split())
    if words > 12 or rest.endswith((",", ";")):
        return True
    return rest.endswith(".") and (words > 3 or not allow_short_sentences)


def _subsection_title(line: str) -> str | None:
    match = NUMBERED_SUBSECTION.match(line)
    if match is None:
        return None
    if _reads_like_prose(match.group("rest").rstrip(), allow_short_sentences=False):
        return None
    return _clean_title(line)


def _book_boundaries(lines: Sequence[str]) -> list[tuple[int, str | None]]:
    return [(index, title) for index, line in _heading_candidates(lines) if (title := _chapter_title(line))]


def _textbook_boundaries(lines: Sequence[str]) -> list[tuple[int, str | None]]:
    return [
        (index, title)
        for index, line in _heading_candidates(lines)
        if (title := _chapter_title(line) or _subsection_title(line))
    ]


def _documentation_boundaries(lines: Sequence[str]) -> list[tuple[int, str | None]]:
    """ATX headings of levels 1-3, and setext headings ('Title' over '===' or '---')."""
    found: list[tuple[int, str | None]] = []
    previous: tuple[int, str] | None = None
    for index, line in _heading_candidates(lines):
        markdown = MARKDOWN_HEADING.match(line)
        if markdown and len(markdown.group(1)) <= 3:
            found.append((index, _clean_title(markdown.group(2))))
        elif (
            previous is not None
            and previous[0] == index - 1
            and _SETEXT_UNDERLINE.match(line)
            and not previous[1].startswith(("-", "*", "+", ">", "|"))
            and not (found and found[-1][0] == previous[0])
        ):
            found.append((previous[0], _clean_title(previous[1])))
        previous = (index, line)
    return found


def _notes_boundaries(lines: Sequence[str]) -> list[tuple[int, str | None]]:
    found: list[tuple[int, str | None]] = []
    for index, line in _heading_candidates(lines):
        if TIMESTAMP_LINE.match(line) or MARKDOWN_HEADING.match(line) or _TOPIC_LINE.match(line):
            found.append((index, _clean_title(line)))
    return found


def _code_boundaries(lines: Sequence[str]) -> list[tuple[int, str | None]]:
    """Top-level definitions; the decorators and comments right above one belong to it."""
    found: list[tuple[int, str | None]] = []
    floor = 0
    for index, line in enumerate(lines):
        if not line or line[0] in " \t}])" or len(line) > MAX_HEADING_CHARS:
            continue
        if not (_CODE_DEFINITION.match(line) or _looks_like_c_function(line)):
            continue
        start = index
        while start - 1 >= floor and lines[start - 1].startswith(_CODE_PREAMBLE):
            start -= 1
        found.append((start, line.strip()[:_MAX_TITLE_CHARS]))
        floor = index + 1
    return found


def _looks_like_c_function(line: str) -> bool:
    """'int main(void) {' or 'static Foo::bar(int x)': a type, a name, a '(' and no ';' after it.

    Done by hand rather than by regex: the regex form backtracks polynomially on long lines.
    """
    head, paren, tail = line.partition("(")
    if not paren or ";" in tail or _C_DECLARATION_HEAD.fullmatch(head) is None:
        return False
    words = head.replace("*", " ").replace("&", " ").split()
    return len(words) >= 2 and words[0] not in _C_KEYWORDS and words[-1].replace("::", "_").isidentifier()


_BOUNDARY_FINDERS: dict[str, Callable[[Sequence[str]], list[tuple[int, str | None]]]] = {
    "research_paper": _paper_boundaries,
    "book": _book_boundaries,
    "textbook": _textbook_boundaries,
    "documentation": _documentation_boundaries,
    "notes": _notes_boundaries,
    "code": _code_boundaries,
}


# -- packing -----------------------------------------------------------------------------------
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…。])\s+")
# (how to split a piece that is too big, how to join its parts back)
_LEVELS: tuple[tuple[Callable[[str], list[str]], str], ...] = (
    (_PARAGRAPH_BREAK.split, "\n\n"),
    (lambda text: text.split("\n"), "\n"),
    (_SENTENCE_BREAK.split, " "),
)


def _pack(pieces: Iterable[str], max_tokens: int, estimate: Callable[[str], int], *, level: int) -> list[str]:
    """Greedy grouping of consecutive pieces; a piece that alone is too big goes one level down."""
    joiner = "\n\n" if level == 0 else _LEVELS[level - 1][1]
    joiner_cost = 1 if joiner.strip() == "" else estimate(joiner)
    chunks: list[str] = []
    group: list[str] = []
    group_tokens = 0

    def flush() -> None:
        nonlocal group, group_tokens
        if group:
            chunk = joiner.join(group)
            # The running sum is an upper bound for the default estimator; check for any other.
            chunks.extend([chunk] if len(group) == 1 or estimate(chunk) <= max_tokens else group)
        group, group_tokens = [], 0

    for raw in pieces:
        piece = raw.strip()
        if not piece:
            continue
        tokens = estimate(piece)
        if tokens > max_tokens:
            flush()
            chunks.extend(_split_oversized(piece, max_tokens, estimate, level=level))
            continue
        cost = tokens + (joiner_cost if group else 0)
        if group and group_tokens + cost > max_tokens:
            flush()
            cost = tokens
        group.append(piece)
        group_tokens += cost
    flush()
    return chunks


def _split_oversized(text: str, max_tokens: int, estimate: Callable[[str], int], *, level: int) -> list[str]:
    for depth in range(level, len(_LEVELS)):
        split, _ = _LEVELS[depth]
        parts = split(text)
        if len(parts) > 1:
            return _pack(parts, max_tokens, estimate, level=depth + 1)
    return _hard_cut(text, max_tokens, estimate)


def _hard_cut(text: str, max_tokens: int, estimate: Callable[[str], int]) -> list[str]:
    """Fixed windows, ending at a space near the window's end when there is one."""
    pieces: list[str] = []
    width = max(max_tokens * 4, 1)  # the default estimator counts about four characters a token
    start, length = 0, len(text)
    while start < length:
        end = min(start + width, length)
        if end < length:
            space = text.rfind(" ", start + (end - start) * 3 // 4, end)
            if space > start:
                end = space
        tokens = estimate(text[start:end])
        while tokens > max_tokens and end - start > 1:
            end = start + max(1, min(end - start - 1, (end - start) * max_tokens // tokens))
            tokens = estimate(text[start:end])
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    return pieces
