"""HTTP on 127.0.0.1 → the authorizer function → an API Gateway proxy event → the API function.

``handle`` is the thin adapter API Gateway would be; ``ApiBridge`` serves it with uvicorn (see
``local.front`` for the limits, CORS and mounts in between).
"""

from __future__ import annotations

import base64
import socket
import threading
import time
from urllib.parse import parse_qsl

from contextos.auth import UNAUTHORIZED
from contextos.config import LocalServerSettings
from contextos.current_settings import get_settings
from contextos.local.events import api_proxy_event, authorizer_request_event
from contextos.local.front import ASGIApp, Front, HttpReply, HttpRequest, json_reply
from contextos.local.handlers import invoke

PUBLIC_PATHS = ("/v1/swagger",)  # the API's description needs no key locally


def handle(request: HttpRequest) -> HttpReply:
    """Run one request through the same two Lambda functions API Gateway would invoke."""
    pairs = parse_qsl(request.query_string, keep_blank_values=True)
    query = dict(pairs)
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        multi.setdefault(name, []).append(value)
    path = request.path or "/"
    if path.startswith(PUBLIC_PATHS):
        authorizer: dict = {}
    else:
        auth_event = authorizer_request_event(request.method, path, request.headers, query, request.client_ip)
        try:
            policy = invoke("authorizer", auth_event)
        except Exception as exc:
            if str(exc) == UNAUTHORIZED:  # API Gateway's contract for a failed Lambda authorizer
                return json_reply(401, "unauthorized", "a valid API key is required", {"WWW-Authenticate": "Bearer"})
            raise
        statements = policy.get("policyDocument", {}).get("Statement", [])
        if not any(s.get("Effect") == "Allow" for s in statements):
            return json_reply(403, "forbidden", "this credential may not call this route")
        authorizer = dict(policy.get("context") or {}) | {"principalId": policy.get("principalId")}
    try:
        text = request.body.decode("utf-8") if request.body else None
    except UnicodeDecodeError:
        return json_reply(400, "invalid_encoding", "the request body is not UTF-8")
    event = api_proxy_event(request.method, path, request.headers, query, text, authorizer, request.client_ip)
    if multi:
        event["multiValueQueryStringParameters"] = multi
    result = invoke("api", event)
    out_headers = dict(result.get("headers") or {})
    for k, values in (result.get("multiValueHeaders") or {}).items():
        out_headers[k] = ", ".join(values)
    payload = result.get("body") or ""
    data = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode()
    return HttpReply(int(result.get("statusCode", 500)), out_headers, data)


class ApiBridge:
    """The front on uvicorn in a background thread, listening on a socket bound up front."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8787, settings: LocalServerSettings | None = None) -> None:
        import uvicorn

        self.settings = settings or get_settings().local_server
        self.front = Front(handle, self.settings)
        # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets that say so, and
        # without it each response's second write waits out the client's 40 ms delayed ACK.
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socket.bind((host, port))
        self.socket.listen(self.settings.backlog)
        from contextos.local.http_protocol import guarded_protocol

        config = uvicorn.Config(
            self.front,
            # uvicorn's h11 protocol with a header deadline and our error shape (local/http_protocol).
            http=guarded_protocol(self.settings.header_timeout_s, self.settings.limit_concurrency),
            loop="asyncio",
            lifespan="on",
            backlog=self.settings.backlog,
            limit_concurrency=None,  # the protocol answers 503 itself, in our error shape
            timeout_keep_alive=self.settings.timeout_keep_alive_s,
            timeout_graceful_shutdown=5,
            access_log=False,
            log_level="warning",
            server_header=False,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="api-front", daemon=True
        )

    def mount(self, prefix: str, app: ASGIApp) -> ApiBridge:
        """Serve another ASGI app at ``prefix`` (e.g. MCP at ``/mcp``); call before ``start``."""
        self.front.mount(prefix, app)
        return self

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self, timeout_s: float = 15.0) -> ApiBridge:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the local HTTP front did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()
