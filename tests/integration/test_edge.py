"""The API's edge (SPEC S14): every hostile body, header or query below ends as a 4xx in our error
shape with a stable code, never a 500, and nothing of it reaches the database."""

from __future__ import annotations

import json
import uuid

import pytest
from contextos import container
from contextos.local.events import api_proxy_event
from contextos.local.handlers import invoke

from tests.helpers import call_api

pytestmark = pytest.mark.usefixtures("configured")

NUL = "\u0000"


def raw_call(
    method: str,
    path: str,
    tenant: str,
    body: str | None,
    *,
    content_type: str | None = "application/json",
    query: dict[str, str] | None = None,
    principal: str = "user",
) -> tuple[int, dict, dict]:
    headers = {"Content-Type": content_type} if content_type else {}
    authorizer = {
        "tenant_id": tenant,
        "principal": principal,
        "key_name": f"tests-{principal}",
        "provenance_ceiling": "user_turn" if principal == "user" else "agent_turn",
        "principalId": "tests",
    }
    response = invoke("api", api_proxy_event(method, path, headers, query, body, authorizer))
    payload = json.loads(response["body"]) if response.get("body") else {}
    headers = dict(response.get("headers") or {})
    headers.update({k: ", ".join(v) for k, v in (response.get("multiValueHeaders") or {}).items()})
    return response["statusCode"], payload, headers


def error_code(payload: dict) -> str:
    assert set(payload) == {"error"}, payload
    assert {"code", "message"} <= set(payload["error"])
    return payload["error"]["code"]


def memory_count(tenant: str) -> int:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute("SELECT count(*) AS n FROM memory_items").fetchone()["n"]


# -- NUL and lone surrogates -------------------------------------------------------------------------
NUL_BODIES = {
    "memory_label": ("POST", "/v1/memories", {"label": f"circuit{NUL}breaker", "definition": "Opens after errors."}),
    "memory_definition": ("POST", "/v1/memories", {"label": "circuit breaker", "definition": f"Opens{NUL}."}),
    "message_content": ("POST", "/v1/sessions/s-1/messages", {"role": "user", "content": f"hello{NUL}world"}),
    "document_text": ("POST", "/v1/documents", {"text": f"# Notes\n\nThe cache{NUL} expires hourly."}),
    "document_metadata_value": ("POST", "/v1/documents", {"text": "The cache expires.", "metadata": {"k": NUL}}),
    "document_metadata_key": ("POST", "/v1/documents", {"text": "The cache expires.", "metadata": {f"k{NUL}": 1}}),
    "search_query": ("POST", "/v1/search", {"query": f"cache{NUL}"}),
    "context_query": ("POST", "/v1/context", {"query": f"cache{NUL}"}),
}


@pytest.mark.parametrize("case", sorted(NUL_BODIES))
def test_a_nul_anywhere_in_a_body_is_a_422_invalid_character(case, tenant):
    method, path, body = NUL_BODIES[case]
    status, payload, _ = raw_call(method, path, tenant, json.dumps(body))
    assert (status, error_code(payload)) == (422, "invalid_character")
    assert payload["error"]["details"]["loc"][0] == "body"
    assert memory_count(tenant) == 0


def test_a_nul_in_a_review_reason_is_a_422_before_the_review_is_looked_up(tenant):
    status, payload, _ = raw_call(
        "POST", f"/v1/review/{uuid.uuid4()}/promote", tenant, json.dumps({"reason": f"looks{NUL}right"})
    )
    assert (status, error_code(payload)) == (422, "invalid_character")
    assert payload["error"]["details"]["loc"] == ["body", "reason"]


@pytest.mark.parametrize(
    ("path", "field"),
    [("/v1/documents", "text"), ("/v1/memories", "label"), ("/v1/sessions/s-1/messages", "content")],
)
def test_a_lone_surrogate_is_a_422_invalid_character(path, field, tenant):
    extra = {"/v1/memories": {"definition": "d"}, "/v1/sessions/s-1/messages": {"role": "user"}}.get(path, {})
    body = json.dumps({field: "abc", **extra}).replace('"abc"', '"abc\\ud800def"')
    status, payload, _ = raw_call("POST", path, tenant, body)
    assert (status, error_code(payload)) == (422, "invalid_character")
    assert "surrogate" in payload["error"]["message"]


def test_a_proper_surrogate_pair_is_an_ordinary_character(tenant):
    status, _, _ = raw_call("POST", "/v1/search", tenant, '{"query": "deploy \\ud83d\\ude80 rocket"}')
    assert status == 200


def test_a_nul_in_a_query_parameter_or_the_path_is_a_422(tenant):
    status, payload, _ = raw_call("GET", "/v1/review", tenant, None, query={"cursor": f"abc{NUL}"})
    assert (status, error_code(payload)) == (422, "invalid_character")
    status, payload, _ = raw_call("GET", f"/v1/sessions/s{NUL}1", tenant, None)
    assert (status, error_code(payload)) == (422, "invalid_character")


