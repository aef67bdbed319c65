"""Bytes to str: UTF-8 (with or without BOM) or BOM-marked UTF-16/32; nothing is guessed."""

from __future__ import annotations

import codecs

from contextos.errors import PermanentError, UnsupportedContent

_NUL_REFUSAL = "the content contains NUL bytes: it is binary, not text"
_BOM_CODECS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes) -> str:
    """Refuse rather than guess: a wrong guess silently turns a document into mojibake memories."""
    for bom, codec in _BOM_CODECS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                label = codec.upper().replace("UTF", "UTF-")
                raise PermanentError(
                    f"the text starts with a {label} byte-order mark but is not valid {label} (byte {exc.start})"
                ) from exc
            if "\x00" in text:
                raise UnsupportedContent(_NUL_REFUSAL)
            return text
    if b"\x00" in data:
        raise UnsupportedContent(_NUL_REFUSAL)
    bom_length = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom_length:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = bom_length + exc.start  # an offset into the file as uploaded
        raise PermanentError(
            f"the text is not valid UTF-8: byte 0x{data[offset]:02x} at offset {offset}; save the file as UTF-8"
        ) from exc
