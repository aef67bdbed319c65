"""PDF text with pypdf, inside page and text limits; every pypdf failure becomes a clear reason."""

from __future__ import annotations

import io
import logging

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, LimitReachedError

from contextos.errors import PayloadTooLarge, PermanentError
from contextos.parsing.extracted import Extracted
from contextos.parsing.limits import ParseLimits

logger = logging.getLogger(__name__)
_CORRUPT = "the PDF is corrupt or truncated and cannot be read"


def extract_pdf(data: bytes, limits: ParseLimits) -> Extracted:
    """Pages joined by blank lines. An unreadable page is skipped; a PDF with no text at all fails."""
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        _unlock(reader)
        page_count = len(reader.pages)
    except (PermanentError, PayloadTooLarge):
        raise
    except LimitReachedError as exc:
        raise PermanentError(f"the PDF exceeds a safety limit of the reader ({exc})") from exc
    except Exception as exc:  # pypdf raises many types (PdfReadError, ValueError, KeyError, ...)
        raise PermanentError(_CORRUPT) from exc
    if page_count == 0:
        raise PermanentError("the PDF has no pages")
    if page_count > limits.max_pdf_pages:
        raise PayloadTooLarge(f"the PDF has {page_count} pages; the limit is {limits.max_pdf_pages}")

    pages: list[str] = []
    total_chars = 0
    unreadable = 0
    for number in range(page_count):
        try:
            page_text = reader.pages[number].extract_text() or ""
        except LimitReachedError as exc:
            raise PermanentError(f"page {number + 1} of the PDF exceeds a safety limit of the reader ({exc})") from exc
        except Exception:  # one broken page should not lose the rest of the document
            unreadable += 1
            logger.info("unreadable PDF page skipped", extra={"page": number + 1})
            continue
        total_chars += len(page_text)
        if total_chars > limits.max_text_chars:
            raise PayloadTooLarge(f"the PDF holds more than {limits.max_text_chars} characters of text")
        if page_text.strip():
            pages.append(page_text)
    if not pages:
        if unreadable == page_count:
            raise PermanentError(_CORRUPT)
        raise PermanentError("the PDF has no extractable text (scanned images?)")
    return Extracted("\n\n".join(pages), _metadata_title(reader))


def _unlock(reader: PdfReader) -> None:
    """Many PDFs are 'encrypted' with an empty user password only to restrict printing: open those."""
    if not reader.is_encrypted:
        return
    try:
        unlocked = reader.decrypt("")
    except DependencyError as exc:
        raise PermanentError(
            "the PDF is encrypted with AES, which this deployment cannot decrypt; upload an unencrypted copy"
        ) from exc
    except Exception as exc:
        raise PermanentError("the PDF is encrypted and its encryption cannot be read") from exc
    if unlocked == PasswordType.NOT_DECRYPTED:
        raise PermanentError("the PDF is encrypted with a password; upload an unprotected copy")


def _metadata_title(reader: PdfReader) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:  # broken metadata is no reason to lose the text
        return None
    if not title:
        return None
    return " ".join(str(title).split())[:200] or None
