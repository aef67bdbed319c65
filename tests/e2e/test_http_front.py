"""The local stack's HTTP front (uvicorn) with slow, lying and odd clients, over real sockets."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from contextos import container

BODY_TIMEOUT_S = 2.0
HEADER_TIMEOUT_S = 1.5
CONNECTION_LIMIT = 80
MAX_BODY_BYTES = 64 * 1024
CONSOLE_ORIGIN = "http://127.0.0.1:9999"


class EchoApp:
    """A minimal ASGI app with a lifespan, standing in for the MCP server or the console."""

    def __init__(self) -> None:
        self.started = False
        self.stopped = False

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.started = True
                    await send({"type": "lifespan.startup.complete"})
                else:
                    self.stopped = True
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = json.dumps({"path": scope["path"], "root_path": scope["root_path"], "started": self.started}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


ECHO = EchoApp()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    from contextos.local.stack import LocalStack

    saved = dict(os.environ)
    os.environ.update(
        {
            "CONTEXTOS_DATABASE_URL": database_url,
            "CONTEXTOS_DATA_DIR": str(tmp_path_factory.mktemp("front-stack")),
            "CONTEXTOS_UPLOAD_BUCKET": "front-uploads",
            "CONTEXTOS_COLD_BUCKET": "front-cold",
            "CONTEXTOS_LOCAL_QUEUE_PREFIX": "front",
            "CONTEXTOS_LOCAL_SERVER__BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
            "CONTEXTOS_LOCAL_SERVER__HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
            "CONTEXTOS_LOCAL_SERVER__LIMIT_CONCURRENCY": str(CONNECTION_LIMIT),
            "CONTEXTOS_LOCAL_SERVER__MAX_BODY_BYTES": str(MAX_BODY_BYTES),
            "CONTEXTOS_LOCAL_SERVER__CORS_ORIGINS": json.dumps([CONSOLE_ORIGIN]),
        }
    )
    container.reset()
    stack = LocalStack(api_port=0, poll_wait_s=0, mounts={"/echo": ECHO}).start()
    yield stack
    stack.stop()
    os.environ.clear()
    os.environ.update(saved)
    container.reset()


def address(stack) -> tuple[str, int]:
    host, port = stack.api_url.removeprefix("http://").split(":")
    return host, int(port)


def raw_exchange(stack, data: bytes, *, timeout: float = 10.0, then_wait: bool = True) -> bytes:
    """Send bytes exactly as given; read until the server closes or answers completely."""
    with socket.create_connection(address(stack), timeout=timeout) as conn:
        conn.sendall(data)
        chunks = []
        while then_wait:
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                None,
            )
            if length is not None and len(body) >= length:
                break
        return b"".join(chunks)


def status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def json_body(raw: bytes) -> dict:
    return json.loads(raw.partition(b"\r\n\r\n")[2])


def request(stack, method, path, body=None, headers=None, key="ctx_local_dev_key"):
    all_headers = {**({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})}
    if body is not None:
        all_headers.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(
        stack.api_url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers=all_headers,
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def key_header() -> bytes:
    return b"Authorization: Bearer ctx_local_dev_key\r\n"


# -- lying and slow clients ------------------------------------------------------------------------
def test_a_body_shorter_than_its_content_length_gets_408_in_our_shape_after_the_body_timeout(stack):
    started = time.monotonic()
    raw = raw_exchange(
        stack,
        b"POST /v1/search HTTP/1.1\r\nHost: x\r\n" + key_header() + b"Content-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n" + b'{"query": "x"',
    )
    elapsed = time.monotonic() - started
    assert status_of(raw) == 408
    assert json_body(raw)["error"]["code"] == "request_timeout"
    assert BODY_TIMEOUT_S <= elapsed < BODY_TIMEOUT_S + 5


def test_a_stalled_client_does_not_hold_up_anyone_else(stack):
    assert request(stack, "GET", "/v1/health")[0] == 200  # warm
    stalled = threading.Thread(
        target=raw_exchange,
        args=(stack, b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{"),
        daemon=True,
    )
    stalled.start()
    time.sleep(0.1)
    started = time.monotonic()
    status, _, _ = request(stack, "GET", "/v1/health")
    assert status == 200 and time.monotonic() - started < BODY_TIMEOUT_S
    stalled.join(timeout=10)


@pytest.mark.parametrize("length", [b"abc", b"-5", b"1e3"])
def test_a_non_numeric_content_length_gets_a_400_answer_not_a_dropped_connection(stack, length):
    raw = raw_exchange(stack, b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\n{}")
    assert raw, "the connection was dropped without an answer"
    assert status_of(raw) == 400 and json_body(raw)["error"]["code"] == "bad_request"  # our shape


def stall_in_headers(stack) -> socket.socket:
    """A connection that sends part of a request head and then nothing."""
    conn = socket.create_connection(address(stack), timeout=HEADER_TIMEOUT_S * 4)
    conn.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Half: ")
    return conn


def closed_after(conn: socket.socket) -> tuple[float, bytes]:
    """Seconds until the server closed the connection, and what it said before closing."""
    started, chunks = time.monotonic(), []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return time.monotonic() - started, b"".join(chunks)


def test_partial_headers_are_closed_after_the_header_timeout_while_others_are_served(stack):
    assert request(stack, "GET", "/v1/health")[0] == 200  # warm
    stalled = [stall_in_headers(stack) for _ in range(20)]
    opened = time.monotonic()
    # Meanwhile everyone else is answered, promptly.
    for _ in range(5):
        started = time.monotonic()
        assert request(stack, "GET", "/v1/health")[0] == 200
        assert time.monotonic() - started < HEADER_TIMEOUT_S
    with ThreadPoolExecutor(len(stalled)) as pool:
        outcomes = list(pool.map(closed_after, stalled))
    for conn in stalled:
        conn.close()
    for _, said in outcomes:
        assert status_of(said) == 408 and json_body(said)["error"]["code"] == "request_timeout"
    assert time.monotonic() - opened < HEADER_TIMEOUT_S + 3.0  # closed by the deadline, not held open
    assert min(elapsed for elapsed, _ in outcomes) > 0  # they were held until the deadline, not refused


def test_a_keep_alive_connection_that_stalls_in_its_next_request_head_is_closed_too(stack):
    conn = socket.create_connection(address(stack), timeout=HEADER_TIMEOUT_S * 4)
    conn.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + key_header() + b"\r\n")
    first = b""
    while b"\r\n\r\n" not in first or len(first.partition(b"\r\n\r\n")[2]) < int(
        next(
            (ln.split(b":")[1] for ln in first.split(b"\r\n") if ln.lower().startswith(b"content-length:")),
            b"0",
        )
    ):
        first += conn.recv(65536)  # the whole first response, however the kernel splits it
    assert status_of(first) == 200
    conn.sendall(b"GET /v1/health HTTP/1.1\r\nHo")
    elapsed, said = closed_after(conn)
    conn.close()
    assert status_of(said) == 408 and elapsed < HEADER_TIMEOUT_S + 3.0


def test_connections_past_the_limit_get_a_503_in_our_shape_and_the_front_recovers(stack):
    stalled = [stall_in_headers(stack) for _ in range(CONNECTION_LIMIT + 5)]
    refused = []
    for conn in stalled[CONNECTION_LIMIT:]:
        conn.settimeout(1.0)
        try:
            said = conn.recv(65536)
        except TimeoutError:
            said = b""
        refused.append(said)
    assert any(said and status_of(said) == 503 for said in refused), refused
    assert all(json_body(said)["error"]["code"] == "overloaded" for said in refused if said)
    time.sleep(HEADER_TIMEOUT_S + 1.0)  # the stalled ones are closed by their deadline
    for conn in stalled:
        conn.close()
    assert request(stack, "GET", "/v1/health")[0] == 200


def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read(stack):
    raw = raw_exchange(
        stack,
        b"POST /v1/documents HTTP/1.1\r\nHost: x\r\n" + key_header() + b"Content-Type: application/json\r\n"
        b"Content-Length: " + str(MAX_BODY_BYTES + 1).encode() + b"\r\n\r\n",
    )
    assert status_of(raw) == 413
    assert json_body(raw)["error"]["code"] == "payload_too_large"


def test_a_chunked_body_over_the_limit_is_refused_with_413(stack):
    chunk = b"x" * 32768
    frame = hex(len(chunk))[2:].encode() + b"\r\n" + chunk + b"\r\n"
    raw = raw_exchange(
        stack,
        b"POST /v1/documents HTTP/1.1\r\nHost: x\r\n" + key_header() + b"Content-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + frame * 3 + b"0\r\n\r\n",
    )
    assert status_of(raw) == 413


def test_a_body_that_is_not_utf8_is_a_400(stack):
    body = b'{"query": "caf\xe9"}'
    raw = raw_exchange(
        stack,
        b"POST /v1/search HTTP/1.1\r\nHost: x\r\n" + key_header() + b"Content-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body,
    )
    assert status_of(raw) == 400
    assert json_body(raw)["error"]["code"] == "invalid_encoding"


def test_fifty_clients_connecting_at_once_are_all_answered(stack):
    def one(_: int) -> int:
        return request(stack, "GET", "/v1/health")[0]

    with ThreadPoolExecutor(max_workers=50) as pool:
        assert list(pool.map(one, range(100))) == [200] * 100


# -- methods and CORS -------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["TRACE", "OPTIONS", "PUT", "BREW"])
def test_methods_a_route_does_not_have_are_405_in_our_json_shape(stack, method):
    status, headers, body = request(stack, method, "/v1/search")
    assert status == 405
    assert headers["Allow"] == "POST"
    assert json.loads(body)["error"]["code"] == "method_not_allowed"


def test_head_is_405_with_the_headers_and_no_body(stack):
    raw = raw_exchange(stack, b"HEAD /v1/search HTTP/1.1\r\nHost: x\r\n" + key_header() + b"\r\n", timeout=3)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert status_of(raw) == 405 and body == b""
    assert b"content-type: application/json" in head.lower()


def test_a_method_without_a_key_is_401_in_our_json_shape(stack):
    status, _, body = request(stack, "TRACE", "/v1/search", key=None)
    assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized"


def test_a_preflight_from_the_console_origin_is_answered_without_a_key(stack):
    status, headers, body = request(
        stack,
        "OPTIONS",
        "/v1/context",
        key=None,
        headers={"Origin": CONSOLE_ORIGIN, "Access-Control-Request-Method": "POST"},
    )
    assert status == 204 and body == b""
    assert headers["Access-Control-Allow-Origin"] == CONSOLE_ORIGIN
    assert "POST" in headers["Access-Control-Allow-Methods"]
    assert "Authorization" in headers["Access-Control-Allow-Headers"]


def test_a_preflight_from_another_origin_gets_no_cors_headers(stack):
    status, headers, _ = request(
        stack,
        "OPTIONS",
        "/v1/context",
        key=None,
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert status == 401
    assert "Access-Control-Allow-Origin" not in headers


def test_responses_to_the_console_origin_carry_cors_headers(stack):
    status, headers, _ = request(stack, "GET", "/v1/health", headers={"Origin": CONSOLE_ORIGIN})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == CONSOLE_ORIGIN


# -- credentials --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer ctx_not_a_key"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer " + "k" * 5000},
        {"x-api-key": "ctx_\u00e9t\u00e9"},
    ],
)
def test_a_missing_malformed_or_unknown_key_is_401(stack, headers):
    status, response_headers, body = request(stack, "GET", "/v1/health", key=None, headers=headers)
    assert status == 401
    assert json.loads(body)["error"]["code"] == "unauthorized"
    assert response_headers["WWW-Authenticate"] == "Bearer"


def test_a_known_agent_key_without_the_right_gets_403(stack):
    import uuid

    from contextos.models import Provenance

    agent_key = container.keys().create(
        "local", "front-agent", principal="agent", provenance_ceiling=Provenance.agent_turn
    )
    status, _, body = request(
        stack, "POST", f"/v1/review/{uuid.uuid4()}/promote", {"reason": "looks right"}, key=agent_key
    )
    assert status == 403
    assert json.loads(body)["error"]["code"] == "forbidden"


# -- mounts -------------------------------------------------------------------------------------------
def test_a_mounted_asgi_app_serves_its_prefix_with_its_lifespan_started(stack):
    status, _, body = request(stack, "GET", "/echo/tools/list", key=None)
    assert status == 200
    assert json.loads(body) == {"path": "/tools/list", "root_path": "/echo", "started": True}
    assert request(stack, "GET", "/v1/health")[0] == 200
    assert request(stack, "GET", "/echoes", key=None)[0] == 401  # a longer name is not under the prefix


def test_the_api_prefix_cannot_be_mounted_over():
    from contextos.config import LocalServerSettings
    from contextos.local.front import Front

    front = Front(lambda request: None, LocalServerSettings())
    for prefix in ("/", "/v1", "/v1/things"):
        with pytest.raises(ValueError):
            front.mount(prefix, ECHO)


def test_swagger_ui_and_the_completed_document_are_served_without_a_key(stack):
    from contextos.api.app import app
    from contextos.api.openapi import openapi_document

    status, headers, body = request(stack, "GET", "/v1/swagger", key=None)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"ErrorResponse" in body and b"HTTPValidationError" not in body
    status, _, body = request(stack, "GET", "/v1/swagger?format=json", key=None)
    assert status == 200 and json.loads(body) == openapi_document(app)


def test_the_listening_socket_is_tcp_with_nodelay_so_responses_never_wait_for_a_delayed_ack(stack):
    listening = stack.bridge.socket
    assert listening.proto == socket.IPPROTO_TCP  # what asyncio checks before it sets TCP_NODELAY
    assert listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
