"""S4 step 2: section boundaries per domain, the no-text-lost property, and packing into chunks."""

from __future__ import annotations

import random
import time

import pytest
from contextos.normalization import estimate_tokens
from contextos.parsing import DOMAINS, Section, pack_sections, split_sections


def titles(text: str, domain: str) -> list[str | None]:
    return [section.title for section in split_sections(text, domain)]


def non_blank_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


# -- strategies ------------------------------------------------------------------------------------
PAPER = """Scaling Retrieval for Agents
Jane Doe, John Roe

ABSTRACT
We study memory for agents.

1 Introduction
Agents forget.

2. Related Work
Others tried caches.

## 3 Methods
We decay memories.

4 Experiments
We ran them.

Results:
It works.

5 Discussion
Limits exist.

6 Conclusion
Memory matters.

References
[1] A. Author. A paper. 2020."""


def test_a_research_paper_is_split_at_its_canonical_headings():
    assert titles(PAPER, "research_paper") == [
        None,
        "ABSTRACT",
        "1 Introduction",
        "2. Related Work",
        "3 Methods",
        "4 Experiments",
        "Results",
        "5 Discussion",
        "6 Conclusion",
        "References",
    ]


def test_an_inline_abstract_opens_the_abstract_section():
    sections = split_sections("Title\n\nAbstract: We study X.\n\nIntroduction\nText.", "research_paper")
    assert [s.title for s in sections] == [None, "Abstract", "Introduction"]
    assert sections[1].text == "Abstract: We study X."


def test_a_book_is_split_by_chapter_lines_in_any_spelling():
    book = (
        "The Long Road\n\nCHAPTER ONE\nIt began.\n\nChapter 2: The Storm\nRain.\n\n# Chapter 3 – Home\nDry.\n\n"
        "Chapter XII\nEnd.\n\nChapter 4 describes, at length, how the author walked home through the rain."
    )
    assert titles(book, "book") == [None, "CHAPTER ONE", "Chapter 2: The Storm", "Chapter 3 – Home", "Chapter XII"]


def test_a_textbook_is_split_by_chapters_and_numbered_subsections():
    textbook = (
        "Chapter 1 Foundations\nIntro.\n\n1.1 Sets and Maps\nA set is...\n\n1.2 Functions\nA function...\n\n"
        "1.25 is not a heading.\n\nChapter 2 Algebra\nMore."
    )
    assert titles(textbook, "textbook") == [
        "Chapter 1 Foundations",
        "1.1 Sets and Maps",
        "1.2 Functions",
        "Chapter 2 Algebra",
    ]


def test_documentation_is_split_by_headings_of_levels_one_to_three_outside_code_fences():
    documentation = (
        "Intro before any heading.\n\n# Install\npip install x\n\n## Configure\n```bash\n# not a heading\n```\n\n"
        "### Options\nMany.\n\n#### Deep detail\nStays inside Options.\n\nUsage\n=====\nRun it.\n\nFAQ\n---\nAsk."
    )
    sections = split_sections(documentation, "documentation")
    assert [s.title for s in sections] == [None, "Install", "Configure", "Options", "Usage", "FAQ"]
    assert "#### Deep detail" in sections[3].text
    assert "# not a heading" in sections[2].text


def test_general_text_is_split_by_paragraph():
    sections = split_sections("First paragraph\nstill first.\n\n\nSecond.\n \nThird.", "general")
    assert sections == [
        Section(title=None, text="First paragraph\nstill first."),
        Section(title=None, text="Second."),
        Section(title=None, text="Third."),
    ]


def test_an_unknown_domain_falls_back_to_paragraphs():
    assert len(split_sections("a\n\nb", "no-such-domain")) == 2


def test_notes_are_split_by_timestamps_and_topic_lines():
    notes = (
        "Team log\n2026-01-05 Standup\nShipped the API.\n[2026-01-06] Retro\nGood week.\n"
        "Mon 12 Jan\nPlanning.\n09:30 call with Bob\nAgreed.\nAction items:\n- write docs\nMarch 3, 2026\nRelease."
    )
    assert titles(notes, "notes") == [
        None,
        "2026-01-05 Standup",
        "[2026-01-06] Retro",
        "Mon 12 Jan",
        "09:30 call with Bob",
        "Action items",
        "March 3, 2026",
    ]


def test_code_is_split_at_top_level_definitions_with_their_decorators_and_comments():
    python = (
        "import os\n\n\n# Greets people.\n@cache\ndef hello(name):\n    def inner():\n        pass\n"
        "    return name\n\n\nclass Greeter:\n    def method(self):\n        return 1\n"
    )
    sections = split_sections(python, "code")
    assert [s.title for s in sections] == [None, "def hello(name):", "class Greeter:"]
    assert sections[1].text.startswith("# Greets people.\n@cache\ndef hello(name):")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("export async function load() {\n}\nconst run = async () => {\n}\n", 2),
        ("package main\n\nfunc main() {\n}\n\nfunc helper() {\n}\n", 2),
        ("pub fn main() {\n}\n\nimpl Foo {\n}\n\nstruct Bar;\n", 3),
        ("#include <stdio.h>\n\nint main(void) {\n    return 0;\n}\nstatic int helper(int x);\n", 1),
        ("CREATE TABLE t (id int);\n\ncreate index i on t (id);\n", 2),
        ("/**\n * Docs.\n */\npublic class App {\n}\n", 1),
    ],
)
def test_code_boundaries_cover_common_languages(source, expected):
    sections = split_sections(source, "code")
    assert sum(1 for s in sections if s.title is not None) == expected


