"""The SDK's own wire behaviour, against a scripted HTTP transport: retries with backoff on 429/5xx
(honouring Retry-After), none on other 4xx, and the error code carried by `ApiError`."""

import sys

import httpx
import pytest
from contextos import ApiError, Client


def scripted(*responses: httpx.Response) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.MockTransport(handle), seen


MEMORY_PAGE = {"memories": [], "next_cursor": None}


def test_a_429_then_a_503_are_retried_and_the_third_answer_returned():
    transport, seen = scripted(
        httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"code": "throttled", "message": "slow"}}),
        httpx.Response(503, json={"error": {"code": "transient_failure", "message": "later"}}),
        httpx.Response(200, json=MEMORY_PAGE),
    )
    with Client("http://api.test", api_key="k", transport=transport, backoff_s=0.001) as ctx:
        assert ctx.list_memories(user_id="ana", tags=["a", "b"]).memories == []
    assert len(seen) == 3
    assert seen[0].headers["x-api-key"] == "k"
    assert seen[0].url.params.get_list("tag") == ["a", "b"] and seen[0].url.params["user_id"] == "ana"


def test_a_4xx_is_not_retried_and_raises_with_its_code():
    transport, seen = scripted(
        httpx.Response(403, json={"error": {"code": "memory_protected", "message": "pass unlock", "details": None}})
    )
    with Client("http://api.test", transport=transport) as ctx, pytest.raises(ApiError) as error:
        ctx.edit_memory("00000000-0000-0000-0000-000000000001", definition="x")
    assert (error.value.status, error.value.code) == (403, "memory_protected") and len(seen) == 1


def test_retries_stop_after_max_retries():
    transport, seen = scripted(*[httpx.Response(502, text="bad gateway") for _ in range(3)])
    client = Client("http://api.test", transport=transport, max_retries=2, backoff_s=0.001)
    with client as ctx, pytest.raises(ApiError) as error:
        ctx.health()
    assert error.value.code == "http_502" and len(seen) == 3


def test_importing_the_sdk_loads_no_server_dependency():
    import subprocess

    code = (
        "import sys; from contextos import Client, AsyncClient;"
        "print(sorted(m for m in ('psycopg', 'boto3', 'numpy', 'aws_lambda_powertools') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
