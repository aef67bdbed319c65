"""Synthesize the app once per database mode per session and share the results.

Synthesis takes seconds, so every test reads the same cloud assembly. The function code and the
layer are stand-ins in a temp dir (`functions_root` / `layer_dir` context), which keeps these
tests independent of which handlers exist yet and of whether the real layer was built.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk.assertions import Template

from infra.app import STACK_NAME, build_app
from infra.catalog import FUNCTIONS
from infra.stack import ContextOsStack


@dataclass(frozen=True)
class Synth:
    """One synthesized stack: the assertions view, the raw JSON and where it was written."""

    template: Template
    json: dict[str, Any]
    outdir: Path
    stack: ContextOsStack

    @property
    def template_path(self) -> Path:
        return self.outdir / f"{STACK_NAME}.template.json"

    def resources(self, type_: str) -> dict[str, dict[str, Any]]:
        """Logical id → resource for every resource of one CloudFormation type."""
        return {k: v for k, v in self.json["Resources"].items() if v["Type"] == type_}

    def functions(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Catalog name → (logical id, properties) of our functions, not CDK's helper Lambdas."""
        by_description = {spec.description: spec.name for spec in FUNCTIONS}
        found = {}
        for logical_id, resource in self.resources("AWS::Lambda::Function").items():
            name = by_description.get(resource["Properties"].get("Description", ""))
            if name is not None:
                found[name] = (logical_id, resource["Properties"])
        return found

    def function_id(self, name: str) -> str:
        """The logical id of one catalog function."""
        return self.functions()[name][0]

    def role_statements(self, name: str) -> list[dict[str, Any]]:
        """Every IAM statement attached to one function's role (inline and attached policies)."""
        role_ref = self.functions()[name][1]["Role"]["Fn::GetAtt"][0]
        statements: list[dict[str, Any]] = []
        role = self.json["Resources"][role_ref]["Properties"]
        for policy in role.get("Policies", []):
            statements.extend(policy["PolicyDocument"]["Statement"])
        assert not role.get("ManagedPolicyArns"), f"{name} must not use managed policies"
        for policy in self.resources("AWS::IAM::Policy").values():
            if {"Ref": role_ref} in policy["Properties"].get("Roles", []):
                statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
        return statements


@pytest.fixture(scope="session")
def asset_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stand-in handler folders for every catalog function, an empty-but-valid layer and a console build."""
    root = tmp_path_factory.mktemp("assets")
    for spec in FUNCTIONS:
        folder = root / "functions" / spec.name
        folder.mkdir(parents=True)
        # Distinct content per function, as in the real tree (identical code would share one asset).
        (folder / "handler.py").write_text(
            f'def lambda_handler(event, context):\n    return "{spec.name}"\n', encoding="utf-8"
        )
    (root / "layer" / "python" / "contextos").mkdir(parents=True)
    (root / "layer" / "python" / "contextos" / "__init__.py").write_text("", encoding="utf-8")
    # A console build's shape: index.html beside hashed assets (what `make console` writes).
    (root / "console" / "assets").mkdir(parents=True)
    (root / "console" / "index.html").write_text("<!doctype html><title>console</title>", encoding="utf-8")
    (root / "console" / "assets" / "index-stand.js").write_text("export {};", encoding="utf-8")
    return root


def synthesize(asset_tree: Path, outdir: Path, **context: Any) -> Synth:
    """Build and synthesize the app (cdk-nag included) with stand-in assets."""
    app, stack = build_app(
        {
            "functions_root": str(asset_tree / "functions"),
            "layer_dir": str(asset_tree / "layer"),
            "console_dir": str(asset_tree / "console"),
            **context,
        },
        outdir=str(outdir),
    )
    app.synth()
    data = json.loads((outdir / f"{STACK_NAME}.template.json").read_text(encoding="utf-8"))
    return Synth(template=Template.from_json(data), json=data, outdir=outdir, stack=stack)


@pytest.fixture(scope="session")
def synthesizer() -> Callable[..., Synth]:
    """`synthesize` itself, for the odd test module that needs one more variant of the app."""
    return synthesize


@pytest.fixture(scope="session")
def aurora(asset_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default deployment: Aurora Serverless v2 behind RDS Proxy."""
    return synthesize(asset_tree, tmp_path_factory.mktemp("cdk-aurora"), database="aurora")


@pytest.fixture(scope="session")
def cockroach(asset_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The distributed alternative: an external CockroachDB whose URL is a stack-created secret."""
    return synthesize(asset_tree, tmp_path_factory.mktemp("cdk-cockroach"), database="cockroach")


@pytest.fixture(scope="session", params=["aurora", "cockroach"])
def synth(request: pytest.FixtureRequest) -> Iterator[Synth]:
    """Each test that takes `synth` runs once per database mode."""
    yield request.getfixturevalue(request.param)