# -- the no-text-lost property ---------------------------------------------------------------------
_LINE_POOL = [
    "",
    "  ",
    "Abstract",
    "1 Introduction",
    "REFERENCES",
    "Chapter 7",
    "CHAPTER TWELVE",
    "2.3 Numbered Subsection",
    "# Heading",
    "## Second level",
    "#### Fourth level",
    "===",
    "---",
    "```",
    "~~~~",
    "2026-01-02 entry",
    "Tue 4 Feb",
    "10:45",
    "Topic:",
    "@decorator",
    "# comment",
    "def function(x):",
    "    return x",
    "class Thing:",
    "int main(void) {",
    "}",
    "Plain prose sentence. Another one!",
    "x" * 250,
]


@pytest.mark.parametrize("domain", [*DOMAINS, "unknown"])
def test_sections_never_lose_or_reorder_a_non_blank_line(domain):
    generator = random.Random(f"sections-{domain}")
    for _ in range(300):
        text = "\n".join(generator.choice(_LINE_POOL) for _ in range(generator.randint(0, 40)))
        sections = split_sections(text, domain)
        rebuilt = [line for section in sections for line in section.text.split("\n") if line.strip()]
        assert rebuilt == non_blank_lines(text)
        assert all(section.text.strip() for section in sections)


# -- packing ---------------------------------------------------------------------------------------
def test_consecutive_small_sections_are_grouped_into_chunks_that_fit():
    sections = [Section(title=f"s{i}", text=f"Section {i} has exactly six words.") for i in range(10)]
    chunks = pack_sections(sections, max_tokens=20)
    assert all(estimate_tokens(chunk) <= 20 for chunk in chunks)
    assert 1 < len(chunks) < 10
    assert "\n\n".join(chunks) == "\n\n".join(section.text for section in sections)


def test_an_oversized_section_is_split_by_paragraphs_then_sentences_then_hard_cuts():
    paragraphs = "\n\n".join(f"Paragraph {i} is short." for i in range(20))
    sentences = " ".join(f"Sentence number {i} is here." for i in range(50))
    unbroken = "z" * 5000
    for text in (paragraphs, sentences, unbroken):
        chunks = pack_sections([Section(title=None, text=text)], max_tokens=50)
        assert len(chunks) > 1
        assert all(estimate_tokens(chunk) <= 50 for chunk in chunks)
        assert "".join("".join(chunks).split()) == "".join(text.split())


def test_paragraph_splits_end_on_paragraph_boundaries():
    text = "\n\n".join(f"Paragraph {i} is short." for i in range(20))
    chunks = pack_sections([Section(title=None, text=text)], max_tokens=30)
    assert all(chunk.startswith("Paragraph") and chunk.endswith("is short.") for chunk in chunks)


def test_many_one_letter_words_still_pack_within_the_budget():
    chunks = pack_sections([Section(title=None, text="a " * 10000)], max_tokens=100)
    assert all(estimate_tokens(chunk) <= 100 for chunk in chunks)
    assert sum(chunk.count("a") for chunk in chunks) == 10000


def test_a_custom_estimator_is_respected():
    def words(text: str) -> int:
        return len(text.split())

    sections = [Section(title=None, text="one two three") for _ in range(5)]
    chunks = pack_sections(sections, max_tokens=7, estimate=words)
    assert all(words(chunk) <= 7 for chunk in chunks)
    assert sum(words(chunk) for chunk in chunks) == 15


def test_packing_needs_a_positive_budget():
    with pytest.raises(ValueError, match="at least 1"):
        pack_sections([Section(title=None, text="x")], max_tokens=0)


def test_blank_sections_and_no_sections_pack_to_nothing():
    assert pack_sections([], max_tokens=10) == []
    assert pack_sections([Section(title=None, text="  \n ")], max_tokens=10) == []


def test_a_ten_megabyte_single_line_splits_and_packs_in_linear_time_for_every_domain():
    line = "word " * 2_000_000
    # This process's CPU time, not wall time: the bound is on work (a quadratic path takes minutes
    # here), not on how busy a shared machine is.
    for domain in DOMAINS:
        started = time.process_time()
        chunks = pack_sections(split_sections(line, domain), max_tokens=4000)
        assert time.process_time() - started < 2, domain
        assert max(estimate_tokens(chunk) for chunk in chunks) <= 4000
