"""cdk-nag and cfn-lint accept both synthesized templates; every suppression is scoped and reasoned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aws_cdk import Stack, Validations

if TYPE_CHECKING:
    from tests.infra.conftest import Synth

CFN_LINT = Path(sys.executable).with_name("cfn-lint")
CFN_LINT_OK = {0, 4}  # 4 = warnings only (W3005 on CDK output); 2 = errors


def test_cdk_nag_reports_no_unacknowledged_findings(synth: Synth) -> None:
    report = json.loads((synth.outdir / "validation-report.json").read_text(encoding="utf-8"))
    failures = [violation for plugin in report.get("pluginReports", []) for violation in plugin.get("violations", [])]
    assert failures == []


def test_every_acknowledgment_is_scoped_to_a_resource_and_gives_a_reason(synth: Synth) -> None:
    acknowledged = 0
    for construct in synth.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type != Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                continue
            for rule, reason in entry.data.items():
                if "AwsSolutions-" not in rule:
                    continue  # aws-cdk-lib acknowledges some of its own CloudFormation-Validate rules
                acknowledged += 1
                assert not isinstance(construct, Stack), f"stack-wide acknowledgment of {rule}"
                assert len(reason) >= 40, (construct.node.path, rule, reason)
    assert acknowledged > 0


def test_cfn_lint_finds_no_errors_in_the_synthesized_template(synth: Synth) -> None:
    result = subprocess.run(
        [str(CFN_LINT), str(synth.template_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode in CFN_LINT_OK, result.stdout + result.stderr
