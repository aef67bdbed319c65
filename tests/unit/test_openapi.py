"""The OpenAPI document: generated from the routes, honest about statuses, errors and security,
and committed (a stale docs/openapi.json fails here: run ``make openapi``)."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from contextos.api.app import app
from contextos.api.openapi import openapi_document, openapi_json, statuses
from contextos.api.routing import LazyRestResolver
from pydantic import BaseModel

from tests.conftest import REPO

OPERATIONS = ("get", "put", "post", "delete", "patch")


@pytest.fixture(scope="module")
def document() -> dict:
    return openapi_document(app)


def operations(doc: dict):
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in OPERATIONS:
                yield path, method, operation


def test_the_committed_document_is_the_generated_one():
    committed = (REPO / "docs" / "openapi.json").read_text(encoding="utf-8")
    assert committed == openapi_json(app), "docs/openapi.json is stale: run `make openapi` and commit it"


def test_every_operation_declares_our_error_shape_for_every_error_status(document):
    for path, method, operation in operations(document):
        responses = operation["responses"]
        for code in ("400", "401", "403", "404", "422", "500", "503"):
            schema = responses[code]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (path, method, code)
        if method in ("post", "put", "patch"):
            assert {"413", "415"} <= set(responses), (path, method)


def test_powertools_validation_models_are_gone(document):
    text = json.dumps(document)
    assert "HTTPValidationError" not in text
    error = document["components"]["schemas"]["ErrorResponse"]
    assert error["required"] == ["error"]
    assert set(document["components"]["schemas"]["ErrorBody"]["required"]) == {"code", "message"}


def test_declared_success_statuses_replace_200(document):
    appended = document["paths"]["/sessions/{session_id}/messages"]["post"]["responses"]
    assert "201" in appended and "200" not in appended
    written = document["paths"]["/memories"]["post"]["responses"]
    assert {"200", "201", "202"} <= set(written)  # merged, admitted, held
    assert written["201"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/MemoryAdmission"}
    assert "409" in document["paths"]["/sessions/{session_id}/messages"]["post"]["responses"]
    assert {"200", "202"} <= set(document["paths"]["/documents"]["post"]["responses"])


def test_security_schemes_cover_api_keys_and_cognito(document):
    schemes = document["components"]["securitySchemes"]
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "http", "scheme": "bearer"}
    assert schemes["cognito"]["bearerFormat"] == "JWT"
    assert {"apiKey": []} in document["security"] and {"cognito": []} in document["security"]
    assert [s["url"] for s in document["servers"]] == ["/v1", "/v1/user"]


def test_real_constraints_reach_the_document(document):
    schemas = document["components"]["schemas"]
    assert schemas["SearchRequest"]["properties"]["limit"]["maximum"] == 200
    as_of = schemas["SearchRequest"]["properties"]["as_of"]["anyOf"][0]
    assert as_of == {"format": "date-time", "type": "string"}
    audit = document["paths"]["/audit"]["get"]["parameters"]
    assert next(p for p in audit if p["name"] == "memory_id")["schema"]["anyOf"][0]["format"] == "uuid"


class Thing(BaseModel):
    name: str


def test_a_route_added_later_gets_the_defaults_without_declaring_anything():
    router = Router()

    @router.get("/things/<thing_id>")
    def get_thing(thing_id: str) -> Thing:
        return Thing(name=thing_id)

    @router.delete("/things/<thing_id>")
    @statuses(204, 409)
    def delete_thing(thing_id: str) -> Response[Thing]:
        return Response(status_code=204)

    resolver = LazyRestResolver({}, enable_validation=True)
    resolver.include_router(router)
    doc = openapi_document(resolver)
    read = doc["paths"]["/things/{thing_id}"]["get"]["responses"]
    assert {"200", "400", "401", "403", "404", "422", "500", "503"} == set(read)
    deleted = doc["paths"]["/things/{thing_id}"]["delete"]["responses"]
    assert "204" in deleted and "409" in deleted and "200" not in deleted
    assert "content" not in deleted["204"]
