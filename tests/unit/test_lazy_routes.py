"""The API's route groups, imported at their first request: the table names every route's group,
and the first request of each group reaches its routes."""

import json
import re
from pathlib import Path

import pytest
from contextos.api import openapi
from contextos.api.app import ROUTE_GROUPS, build_app

ROOT = Path(__file__).resolve().parents[2]


def _segment(rule: str) -> str:
    return rule.lstrip("/").split("/", 1)[0]


def test_every_route_is_served_by_the_group_its_first_segment_names():
    app = build_app()
    app.include_all()
    module_of = {segment: module for module, segments in ROUTE_GROUPS.items() for segment in segments}
    routes = [r for r in app.declared if r.include_in_schema]
    assert routes
    wrong = [
        (r.openapi_path, r.func.__module__)
        for r in routes
        if module_of.get(_segment(r.openapi_path)) != r.func.__module__
    ]
    assert wrong == []
    assert {r.func.__module__ for r in routes} == set(ROUTE_GROUPS)


DOCUMENTED = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))["paths"]


@pytest.mark.parametrize("path", sorted(DOCUMENTED))
def test_the_first_request_to_each_documented_path_reaches_its_routes(path):
    app = build_app()
    assert [r.func.__name__ for r in app.declared] == ["swagger"]
    concrete = re.sub(r"\{[^}]+\}", "00000000-0000-0000-0000-000000000000", path)
    for prefix in ("/v1", "/v1/user"):
        event = {"httpMethod": "PUT", "path": prefix + concrete, "headers": {}, "body": None, "requestContext": {}}
        answer = app.resolve(event, None)
        body = json.loads(answer["body"])
        # No route answers PUT: a 405 naming the methods of the path's routes, so they were found.
        assert answer["statusCode"] == 405, body
        assert answer["multiValueHeaders"]["Allow"] == [", ".join(m.upper() for m in sorted(DOCUMENTED[path]))]
    assert sorted(app._included) == [m for m, segments in ROUTE_GROUPS.items() if _segment(path) in segments]


def test_the_document_does_not_depend_on_which_group_came_first():
    app = build_app()
    app.resolve({"httpMethod": "GET", "path": "/v1/sessions", "headers": {}, "body": None, "requestContext": {}}, None)
    assert openapi.openapi_json(app) == (ROOT / "docs" / "openapi.json").read_text(encoding="utf-8")
