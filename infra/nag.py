"""cdk-nag 3 wiring and one helper for resource-scoped, reasoned acknowledgments.

cdk-nag 3 is a policy-validation plugin (`Validations.of(app).add_plugins(...)`), not an
aspect; findings are acknowledged through CDK's own `Validations.of(scope).acknowledge`.
An id without a `namespace::` prefix is stored as `Annotation::<id>`, which is what cdk-nag
3.0.2 matches after stripping that prefix (verified in its nag-pack.js).
"""

from __future__ import annotations

import json

from aws_cdk import Acknowledgment, App, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


def enable_nag(app: App) -> None:
    """Run the AwsSolutions pack at synth; any unacknowledged finding fails synthesis."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding on one construct (and its children) with a reason.

    `rule` is the part after `AwsSolutions-`, e.g. `IAM5[Resource::*]`.
    """
    if len(reason) < 20:
        raise ValueError(f"a suppression of {rule} needs a real reason, got {reason!r}")
    Validations.of(scope).acknowledge(Acknowledgment(id=f"AwsSolutions-{rule}", reason=reason))


def flatten_reference(value: object) -> str:
    """Render a resolved CloudFormation value the way cdk-nag names it in a finding.

    A Python port of cdk-nag's `flattenCfnReference`, so that an IAM5 acknowledgment can be
    computed from the very statement it covers instead of being copied from a synth log.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("${", "<").replace("}", ">")
    if isinstance(value, dict):
        if "Fn::Join" in value:
            delimiter, items = value["Fn::Join"]
            return str(delimiter).join(flatten_reference(item) for item in items)
        if "Fn::Sub" in value:
            return flatten_reference(value["Fn::Sub"])
        if "Fn::GetAtt" in value:
            resource, attribute = value["Fn::GetAtt"]
            return f"<{flatten_reference(resource)}.{flatten_reference(attribute)}>"
        if "Fn::ImportValue" in value:
            return flatten_reference(value["Fn::ImportValue"])
        if "Ref" in value:
            return f"<{flatten_reference(value['Ref'])}>"
    return json.dumps(value, separators=(",", ":"))
