"""Page cursors (S11 "cursor pagination"), written so that every string of their form is a position.

A cursor names where the previous page ended: that row's sort key. For a list ordered by time it
is the row's time in microseconds since the Unix epoch and its id (``<micros>.<uuid hex>``; a
session's id for sessions), for the audit chain the chain's sequence number. Any string of that
form is a real position — the page after it, empty when nothing follows — so the OpenAPI document
declares the form as a pattern, a client can tell a cursor from garbage before sending it, and no
well-formed cursor is refused. A string of another form is refused (``bad_request``) by the reader.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from uuid import UUID

from contextos.errors import BadRequest

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROS = r"[0-9]{1,16}"  # up to the year 2286
TIME_ID_CURSOR = rf"^{_MICROS}\.[0-9a-f]{{32}}$"
TIME_SESSION_CURSOR = rf"^{_MICROS}\.[A-Za-z0-9][A-Za-z0-9_.:@-]{{0,199}}$"
SEQUENCE_CURSOR = r"^[0-9]{1,18}$"
_NOT_OURS = "the cursor is not one this API gave"


def time_id_cursor(at: datetime, row_id: UUID) -> str:
    return f"{_micros(at)}.{row_id.hex}"


def read_time_id_cursor(cursor: str | None) -> tuple[datetime, UUID] | None:
    if not cursor:
        return None
    micros, key = _split(cursor, TIME_ID_CURSOR)
    return _instant(micros), UUID(hex=key)


def time_session_cursor(at: datetime, session_id: str) -> str:
    return f"{_micros(at)}.{session_id}"


def read_time_session_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    if not cursor:
        return None
    micros, key = _split(cursor, TIME_SESSION_CURSOR)
    return _instant(micros), key


def sequence_cursor(seq: int) -> str:
    return str(seq)


def read_sequence_cursor(cursor: str | None) -> int | None:
    if not cursor:
        return None
    if not re.fullmatch(SEQUENCE_CURSOR, cursor):
        raise BadRequest(_NOT_OURS)
    return int(cursor)


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // timedelta(microseconds=1)


def _instant(micros: str) -> datetime:
    return _EPOCH + timedelta(microseconds=int(micros))


def _split(cursor: str, pattern: str) -> tuple[str, str]:
    if not re.fullmatch(pattern, cursor):
        raise BadRequest(_NOT_OURS)
    micros, _, key = cursor.partition(".")
    return micros, key
