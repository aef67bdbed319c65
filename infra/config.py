"""Deploy-time settings read from CDK context, validated before any construct is built.

Every number here is a default that `-c key=value` (or cdk.json) can override, so that the
constructs carry no magic values and a bad value fails fast with a message that names the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from aws_cdk import aws_logs as logs
from constructs import Node

REPO_ROOT = Path(__file__).resolve().parents[1]


class InfraConfigError(ValueError):
    """A context value or a required path is wrong; the message says how to fix it."""


# CloudWatch Logs accepts only these retention periods; keep to the common ones.
_RETENTION = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


class DatabaseMode(StrEnum):
    """Where the PostgreSQL-compatible store lives (SPEC S1, S13)."""

    AURORA = "aurora"
    COCKROACH = "cockroach"

    @property
    def dialect(self) -> str:
        """The value of CONTEXTOS_DATABASE_DIALECT that the domain package understands."""
        return "cockroach" if self is DatabaseMode.COCKROACH else "postgres"


@dataclass(frozen=True)
class InfraConfig:
    """Everything the stack needs to know that is not an AWS resource."""

    database: DatabaseMode = DatabaseMode.AURORA
    functions_root: Path = REPO_ROOT / "functions"
    layer_dir: Path = REPO_ROOT / "layers" / "build"
    migrations_dir: Path = REPO_ROOT / "shared" / "contextos" / "store" / "migrations"
    console_dir: Path = REPO_ROOT / "console" / "dist"
    cockroach_secret_name: str | None = None
    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    text_model_id: str = "amazon.nova-pro-v1:0"
    cold_archive_after_days: int = 30
    upload_expire_after_days: int = 30
    api_rate_limit: int = 50
    api_burst_limit: int = 100
    aurora_min_acu: float = 0.5
    aurora_max_acu: float = 8.0
    log_retention_days: int = 30

    @property
    def log_retention(self) -> logs.RetentionDays:
        """The CloudWatch retention enum for `log_retention_days` (validated on load)."""
        return _RETENTION[self.log_retention_days]

    @classmethod
    def from_node(cls, node: Node) -> InfraConfig:
        """Read the flat context keys documented in cdk.json (`-c key=value` overrides them)."""
        raw: dict[str, Any] = {}
        for key in (
            "database",
            "functions_root",
            "layer_dir",
            "migrations_dir",
            "console_dir",
            "cockroach_secret_name",
            "embedding_model_id",
            "text_model_id",
            "cold_archive_after_days",
            "upload_expire_after_days",
            "api_rate_limit",
            "api_burst_limit",
            "aurora_min_acu",
            "aurora_max_acu",
            "log_retention_days",
        ):
            value = node.try_get_context(key)
            if value is not None and value != "":
                raw[key] = value
        return cls.from_mapping(raw)

    @classmethod
    def from_mapping(cls, raw: dict[str, Any]) -> InfraConfig:
        """Coerce strings from `-c key=value` into typed, checked values."""
        values: dict[str, Any] = {}
        if "database" in raw:
            try:
                values["database"] = DatabaseMode(str(raw["database"]).lower())
            except ValueError as exc:
                allowed = ", ".join(m.value for m in DatabaseMode)
                raise InfraConfigError(
                    f"context 'database' must be one of: {allowed} (got {raw['database']!r})"
                ) from exc
        for key in ("functions_root", "layer_dir", "migrations_dir", "console_dir"):
            if key in raw:
                path = Path(str(raw[key]))
                values[key] = path if path.is_absolute() else REPO_ROOT / path
        for key in ("cockroach_secret_name", "embedding_model_id", "text_model_id"):
            if key in raw:
                values[key] = str(raw[key])
        for key in (
            "cold_archive_after_days",
            "upload_expire_after_days",
            "api_rate_limit",
            "api_burst_limit",
            "log_retention_days",
        ):
            if key in raw:
                values[key] = _positive(key, raw[key], int)
        for key in ("aurora_min_acu", "aurora_max_acu"):
            if key in raw:
                values[key] = _positive(key, raw[key], float)
        config = cls(**values)
        if config.log_retention_days not in _RETENTION:
            allowed = ", ".join(str(days) for days in _RETENTION)
            raise InfraConfigError(f"context 'log_retention_days' must be one of: {allowed}")
        if config.aurora_min_acu > config.aurora_max_acu:
            raise InfraConfigError("context 'aurora_min_acu' must not exceed 'aurora_max_acu'")
        return config


def _positive(key: str, value: Any, kind: type[int] | type[float]) -> Any:
    """Parse a positive number or fail with the key's name in the message."""
    try:
        parsed = kind(value)
    except (TypeError, ValueError) as exc:
        raise InfraConfigError(f"context {key!r} must be a number (got {value!r})") from exc
    if parsed <= 0:
        raise InfraConfigError(f"context {key!r} must be positive (got {value!r})")
    return parsed
