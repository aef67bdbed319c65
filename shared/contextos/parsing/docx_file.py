"""DOCX text with python-docx, after the zip directory has been checked for bombs.

The check reads only the central directory. It is sufficient because zipfile never inflates an
entry beyond its declared size (it stops there and fails the CRC), so the declared sizes bound
the memory python-docx can use. python-docx parses XML with entity resolution off, so an entity
bomb inside document.xml expands nothing.
"""

from __future__ import annotations

import io
import re
import zipfile

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from contextos.errors import PayloadTooLarge, PermanentError
from contextos.parsing.extracted import Extracted
from contextos.parsing.limits import MB, ParseLimits

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def extract_docx(data: bytes, limits: ParseLimits) -> Extracted:
    """Headings as Markdown '#', list items as '- ', table rows as 'cell | cell', in body order."""
    check_zip_bounds(data, limits, what="DOCX")
    try:
        document = docx.Document(io.BytesIO(data))
        blocks: list[list[str]] = []  # a paragraph, a table, or one whole list
        first_heading: str | None = None
        total_chars = 0
        previous_was_list_item = False
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                rendered, is_list_item = "\n".join(_table_rows(block)), False
            else:
                rendered, is_list_item = _paragraph_line(block)
            if not rendered:
                continue
            total_chars += len(rendered) + 2
            if total_chars > limits.max_text_chars:
                raise PayloadTooLarge(f"the DOCX holds more than {limits.max_text_chars} characters of text")
            if first_heading is None and rendered.startswith("#"):
                first_heading = rendered.lstrip("#").strip() or None
            if is_list_item and previous_was_list_item:
                blocks[-1].append(rendered)  # keep one list together as one paragraph
            else:
                blocks.append([rendered])
            previous_was_list_item = is_list_item
        title = (document.core_properties.title or "").strip() or first_heading
    except (PermanentError, PayloadTooLarge):
        raise
    except Exception as exc:  # python-docx, lxml and zipfile raise many types on a damaged file
        raise PermanentError("the DOCX is corrupt or is not a valid Word document") from exc
    return Extracted("\n\n".join("\n".join(block) for block in blocks), title[:200] if title else None)


def check_zip_bounds(data: bytes, limits: ParseLimits, *, what: str) -> None:
    """Refuse a zip bomb from its central directory, before a single byte is inflated."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except Exception as exc:
        raise PermanentError(f"the {what} is corrupt: its zip directory cannot be read") from exc
    if len(infos) > limits.max_zip_entries:
        raise PermanentError(
            f"the {what} holds {len(infos)} zip entries; the limit is {limits.max_zip_entries} (a zip bomb?)"
        )
    total = sum(info.file_size for info in infos)
    if total > limits.max_zip_uncompressed_bytes:
        raise PermanentError(
            f"the {what} would inflate to {total / MB:.0f} MB uncompressed; the limit is "
            f"{limits.max_zip_uncompressed_bytes / MB:.0f} MB (a zip bomb?)"
        )
    for info in infos:
        if info.file_size <= limits.zip_ratio_applies_above_bytes:
            continue
        ratio = info.file_size / max(info.compress_size, 1)
        if ratio > limits.max_zip_compression_ratio:
            raise PermanentError(
                f"the {what} entry {info.filename[:80]!r} is compressed {ratio:.0f}:1; the limit is "
                f"{limits.max_zip_compression_ratio:.0f}:1 (a zip bomb?)"
            )


def _paragraph_line(paragraph: Paragraph) -> tuple[str, bool]:
    """The paragraph as one Markdown line, and whether it is a list item."""
    text = " ".join(paragraph.text.split())
    if not text:
        return "", False
    style_name = _style_name(paragraph)
    heading = _HEADING_STYLE.match(style_name)
    if heading:
        return "#" * min(max(int(heading.group(1)), 1), 6) + " " + text, False
    if style_name.lower() == "title":
        return "# " + text, False
    if _is_list_item(paragraph, style_name):
        return "- " + text, True  # nesting is not kept: normalization strips leading spaces anyway
    return text, False


def _style_name(paragraph: Paragraph) -> str:
    style = paragraph.style
    return (style.name or "") if style is not None else ""


def _is_list_item(paragraph: Paragraph, style_name: str) -> bool:
    """Numbering properties on the paragraph, or a List style (which carries its numbering)."""
    properties = paragraph._p.pPr
    if properties is not None and properties.numPr is not None:
        return True
    return style_name.lower().startswith("list")


def _table_rows(table: Table) -> list[str]:
    """One line per row; a merged cell appears once, not once per grid column it spans."""
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return rows
