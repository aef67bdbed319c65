"""The API's edge: what every request must satisfy before any route, parser or model sees it.

A body is checked as raw text first (JSON depth and number length bounded before parsing, so no
parser recursion or 4,300-digit integer conversion can fail), then parsed once and walked for
NUL and lone surrogates, which PostgreSQL text cannot hold and UTF-8 cannot encode. The same
string rule covers the path and the query. Each refusal is a 4xx with a stable code.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator, Mapping
from itertools import accumulate
from typing import Any

from contextos.config import EdgeSettings
from contextos.errors import (
    BodyTooDeep,
    EmptyParameter,
    InvalidCharacter,
    MalformedBody,
    NumberTooLong,
    UnsupportedMediaType,
)

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_NOT_BRACKET = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in "[]{}"))


def check_request(event: Mapping[str, Any], limits: EdgeSettings) -> Mapping[str, Any]:
    """Raise the first edge rule the API Gateway proxy event breaks; else return the event, its
    JSON content type spelled the one way the resolver recognises."""
    _check_text(event.get("path") or "", ["path"])
    for name, values in _query(event).items():
        _check_text(name, ["query"])
        for value in values:
            if value == "":
                raise EmptyParameter(f"query parameter {name!r} is empty", details={"loc": ["query", name]})
            _check_text(value, ["query", name])
    method = str(event.get("httpMethod") or "").upper()
    body = _body_text(event)
    if method not in BODY_METHODS or body is None or not body.strip():
        return event
    _check_content_type(_header(event, "content-type"))
    check_json_text(body, limits)
    return _canonical_content_type(event)


def check_json_text(text: str, limits: EdgeSettings) -> Any:
    """The parsed body, once its depth, its numbers and every string in it are acceptable."""
    skeleton = _STRING.sub('""', text)
    brackets = skeleton.translate(_NOT_BRACKET)
    if brackets and max(accumulate(_DEPTH_STEP.get(c, 0) for c in brackets)) > limits.max_json_depth:
        raise BodyTooDeep(f"the JSON body is nested deeper than {limits.max_json_depth} levels")
    if re.search(rf"[-+0-9.eE]{{{limits.max_number_chars + 1},}}", skeleton):
        raise NumberTooLong(f"a number in the JSON body is longer than {limits.max_number_chars} characters")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MalformedBody("the body is not valid JSON") from exc
    for loc, value in _strings(parsed):
        _check_text(value, ["body", *loc])
    return parsed


def _check_text(value: str, loc: list) -> None:
    if bad := _BAD_CHAR.search(value):
        what = "a NUL character" if bad.group() == "\x00" else "a lone surrogate"
        raise InvalidCharacter(
            f"{'.'.join(str(p) for p in loc)} contains {what}, which cannot be stored",
            details={"loc": loc, "position": bad.start()},
        )


def _strings(value: Any) -> Iterator[tuple[list, str]]:
    """Every string in a parsed JSON value (keys too), with its location; no recursion."""
    stack: list[tuple[list, Any]] = [([], value)]
    while stack:
        loc, item = stack.pop()
        if isinstance(item, str):
            yield loc, item
        elif isinstance(item, dict):
            for key, child in item.items():
                yield loc, key
                stack.append(([*loc, key], child))
        elif isinstance(item, list):
            stack.extend(([*loc, i], child) for i, child in enumerate(item))


def _body_text(event: Mapping[str, Any]) -> str | None:
    body = event.get("body")
    if body is None or not event.get("isBase64Encoded"):
        return body
    try:
        return base64.b64decode(body, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise MalformedBody("the body is not UTF-8 text") from exc


def _check_content_type(value: str | None) -> None:
    media, _, params = (value or "").partition(";")
    media = media.strip().lower()
    if media != "application/json":  # the resolver parses nothing else, not even +json types
        raise UnsupportedMediaType(
            f"a request body must be sent as application/json, not {media or 'no content type'}",
            details={"content_type": media or None},
        )
    charset = re.search(r"charset\s*=\s*\"?([\w-]+)", params, re.IGNORECASE)
    if charset and charset.group(1).lower() not in ("utf-8", "utf8"):
        raise UnsupportedMediaType("a JSON body must be UTF-8", details={"charset": charset.group(1)})


def _canonical_content_type(event: Mapping[str, Any]) -> Mapping[str, Any]:
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    headers["Content-Type"] = "application/json"
    multi["Content-Type"] = ["application/json"]
    return {**event, "headers": headers, "multiValueHeaders": multi}


def _header(event: Mapping[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name:
            return value
    return None


def _query(event: Mapping[str, Any]) -> dict[str, list[str]]:
    multi = event.get("multiValueQueryStringParameters")
    if multi:
        return {k: list(v or []) for k, v in multi.items()}
    return {k: [v] for k, v in (event.get("queryStringParameters") or {}).items()}
