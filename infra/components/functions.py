"""The Lambda factory: one place that decides runtime, architecture, logs, tracing, layer, VPC,
environment and a least-privilege role per function (STYLE 11).

Grants are written as explicit statements rather than L2 `grant_*` helpers: those add wildcard
actions (`s3:GetObject*`, `kms:GenerateDataKey*`, `s3:List*`) that a function never needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.catalog import FUNCTIONS, RAW_PREFIX, UPLOAD_PREFIX, Access, FunctionSpec, check_function_folders
from infra.components.database import DATABASE_NAME, Database
from infra.components.network import Network
from infra.config import InfraConfigError
from infra.nag import acknowledge, flatten_reference

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64

# Actions AWS only grants on Resource "*": Lambda's VPC network interfaces (the same set as the
# AWSLambdaVPCAccessExecutionRole managed policy) and X-Ray (added by CDK for active tracing).
ENI_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)
XRAY_ACTIONS = ("xray:PutTraceSegments", "xray:PutTelemetryRecords")


@dataclass(frozen=True)
class Dependencies:
    """What the functions reach: the resources behind the environment and the grants."""

    network: Network
    database: Database
    key: kms.IKey  # buckets and the database secret
    queue_key: kms.IKey  # the SQS queues
    upload_bucket: s3.IBucket
    raw_bucket: s3.IBucket
    cold_bucket: s3.IBucket
    ingest_queue: sqs.IQueue
    conversation_queue: sqs.IQueue
    event_bus: events.IEventBus
    embedding_model_id: str
    text_model_id: str


class Functions(Construct):
    """Every function of the catalog, built the same way; look them up by name."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        deps: Dependencies,
        functions_root: Path,
        layer_dir: Path,
        log_retention: logs.RetentionDays,
        specs: tuple[FunctionSpec, ...] = FUNCTIONS,
    ):
        super().__init__(scope, construct_id)
        self._deps = deps
        check_function_folders(functions_root, tuple(spec.name for spec in specs))
        if not (layer_dir / "python").is_dir():
            raise InfraConfigError(
                f"the domain layer is not built: {layer_dir / 'python'} does not exist. "
                "Run `bash layers/build.sh` (make layer) first, or pass -c layer_dir=<dir>."
            )
        self.layer = lambda_.LayerVersion(
            self,
            "DomainLayer",
            code=lambda_.Code.from_asset(str(layer_dir), exclude=["**/__pycache__", "**/*.pyc"]),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="ContextOS domain package and its runtime dependencies (arm64, Python 3.12)",
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.environment = self._environment()
        self.by_name: dict[str, lambda_.Function] = {}
        for spec in specs:
            self.by_name[spec.name] = self._function(spec, functions_root, log_retention)

    def __getitem__(self, name: str) -> lambda_.Function:
        return self.by_name[name]

    def _environment(self) -> dict[str, str]:
        """The settings every handler reads (SPEC S13); the secret's ARN, never its value."""
        d = self._deps
        env = {
            "CONTEXTOS_DATABASE_SECRET_ARN": d.database.secret.secret_arn,
            "CONTEXTOS_DATABASE_DIALECT": d.database.dialect,
            "CONTEXTOS_UPLOAD_BUCKET": d.upload_bucket.bucket_name,
            "CONTEXTOS_UPLOAD_PREFIX": UPLOAD_PREFIX,
            "CONTEXTOS_RAW_BUCKET": d.raw_bucket.bucket_name,
            "CONTEXTOS_RAW_PREFIX": RAW_PREFIX,
            "CONTEXTOS_COLD_BUCKET": d.cold_bucket.bucket_name,
            "CONTEXTOS_INGEST_QUEUE_URL": d.ingest_queue.queue_url,
            "CONTEXTOS_CONVERSATION_QUEUE_URL": d.conversation_queue.queue_url,
            "CONTEXTOS_EVENT_BUS_NAME": d.event_bus.event_bus_name,
            "CONTEXTOS_EMBEDDER": "bedrock",
            "CONTEXTOS_EXTRACTOR": "bedrock",
            "CONTEXTOS_JUDGE": "bedrock",
            # Nested pydantic-settings keys (env_nested_delimiter="__" in contextos.config).
            "CONTEXTOS_BEDROCK__EMBEDDING_MODEL_ID": d.embedding_model_id,
            "CONTEXTOS_BEDROCK__EXTRACTOR_MODEL_ID": d.text_model_id,
            "CONTEXTOS_BEDROCK__JUDGE_MODEL_ID": d.text_model_id,
            "CONTEXTOS_REGION": Aws.REGION,
            "POWERTOOLS_SERVICE_NAME": "contextos",
            "POWERTOOLS_METRICS_NAMESPACE": "ContextOS",
        }
        if d.database.host is not None:
            # Connect through RDS Proxy, not the cluster endpoint stored in the secret.
            env["CONTEXTOS_DATABASE_HOST"] = d.database.host
            env["CONTEXTOS_DATABASE_NAME"] = DATABASE_NAME
        return env

    def _function(self, spec: FunctionSpec, root: Path, log_retention: logs.RetentionDays) -> lambda_.Function:
        """One function: its own log group, its own role, the shared layer, inside the VPC."""
        code_dir = root / spec.name
        holder = Construct(self, spec.construct_id)
        log_group = logs.LogGroup(holder, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
        role = iam.Role(
            holder,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"ContextOS {spec.name} function (least privilege, see infra/catalog.py)",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
            )
        )
        role.add_to_policy(iam.PolicyStatement(actions=list(ENI_ACTIONS), resources=["*"]))
        for statement in self._statements(spec):
            role.add_to_policy(statement)

        net = self._deps.network
        function = lambda_.Function(
            holder,
            "Function",
            description=spec.description,
            runtime=RUNTIME,  # 3.12 because the layer's compiled wheels are built for it
            architecture=ARCHITECTURE,
            handler="handler.lambda_handler",
            code=lambda_.Code.from_asset(str(code_dir), exclude=["**/__pycache__", "**/*.pyc"]),
            layers=[self.layer],
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            role=role,
            environment=dict(self.environment),
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            log_group=log_group,
            vpc=net.vpc,
            vpc_subnets=net.private_subnets,
            security_groups=[net.lambda_sg],
        )
        self._acknowledge_wildcards(role, spec)
        acknowledge(
            function,
            "L1",
            "Pinned to python3.12 on purpose: the domain layer's compiled wheels (psycopg, "
            "pydantic-core) are built for CPython 3.12; move runtime and layer together.",
        )
        return function

    def _statements(self, spec: FunctionSpec) -> list[iam.PolicyStatement]:
        """Translate the catalog's capabilities into exact actions on exact resources."""
        d = self._deps
        region = Aws.REGION
        partition = Aws.PARTITION
        statements: list[iam.PolicyStatement] = []
        kms_via: dict[str, set[str]] = {}

        def need_kms(service: str, *actions: str) -> None:
            kms_via.setdefault(service, set()).update(actions)

        def objects(bucket: s3.IBucket, prefix: str) -> str:
            return bucket.arn_for_objects(f"{prefix}*")

        access = spec.access
        if Access.DB_SECRET in access:
            secret = d.database.secret
            arn = f"{secret.secret_arn}-??????" if d.database.secret_arn_is_partial else secret.secret_arn
            statements.append(
                iam.PolicyStatement(
                    actions=["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"], resources=[arn]
                )
            )
            if d.database.secret_key is not None:
                need_kms("secretsmanager", "kms:Decrypt")
        for send, consume, queue in (
            (Access.INGEST_SEND, Access.INGEST_CONSUME, d.ingest_queue),
            (Access.CONVERSATION_SEND, Access.CONVERSATION_CONSUME, d.conversation_queue),
        ):
            if send in access:
                statements.append(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[queue.queue_arn]))
                need_kms("sqs", "kms:GenerateDataKey", "kms:Decrypt")
            if consume in access:
                statements.append(
                    iam.PolicyStatement(
                        actions=[
                            "sqs:ReceiveMessage",
                            "sqs:DeleteMessage",
                            "sqs:ChangeMessageVisibility",
                            "sqs:GetQueueAttributes",
                        ],
                        resources=[queue.queue_arn],
                    )
                )
                need_kms("sqs", "kms:Decrypt")
        for capability, actions, resource in (
            (Access.UPLOAD_READ, ["s3:GetObject"], objects(d.upload_bucket, UPLOAD_PREFIX)),
            (Access.UPLOAD_WRITE, ["s3:PutObject", "s3:AbortMultipartUpload"], objects(d.upload_bucket, UPLOAD_PREFIX)),
            (Access.RAW_READ, ["s3:GetObject"], objects(d.raw_bucket, RAW_PREFIX)),
            (Access.RAW_WRITE, ["s3:PutObject", "s3:AbortMultipartUpload"], objects(d.raw_bucket, RAW_PREFIX)),
            (Access.RAW_DELETE, ["s3:DeleteObject"], objects(d.raw_bucket, RAW_PREFIX)),
            (Access.COLD_READ, ["s3:GetObject"], objects(d.cold_bucket, "")),
            (Access.COLD_WRITE, ["s3:PutObject", "s3:AbortMultipartUpload"], objects(d.cold_bucket, "")),
        ):
            if capability in access:
                statements.append(iam.PolicyStatement(actions=actions, resources=[resource]))
                if "s3:GetObject" in actions:
                    need_kms("s3", "kms:Decrypt")
                if "s3:PutObject" in actions:
                    need_kms("s3", "kms:GenerateDataKey", "kms:Decrypt")
        if Access.ERASE in access:
            erased = ((d.upload_bucket, UPLOAD_PREFIX), (d.raw_bucket, RAW_PREFIX), (d.cold_bucket, ""))
            statements.append(
                iam.PolicyStatement(
                    actions=["s3:DeleteObject"], resources=sorted({objects(b, p) for b, p in erased}, key=str)
                )
            )
            statements.append(
                iam.PolicyStatement(
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"], resources=[objects(d.cold_bucket, "")]
                )
            )
            statements.append(
                iam.PolicyStatement(
                    actions=["s3:ListBucket"], resources=sorted({b.bucket_arn for b, _ in erased}, key=str)
                )
            )
            need_kms("s3", "kms:GenerateDataKey", "kms:Decrypt")

        if Access.EVENTS_PUT in access:
            statements.append(iam.PolicyStatement(actions=["events:PutEvents"], resources=[d.event_bus.event_bus_arn]))
        models = []
        if Access.BEDROCK_EMBED in access:
            models.append(d.embedding_model_id)
        if Access.BEDROCK_TEXT in access:
            models.append(d.text_model_id)
        if models:
            statements.append(
                iam.PolicyStatement(
                    # Converse and InvokeModel are both authorized by bedrock:InvokeModel.
                    actions=["bedrock:InvokeModel"],
                    resources=[
                        f"arn:{partition}:bedrock:{region}::foundation-model/{model}" for model in sorted(set(models))
                    ],
                )
            )
        for service, actions in sorted(kms_via.items()):
            key = d.queue_key if service == "sqs" else d.key
            statements.append(
                iam.PolicyStatement(
                    actions=sorted(actions),
                    resources=[key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"{service}.{region}.amazonaws.com"}},
                )
            )
        return statements

    def _acknowledge_wildcards(self, role: iam.Role, spec: FunctionSpec) -> None:
        """Acknowledge each IAM5 finding on this role only, naming why the wildcard is needed."""
        acknowledge(
            role,
            "IAM5[Resource::*]",
            "Lambda VPC network-interface actions and X-Ray PutTraceSegments/PutTelemetryRecords "
            "support no resource-level permissions; only those actions are granted on '*' "
            "(enforced by tests/infra).",
        )
        d = self._deps
        stack = Stack.of(self)
        prefixed = {
            Access.UPLOAD_READ: (d.upload_bucket, UPLOAD_PREFIX),
            Access.UPLOAD_WRITE: (d.upload_bucket, UPLOAD_PREFIX),
            Access.RAW_READ: (d.raw_bucket, RAW_PREFIX),
            Access.RAW_WRITE: (d.raw_bucket, RAW_PREFIX),
            Access.RAW_DELETE: (d.raw_bucket, RAW_PREFIX),
            Access.COLD_READ: (d.cold_bucket, ""),
            Access.COLD_WRITE: (d.cold_bucket, ""),
        }
        seen: set[str] = set()
        wanted = [(c, bp) for c, bp in prefixed.items() if c in spec.access]
        if Access.ERASE in spec.access:
            wanted += [
                (Access.ERASE, bp)
                for bp in ((d.upload_bucket, UPLOAD_PREFIX), (d.raw_bucket, RAW_PREFIX), (d.cold_bucket, ""))
            ]
        for _capability, (bucket, prefix) in wanted:
            finding = flatten_reference(stack.resolve(bucket.arn_for_objects(f"{prefix}*")))
            if finding in seen:
                continue
            seen.add(finding)
            acknowledge(
                role,
                f"IAM5[Resource::{finding}]",
                f"Object keys are content hashes created at run time; access is limited to the "
                f"'{prefix or '(whole bucket)'}' key prefix of one bucket.",
            )
