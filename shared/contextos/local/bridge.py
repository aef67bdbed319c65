"""HTTP on 127.0.0.1 → the authorizer function → an API Gateway proxy event → the API function."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from contextos.local.events import api_proxy_event, authorizer_request_event
from contextos.local.handlers import invoke
from contextos.observability import logger

MAX_BODY_BYTES = 25 * 1024 * 1024  # above API Gateway's 10 MB, so the API's own limit answers


def _json(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, {"Content-Type": "application/json"}, body


def handle(
    method: str, raw_path: str, headers: dict[str, str], body: bytes | None, client_ip: str
) -> tuple[int, dict[str, str], bytes]:
    """Run one request through the same two Lambda functions API Gateway would invoke."""
    url = urlsplit(raw_path)
    query = dict(parse_qsl(url.query))
    path = url.path or "/"
    if path.startswith("/v1/swagger"):
        authorizer = {}
    else:
        auth_event = authorizer_request_event(method, path, headers, query, client_ip)
        policy = invoke("authorizer", auth_event)
        statements = policy.get("policyDocument", {}).get("Statement", [])
        if not any(s.get("Effect") == "Allow" for s in statements):
            return _json(401 if not _has_credentials(headers) else 403, "unauthorized", "a valid API key is required")
        authorizer = dict(policy.get("context") or {}) | {"principalId": policy.get("principalId")}
    text = body.decode("utf-8", errors="replace") if body else None
    event = api_proxy_event(method, path, headers, query, text, authorizer, client_ip)
    result = invoke("api", event)
    out_headers = {k: v for k, v in (result.get("headers") or {}).items()}
    for k, values in (result.get("multiValueHeaders") or {}).items():
        out_headers[k] = ", ".join(values)
    payload = result.get("body") or ""
    if result.get("isBase64Encoded"):
        import base64

        data = base64.b64decode(payload)
    else:
        data = payload.encode()
    return int(result.get("statusCode", 500)), out_headers, data


def _has_credentials(headers: dict[str, str]) -> bool:
    lowered = {k.lower() for k in headers}
    return "authorization" in lowered or "x-api-key" in lowered


class _Handler(BaseHTTPRequestHandler):
    server_version = "contextos-local"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            status, headers, data = _json(413, "payload_too_large", "the request body is too large")
        else:
            body = self.rfile.read(length) if length else None
            try:
                status, headers, data = handle(
                    self.command, self.path, dict(self.headers.items()), body, self.client_address[0]
                )
            except Exception:  # the bridge must answer even if a handler crashed, as API Gateway does
                logger.exception("local bridge: handler crashed")
                status, headers, data = _json(502, "bad_gateway", "the function failed")
        self.send_response(status)
        for k, v in headers.items():
            if k.lower() not in {"content-length", "transfer-encoding", "connection"}:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("http", extra={"request": format % args})


class ApiBridge:
    def __init__(self, host: str = "127.0.0.1", port: int = 8787) -> None:
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="api-bridge", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ApiBridge:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