# -- structure bounded before parsing ----------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/search", "/v1/context", "/v1/memories"])
def test_json_nested_a_thousand_deep_is_a_400_before_parsing(path, tenant):
    deep = '{"query": "x", "label": "x", "definition": "x", "extra": ' + "[" * 1000 + "]" * 1000 + "}"
    status, payload, _ = raw_call("POST", path, tenant, deep)
    assert (status, error_code(payload)) == (400, "json_too_deep")


def test_nesting_within_the_bound_reaches_the_schema(tenant):
    shallow = {"text": "The cache expires hourly.", "metadata": {"a": {"b": {"c": [1, [2, [3]]]}}}}
    status, _, _ = raw_call("POST", "/v1/documents", tenant, json.dumps(shallow))
    assert status == 202


def test_brackets_inside_strings_do_not_count_as_nesting(tenant):
    status, _, _ = raw_call("POST", "/v1/search", tenant, json.dumps({"query": "[" * 5000 + "x"}))
    assert status == 200


@pytest.mark.parametrize("path", ["/v1/search", "/v1/context", "/v1/memories"])
def test_a_five_thousand_digit_integer_is_a_400(path, tenant):
    huge = "9" * 5000
    body = '{"query": "x", "limit": HUGE, "max_memories": HUGE, "importance": HUGE}'.replace("HUGE", huge)
    status, payload, _ = raw_call("POST", path, tenant, body)
    assert (status, error_code(payload)) == (400, "number_too_long")


def test_a_body_that_is_not_json_is_a_400(tenant):
    status, payload, _ = raw_call("POST", "/v1/search", tenant, '{"query": "x",')
    assert (status, error_code(payload)) == (400, "malformed_json")


# -- content type --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/search", {"query": "cache"}),
        ("/v1/memories", {"label": "cache", "definition": "The cache expires hourly."}),
        ("/v1/documents", {"text": "The cache expires hourly."}),
    ],
)
@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded"])
def test_a_json_body_under_another_content_type_is_a_415(path, body, content_type, tenant):
    status, payload, _ = raw_call("POST", path, tenant, json.dumps(body), content_type=content_type)
    assert (status, error_code(payload)) == (415, "unsupported_media_type")
    assert memory_count(tenant) == 0


def test_json_with_a_utf8_charset_in_any_case_is_accepted_and_other_charsets_or_json_types_are_415(tenant):
    for content_type in ("application/json; charset=utf-8", "APPLICATION/JSON", "application/json;charset=UTF8"):
        status, _, _ = raw_call("POST", "/v1/search", tenant, '{"query": "x"}', content_type=content_type)
        assert status == 200, content_type
    for content_type in ("application/json; charset=latin-1", "application/merge-patch+json"):
        status, payload, _ = raw_call("POST", "/v1/search", tenant, '{"query": "x"}', content_type=content_type)
        assert (status, error_code(payload)) == (415, "unsupported_media_type"), content_type


# -- values a lenient schema would let through --------------------------------------------------------
@pytest.mark.parametrize("as_of", [0.954, 1700000000, "0.954", "1700000000", "2026-12-01T09:00:00", "yesterday"])
@pytest.mark.parametrize("path", ["/v1/search", "/v1/context"])
def test_as_of_must_be_an_rfc3339_string_with_an_offset(path, as_of, tenant):
    status, payload = call_api("POST", path, tenant, {"query": "x", "as_of": as_of})
    assert (status, error_code(payload)) == (422, "validation_error")


def test_an_rfc3339_as_of_is_accepted(tenant):
    assert call_api("POST", "/v1/search", tenant, {"query": "x", "as_of": "2026-12-01T09:00:00Z"})[0] == 200
    assert call_api("POST", "/v1/search", tenant, {"query": "x", "as_of": "2026-12-01T09:00:00.5+02:00"})[0] == 200


def test_an_empty_memory_id_filter_on_the_audit_log_is_a_422_not_everything(tenant):
    status, payload, _ = raw_call("GET", "/v1/audit", tenant, None, query={"memory_id": ""})
    assert (status, error_code(payload)) == (422, "empty_parameter")
    assert payload["error"]["details"]["loc"] == ["query", "memory_id"]


# -- methods -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["TRACE", "OPTIONS", "HEAD", "DELETE", "PUT"])
def test_an_unsupported_method_on_a_route_is_a_405_with_allow_in_our_shape(method, tenant):
    status, payload, headers = raw_call(method, "/v1/search", tenant, None)
    assert (status, error_code(payload)) == (405, "method_not_allowed")
    assert headers["Allow"] == "POST"


def test_an_unknown_path_is_a_404_in_our_shape(tenant):
    status, payload, _ = raw_call("GET", "/v1/nowhere", tenant, None)
    assert (status, error_code(payload)) == (404, "route_not_found")


# -- rights ----------------------------------------------------------------------------------------------
def test_a_known_agent_credential_promoting_a_held_candidate_is_a_403(tenant):
    status, payload, _ = raw_call(
        "POST", f"/v1/review/{uuid.uuid4()}/promote", tenant, json.dumps({"reason": "looks right"}), principal="agent"
    )
    assert status == 403
    assert error_code(payload) in {"forbidden", "user_credential_required"}
