"""The settings model read from the environment: every ``CONTEXTOS_*`` variable.

Its own module because pydantic-settings is heavy to import (it loads every source it ships:
dotenv, CLI, the cloud secret stores, asyncio): ``contextos.current_settings.get_settings``
imports it at the first read, so a function's import pays only for the plain models of ``contextos.config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contextos.config import (
    BedrockSettings,
    ConversationSettings,
    DecaySettings,
    Dialect,
    EdgeSettings,
    ExtractionSettings,
    GovernanceSettings,
    LifecycleSettings,
    LocalServerSettings,
    MergeSettings,
    ReportSettings,
    RetrievalSettings,
)
from contextos.models import Provenance


class Settings(BaseSettings):
    """All of ContextOS's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="CONTEXTOS_", env_nested_delimiter="__", extra="ignore", defer_build=True
    )

    # Database: an explicit URL, a Secrets Manager secret (in AWS), or the embedded default.
    database_url: str | None = None
    database_secret_arn: str | None = None
    database_host: str | None = None  # e.g. the RDS Proxy endpoint, preferred over the secret's host
    database_name: str | None = None
    database_dialect: Dialect = "postgres"
    # pgvector >= 0.8 (Aurora): filtered HNSW scans iterate instead of filtering one beam
    database_iterative_scan: bool = False
    data_dir: Path = Path(".contextos")
    # Where a running ``contextos dev`` also says where it is, so a CLI, hook or MCP client started
    # from any other folder finds it (the data dir above is relative to the folder it started in).
    local_stack_pointer: Path = Field(default_factory=lambda: Path.home() / ".contextos" / "stack.json")
    pool_min_size: int = 1
    pool_max_size: int = 8
    secret_max_age_s: int = 300

    # AWS resources (moto in the local stack and the tests).
    region: str = "us-east-1"
    upload_bucket: str = "contextos-uploads"
    upload_prefix: str = "uploads/"
    # A file dropped into the bucket carries no credential, so no ceiling: whoever may write the
    # bucket is vouched for at this level. Lower it (e.g. external_doc) when the bucket is fed by
    # pipelines that copy outside material: what falls below the trust threshold is then held.
    upload_drop_provenance: Provenance = Provenance.user_upload
    raw_bucket: str | None = None  # defaults to the upload bucket
    raw_prefix: str = "raw/"
    cold_bucket: str = "contextos-cold"
    ingest_queue_url: str | None = None
    local_queue_prefix: str = "contextos"  # queue names in the local stack's moto
    conversation_queue_url: str | None = None
    event_bus_name: str = "contextos-memory-events"  # lifecycle events (S11)

    # Models.
    embedder: Literal["local", "bedrock"] = "local"
    extractor: Literal["local", "bedrock"] = "local"
    judge: Literal["local", "bedrock"] = "local"
    bedrock: BedrockSettings = Field(default_factory=BedrockSettings)

    # Documents.
    max_document_bytes: int = 20 * 1024 * 1024
    # A document held longer than this by a worker that died is taken over by the next delivery;
    # above the ingest function's timeout, below its queue's visibility timeout.
    document_stale_processing_s: int = 900
    inline_text_max_bytes: int = 256 * 1024

    decay: DecaySettings = Field(default_factory=DecaySettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    merge: MergeSettings = Field(default_factory=MergeSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    reports: ReportSettings = Field(default_factory=ReportSettings)
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    governance: GovernanceSettings = Field(default_factory=GovernanceSettings)
    edge: EdgeSettings = Field(default_factory=EdgeSettings)
    local_server: LocalServerSettings = Field(default_factory=LocalServerSettings)

    @property
    def raw_bucket_name(self) -> str:
        return self.raw_bucket or self.upload_bucket

    @property
    def embedding_dimensions(self) -> int:
        """The vector column's dimension follows the configured embedder (S1)."""
        return self.bedrock.embedding_dimensions if self.embedder == "bedrock" else 384
