"""Database: Aurora Serverless v2 PostgreSQL 16 behind RDS Proxy, or an external CockroachDB.

Either way the functions only ever see a Secrets Manager ARN (never a password) and a dialect.
Migrations run at deploy time as a custom resource so that schema and code ship together.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.components.network import DB_PORT, Network
from infra.config import DatabaseMode
from infra.nag import acknowledge

DATABASE_NAME = "contextos"
PLACEHOLDER_URL = "postgresql://set-me.invalid:26257/contextos?sslmode=verify-full"


def migrations_fingerprint(migrations_dir: Path) -> str:
    """Hash of the SQL migration files: a changed file changes the custom resource, which re-runs it."""
    digest = hashlib.sha256()
    if migrations_dir.is_dir():
        for path in sorted(migrations_dir.rglob("*.sql")):
            digest.update(path.relative_to(migrations_dir).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class Database(Construct):
    """The store the functions connect to, chosen by the `database` context value."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        mode: DatabaseMode,
        network: Network,
        key: kms.IKey,
        min_acu: float,
        max_acu: float,
        cockroach_secret_name: str | None,
    ):
        super().__init__(scope, construct_id)
        self.mode = mode
        self.dialect = mode.dialect
        self.host: str | None = None
        self.cluster: rds.DatabaseCluster | None = None
        self.proxy: rds.DatabaseProxy | None = None
        # Whether the secret ARN is complete; an imported-by-name secret needs the `-??????` suffix.
        self.secret_arn_is_partial = False
        # The key that encrypts the secret, when it is ours (functions need kms:Decrypt on it).
        self.secret_key: kms.IKey | None = key

        if mode is DatabaseMode.AURORA:
            self.secret = self._aurora(network, key, min_acu, max_acu)
        elif cockroach_secret_name:
            self.secret = secretsmanager.Secret.from_secret_name_v2(self, "CockroachUrl", cockroach_secret_name)
            self.secret_arn_is_partial = True
            self.secret_key = None  # an imported secret is expected to use the aws/secretsmanager key
        else:
            created = secretsmanager.Secret(
                self,
                "CockroachUrl",
                description=(
                    'ContextOS CockroachDB connection: JSON {"url": "postgresql://user:pass@host:26257/'
                    'contextos?sslmode=verify-full"}. Created with a placeholder URL: put the real one '
                    "here before the first deploy that runs migrations."
                ),
                encryption_key=key,
                # JSON with a `url` key is what contextos.store.db reads; the placeholder URL is
                # deliberately unresolvable so a forgotten secret fails loudly, not silently.
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    secret_string_template=json.dumps({"url": PLACEHOLDER_URL}),
                    generate_string_key="placeholder",
                    exclude_punctuation=True,
                    password_length=16,
                ),
                removal_policy=RemovalPolicy.RETAIN,
            )
            acknowledge(
                created,
                "SMG4",
                "The secret holds the URL of an external CockroachDB cluster whose credentials are "
                "issued and rotated in CockroachDB itself; AWS has no rotation function for it.",
            )
            self.secret = created

    def _aurora(self, network: Network, key: kms.IKey, min_acu: float, max_acu: float) -> secretsmanager.ISecret:
        """Aurora Serverless v2 (writer plus a reader in another AZ) with RDS Proxy in front."""
        parameters = rds.ParameterGroup(
            self,
            "Parameters",
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=rds.AuroraPostgresEngineVersion.VER_16_9),
            parameters={"rds.force_ssl": "1"},  # TLS for every connection, proxy included
        )
        cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=rds.AuroraPostgresEngineVersion.VER_16_9),
            credentials=rds.Credentials.from_generated_secret(
                "contextos_admin", encryption_key=key, exclude_characters=" %+~`#$&*()|[]{}:;<>?!'/@\"\\"
            ),
            default_database_name=DATABASE_NAME,
            parameter_group=parameters,
            writer=rds.ClusterInstance.serverless_v2("Writer", auto_minor_version_upgrade=True),
            readers=[
                rds.ClusterInstance.serverless_v2("Reader", scale_with_writer=True, auto_minor_version_upgrade=True)
            ],
            serverless_v2_min_capacity=min_acu,
            serverless_v2_max_capacity=max_acu,
            vpc=network.vpc,
            vpc_subnets=network.private_subnets,
            security_groups=[network.database_sg],
            port=DB_PORT,
            storage_encrypted=True,
            storage_encryption_key=key,
            iam_authentication=True,
            deletion_protection=True,
            backup=rds.BackupProps(retention=Duration.days(7)),
            cloudwatch_logs_exports=["postgresql"],
            removal_policy=RemovalPolicy.SNAPSHOT,
        )
        acknowledge(
            cluster,
            "RDS11",
            "Only the Lambda and RDS Proxy security groups can reach the cluster, and RDS Proxy "
            "always listens on 5432; a non-default port would add no protection.",
        )
        assert cluster.secret is not None  # from_generated_secret always yields one
        cluster.add_rotation_single_user(automatically_after=Duration.days(30))

        proxy = cluster.add_proxy(
            "Proxy",
            secrets=[cluster.secret],
            vpc=network.vpc,
            vpc_subnets=network.private_subnets,
            security_groups=[network.database_sg],
            require_tls=True,
            borrow_timeout=Duration.seconds(30),
            idle_client_timeout=Duration.minutes(30),
        )
        self.cluster = cluster
        self.proxy = proxy
        self.host = proxy.endpoint
        return cluster.secret

    def add_migrations(
        self,
        migrate: lambda_.IFunction,
        *,
        fingerprint: str,
        log_retention: logs.RetentionDays,
    ) -> CustomResource:
        """Run `functions/migrate` on every deploy whose migration files changed.

        The provider framework answers CloudFormation, so the handler only returns
        `{"PhysicalResourceId": ...}` or raises; it receives `Dialect` and `MigrationsHash`.
        """
        provider = cr.Provider(
            self,
            "MigrationsProvider",
            on_event_handler=migrate,
            log_group=logs.LogGroup(
                self, "MigrationsProviderLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
            ),
        )
        framework = provider.node.find_child("framework-onEvent")
        acknowledge(
            framework,
            "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "The CDK custom-resource provider framework creates this role; it only writes its logs.",
        )
        acknowledge(
            framework,
            f"IAM5[Resource::<{self._logical_ref(migrate)}.Arn>:*]",
            "The provider framework may invoke any version of the migrate function it fronts.",
        )
        acknowledge(
            framework,
            "L1",
            "The provider framework's Node.js runtime is chosen by aws-cdk-lib, not by this app.",
        )
        resource = CustomResource(
            self,
            "Migrations",
            service_token=provider.service_token,
            resource_type="Custom::ContextOSMigrations",
            properties={"Dialect": self.dialect, "MigrationsHash": fingerprint},
        )
        if self.cluster is not None and self.proxy is not None:
            resource.node.add_dependency(self.cluster)
            resource.node.add_dependency(self.proxy)
        return resource

    @staticmethod
    def _logical_ref(function: lambda_.IFunction) -> str:
        """The logical id cdk-nag prints for a function's ARN inside an IAM5 finding."""
        default_child = function.node.default_child
        assert default_child is not None
        return Stack.of(function).get_logical_id(default_child)  # type: ignore[arg-type]
