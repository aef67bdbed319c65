"""The ContextOS stack: composes one construct per concern and wires them, nothing more."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.catalog import FUNCTIONS, UPLOAD_PREFIX
from infra.components.api import Api
from infra.components.console import Console
from infra.components.database import Database, migrations_fingerprint
from infra.components.events import LifecycleEvents
from infra.components.functions import Dependencies, Functions
from infra.components.ingestion import Ingestion
from infra.components.network import Network
from infra.components.observability import Observability
from infra.components.schedules import Schedules
from infra.components.storage import Storage
from infra.config import InfraConfig


class ContextOsStack(Stack):
    """Network, storage, queues, database, functions, API, schedules, observability."""

    def __init__(self, scope: Construct, construct_id: str, *, config: InfraConfig, **kwargs: object):
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.config = config

        network = Network(self, "Network", mode=config.database, log_retention=config.log_retention)
        storage = Storage(
            self,
            "Storage",
            upload_prefix=UPLOAD_PREFIX,
            cold_archive_after_days=config.cold_archive_after_days,
            upload_expire_after_days=config.upload_expire_after_days,
        )
        ingestion = Ingestion(self, "Ingestion")
        database = Database(
            self,
            "Database",
            mode=config.database,
            network=network,
            key=storage.key,
            min_acu=config.aurora_min_acu,
            max_acu=config.aurora_max_acu,
            cockroach_secret_name=config.cockroach_secret_name,
        )
        lifecycle_events = LifecycleEvents(self, "LifecycleEvents", key=ingestion.key)
        functions = Functions(
            self,
            "Functions",
            deps=Dependencies(
                network=network,
                database=database,
                key=storage.key,
                queue_key=ingestion.key,
                upload_bucket=storage.upload,
                raw_bucket=storage.raw,
                cold_bucket=storage.cold,
                ingest_queue=ingestion.ingest.queue,
                conversation_queue=ingestion.conversation.queue,
                event_bus=lifecycle_events.bus,
                embedding_model_id=config.embedding_model_id,
                text_model_id=config.text_model_id,
            ),
            functions_root=config.functions_root,
            layer_dir=config.layer_dir,
            log_retention=config.log_retention,
            specs=FUNCTIONS,
        )
        ingestion.connect(
            upload_bucket=storage.upload, ingest=functions["ingest"], conversation=functions["conversation"]
        )
        database.add_migrations(
            functions["migrate"],
            fingerprint=migrations_fingerprint(config.migrations_dir),
            log_retention=config.log_retention,
        )
        api = Api(
            self,
            "Api",
            handler=functions["api"],
            authorizer=functions["authorizer"],
            rate_limit=config.api_rate_limit,
            burst_limit=config.api_burst_limit,
            log_retention=config.log_retention,
        )
        console = Console(
            self,
            "Console",
            dist=config.console_dir,
            rest_api=api.rest_api,
            access_logs=storage.access_logs,
            log_retention=config.log_retention,
        )
        Schedules(self, "Schedules", functions=dict(functions.by_name))
        Observability(
            self,
            "Observability",
            key=ingestion.key,
            functions=dict(functions.by_name),
            queues={
                "Ingest": (ingestion.ingest.queue, ingestion.ingest.dlq),
                "Conversation": (ingestion.conversation.queue, ingestion.conversation.dlq),
            },
            rest_api=api.rest_api,
        )

        CfnOutput(self, "ApiUrl", value=api.rest_api.url)
        CfnOutput(self, "UserPoolId", value=api.user_pool.user_pool_id)
        CfnOutput(self, "UserPoolClientId", value=api.user_pool_client.user_pool_client_id)
        CfnOutput(self, "UploadBucketName", value=storage.upload.bucket_name)
        CfnOutput(self, "DatabaseSecretArn", value=database.secret.secret_arn)
        CfnOutput(self, "ConsoleUrl", value=f"{console.url}/console/")
