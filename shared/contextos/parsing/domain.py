"""Domain detection (S4 step 1): which structural strategy fits the document.

Signals come from heading-like lines only (the same patterns that split_sections uses), read
from the first few hundred KB, so a long document costs no more than a short one.
"""

from __future__ import annotations

import re

from contextos.parsing.structure import (
    MARKDOWN_HEADING,
    MAX_HEADING_CHARS,
    NUMBERED_SUBSECTION,
    PAPER_HEADING,
    TIMESTAMP_LINE,
    is_chapter_heading,
)

DOMAINS = ("research_paper", "book", "textbook", "documentation", "general", "notes", "code")
_SAMPLE_CHARS = 300_000
_TEXTBOOK_CUES = re.compile(
    r"(?:#{1,6}[ \t]+)?(?:exercises|problems|review questions|learning objectives|key terms|summary of key "
    r"concepts|worked example|example \d+\.\d+)\b",
    re.IGNORECASE,
)
_DOCUMENTATION_CUES = re.compile(
    r"(?:#{1,6}[ \t]+)?(?:installation|install|usage|quick ?start|getting started|configuration|api|"
    r"reference|parameters|options|examples?|troubleshooting|faq|requirements|setup)\b",
    re.IGNORECASE,
)


def detect_domain(text: str, source_type: str) -> str:
    """research_paper, book, textbook, documentation, notes, code or general."""
    if source_type == "code":
        return "code"
    sample = text[:_SAMPLE_CHARS]
    headings = markdown = chapters = subsections = timestamps = textbook_cues = doc_cues = short_lines = 0
    paper_sections: set[str] = set()
    abstract_early = False
    offset = 0
    in_fence = False
    for line in sample.split("\n"):
        stripped = line.strip()
        line_offset, offset = offset, offset + len(line) + 1
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or not stripped or len(stripped) > MAX_HEADING_CHARS:
            continue
        short_lines += 1
        if MARKDOWN_HEADING.match(stripped):
            markdown += 1
        paper = PAPER_HEADING.match(stripped)
        if paper:
            name = " ".join(paper.group(1).lower().split())
            paper_sections.add(name)
            abstract_early = abstract_early or (name == "abstract" and line_offset < 5000)
        elif stripped.lower().startswith(("abstract:", "abstract—", "abstract -", "abstract.")) and line_offset < 5000:
            paper_sections.add("abstract")
            abstract_early = True
        if is_chapter_heading(stripped):
            chapters += 1
        if NUMBERED_SUBSECTION.match(stripped):
            subsections += 1
        if TIMESTAMP_LINE.match(stripped):
            timestamps += 1
        if _TEXTBOOK_CUES.match(stripped):
            textbook_cues += 1
        if _DOCUMENTATION_CUES.match(stripped) and len(stripped) < 60:
            doc_cues += 1
        headings += 1 if MARKDOWN_HEADING.match(stripped) or PAPER_HEADING.match(stripped) else 0

    if (abstract_early and len(paper_sections) >= 2) or len(paper_sections - {"introduction"}) >= 4:
        return "research_paper"
    if chapters >= 2:
        return "textbook" if subsections >= 2 or textbook_cues >= 1 else "book"
    if timestamps >= 2 and timestamps * 10 >= short_lines:
        return "notes"
    if markdown >= 2 and (source_type in ("markdown", "html") or doc_cues >= 1 or "```" in sample):
        return "documentation"
    return "general"
