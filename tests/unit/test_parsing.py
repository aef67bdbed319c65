import pytest
from contextos.errors import PermanentError, UnsupportedContent
from contextos.parsing import content_hash, detect_domain, parse_document, safe_filename


def test_markdown_is_recognised_by_name_and_by_content():
    by_name = parse_document(b"Just text.", filename="notes.md", declared_type=None)
    by_sniff = parse_document(b"# Title\n\n- one\n- two\n", filename=None, declared_type="text/plain")
    assert by_name.source_type == by_sniff.source_type == "markdown"


def test_markdown_links_and_images_keep_only_their_text():
    parsed = parse_document(b"See [the guide](http://x.y/z) ![logo](a.png) now.", filename="a.md", declared_type=None)
    assert parsed.text == "See the guide now."


def test_binary_content_named_txt_is_refused_by_sniffing():
    with pytest.raises(UnsupportedContent):
        parse_document(b"\x7fELF\x02\x01\x01 binary", filename="report.txt", declared_type="text/plain")
    with pytest.raises(UnsupportedContent):
        parse_document(b"abc\x00\x01\x02", filename="x.txt", declared_type=None)


def test_a_pdf_named_txt_is_read_as_a_pdf_so_a_broken_one_fails_as_a_pdf():
    with pytest.raises(PermanentError, match="PDF"):
        parse_document(b"%PDF-1.7 binary", filename="report.txt", declared_type="text/plain")


def test_invalid_utf8_and_empty_text_fail_permanently():
    with pytest.raises(PermanentError, match="UTF-8"):
        parse_document(b"caf\xe9 au lait", filename="a.txt", declared_type=None)
    with pytest.raises(PermanentError):
        parse_document(b"   \n\t  ", filename="a.txt", declared_type=None)


def test_path_traversal_filenames_keep_only_the_last_component():
    assert safe_filename("../../etc/passwd") == "passwd"
    assert safe_filename("..\\..\\boot.ini") == "boot.ini"
    assert safe_filename("\x00\x1f") is None


def test_content_hash_is_per_content():
    assert content_hash(b"a") == content_hash(b"a") != content_hash(b"b")


def test_domains_are_detected_from_structure():
    assert detect_domain("Abstract\nWe study X.\nIntroduction\n...\nReferences", "text") == "research_paper"
    assert detect_domain("# A\n\ntext\n\n## B\n\nmore", "markdown") == "documentation"
    assert detect_domain("2026-01-01 met Bob\n2026-01-02 called Alice", "text") == "notes"
    assert detect_domain("Just a paragraph.", "text") == "general"


def test_books_and_textbooks_are_told_apart_by_numbered_subsections():
    book = "Chapter 1\nIt rained.\n\nChapter 2\nIt stopped."
    textbook = "Chapter 1 Sets\n1.1 Definitions\nA set...\n1.2 Operations\nUnion...\nChapter 2 Maps\nText."
    assert detect_domain(book, "text") == "book"
    assert detect_domain(textbook, "text") == "textbook"


def test_a_paper_needs_paper_headings_not_just_the_word_abstract():
    assert detect_domain("An abstract class has an introduction method.", "text") == "general"
    numbered = "1 Introduction\nx\n2 Methods\ny\n3 Results\nz\n4 Discussion\nw\nReferences\n[1] A."
    assert detect_domain(numbered, "pdf") == "research_paper"


def test_code_notes_and_documentation_domains():
    assert detect_domain("anything at all", "code") == "code"
    assert detect_domain("Mon 3 Jan\nmet Bob\nTue 4 Jan\ncalled Alice", "text") == "notes"
    assert detect_domain("# Install\n\npip install x\n\n# Usage\n\nrun it", "docx") == "documentation"
    assert detect_domain("# Part one\n\nprose\n\n# Part two\n\nprose", "docx") == "general"
