"""The OpenAPI document, generated from the resolver's routes and made honest in one pass.

Powertools writes each operation's success schema and parameters from the route's types. This
pass adds what it cannot know: every error status the edge, the authorizer and the domain can
answer (in OUR error shape, not Powertools' ``HTTPValidationError``), the success statuses a
route declares with :func:`statuses`, and the security schemes. A route added anywhere gets the
defaults without doing anything; one that answers 201 or 409 says so next to its code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from copy import deepcopy
from typing import Any, TypeVar

from contextos.api.error_shape import ErrorResponse
from contextos.api.routing import LazyRestResolver

F = TypeVar("F", bound=Callable[..., Any])

_STATUSES_ATTR = "__contextos_statuses__"
BODY_METHODS = frozenset({"post", "put", "patch"})

DESCRIPTIONS = {
    200: "OK",
    201: "Created",
    202: "Accepted: held or queued, see the body's status",
    204: "No content",
    400: "Bad request: malformed JSON, nesting or numbers beyond the limits, or an invalid value (`code` says which)",
    401: "No credential, or one that is malformed or unknown",
    403: "A known credential without the right to this operation",
    404: "No such resource in the caller's tenant",
    409: "The resource's state does not allow this",
    413: "The body is larger than allowed",
    415: "The body is not application/json in UTF-8",
    422: "The request does not match the schema, or a string holds a NUL or a lone surrogate",
    500: "A bug on our side (logged)",
    503: "A dependency is unavailable: retry later",
}
DEFAULT_ERRORS = (400, 401, 403, 404, 422, 500, 503)
BODY_ERRORS = (413, 415)
VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")


def _permissions() -> str:
    from contextos.access import DEFAULT_VERBS, FORGET_OWN

    return (
        "Who may do what (the permission matrix, one check for REST and MCP; the CLI goes through REST): "
        f"a person (Cognito, or a `user` key) may {', '.join(sorted(DEFAULT_VERBS['user']))}; "
        f"an `agent` key by default {', '.join(sorted(DEFAULT_VERBS['agent']))} "
        f"(`{FORGET_OWN}`: only memories it alone taught). A key may carry its own verbs and a scope "
        "(user_id, agent_id, tags: its writes carry them, its reads see only them), and a provenance ceiling "
        "no write, upload, import or MCP call can rise above. A refused call is 403 `forbidden` naming the verb."
    )


SECURITY_SCHEMES = {
    "apiKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "An agent or user API key (`ctx_…`) as `Authorization: Bearer <key>` on /v1 paths.",
    },
    "apiKeyHeader": {
        "type": "apiKey",
        "in": "header",
        "name": "x-api-key",
        "description": "The same key, as a header.",
    },
    "cognito": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "A Cognito ID token (with the custom:tenant_id claim) on /v1/user paths: a person, "
        "who may use every verb.",
    },
}
SECURITY: list[dict[str, list[str]]] = [{"apiKey": []}, {"apiKeyHeader": []}, {"cognito": []}]
SERVERS = [
    {"url": "/v1", "description": "Agents and scripts: API keys"},
    {"url": "/v1/user", "description": "People: Cognito JWT"},
]


def statuses(*codes: int) -> Callable[[F], F]:
    """Declare the statuses a route answers beyond the defaults (put it under the route decorator).

    2xx codes given here replace the default 200; any other code is added to the error defaults.
    """

    def mark(func: F) -> F:
        setattr(func, _STATUSES_ATTR, tuple(codes))
        return func

    return mark


def error_schema() -> dict[str, Any]:
    return ErrorResponse.model_json_schema(ref_template="#/components/schemas/{model}")


def openapi_document(app: LazyRestResolver) -> dict[str, Any]:
    """The resolver's OpenAPI document with every status, our error model and the security schemes."""
    doc = json.loads(app.get_openapi_json_schema(title="ContextOS API", version="0.1.0"))
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name in VALIDATION_SCHEMAS:
        schemas.pop(name, None)
    error = error_schema()
    schemas.update(error.pop("$defs", {}))
    schemas["ErrorResponse"] = error
    doc["components"]["securitySchemes"] = deepcopy(SECURITY_SCHEMES)
    # Built here, not at import: the matrix's module imports the models, which a cold start defers.
    doc["components"]["securitySchemes"]["apiKey"]["description"] += " " + _permissions()
    doc["security"] = SECURITY
    doc["servers"] = SERVERS
    _declare_recipes(schemas)
    declared = {(r.method.lower(), r.openapi_path): getattr(r.func, _STATUSES_ATTR, ()) for r in app.declared}
    for path, item in doc.get("paths", {}).items():
        for method, operation in item.items():
            if method in ("get", "put", "post", "delete", "patch"):
                _complete(operation, method, declared.get((method, path), ()))
                _declare_no_empty_query_values(operation)
    return doc


def openapi_json(app: LazyRestResolver) -> str:
    """The committed ``docs/openapi.json``: stable key order, one trailing newline."""
    return json.dumps(openapi_document(app), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _complete(operation: dict[str, Any], method: str, declared: tuple[int, ...]) -> None:
    responses = operation.setdefault("responses", {})
    success = responses.get("200") or {"description": DESCRIPTIONS[200]}
    successes = [c for c in declared if 200 <= c < 300]
    if successes:
        responses.pop("200", None)
        for code in successes:
            entry = deepcopy(success) if code != 204 else {}
            entry["description"] = DESCRIPTIONS.get(code, entry.get("description", "OK"))
            responses[str(code)] = entry
    errors = {*DEFAULT_ERRORS, *(BODY_ERRORS if method in BODY_METHODS else ()), *(c for c in declared if c >= 300)}
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
    for code in sorted(errors):
        responses[str(code)] = {"description": DESCRIPTIONS.get(code, "Error"), "content": deepcopy(ref)}


def _declare_no_empty_query_values(operation: dict[str, Any]) -> None:
    """The edge refuses an empty query value (``empty_parameter``): every string a query parameter
    takes says ``minLength: 1``, so the document promises no request the edge then refuses."""
    for parameter in operation.get("parameters", []):
        if parameter.get("in") == "query":
            _at_least_one_character(parameter.get("schema", {}))


def _at_least_one_character(schema: dict[str, Any]) -> None:
    for option in schema.get("anyOf", [schema]):
        if option.get("type") == "string":
            option["minLength"] = max(option.get("minLength", 0), 1)
        elif option.get("type") == "array":
            _at_least_one_character(option.setdefault("items", {}))


def _declare_recipes(schemas: dict[str, Any]) -> None:
    """A context or search ``recipe`` is one of the deployment's configured recipes (retrieval
    settings: data, not code), listed here so a client knows the names before the API refuses one."""
    from contextos.current_settings import get_settings

    names = sorted(get_settings().retrieval.recipes)
    for model in ("ContextRequest", "SearchRequest"):
        recipe = schemas.get(model, {}).get("properties", {}).get("recipe")
        for option in (recipe or {}).get("anyOf", []):
            if option.get("type") == "string":
                option["enum"] = names
