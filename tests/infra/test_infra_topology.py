"""The synthesized stack has the shape SPEC S1 and S13 describe."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from aws_cdk.assertions import Match

from infra.catalog import FUNCTIONS, UPLOAD_PREFIX
from infra.components.queues import MAX_RECEIVE_COUNT, VISIBILITY_FACTOR

if TYPE_CHECKING:
    from tests.infra.conftest import Synth


def test_every_catalog_function_is_deployed_with_its_handler(synth: Synth) -> None:
    functions = synth.functions()
    assert set(functions) == {spec.name for spec in FUNCTIONS}
    for _, props in functions.values():
        assert props["Handler"] == "handler.lambda_handler"


def test_every_function_runs_python312_on_arm64_with_tracing_json_logs_and_the_domain_layer(synth: Synth) -> None:
    # The domain layer; the console's BucketDeployments bring aws-cdk-lib's AWS CLI layer as well.
    (layer_id,) = (k for k in synth.resources("AWS::Lambda::LayerVersion") if k.startswith("Functions"))
    for name, (_, props) in synth.functions().items():
        assert props["Runtime"] == "python3.12", name
        assert props["Architectures"] == ["arm64"], name
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        assert props["LoggingConfig"]["LogFormat"] == "JSON", name
        assert props["Layers"] == [{"Ref": layer_id}], name


def test_the_domain_layer_targets_arm64_and_python312(synth: Synth) -> None:
    synth.template.has_resource_properties(
        "AWS::Lambda::LayerVersion",
        {"CompatibleArchitectures": ["arm64"], "CompatibleRuntimes": ["python3.12"]},
    )


def test_every_function_has_a_role_of_its_own(synth: Synth) -> None:
    roles = [json.dumps(props["Role"]) for _, props in synth.functions().values()]
    assert len(roles) == len(set(roles)) == len(FUNCTIONS)


def test_every_function_runs_in_the_private_subnets_with_the_client_security_group(synth: Synth) -> None:
    for name, (_, props) in synth.functions().items():
        vpc = props["VpcConfig"]
        assert len(vpc["SubnetIds"]) == 2, name
        assert all("private" in subnet["Ref"] for subnet in vpc["SubnetIds"]), name
        (group,) = vpc["SecurityGroupIds"]
        assert group["Fn::GetAtt"][0].startswith("NetworkLambdaClients"), name


def test_every_function_gets_the_shared_settings_environment(synth: Synth) -> None:
    expected = {
        "CONTEXTOS_UPLOAD_PREFIX": UPLOAD_PREFIX,
        "CONTEXTOS_RAW_PREFIX": "raw/",
        "CONTEXTOS_EMBEDDER": "bedrock",
        "CONTEXTOS_EXTRACTOR": "bedrock",
        "CONTEXTOS_JUDGE": "bedrock",
        "POWERTOOLS_SERVICE_NAME": "contextos",
        "POWERTOOLS_METRICS_NAMESPACE": "ContextOS",
    }
    referenced = (
        "CONTEXTOS_DATABASE_SECRET_ARN",
        "CONTEXTOS_UPLOAD_BUCKET",
        "CONTEXTOS_RAW_BUCKET",
        "CONTEXTOS_COLD_BUCKET",
        "CONTEXTOS_INGEST_QUEUE_URL",
        "CONTEXTOS_CONVERSATION_QUEUE_URL",
    )
    for name, (_, props) in synth.functions().items():
        env = props["Environment"]["Variables"]
        for key, value in expected.items():
            assert env[key] == value, (name, key)
        for key in referenced:
            assert isinstance(env[key], dict), (name, key)  # a reference to a resource, not a literal


def test_the_dialect_follows_the_database_mode(aurora: Synth, cockroach: Synth) -> None:
    for synth, dialect in ((aurora, "postgres"), (cockroach, "cockroach")):
        for _, props in synth.functions().values():
            assert props["Environment"]["Variables"]["CONTEXTOS_DATABASE_DIALECT"] == dialect


def test_functions_receive_the_database_secret_arn_and_never_a_password(synth: Synth) -> None:
    (secret_id,) = synth.resources("AWS::SecretsManager::Secret")
    attachments = synth.resources("AWS::SecretsManager::SecretTargetAttachment")
    allowed = [{"Ref": secret_id}, *({"Ref": a} for a in attachments)]
    for name, (_, props) in synth.functions().items():
        env = props["Environment"]["Variables"]
        assert env["CONTEXTOS_DATABASE_SECRET_ARN"] in allowed, name
        assert not any("PASSWORD" in key for key in env), name
        assert "{{resolve:" not in json.dumps(env), name  # no dynamic reference inlining a secret


def test_no_plaintext_password_appears_anywhere_in_the_template(synth: Synth) -> None:
    for resource in synth.json["Resources"].values():
        props = resource.get("Properties", {})
        password = props.get("MasterUserPassword")
        if password is not None:
            assert "{{resolve:secretsmanager:" in json.dumps(password)
    text = json.dumps(synth.json).lower()
    assert '"password": "' not in text


def test_work_queues_send_to_their_dead_letter_queues_after_three_receives(synth: Synth) -> None:
    queues = synth.resources("AWS::SQS::Queue")
    redriven = {k: v for k, v in queues.items() if "RedrivePolicy" in v["Properties"]}
    assert {k.split("Queue")[0] for k in redriven} == {
        "IngestionIngest",
        "IngestionConversation",
        "LifecycleEventsSample",
    }
    for queue in redriven.values():
        policy = queue["Properties"]["RedrivePolicy"]
        assert policy["maxReceiveCount"] == MAX_RECEIVE_COUNT
        dlq_id = policy["deadLetterTargetArn"]["Fn::GetAtt"][0]
        assert dlq_id in queues and "Dlq" in dlq_id


def test_every_queue_is_encrypted_with_the_customer_key_and_tls_only(synth: Synth) -> None:
    for logical_id, queue in synth.resources("AWS::SQS::Queue").items():
        assert "KmsMasterKeyId" in queue["Properties"], logical_id
    for policy in synth.resources("AWS::SQS::QueuePolicy").values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
        )


def test_queue_visibility_covers_six_consumer_timeouts(synth: Synth) -> None:
    functions = synth.functions()
    queues = synth.resources("AWS::SQS::Queue")
    for mapping in synth.resources("AWS::Lambda::EventSourceMapping").values():
        props = mapping["Properties"]
        queue = queues[props["EventSourceArn"]["Fn::GetAtt"][0]]
        consumer = next(p for lid, p in functions.values() if lid == props["FunctionName"]["Ref"])
        assert queue["Properties"]["VisibilityTimeout"] >= VISIBILITY_FACTOR * consumer["Timeout"]


def test_queue_consumers_report_batch_item_failures(synth: Synth) -> None:
    mappings = synth.resources("AWS::Lambda::EventSourceMapping")
    consumers = {m["Properties"]["FunctionName"]["Ref"] for m in mappings.values()}
    assert consumers == {synth.function_id("ingest"), synth.function_id("conversation")}
    for mapping in mappings.values():
        props = mapping["Properties"]
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert 1 <= props["BatchSize"] <= 10


def test_uploads_notify_the_ingest_queue_only_under_the_uploads_prefix(synth: Synth) -> None:
    (notifications,) = synth.resources("Custom::S3BucketNotifications").values()
    config = notifications["Properties"]["NotificationConfiguration"]
    (queue_config,) = config["QueueConfigurations"]
    assert queue_config["Events"] == ["s3:ObjectCreated:*"]
    assert queue_config["Filter"] == {"Key": {"FilterRules": [{"Name": "prefix", "Value": UPLOAD_PREFIX}]}}
    assert queue_config["QueueArn"]["Fn::GetAtt"][0].startswith("IngestionIngestQueue")
    assert notifications["Properties"]["BucketName"]["Ref"].startswith("StorageUpload")


def test_schedules_run_lifecycle_every_4_hours_sweeper_every_5_minutes_and_governance_daily(synth: Synth) -> None:
    expected = {
        "lifecycle": "rate(4 hours)",
        "sweeper": "rate(5 minutes)",
        "governance": "rate(1 day)",
        "events": "rate(1 minute)",
    }
    actual = {}
    ids = {synth.function_id(name): name for name in expected}
    for rule in synth.resources("AWS::Events::Rule").values():
        if "ScheduleExpression" not in rule["Properties"]:
            continue  # a rule on the memory-events bus, not a schedule
        (target,) = rule["Properties"]["Targets"]
        actual[ids[target["Arn"]["Fn::GetAtt"][0]]] = rule["Properties"]["ScheduleExpression"]
    assert actual == expected


def test_buckets_are_encrypted_private_and_access_logged(synth: Synth) -> None:
    buckets = synth.resources("AWS::S3::Bucket")
    assert len(buckets) == 6  # four for data, the console's assets and its edge logs
    for logical_id, bucket in buckets.items():
        props = bucket["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, logical_id
        (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        algorithm = rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"]
        if "AccessLogs" in logical_id:
            assert algorithm == "AES256"  # log delivery cannot write SSE-KMS objects
        elif logical_id.startswith("Console"):
            assert algorithm == "AES256"  # web assets read through OAC, and CloudFront's logs
            assert props["LoggingConfiguration"]["DestinationBucketName"]["Ref"].startswith("StorageAccessLogs")
        else:
            assert algorithm == "aws:kms", logical_id
            assert "KMSMasterKeyID" in rule["ServerSideEncryptionByDefault"], logical_id
            assert props["LoggingConfiguration"]["DestinationBucketName"]["Ref"].startswith("StorageAccessLogs")


def test_every_bucket_denies_requests_without_tls(synth: Synth) -> None:
    policies = synth.resources("AWS::S3::BucketPolicy")
    assert len(policies) == 6
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
            for s in statements
        )


def test_the_cold_bucket_is_versioned_and_moves_to_glacier_instant_retrieval(synth: Synth) -> None:
    (cold,) = (b for k, b in synth.resources("AWS::S3::Bucket").items() if k.startswith("StorageCold"))
    props = cold["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    transitions = [t for rule in props["LifecycleConfiguration"]["Rules"] for t in rule.get("Transitions", [])]
    assert transitions == [{"StorageClass": "GLACIER_IR", "TransitionInDays": 30}]


def test_the_api_has_an_api_key_authorizer_and_a_cognito_authorizer(synth: Synth) -> None:
    authorizers = synth.resources("AWS::ApiGateway::Authorizer")
    types = sorted(a["Properties"]["Type"] for a in authorizers.values())
    assert types == ["COGNITO_USER_POOLS", "REQUEST"]
    (request,) = (a for a in authorizers.values() if a["Properties"]["Type"] == "REQUEST")
    assert request["Properties"]["IdentitySource"] == "method.request.header.Authorization"
    assert synth.function_id("authorizer") in json.dumps(request["Properties"]["AuthorizerUri"])
    synth.template.resource_count_is("AWS::Cognito::UserPool", 1)


def test_agents_use_the_api_key_path_and_people_use_the_cognito_path(synth: Synth) -> None:
    resources = synth.resources("AWS::ApiGateway::Resource")
    paths = {}
    for logical_id, resource in resources.items():
        parent = resource["Properties"]["ParentId"]
        parent_part = resources[parent["Ref"]]["Properties"]["PathPart"] if "Ref" in parent else ""
        paths[logical_id] = f"{parent_part}/{resource['Properties']['PathPart']}"
    methods = {
        paths[m["Properties"]["ResourceId"]["Ref"]]: m["Properties"]
        for m in synth.resources("AWS::ApiGateway::Method").values()
    }
    assert set(methods) == {"v1/{proxy+}", "user/{proxy+}"}
    assert methods["v1/{proxy+}"]["AuthorizationType"] == "CUSTOM"
    assert methods["user/{proxy+}"]["AuthorizationType"] == "COGNITO_USER_POOLS"
    api_id = synth.function_id("api")
    for method in methods.values():
        assert method["HttpMethod"] == "ANY"
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert api_id in json.dumps(method["Integration"]["Uri"])


def test_the_api_stage_is_throttled_traced_and_access_logged(synth: Synth) -> None:
    (stage,) = synth.resources("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    assert props["TracingEnabled"] is True
    assert "ApiAccessLogs" in json.dumps(props["AccessLogSetting"]["DestinationArn"])
    (method_settings,) = props["MethodSettings"]
    assert method_settings["ThrottlingRateLimit"] > 0
    assert method_settings["ThrottlingBurstLimit"] > 0
    assert method_settings["LoggingLevel"] == "INFO"
    assert method_settings["DataTraceEnabled"] is False


def test_aurora_mode_runs_serverless_v2_postgres_16_encrypted_behind_rds_proxy(aurora: Synth) -> None:
    aurora.template.has_resource_properties(
        "AWS::RDS::DBCluster",
        {
            "Engine": "aurora-postgresql",
            "EngineVersion": Match.string_like_regexp(r"^16\."),
            "StorageEncrypted": True,
            "KmsKeyId": Match.any_value(),
            "EnableIAMDatabaseAuthentication": True,
            "DeletionProtection": True,
            "ServerlessV2ScalingConfiguration": Match.object_like({"MinCapacity": Match.any_value()}),
        },
    )
    aurora.template.has_resource_properties("AWS::RDS::DBInstance", {"DBInstanceClass": "db.serverless"})
    aurora.template.has_resource_properties("AWS::RDS::DBProxy", {"RequireTLS": True, "EngineFamily": "POSTGRESQL"})
    aurora.template.has_resource_properties("AWS::RDS::DBClusterParameterGroup", {"Parameters": {"rds.force_ssl": "1"}})
    aurora.template.resource_count_is("AWS::SecretsManager::RotationSchedule", 1)


def test_aurora_mode_points_functions_at_the_proxy(aurora: Synth) -> None:
    for _, props in aurora.functions().values():
        host = props["Environment"]["Variables"]["CONTEXTOS_DATABASE_HOST"]
        assert host["Fn::GetAtt"][1] == "Endpoint" and "Proxy" in host["Fn::GetAtt"][0]


def test_cockroach_mode_has_no_aurora_and_no_proxy(cockroach: Synth) -> None:
    for type_ in ("AWS::RDS::DBCluster", "AWS::RDS::DBInstance", "AWS::RDS::DBProxy"):
        cockroach.template.resource_count_is(type_, 0)
    for _, props in cockroach.functions().values():
        assert "CONTEXTOS_DATABASE_HOST" not in props["Environment"]["Variables"]


def test_cockroach_mode_keeps_the_url_in_a_kms_encrypted_secret(cockroach: Synth) -> None:
    (secret,) = cockroach.resources("AWS::SecretsManager::Secret").values()
    props = secret["Properties"]
    assert "KmsKeyId" in props
    assert '"url"' in props["GenerateSecretString"]["SecretStringTemplate"]
    assert "SecretString" not in props


def test_cockroach_mode_gives_lambdas_internet_egress_and_aurora_mode_does_not(aurora: Synth, cockroach: Synth) -> None:
    aurora.template.resource_count_is("AWS::EC2::NatGateway", 0)
    cockroach.template.resource_count_is("AWS::EC2::NatGateway", 1)


def test_migrations_run_as_a_custom_resource_backed_by_the_migrate_function(synth: Synth) -> None:
    (migrations,) = synth.resources("Custom::ContextOSMigrations").values()
    props = migrations["Properties"]
    assert set(props) >= {"ServiceToken", "Dialect", "MigrationsHash"}
    provider_fn = props["ServiceToken"]["Fn::GetAtt"][0]
    provider = synth.json["Resources"][provider_fn]["Properties"]
    assert synth.function_id("migrate") in json.dumps(provider["Environment"])


def test_the_network_reaches_aws_services_through_endpoints(synth: Synth) -> None:
    services = [json.dumps(e["Properties"]["ServiceName"]) for e in synth.resources("AWS::EC2::VPCEndpoint").values()]
    for service in (".s3", ".sqs", ".secretsmanager", ".bedrock-runtime"):
        assert any(service in s for s in services), service
    synth.template.resource_count_is("AWS::EC2::FlowLog", 1)


def test_the_database_accepts_connections_only_from_the_lambda_clients(aurora: Synth) -> None:
    ingress = aurora.resources("AWS::EC2::SecurityGroupIngress").values()
    to_database = [
        i["Properties"] for i in ingress if i["Properties"]["GroupId"]["Fn::GetAtt"][0].startswith("NetworkDatabase")
    ]
    cluster_port = {"Fn::GetAtt": [next(iter(aurora.resources("AWS::RDS::DBCluster"))), "Endpoint.Port"]}
    allowed_sources = ("NetworkLambdaClients", "NetworkDatabase", "DatabaseClusterRotationSingleUser")
    for rule in to_database:
        assert rule["FromPort"] == rule["ToPort"] and rule["FromPort"] in (5432, cluster_port), rule
        assert "CidrIp" not in rule, rule
        assert rule["SourceSecurityGroupId"]["Fn::GetAtt"][0].startswith(allowed_sources), rule


def test_alarms_watch_every_dead_letter_queue_and_every_function(synth: Synth) -> None:
    alarms = list(synth.resources("AWS::CloudWatch::Alarm").values())
    by_metric: dict[str, int] = {}
    for alarm in alarms:
        by_metric[alarm["Properties"]["MetricName"]] = by_metric.get(alarm["Properties"]["MetricName"], 0) + 1
        assert alarm["Properties"]["AlarmActions"], "every alarm notifies the alarm topic"
    assert by_metric["ApproximateNumberOfMessagesVisible"] == 2
    assert by_metric["Errors"] == len(FUNCTIONS)
    assert by_metric["Throttles"] == len(FUNCTIONS)
    synth.template.resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_every_contextos_variable_a_function_gets_is_a_setting_the_code_reads(aurora) -> None:
    """A misspelt variable would deploy fine and be ignored at run time (the default wins)."""
    from contextos.settings import Settings
    from pydantic import BaseModel

    for name, (_, props) in aurora.functions().items():
        for variable in props.get("Environment", {}).get("Variables", {}):
            if not variable.startswith("CONTEXTOS_"):
                continue
            model: type[BaseModel] = Settings
            path = variable.removeprefix("CONTEXTOS_").lower().split("__")
            for i, part in enumerate(path):
                assert part in model.model_fields, f"{name}: {variable} is no setting"
                annotation = model.model_fields[part].annotation
                if i < len(path) - 1:
                    assert isinstance(annotation, type) and issubclass(annotation, BaseModel), variable
                    model = annotation


def test_lifecycle_events_have_a_bus_a_sample_rule_and_only_the_relay_may_put_on_it(synth: Synth) -> None:
    (bus_id, bus), *others = synth.resources("AWS::Events::EventBus").items()
    assert others == [] and bus["Properties"]["Name"] == "contextos-memory-events"
    on_bus = [r for r in synth.resources("AWS::Events::Rule").values() if "EventBusName" in r["Properties"]]
    (sample,) = on_bus
    assert sample["Properties"]["EventPattern"]["source"] == ["contextos"]
    assert sample["Properties"]["EventBusName"] == {"Ref": bus_id}
    (target,) = sample["Properties"]["Targets"]
    assert target["Arn"]["Fn::GetAtt"][0].startswith("LifecycleEventsSampleQueue")
    putters = [spec.name for spec in FUNCTIONS if "events:PutEvents" in json.dumps(synth.role_statements(spec.name))]
    assert putters == ["events"]
    (statement,) = [s for s in synth.role_statements("events") if s["Action"] == "events:PutEvents"]
    assert statement["Resource"] == {"Fn::GetAtt": [bus_id, "Arn"]}
