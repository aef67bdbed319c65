"""A point in time as a request may give it: an RFC 3339 string with an offset, nothing looser.

Pydantic's lax datetime also takes numbers (``0.954`` as seconds after 1970) and naive strings;
a client that sends those almost certainly meant something else, so they are refused.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import AwareDatetime, BeforeValidator

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")


def _rfc3339(value: object) -> object:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 date-time string with an offset, e.g. 2026-12-01T09:00:00Z")
    return value


Instant = Annotated[AwareDatetime, BeforeValidator(_rfc3339)]
