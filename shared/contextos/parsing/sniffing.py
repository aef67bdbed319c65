"""What a file really is, from its bytes first: the declared type and the name are only hints.

Binary containers are recognised by magic numbers (PDF, DOCX, and a table of formats we refuse
with their name). Text is decoded first and classified afterwards, because HTML and Markdown
are told apart by their content as much as by their extension.
"""

from __future__ import annotations

import io
import re
import zipfile
from enum import StrEnum
from pathlib import PurePosixPath

from contextos.errors import PermanentError, UnsupportedContent

SUPPORTED_FORMATS = "PDF, DOCX, HTML, Markdown, plain text or source code"


class SourceType(StrEnum):
    pdf = "pdf"
    docx = "docx"
    html = "html"
    markdown = "markdown"
    text = "text"
    code = "code"


MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdx", ".mdown", ".mkd"})
HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})
# Structured text (JSON, YAML, TOML, XML, config) counts as code: its whitespace and punctuation
# carry meaning, so it is kept verbatim rather than run through the Markdown or HTML cleaners.
CODE_EXTENSIONS = frozenset(
    {
        ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".go", ".rs", ".java",
        ".kt", ".kts", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".cs", ".rb", ".php", ".swift",
        ".scala", ".sc", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".yaml", ".yml", ".toml", ".json",
        ".jsonc", ".ini", ".cfg", ".xml", ".css", ".scss", ".less", ".lua", ".pl", ".pm", ".r", ".dart", ".ex",
        ".exs", ".erl", ".hs", ".ml", ".clj", ".vue", ".svelte", ".tf", ".hcl", ".proto", ".graphql", ".gradle",
        ".groovy", ".m", ".mm", ".zig", ".nim", ".jl",
    }
)  # fmt: skip
CODE_FILENAMES = frozenset({"dockerfile", "makefile", "jenkinsfile", "gemfile", "rakefile", "vagrantfile"})

_PDF_MAGIC = b"%PDF-"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
# (magic at offset 0, what to call the file in the refusal)
_BINARY_MAGICS: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "an ELF executable"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x00\x00\x01\x00", "an ICO image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Microsoft Office file (DOC, XLS or PPT); save it as DOCX or PDF"),
    (b"\xca\xfe\xba\xbe", "a Java class file or Mach-O binary"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
    (b"\x00asm", "a WebAssembly module"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"OggS\x00", "an Ogg media file"),
    (b"fLaC\x00", "a FLAC audio file"),
    (b"ID3\x02", "an MP3 audio file"),
    (b"ID3\x03", "an MP3 audio file"),
    (b"ID3\x04", "an MP3 audio file"),
    (b"\x1a\x45\xdf\xa3", "a Matroska or WebM video"),
    (b"{\\rtf", "an RTF document; save it as DOCX or PDF"),
    (b"%!PS", "a PostScript file; save it as PDF"),
)
_RIFF_KINDS = {b"WEBP": "a WebP image", b"WAVE": "a WAV audio file", b"AVI ": "an AVI video"}

_HTML_START = ("<!doctype html", "<html")
_HTML_TAG = re.compile(
    r"</?(?:html|head|body|div|p|span|a|h[1-6]|ul|ol|li|table|tr|td|th|br|img|section|article|meta|link|"
    r"script|style|title|nav|header|footer|main|form|button|input)\b",
    re.IGNORECASE,
)
_MARKDOWN_SYNTAX = re.compile(r"^(?:#{1,6}\s|[-*+]\s|\d+\.\s|>\s|```)", re.MULTILINE)
_SAMPLE_CHARS = 65536


def sniff_binary(data: bytes) -> SourceType | None:
    """PDF or DOCX from the magic bytes; None for anything that may be text; refuse known binaries."""
    if data[:1024].lstrip(b" \t\r\n\x0c")[:5] == _PDF_MAGIC:
        return SourceType.pdf
    if data.startswith(_ZIP_MAGICS):
        return _sniff_zip(data)
    kind = binary_kind(data)
    if kind is not None:
        raise UnsupportedContent(f"the file is {kind}, not a supported document ({SUPPORTED_FORMATS})")
    return None


def binary_kind(data: bytes) -> str | None:
    """A human name for a known binary format, or None."""
    for magic, kind in _BINARY_MAGICS:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] in _RIFF_KINDS:
        return _RIFF_KINDS[data[8:12]]
    if data[4:8] == b"ftyp":
        return "an MP4, MOV or HEIC media file"
    if data[257:262] == b"ustar":
        return "a tar archive"
    if data[:2] == b"MZ" and (b"PE\x00\x00" in data[:4096] or b"\x00" in data[2:64]):
        return "a Windows executable"
    if data[:3] == b"BZh" and data[4:10] == b"1AY&SY":
        return "a bzip2 archive"
    if data[:2] == b"BM" and data[6:10] == b"\x00\x00\x00\x00":
        return "a BMP image"
    return None


def _sniff_zip(data: bytes) -> SourceType:
    """Only a zip holding a Word body is a DOCX; name anything else so the refusal is useful."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = {info.filename: info for info in archive.infolist()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise PermanentError(
            "the file starts like a zip archive (such as a DOCX) but its directory is corrupt or truncated"
        ) from exc
    if "word/document.xml" in infos and "[Content_Types].xml" in infos:
        return SourceType.docx
    raise UnsupportedContent(
        f"the file is {_zip_kind(infos)}, not a Word document (DOCX) or another supported document "
        f"({SUPPORTED_FORMATS})"
    )


def _zip_kind(infos: dict[str, zipfile.ZipInfo]) -> str:
    if "xl/workbook.xml" in infos:
        return "an Excel workbook (XLSX)"
    if "ppt/presentation.xml" in infos:
        return "a PowerPoint presentation (PPTX)"
    if "META-INF/MANIFEST.MF" in infos:
        return "a Java archive (JAR)"
    mimetype = infos.get("mimetype")
    if mimetype is not None:
        return "an OpenDocument file or EPUB e-book"
    if "[Content_Types].xml" in infos:
        return "an Office Open XML package without a Word document body"
    return "a zip archive"


def classify_text(text: str, filename: str | None, declared_type: str | None) -> SourceType:
    """HTML, Markdown, code or plain text, from the content first and the name second."""
    name = PurePosixPath(filename or "")
    suffix = name.suffix.lower()
    declared = (declared_type or "").split(";", 1)[0].strip().lower()
    head = text[:1024].lstrip().lower()
    if suffix in CODE_EXTENSIONS or name.name.lower() in CODE_FILENAMES:
        return SourceType.code
    if head.startswith(_HTML_START) or (head.startswith("<?xml") and "<html" in head):
        return SourceType.html
    if suffix in HTML_EXTENSIONS or declared in ("text/html", "application/xhtml+xml"):
        return SourceType.html
    if text.startswith("#!/"):
        return SourceType.code
    if suffix in MARKDOWN_EXTENSIONS or declared in ("text/markdown", "text/x-markdown"):
        return SourceType.markdown
    sample = text[:_SAMPLE_CHARS]
    if head.startswith("<") and len(_HTML_TAG.findall(sample)) >= 5:
        return SourceType.html
    if len(_MARKDOWN_SYNTAX.findall(sample)) >= 2:
        return SourceType.markdown
    return SourceType.text
