"""Past texts of the store's SQL definitions, read from this repository's history.

A function lives once, as its repeatable definition (``store/definitions/``). A benchmark that
measures the present text against an earlier one names the revision it was current at and reads it
from git: a baseline is a revision, never a second copy kept in the tree. (Two whole revisions are
compared with ``benchmarks/ab.py``, which passes the repository's ``GIT_DIR`` to its exported trees.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from contextos.store.dialect import get_dialect

ROOT = Path(__file__).resolve().parents[1]
DEFINITIONS = "shared/contextos/store/definitions"


def past_definition(revision: str, name: str) -> str:
    """Definition ``name`` as it was at ``revision``, rendered for PostgreSQL (CREATE OR REPLACE:
    installing it replaces the present text until the present one is applied again)."""
    shown = subprocess.run(
        ["git", "show", f"{revision}:{DEFINITIONS}/{name}.sql"], cwd=ROOT, capture_output=True, text=True
    )
    if shown.returncode != 0:
        raise SystemExit(f"{name} at {revision} is not in this repository's history: {shown.stderr.strip()}")
    return get_dialect("postgres").migration_sql(shown.stdout)
