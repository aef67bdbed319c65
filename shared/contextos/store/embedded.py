"""The embedded PostgreSQL 16 + pgvector (PyPI ``pgserver``): the local and test default (S12)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from contextos.observability import logger

_lock = threading.Lock()
_servers: dict[Path, Any] = {}


def embedded_database_url(data_dir: Path) -> str:
    """Start (or join) the embedded server whose data lives under ``data_dir/pg``; return its DSN.

    Several processes on one data dir share one postmaster; it stops when the last one exits.
    """
    pgdata = (Path(data_dir) / "pg").resolve()
    with _lock:
        server = _servers.get(pgdata)
        if server is None:
            try:
                import pgserver
            except ImportError as exc:  # pragma: no cover - the local extra is missing
                raise RuntimeError(
                    "the embedded database needs the 'local' extra (pip install 'contextos[local]') "
                    "or set CONTEXTOS_DATABASE_URL"
                ) from exc
            pgdata.mkdir(parents=True, exist_ok=True)
            server = pgserver.get_server(pgdata)
            _servers[pgdata] = server
            logger.info("embedded PostgreSQL started", extra={"pgdata": str(pgdata)})
        return server.get_uri()
