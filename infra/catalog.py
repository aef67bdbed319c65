"""The Lambda functions as data: what each one is, how big, and exactly what it may touch.

Keeping the grants here (not scattered through constructs) makes least privilege reviewable in
one screen and lets the infra tests compare the synthesized policies with this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from infra.config import InfraConfigError


class Access(StrEnum):
    """One capability a function may be granted; the factory turns each into IAM statements."""

    DB_SECRET = "db-secret"  # read the database connection secret
    INGEST_SEND = "ingest-send"
    INGEST_CONSUME = "ingest-consume"
    CONVERSATION_SEND = "conversation-send"
    CONVERSATION_CONSUME = "conversation-consume"
    UPLOAD_READ = "upload-read"  # objects under uploads/
    UPLOAD_WRITE = "upload-write"  # presigned PUT URLs are signed with the function's rights
    RAW_READ = "raw-read"
    RAW_WRITE = "raw-write"
    RAW_DELETE = "raw-delete"  # forgetting a document deletes its raw text
    COLD_READ = "cold-read"
    COLD_WRITE = "cold-write"
    # Erasure (S3): delete and list a tenant's objects in the upload, raw and cold buckets, and
    # rewrite a cold object without the erased members.
    ERASE = "erase"
    BEDROCK_EMBED = "bedrock-embed"
    BEDROCK_TEXT = "bedrock-text"  # extractor and judge (Converse)
    EVENTS_PUT = "events-put"  # lifecycle events onto the memory-events bus


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda: its folder under functions/, its size, and its grants."""

    name: str
    description: str
    timeout_seconds: int
    memory_mb: int
    access: frozenset[Access]

    @property
    def construct_id(self) -> str:
        """A stable CamelCase id so logical ids do not change when the table is reordered."""
        return "".join(part.capitalize() for part in self.name.split("_")) + "Function"


A = Access

FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        "api",
        "HTTP API (Powertools resolver): documents, memories, context, search, sessions",
        # API Gateway gives up at 29 s, so a longer timeout would only hide slowness.
        timeout_seconds=29,
        memory_mb=1024,
        access=frozenset(
            {
                A.DB_SECRET,
                A.INGEST_SEND,  # documents created from text are queued for ingestion
                A.CONVERSATION_SEND,  # an explicit session end flushes to the conversation queue
                A.UPLOAD_READ,
                A.UPLOAD_WRITE,  # presigned upload URLs
                A.RAW_READ,  # L2 excerpts come from raw text (S6.6)
                A.RAW_DELETE,  # DELETE /documents forgets the raw text too
                A.ERASE,  # /erasure: a user scope's or a tenant's objects in every bucket
                A.COLD_READ,  # cold matches are reactivated on the read path (S5)
                A.BEDROCK_EMBED,  # query embeddings
                A.BEDROCK_TEXT,  # manual memory creation runs the contradiction judge (S7)
            }
        ),
    ),
    FunctionSpec(
        "authorizer",
        "API-key Lambda authorizer (hashed keys in the database)",
        timeout_seconds=10,
        memory_mb=512,
        access=frozenset({A.DB_SECRET}),
    ),
    FunctionSpec(
        "ingest",
        "Ingest queue consumer: parse, extract, embed, store (S4)",
        timeout_seconds=300,
        memory_mb=2048,
        access=frozenset({A.DB_SECRET, A.INGEST_CONSUME, A.UPLOAD_READ, A.RAW_WRITE, A.BEDROCK_EMBED, A.BEDROCK_TEXT}),
    ),
    FunctionSpec(
        "conversation",
        "Conversation queue consumer: distil a flushed session into memories (S8)",
        timeout_seconds=120,
        memory_mb=1024,
        access=frozenset({A.DB_SECRET, A.CONVERSATION_CONSUME, A.BEDROCK_EMBED, A.BEDROCK_TEXT}),
    ),
    FunctionSpec(
        "lifecycle",
        "Lifecycle scan every 4 hours: decay, reminders, cold storage (S5)",
        timeout_seconds=900,
        memory_mb=1024,
        access=frozenset({A.DB_SECRET, A.COLD_READ, A.COLD_WRITE}),
    ),
    FunctionSpec(
        "sweeper",
        "Session sweeper every 5 minutes: flush idle sessions (S8)",
        timeout_seconds=60,
        memory_mb=512,
        # It must read the sessions table to find idle ones before it can enqueue a flush.
        access=frozenset({A.DB_SECRET, A.CONVERSATION_SEND}),
    ),
    FunctionSpec(
        "governance",
        "Daily governance report (S9)",
        timeout_seconds=900,
        memory_mb=1024,
        # conflict candidates: the most similar pairs go through the contradiction judge (Converse)
        access=frozenset({A.DB_SECRET, A.BEDROCK_TEXT}),
    ),
    FunctionSpec(
        "events",
        "Lifecycle events every minute: new memory decisions onto the event bus (S11)",
        timeout_seconds=60,
        memory_mb=512,
        access=frozenset({A.DB_SECRET, A.EVENTS_PUT}),
    ),
    FunctionSpec(
        "migrate",
        "CloudFormation custom resource: apply numbered SQL migrations",
        timeout_seconds=600,
        memory_mb=512,
        access=frozenset({A.DB_SECRET}),
    ),
)

BY_NAME: dict[str, FunctionSpec] = {spec.name: spec for spec in FUNCTIONS}

# The S3 key prefixes the functions and the bucket notification agree on.
UPLOAD_PREFIX = "uploads/"
RAW_PREFIX = "raw/"


def check_function_folders(root: Path, names: tuple[str, ...] | None = None) -> None:
    """Fail with one clear message naming every missing `functions/<name>/handler.py`.

    Synth must not silently drop a function (the API or a schedule would point at nothing),
    so a missing folder is an error, not a skipped resource.
    """
    wanted = names if names is not None else tuple(spec.name for spec in FUNCTIONS)
    missing = [name for name in wanted if not (root / name / "handler.py").is_file()]
    if missing:
        listed = ", ".join(f"{root / name / 'handler.py'}" for name in missing)
        raise InfraConfigError(
            f"missing Lambda handler file(s): {listed}. Every function in infra/catalog.py needs "
            "functions/<name>/handler.py defining lambda_handler(event, context); to synthesize "
            "against another tree pass -c functions_root=<dir>."
        )
