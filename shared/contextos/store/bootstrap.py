"""Apply migrations from settings alone (deploy-time custom resource, ``contextos migrate``)."""

from __future__ import annotations

from contextos.current_settings import get_settings
from contextos.store.db import embedder_id_for, resolve_database_url
from contextos.store.dialect import get_dialect
from contextos.store.migrate import migrate


def migrate_from_settings() -> list[int]:
    settings = get_settings()
    return migrate(
        resolve_database_url(settings),
        get_dialect(settings.database_dialect),
        settings.embedding_dimensions,
        embedder_id_for(settings),
    )
