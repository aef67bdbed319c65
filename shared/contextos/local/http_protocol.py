"""The local front's HTTP/1.1 connections: uvicorn's h11 protocol with a header deadline and our
error shape on the answers the server gives before any app runs.

uvicorn times out idle keep-alive connections but not a request whose headers never finish: a
client that sends half a request line and stalls holds its connection for good, and a few hundred
of them fill ``limit_concurrency`` so every other client gets uvicorn's plain-text 503. Here a
connection whose request head is not complete within ``header_timeout_s`` of its first byte (or
of its opening) gets a 408 and is closed; past ``max_connections`` open connections a new one is
answered 503 and closed at once; a malformed request gets a 400 — all ``{"error": {...}}``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def error_bytes(status: int, reason: str, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 error response in our error shape, closing the connection."""
    body = json.dumps({"error": {"code": code, "message": message, "details": None}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    return head + body


class GuardedH11Protocol(H11Protocol):
    """Set ``header_timeout_s`` and ``max_connections`` on a subclass (`guarded_protocol`)."""

    header_timeout_s: float = 5.0
    max_connections: int = 512

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.write(error_bytes(503, "Service Unavailable", "overloaded", "too many open connections"))
            transport.close()
            return
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        # The head is in once h11 has left IDLE for this request; until then the deadline stands.
        if self.conn.their_state is not h11.IDLE:
            self._disarm_header_deadline()
        elif self.conn.trailing_data[0]:
            self._arm_header_deadline()  # a keep-alive connection started its next request

    def on_response_complete(self) -> None:
        self._disarm_header_deadline()
        super().on_response_complete()

    def send_400_response(self, msg: str) -> None:
        self._disarm_header_deadline()
        self.transport.write(error_bytes(400, "Bad Request", "bad_request", msg))
        self.transport.close()

    def _arm_header_deadline(self) -> None:
        if self.header_deadline is None:
            self.header_deadline = self.loop.call_later(self.header_timeout_s, self._header_timed_out)

    def _disarm_header_deadline(self) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
            self.header_deadline = None

    def _header_timed_out(self) -> None:
        self.header_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self.transport.write(
            error_bytes(408, "Request Timeout", "request_timeout", "the request headers did not arrive in time")
        )
        self.transport.close()


def guarded_protocol(header_timeout_s: float, max_connections: int) -> type[GuardedH11Protocol]:
    """The protocol class uvicorn's ``Config(http=...)`` takes, with these limits."""
    return type(
        "FrontH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout_s": header_timeout_s, "max_connections": max_connections},
    )
