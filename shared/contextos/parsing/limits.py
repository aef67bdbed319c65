"""The bounds every parser works within, so one hostile file cannot exhaust a Lambda."""

from __future__ import annotations

from dataclasses import dataclass

MB = 1024 * 1024


@dataclass(frozen=True)
class ParseLimits:
    """Defaults sized for a 10 GB / 15 min Lambda; pass another instance to tighten them."""

    max_pdf_pages: int = 2000
    # Applies to the text extracted from any format, before normalization.
    max_text_chars: int = 50_000_000
    # Zip containers (DOCX): checked on the central directory BEFORE anything is inflated.
    max_zip_entries: int = 5000
    max_zip_uncompressed_bytes: int = 100 * MB
    max_zip_compression_ratio: float = 100.0
    zip_ratio_applies_above_bytes: int = 1 * MB


DEFAULT_LIMITS = ParseLimits()
