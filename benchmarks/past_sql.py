"""Past definitions of the BM25 function, kept as the baselines an A/B measures against.

A function lives once, as its repeatable definition (``store/definitions/``); the versioned
migrations that once carried earlier texts keep only their schema changes, so a benchmark or a
test that compares with an earlier text installs it from ``benchmarks/sql/`` into its own database.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

PAST_SQL = Path(__file__).with_name("sql")


def install_past_sql(owner_url: str, name: str) -> None:
    """Create the functions of ``benchmarks/sql/<name>.sql`` (as the database owner; idempotent)."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute((PAST_SQL / f"{name}.sql").read_text())
