"""CDK entry point: `cdk synth` (via cdk.json) or `python -m infra.app` from the repo root.

Synthesizes offline and env-agnostic (no account, no region, no credentials, no Docker).
`-c database=cockroach` swaps Aurora for an external CockroachDB whose URL is a secret.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `infra` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# jsii prints a large "Node 20 is end-of-life" banner on every run; it is cosmetic here.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App, Tags

from infra.config import InfraConfig, InfraConfigError
from infra.nag import enable_nag
from infra.stack import ContextOsStack

STACK_NAME = "ContextOS"
CDK_JSON = Path(__file__).resolve().parents[1] / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (feature flags and defaults), so `python -m infra.app` and tests
    synthesize exactly what `cdk synth` does; values from the CLI still take precedence."""
    if not CDK_JSON.is_file():
        return {}
    return dict(json.loads(CDK_JSON.read_text(encoding="utf-8")).get("context", {}))


def build_app(context: dict[str, Any] | None = None, outdir: str | None = None) -> tuple[App, ContextOsStack]:
    """Build the app with cdk-nag attached; tests call this with their own context and outdir."""
    app = App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    config = InfraConfig.from_node(app.node)
    enable_nag(app)
    stack = ContextOsStack(
        app,
        STACK_NAME,
        config=config,
        description=f"ContextOS memory layer ({config.database.value} database)",
    )
    # DBProxyTargetGroup takes no Tags (CloudFormation rejects them), so skip that type.
    Tags.of(stack).add("project", "contextos", exclude_resource_types=["AWS::RDS::DBProxyTargetGroup"])
    return app, stack


def main() -> int:
    """Synthesize, turning configuration mistakes into one readable line instead of a traceback."""
    try:
        app, _ = build_app()
    except InfraConfigError as exc:
        print(f"contextos infra: {exc}", file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
