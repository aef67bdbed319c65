"""The local stack's HTTP front as an ASGI app: limits, CORS, mounts, then the API Gateway adapter.

What API Gateway does before a Lambda runs happens here: the body is read with a size cap and a
deadline (a client that sends less than its ``Content-Length`` gets 408, never a stuck worker),
CORS preflights are answered for the configured origins, and everything else goes to the
adapter (authorizer, then API function) on a bounded thread pool.

Other ASGI apps can sit beside the API at a path prefix (the MCP server at ``/mcp``, the console
at ``/console``): ``front.mount("/mcp", app)`` before the server starts. A mounted app gets the
request with the prefix moved to ``root_path``, and its lifespan runs with the server's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from contextos.config import LocalServerSettings
from contextos.observability import logger

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CORS_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
CORS_HEADERS = "Authorization, Content-Type, X-Api-Key"


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    path: str
    query_string: str
    headers: dict[str, str]
    body: bytes | None
    client_ip: str


@dataclass(frozen=True, slots=True)
class HttpReply:
    status: int
    headers: dict[str, str]
    body: bytes


Handler = Callable[[HttpRequest], HttpReply]


def json_reply(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> HttpReply:
    body = json.dumps({"error": {"code": code, "message": message, "details": None}}).encode()
    return HttpReply(status, {"Content-Type": "application/json", **(headers or {})}, body)


class BodyRefused(Exception):
    def __init__(self, reply: HttpReply) -> None:
        super().__init__(reply.status)
        self.reply = reply


class Front:
    """The ASGI app uvicorn serves."""

    def __init__(self, handler: Handler, settings: LocalServerSettings) -> None:
        self.handler = handler
        self.settings = settings
        self.mounts: dict[str, ASGIApp] = {}
        self.executor = ThreadPoolExecutor(max_workers=settings.handler_threads, thread_name_prefix="api-front")

    def mount(self, prefix: str, app: ASGIApp) -> None:
        """Serve ``app`` for ``prefix`` and everything under it (call before the server starts)."""
        prefix = "/" + prefix.strip("/")
        if prefix == "/" or prefix.startswith("/v1"):
            raise ValueError(f"cannot mount at {prefix!r}: it belongs to the API")
        self.mounts[prefix] = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1003})
            return
        if mounted := self._mounted(scope):
            prefix, app = mounted
            child = dict(scope, root_path=scope.get("root_path", "") + prefix, path=scope["path"][len(prefix) :] or "/")
            child["raw_path"] = child["path"].encode()
            await app(child, receive, send)
            return
        await self._serve_api(scope, receive, send)

    def _mounted(self, scope: Scope) -> tuple[str, ASGIApp] | None:
        path = scope["path"]
        for prefix in sorted(self.mounts, key=len, reverse=True):
            if path == prefix or path.startswith(prefix + "/"):
                return prefix, self.mounts[prefix]
        return None

    async def _serve_api(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        origin = headers.get("origin")
        allowed_origin = origin if origin and origin in self.settings.cors_origins else None
        method = scope["method"].upper()
        if method == "OPTIONS" and allowed_origin and "access-control-request-method" in headers:
            reply = HttpReply(204, {"Access-Control-Max-Age": "600"}, b"")
        else:
            try:
                body = await self._read_body(receive, headers)
                client = scope.get("client") or ("127.0.0.1", 0)
                request = HttpRequest(
                    method, scope["path"], scope.get("query_string", b"").decode("latin-1"), headers, body, client[0]
                )
                loop = asyncio.get_running_loop()
                reply = await loop.run_in_executor(self.executor, self._handle, request)
            except BodyRefused as refused:
                reply = refused.reply
        if allowed_origin:
            reply.headers.update(
                {
                    "Access-Control-Allow-Origin": allowed_origin,
                    "Access-Control-Allow-Methods": CORS_METHODS,
                    "Access-Control-Allow-Headers": CORS_HEADERS,
                    "Vary": "Origin",
                }
            )
        await _send_reply(send, reply, head=method == "HEAD")

    def _handle(self, request: HttpRequest) -> HttpReply:
        try:
            return self.handler(request)
        except Exception:  # answer even if a function crashed, as API Gateway does
            logger.exception("local front: the handler crashed")
            return json_reply(502, "bad_gateway", "the function failed")

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> bytes | None:
        limit = self.settings.max_body_bytes
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise BodyRefused(json_reply(413, "payload_too_large", f"the request body is larger than {limit} bytes"))
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.body_timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), timeout=max(deadline - loop.time(), 0.001))
            except TimeoutError:
                late = json_reply(408, "request_timeout", "the body did not arrive in time", {"Connection": "close"})
                raise BodyRefused(late) from None
            if message["type"] == "http.disconnect":
                raise BodyRefused(json_reply(400, "client_disconnected", "the client went away"))
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BodyRefused(json_reply(413, "payload_too_large", f"the body is larger than {limit} bytes"))
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks) if size else None

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Run each mounted app's lifespan inside ours (an MCP session manager needs its task group)."""
        await receive()  # lifespan.startup
        children = [_ChildLifespan(app) for app in self.mounts.values()]
        try:
            for child in children:
                await child.startup()
        except Exception as exc:
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        for child in reversed(children):
            await child.shutdown()
        self.executor.shutdown(wait=False, cancel_futures=True)
        await send({"type": "lifespan.shutdown.complete"})


class _ChildLifespan:
    """One mounted app's lifespan protocol, driven from the parent's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self.outbox: asyncio.Queue[Message] = asyncio.Queue()
        self.task: asyncio.Task | None = None
        self.supported = True

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        self.task = asyncio.create_task(self._run(scope))
        await self.inbox.put({"type": "lifespan.startup"})
        reply = await self.outbox.get()
        if reply["type"] == "lifespan.startup.failed":
            raise RuntimeError(reply.get("message") or "a mounted app failed to start")

    async def shutdown(self) -> None:
        if not self.supported or self.task is None or self.task.done():
            return
        await self.inbox.put({"type": "lifespan.shutdown"})
        await self.outbox.get()
        await self.task

    async def _run(self, scope: Scope) -> None:
        try:
            await self.app(scope, self.inbox.get, self.outbox.put)
        except Exception:
            # An app without lifespan support raises on the scope type: treat it as having none.
            if self.outbox.empty():
                self.supported = False
                await self.outbox.put({"type": "lifespan.startup.complete"})


def _headers(scope: Scope) -> dict[str, str]:
    """Header names lower-cased; repeated headers joined with commas, as API Gateway does."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def _send_reply(send: Send, reply: HttpReply, *, head: bool) -> None:
    headers = [
        (k.lower().encode("latin-1"), str(v).encode("latin-1"))
        for k, v in reply.headers.items()
        if k.lower() not in {"content-length", "transfer-encoding", "connection"}
    ]
    if reply.headers.get("Connection") == "close":
        headers.append((b"connection", b"close"))
    headers.append((b"content-length", str(len(reply.body)).encode()))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else reply.body})
