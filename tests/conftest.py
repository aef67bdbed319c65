"""The suite starts what it needs: an embedded PostgreSQL + pgvector and a moto server.

Nothing of ours is mocked. Each test gets its own tenant, so row-level security keeps tests
apart in one database, the same way it keeps customers apart.
"""

from __future__ import annotations

import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
warnings.filterwarnings("ignore", message="No application metrics to publish.*")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "contextos-tests")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
for name in ("CONTEXTOS_DATABASE_URL", "CONTEXTOS_DATABASE_SECRET_ARN", "AWS_PROFILE"):
    os.environ.pop(name, None)
# The suite's stacks say where they are here, never in the home folder of whoever runs the tests.
os.environ["CONTEXTOS_LOCAL_STACK_POINTER"] = str(Path(tempfile.mkdtemp(prefix="contextos-tests-")) / "stack.json")

REPO = Path(__file__).resolve().parents[1]


def migrated(url: str) -> str:
    """The database at ``url``, migrated for the local embedder the tests use."""
    from contextos.store.dialect import get_dialect
    from contextos.store.migrate import migrate

    migrate(url, get_dialect("postgres"), 384, "local:all-MiniLM-L6-v2-int8")
    return url


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real PostgreSQL 16 + pgvector for the whole session, migrated once."""
    from contextos.store.embedded import embedded_database_url

    return migrated(embedded_database_url(tmp_path_factory.mktemp("contextos")))


@pytest.fixture(scope="session")
def local_aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """An in-process moto server with the buckets, queues (and DLQs) and the S3 → SQS notification."""
    from contextos.local.aws import start_local_aws

    aws = start_local_aws(
        region="us-east-1",
        upload_bucket="contextos-uploads",
        cold_bucket="contextos-cold",
        upload_prefix="uploads/",
        queue_prefix="tests",
        visibility_timeout_s=1,
    )
    yield aws
    aws.stop()


@pytest.fixture
def configured(database_url: str, local_aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Settings pointing at the session's database and moto; every cached object rebuilt."""
    from contextos import container

    monkeypatch.setenv("CONTEXTOS_DATABASE_URL", database_url)
    monkeypatch.setenv("CONTEXTOS_INGEST_QUEUE_URL", local_aws.ingest_queue_url)
    monkeypatch.setenv("CONTEXTOS_CONVERSATION_QUEUE_URL", local_aws.conversation_queue_url)
    monkeypatch.setenv("CONTEXTOS_UPLOAD_BUCKET", local_aws.upload_bucket)
    monkeypatch.setenv("CONTEXTOS_COLD_BUCKET", local_aws.cold_bucket)
    container.reset()
    yield
    container.reset()


@pytest.fixture
def own_database(database_url: str) -> Iterator[str]:
    """A new database on the session's server, migrated as the session's is: for a job that walks
    every tenant of its database, which in the session's database are every earlier test's."""
    name = f"own_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield migrated(database_url.replace("/postgres?", f"/{name}?"))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def configured_alone(configured, own_database: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``configured``, with the database one of this test's own."""
    from contextos import container

    monkeypatch.setenv("CONTEXTOS_DATABASE_URL", own_database)
    container.reset()
    yield
    container.reset()


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sqs(local_aws):
    import boto3

    return boto3.client("sqs", region_name="us-east-1", endpoint_url=local_aws.endpoint)


@pytest.fixture
def s3(local_aws):
    import boto3

    return boto3.client("s3", region_name="us-east-1", endpoint_url=local_aws.endpoint)


@pytest.fixture
def drain_ingest_queue(sqs, local_aws):
    """Empty the ingest queue before a test that reads from it (messages from other tests).

    Receive-and-delete rather than PurgeQueue, which SQS (and moto) allow once a minute.
    """
    while messages := sqs.receive_message(
        QueueUrl=local_aws.ingest_queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
    ).get("Messages", []):
        sqs.delete_message_batch(
            QueueUrl=local_aws.ingest_queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )


@pytest.fixture(scope="session")
def local_embedder():
    from contextos.embedding.local import LocalMiniLMEmbedder

    return LocalMiniLMEmbedder()
