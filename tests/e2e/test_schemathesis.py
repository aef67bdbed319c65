"""schemathesis against the local stack over real HTTP (SPEC S14): generated requests for every
operation in the committed document; no server error, no status or body the document does not declare."""

from __future__ import annotations

import os

import pytest
import schemathesis
from contextos.api.app import app
from contextos.api.openapi import openapi_document
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from tests.e2e.conftest import running_stack

EXAMPLES = int(os.environ.get("CONTEXTOS_SCHEMATHESIS_EXAMPLES", "25"))
# What the document promises. Left out: positive_data_acceptance (an opaque cursor that does not
# decode is rightly a 400, which no schema can say) and negative_data_rejection (pydantic's lax
# mode takes `false` for a number); see docs/decisions.md.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    unsupported_method,
    ignored_auth,
]

schema = schemathesis.openapi.from_dict(openapi_document(app))


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    with running_stack(str(tmp_path_factory.mktemp("fuzz-stack")), database_url, "fuzz") as running:
        yield running


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_operation_answers_only_what_the_document_declares(case, stack):
    from contextos.local.stack import DEV_API_KEY

    case.call_and_validate(
        base_url=stack.api_url + "/v1",
        headers={"Authorization": f"Bearer {DEV_API_KEY}"},
        checks=CHECKS,
        timeout=60,
    )


def test_the_run_would_catch_a_status_the_document_left_out(stack):
    """The checks are live: the same stack against a document without its 422 fails them."""
    from contextos.local.stack import DEV_API_KEY
    from schemathesis.core.failures import FailureGroup

    document = openapi_document(app)
    del document["paths"]["/search"]["post"]["responses"]["422"]
    operation = schemathesis.openapi.from_dict(document)["/search"]["POST"]
    case = operation.Case(body={"query": "x", "limit": 0}, media_type="application/json")
    with pytest.raises(FailureGroup, match="Undocumented status code"):
        case.call_and_validate(
            base_url=stack.api_url + "/v1",
            headers={"Authorization": f"Bearer {DEV_API_KEY}"},
            checks=[status_code_conformance],
        )
