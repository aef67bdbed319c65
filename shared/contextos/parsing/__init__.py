"""S4 steps 1 and 2: uploaded bytes to normalized text, a source type, a domain and sections.

The format is sniffed from the bytes; the declared type and the file name are hints only. Every
failure is a domain error whose message is the reason a user reads at GET /v1/documents/{id}:
``UnsupportedContent`` for formats we do not read, ``PayloadTooLarge`` past a limit, and
``PermanentError`` for input that can never succeed. No third-party exception escapes.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

from contextos.errors import ContextOSError, PayloadTooLarge, PermanentError
from contextos.models import ParsedDocument
from contextos.normalization import normalize_text
from contextos.parsing.code import clean_code
from contextos.parsing.decoding import decode_text
from contextos.parsing.docx_file import extract_docx
from contextos.parsing.domain import DOMAINS, detect_domain
from contextos.parsing.extracted import Extracted
from contextos.parsing.html_page import extract_html
from contextos.parsing.limits import DEFAULT_LIMITS, ParseLimits
from contextos.parsing.markdown import clean_markdown, strip_frontmatter
from contextos.parsing.pdf import extract_pdf
from contextos.parsing.sniffing import SourceType, classify_text, sniff_binary
from contextos.parsing.structure import Section, pack_sections, split_sections

__all__ = [
    "DEFAULT_LIMITS",
    "DOMAINS",
    "ParseLimits",
    "Section",
    "SourceType",
    "content_hash",
    "detect_domain",
    "pack_sections",
    "parse_document",
    "safe_filename",
    "split_sections",
]

_FILENAME_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def content_hash(data: bytes) -> str:
    """The per-tenant duplicate key: sha256 of the bytes as uploaded."""
    return hashlib.sha256(data).hexdigest()


def safe_filename(name: str | None) -> str | None:
    """The last path component only, no control characters: never a path to follow."""
    if not name:
        return None
    base = PurePosixPath(name.replace("\\", "/")).name
    base = _FILENAME_CONTROL.sub("", base).strip().lstrip(".")
    return base[:255] or None


def parse_document(
    data: bytes, *, filename: str | None, declared_type: str | None, limits: ParseLimits = DEFAULT_LIMITS
) -> ParsedDocument:
    """Sniff, extract, normalize and classify one uploaded document."""
    if not data.strip():
        raise PermanentError("the document is empty")
    try:
        source_type, extracted = _extract(data, filename, declared_type, limits)
    except ContextOSError:
        raise
    except Exception as exc:  # a parser bug must still end as a reason, not a crash loop
        raise PermanentError(f"the document could not be parsed ({type(exc).__name__})") from exc
    if len(extracted.text) > limits.max_text_chars:
        raise PayloadTooLarge(f"the document holds more than {limits.max_text_chars} characters of text")
    text = clean_code(extracted.text) if source_type is SourceType.code else normalize_text(extracted.text)
    if not text.strip():
        raise PermanentError("the document has no text")
    if source_type is SourceType.code:
        title = safe_filename(filename) or _first_line(text, heading_marks="")
    else:
        title = extracted.title or _first_line(text) or safe_filename(filename)
    return ParsedDocument(
        text=text, source_type=source_type.value, domain=detect_domain(text, source_type.value), title=title
    )


def _extract(
    data: bytes, filename: str | None, declared_type: str | None, limits: ParseLimits
) -> tuple[SourceType, Extracted]:
    binary = sniff_binary(data)
    if binary is SourceType.pdf:
        return binary, extract_pdf(data, limits)
    if binary is SourceType.docx:
        return binary, extract_docx(data, limits)
    try:
        text = decode_text(data)
    except PermanentError as exc:
        raise PermanentError(_with_format_hint(exc.message, filename)) from exc
    source_type = classify_text(text, filename, declared_type)
    match source_type:
        case SourceType.html:
            return source_type, extract_html(text)
        case SourceType.markdown:
            body, title = strip_frontmatter(text)
            return source_type, Extracted(clean_markdown(body), title)
        case _:
            return source_type, Extracted(text)


def _with_format_hint(reason: str, filename: str | None) -> str:
    """A '.pdf' that is neither a PDF nor text deserves a reason that says so."""
    suffix = PurePosixPath(filename or "").suffix.lower()
    expected = {".pdf": "a PDF", ".docx": "a Word document (DOCX)"}.get(suffix)
    if expected is None:
        return reason
    return f"the file is named {suffix} but is not {expected}, and {reason}"


def _first_line(text: str, heading_marks: str = "#") -> str | None:
    for line in text.split("\n", 50)[:50]:
        stripped = line.strip().lstrip(heading_marks).strip()
        if stripped:
            return stripped[:200]
    return None
