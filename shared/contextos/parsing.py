"""S4 step 1: turn uploaded bytes into normalized text, a source type and a domain.

The type is chosen by sniffing the bytes as well as the name and the declared type; the
declared type alone is never trusted.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

from contextos.errors import PermanentError, UnsupportedContent
from contextos.models import ParsedDocument
from contextos.normalization import normalize_text

MARKDOWN_EXTENSIONS = {".md", ".markdown", ".mdx"}
TEXT_EXTENSIONS = {".txt", ".text", ".log", ".csv", ""}
_BINARY_MAGIC = (
    b"%PDF",
    b"PK\x03\x04",
    b"\x7fELF",
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"MZ",
    b"\x1f\x8b",
    b"BZh",
    b"7z\xbc\xaf",
    b"Rar!",
)
_MD_SYNTAX = re.compile(r"^(#{1,6}\s|[-*+]\s|\d+\.\s|>\s|```)", re.MULTILINE)


def content_hash(data: bytes) -> str:
    """The per-tenant duplicate key: sha256 of the bytes as uploaded."""
    return hashlib.sha256(data).hexdigest()


def safe_filename(name: str | None) -> str | None:
    """The last path component only, no control characters: never a path to follow."""
    if not name:
        return None
    base = PurePosixPath(name.replace("\\", "/")).name
    base = re.sub(r"[\x00-\x1f\x7f]", "", base).strip().lstrip(".")
    return base[:255] or None


def sniff_source_type(data: bytes, filename: str | None, declared: str | None) -> str:
    """markdown or text (binary formats are refused until their parsers land)."""
    head = data[:8]
    if any(head.startswith(magic) for magic in _BINARY_MAGIC):
        raise UnsupportedContent("binary content is not a supported document type yet")
    if b"\x00" in data[:8192]:
        raise UnsupportedContent("the content contains NUL bytes: it is binary, not text")
    suffix = PurePosixPath(filename or "").suffix.lower()
    if suffix in MARKDOWN_EXTENSIONS or (declared or "").startswith("text/markdown"):
        return "markdown"
    if suffix in TEXT_EXTENSIONS or (declared or "").startswith("text/"):
        sample = data[:65536].decode("utf-8", errors="ignore")
        return "markdown" if len(_MD_SYNTAX.findall(sample)) >= 2 else "text"
    raise UnsupportedContent(f"unsupported file type {suffix!r}")


def decode_text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PermanentError(f"the text is not valid UTF-8 (byte {exc.start})") from exc


def parse_document(data: bytes, *, filename: str | None, declared_type: str | None) -> ParsedDocument:
    if not data:
        raise PermanentError("the document is empty")
    source_type = sniff_source_type(data, filename, declared_type)
    text = decode_text(data)
    if source_type == "markdown":
        text = _strip_markdown_noise(text)
    text = normalize_text(text)
    if not text.strip():
        raise PermanentError("the document has no text")
    title = _title(text, filename)
    return ParsedDocument(text=text, source_type=source_type, domain=detect_domain(text, source_type), title=title)


def detect_domain(text: str, source_type: str) -> str:
    """research_paper, book, textbook, documentation, notes, code or general (S4 step 1)."""
    lower = text[:20000].lower()
    if source_type == "code":
        return "code"
    if "abstract" in lower[:3000] and ("references" in lower or "introduction" in lower):
        return "research_paper"
    chapters = len(re.findall(r"^(#+\s*)?chapter\s+\w+", lower, re.MULTILINE))
    if chapters >= 2:
        return "textbook" if re.search(r"^(#+\s*)?\d+\.\d+\s", lower, re.MULTILINE) else "book"
    if len(re.findall(r"^\s*(\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2})", lower, re.MULTILINE)) >= 2:
        return "notes"
    if source_type == "markdown" and len(re.findall(r"^#{1,6}\s", text, re.MULTILINE)) >= 2:
        return "documentation"
    return "general"


def _strip_markdown_noise(text: str) -> str:
    """Drop images and link targets; keep headings (they carry structure) and link text."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    return text


def _title(text: str, filename: str | None) -> str | None:
    for line in text.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped[:200]
    return filename
