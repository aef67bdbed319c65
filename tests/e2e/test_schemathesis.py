"""schemathesis against the local stack over real HTTP (SPEC S14), as `st run --checks all`: every
phase (examples, coverage, fuzzing, stateful) and every check for every operation in the API's own
document — no server error, no schema-violating request accepted, no schema-valid one refused, no
status, header or body the document does not declare. Seeded and bounded, so a run is reproducible
(``CONTEXTOS_SCHEMATHESIS_EXAMPLES`` / ``_SEED`` to search harder); schemathesis.toml holds the
generation settings, schemathesis_hooks.py the failures that are not the API's, each by its shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from contextos.api.app import app
from contextos.api.openapi import openapi_document, openapi_json
from schemathesis.specs.openapi.checks import status_code_conformance

from tests.e2e.conftest import running_stack

EXAMPLES = int(os.environ.get("CONTEXTOS_SCHEMATHESIS_EXAMPLES", "30"))
SEED = int(os.environ.get("CONTEXTOS_SCHEMATHESIS_SEED", "31"))
CONFIG = Path(__file__).with_name("schemathesis.toml")
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    with running_stack(str(tmp_path_factory.mktemp("fuzz-stack")), database_url, "fuzz") as running:
        yield running


def test_every_check_of_every_phase_passes_on_every_operation(stack, tmp_path: Path):
    from contextos.local.stack import DEV_API_KEY

    document = tmp_path / "openapi.json"
    document.write_text(openapi_json(app))
    report = tmp_path / "report.json"
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(CONFIG),
        "run",
        str(document),
        "--url",
        stack.api_url + "/v1",
        "--header",
        f"Authorization: Bearer {DEV_API_KEY}",
        "--checks",
        "all",
        "--max-examples",
        str(EXAMPLES),
        "--seed",
        str(SEED),
        "--workers",
        "2",
        "--request-timeout",
        "60",
        "--report",
        "json",
        "--report-json-path",
        str(report),
    ]
    dropped = tmp_path / "dropped.jsonl"
    env = dict(os.environ, SCHEMATHESIS_HOOKS=str(HOOKS), CONTEXTOS_SCHEMATHESIS_DROPPED=str(dropped))
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    summary = json.loads(report.read_text())
    assert done.returncode == 0, done.stdout[-20_000:]
    operations = sum(1 for item in openapi_document(app)["paths"].values() for method in item if method != "parameters")
    assert summary["complete"] and summary["operations"]["tested"] == operations
    assert not summary["failures"] and not summary["errors"]
    assert summary["test_cases"]["generated"] >= operations * 10  # a run that generated next to nothing proves nothing
    if dropped.exists():  # what the hook set aside, by operation and reason, for whoever reads the log
        lines = [json.loads(line) for line in dropped.read_text().splitlines()]
        print(Counter((d["operation"], d["why"]) for d in lines).most_common())


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
