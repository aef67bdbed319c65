"""What a function's import may not pay for: pydantic-settings (loaded at the first settings read)
and postponed annotations in model modules (pydantic would compile each one at class creation)."""

import subprocess
import sys
from pathlib import Path

import contextos

PACKAGE = Path(contextos.__file__).parent
MODEL_MODULES = [
    "models.py",
    "management_models.py",
    "governance_models.py",
    "config.py",
    "conversations.py",
    "reports.py",
    "workspace/model.py",
]


def test_model_modules_do_not_postpone_annotations():
    postponing = [m for m in MODEL_MODULES if "from __future__ import annotations" in (PACKAGE / m).read_text()]
    assert postponing == []


def test_importing_the_api_loads_no_pydantic_settings_until_settings_are_read():
    probe = (
        "import sys; import contextos.api.app; "
        "print('pydantic_settings' in sys.modules); "
        "from contextos.current_settings import get_settings; get_settings(); "
        "print('pydantic_settings' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "", "PYTHONPATH": str(PACKAGE.parent), "POWERTOOLS_TRACE_DISABLED": "true"},
    )
    assert out.stdout.split() == ["False", "True"]


def _probe(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "", "PYTHONPATH": str(PACKAGE.parent), "POWERTOOLS_TRACE_DISABLED": "true"},
    )
    return out.stdout.split()


def test_importing_the_api_imports_no_route_module_no_unused_resolver_and_no_asyncio():
    loaded = _probe(
        "import sys, contextos.api.app\n"
        "print(*sorted(m for m in sys.modules if m.startswith(('contextos.api.', 'asyncio', "
        "'aws_lambda_powertools.event_handler.appsync', 'aws_lambda_powertools.event_handler.bedrock', "
        "'aws_lambda_powertools.utilities.data_classes.sqs_event', 'contextos.models', 'contextos.container'))))"
    )
    assert loaded == [
        "contextos.api.app",
        "contextos.api.deferred",
        "contextos.api.edge",
        "contextos.api.error_shape",
        "contextos.api.openapi",
        "contextos.api.routing",
    ]


def test_a_request_imports_only_its_route_group():
    from contextos.api.app import ROUTE_GROUPS

    event = "{'httpMethod': 'POST', 'path': '/v1/user/context', 'headers': {}, 'body': None}"
    loaded = _probe(
        "import sys, types\n"
        "from contextos.api.app import resolve\n"
        f"answer = resolve({event}, types.SimpleNamespace())\n"
        f"print(answer['statusCode'], *sorted(m for m in {list(ROUTE_GROUPS)!r} if m in sys.modules))"
    )
    # The route's request model answers (no body), so the route was reached.
    assert loaded == ["422", "contextos.api.context"]


def test_deferred_packages_still_answer_every_name_they_export():
    # Anything beyond what the API imports runs the package's real __init__, once.
    names = _probe(
        "import contextos.api, sys\n"
        "from aws_lambda_powertools.event_handler import AppSyncResolver, APIGatewayRestResolver\n"
        "from aws_lambda_powertools.utilities.data_classes import SQSEvent, event_source\n"
        "import aws_lambda_powertools.event_handler as eh\n"
        "print(AppSyncResolver.__name__, SQSEvent.__name__, event_source.__module__, len(eh.__all__) > 5, "
        "'asyncio' in sys.modules)"
    )
    assert names == [
        "AppSyncResolver",
        "SQSEvent",
        "aws_lambda_powertools.utilities.data_classes.event_source",
        "True",
        "True",
    ]
