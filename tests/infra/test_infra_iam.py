"""Each function's role grants exactly what infra/catalog.py says, with no wildcard shortcuts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from infra.catalog import BY_NAME, FUNCTIONS, Access

if TYPE_CHECKING:
    from tests.infra.conftest import Synth

# The only actions allowed on Resource "*": AWS offers no resource-level permissions for them.
# - ec2:*NetworkInterface*/DescribeSubnets/*PrivateIpAddresses: Lambda attaching to the VPC
#   (the AWSLambdaVPCAccessExecutionRole set).
# - xray:PutTraceSegments/PutTelemetryRecords: active tracing (added by CDK).
STAR_RESOURCE_ALLOWED = {
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def actions_of(synth: Synth, name: str) -> set[str]:
    return {a for s in synth.role_statements(name) if s["Effect"] == "Allow" for a in as_list(s["Action"])}


def resources_for(synth: Synth, name: str, action: str) -> str:
    """All resources granted for one action, as JSON text for substring checks."""
    return json.dumps([s["Resource"] for s in synth.role_statements(name) if action in as_list(s["Action"])])


@pytest.mark.parametrize("name", [spec.name for spec in FUNCTIONS])
def test_no_function_role_grants_a_wildcard_action(synth: Synth, name: str) -> None:
    wildcards = sorted(a for a in actions_of(synth, name) if "*" in a)
    assert wildcards == [], f"{name} has wildcard actions: {wildcards}"


@pytest.mark.parametrize("name", [spec.name for spec in FUNCTIONS])
def test_only_actions_aws_cannot_scope_are_granted_on_every_resource(synth: Synth, name: str) -> None:
    for statement in synth.role_statements(name):
        if "*" in as_list(statement["Resource"]):
            assert set(as_list(statement["Action"])) <= STAR_RESOURCE_ALLOWED, statement


@pytest.mark.parametrize("name", [spec.name for spec in FUNCTIONS])
def test_every_function_may_only_write_its_own_log_group(synth: Synth, name: str) -> None:
    own_group = synth.functions()[name][1]["LoggingConfig"]["LogGroup"]["Ref"]
    granted = [s["Resource"] for s in synth.role_statements(name) if "logs:PutLogEvents" in as_list(s["Action"])]
    assert granted == [{"Fn::GetAtt": [own_group, "Arn"]}]


def test_queue_rights_follow_the_catalog(synth: Synth) -> None:
    for spec in FUNCTIONS:
        actions = actions_of(synth, spec.name)
        sends = Access.INGEST_SEND in spec.access or Access.CONVERSATION_SEND in spec.access
        consumes = Access.INGEST_CONSUME in spec.access or Access.CONVERSATION_CONSUME in spec.access
        assert ("sqs:SendMessage" in actions) == sends, spec.name
        assert ("sqs:ReceiveMessage" in actions) == consumes, spec.name
    assert "IngestionIngestQueue" in resources_for(synth, "ingest", "sqs:ReceiveMessage")
    assert "IngestionConversationQueue" not in resources_for(synth, "ingest", "sqs:ReceiveMessage")
    assert "IngestionConversationQueue" in resources_for(synth, "sweeper", "sqs:SendMessage")
    assert "IngestionIngestQueue" not in resources_for(synth, "sweeper", "sqs:SendMessage")


def test_bucket_rights_are_limited_to_their_prefixes(synth: Synth) -> None:
    assert "/uploads/*" in resources_for(synth, "api", "s3:PutObject")
    assert "/raw/*" in resources_for(synth, "ingest", "s3:PutObject")
    assert "StorageUpload" not in resources_for(synth, "ingest", "s3:PutObject")
    assert "StorageCold" in resources_for(synth, "lifecycle", "s3:PutObject")
    for name in ("authorizer", "sweeper", "governance", "migrate", "conversation"):
        assert not {a for a in actions_of(synth, name) if a.startswith("s3:")}, name


def test_only_the_api_may_erase_objects_and_list_buckets(synth: Synth) -> None:
    """Erasure (S3) deletes a tenant's objects in every bucket, and lists them by prefix."""
    deletes = resources_for(synth, "api", "s3:DeleteObject")
    assert "StorageUpload" in deletes and "StorageCold" in deletes and "/uploads/*" in deletes
    assert "StorageCold" in resources_for(synth, "api", "s3:PutObject")  # a cold object rewritten without them
    assert "s3:ListBucket" in actions_of(synth, "api")
    for spec in FUNCTIONS:
        if spec.name != "api":
            assert "s3:ListBucket" not in actions_of(synth, spec.name), spec.name


def test_bedrock_is_invoked_only_on_the_configured_models(synth: Synth) -> None:
    for spec in FUNCTIONS:
        uses_bedrock = bool(spec.access & {Access.BEDROCK_EMBED, Access.BEDROCK_TEXT})
        assert ("bedrock:InvokeModel" in actions_of(synth, spec.name)) == uses_bedrock, spec.name
    models = resources_for(synth, "ingest", "bedrock:InvokeModel")
    assert "foundation-model/amazon.titan-embed-text-v2:0" in models
    assert "foundation-model/amazon.nova-pro-v1:0" in models


def test_every_function_may_read_the_database_secret_and_nothing_else_in_secrets_manager(synth: Synth) -> None:
    (secret_id,) = synth.resources("AWS::SecretsManager::Secret")
    for spec in FUNCTIONS:
        assert Access.DB_SECRET in spec.access
        actions = {a for a in actions_of(synth, spec.name) if a.startswith("secretsmanager:")}
        assert actions == {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}, spec.name
        granted = resources_for(synth, spec.name, "secretsmanager:GetSecretValue")
        assert secret_id in granted or "SecretAttachment" in granted, spec.name


def test_kms_use_is_limited_to_the_service_that_needs_it(synth: Synth) -> None:
    for spec in FUNCTIONS:
        for statement in synth.role_statements(spec.name):
            if any(a.startswith("kms:") for a in as_list(statement["Action"])):
                assert "kms:ViaService" in statement["Condition"]["StringEquals"], (spec.name, statement)


def test_the_authorizer_can_only_read_the_database_secret(synth: Synth) -> None:
    assert BY_NAME["authorizer"].access == frozenset({Access.DB_SECRET})
    business = {a for a in actions_of(synth, "authorizer") if a.split(":")[0] not in {"ec2", "xray", "logs", "kms"}}
    assert business == {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}


@pytest.fixture(scope="module")
def imported_secret(
    asset_tree: Path, tmp_path_factory: pytest.TempPathFactory, synthesizer: Callable[..., Synth]
) -> Synth:
    """Cockroach mode with the URL secret imported by name (one extra synth, this module only)."""
    return synthesizer(
        asset_tree,
        tmp_path_factory.mktemp("cdk-imported"),
        database="cockroach",
        cockroach_secret_name="contextos/cockroach-url",
    )


def test_an_imported_cockroach_secret_is_granted_by_name_with_its_random_suffix(imported_secret: Synth) -> None:
    imported_secret.template.resource_count_is("AWS::SecretsManager::Secret", 0)
    granted = resources_for(imported_secret, "api", "secretsmanager:GetSecretValue")
    assert ":secret:contextos/cockroach-url-??????" in granted
    env = imported_secret.functions()["api"][1]["Environment"]["Variables"]
    assert ":secret:contextos/cockroach-url" in json.dumps(env["CONTEXTOS_DATABASE_SECRET_ARN"])
