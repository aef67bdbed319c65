"""The one seam between PostgreSQL and CockroachDB (S1): DDL files, search breadth, locks.

Queries are shared where the engines agree; where they differ, a ``match`` on the dialect
picks the SQL, so a new backend is a new case, not a fork.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DialectName = Literal["postgres", "cockroach"]
MIGRATIONS_DIR = Path(__file__).with_name("migrations")


@dataclass(frozen=True, slots=True)
class Dialect:
    name: DialectName

    def search_breadth_sql(self, breadth: int) -> str:
        """Set the ANN index's search breadth for the current transaction only."""
        breadth = int(breadth)
        match self.name:
            case "postgres":
                return f"SET LOCAL hnsw.ef_search = {breadth}"
            case "cockroach":
                return f"SET LOCAL vector_search_beam_size = {breadth}"

    def exact_scan_sql(self) -> str | None:
        """Make the next vector query an exact scan (pgvector 0.6 post-filters ANN results).

        CockroachDB's vector index is prefixed by tenant_id, so its ANN is already scoped.
        """
        match self.name:
            case "postgres":
                return "SET LOCAL enable_indexscan = off"
            case "cockroach":
                return None

    def index_scans_only_sql(self) -> str | None:
        """Keep the next query off sequential scans, where every filter it has is indexed.

        CockroachDB's optimizer has no such switch (and its scoped plans were not measured here).
        """
        match self.name:
            case "postgres":
                return "SET LOCAL enable_seqscan = off"
            case "cockroach":
                return None

    def try_lock_sql(self) -> str | None:
        """A transaction-scoped try-lock keyed by text (None where the engine has none)."""
        match self.name:
            case "postgres":
                return "SELECT pg_try_advisory_xact_lock(hashtext(%s))"
            case "cockroach":
                return None

    def signature_filter_sql(self, band: str, probe: str, max_distance: str) -> str:
        """A condition keeping band matches whose LSH signature prefix (``contextos.lsh.signature_prefix``,
        ``probe`` a bigint) is within ``max_distance`` bits."""
        match self.name:
            case "postgres":
                # The band index carries the signature's first 64 bits (signature64, migration 0014).
                return (
                    f"({band}.signature64 IS NULL"
                    f" OR bit_count(({band}.signature64 # {probe})::bit(64)) <= {max_distance})"
                )
            case "cockroach":
                return "true"

    def band_match_sql(self, band: str, key: str) -> str:
        """A condition matching the tenant's band rows (alias ``band``) whose band key is ``key``, as
        an index probe. Needs the ``tenant`` and ``tenant_bucket`` parameters (``bands.tenant_bucket``).
        PostgreSQL keys band rows by a bigint bucket (migration 0014); the tenant check stays, so a
        hash collision cannot match another tenant's row."""
        match self.name:
            case "postgres":
                return f"{band}.bucket = (%(tenant_bucket)s::int8 | {key}) AND {band}.tenant_id = %(tenant)s"
            case "cockroach":
                return f"{band}.tenant_id = %(tenant)s AND {band}.band_key = {key}"

    def band_tenant_sql(self, band: str) -> str:
        """A condition selecting all of the tenant's band rows through the index (same parameters)."""
        match self.name:
            case "postgres":
                return (
                    f"{band}.bucket BETWEEN %(tenant_bucket)s::int8 AND %(tenant_bucket)s::int8 + 4294967295"
                    f" AND {band}.tenant_id = %(tenant)s"
                )
            case "cockroach":
                return f"{band}.tenant_id = %(tenant)s"

    def migration_files(self) -> list[tuple[int, str, Path]]:
        """(version, name, file) for every migration, preferring ``NNNN_name.<dialect>.sql``."""
        chosen: dict[int, tuple[str, Path]] = {}
        for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
            parts = path.name.split(".")
            stem, variant = parts[0], (parts[1] if len(parts) == 3 else None)
            version = int(stem.split("_", 1)[0])
            name = stem.split("_", 1)[1]
            if variant == self.name or (variant is None and version not in chosen):
                chosen[version] = (name, path)
        return [(v, n, p) for v, (n, p) in sorted(chosen.items())]

    def render_migrations(self, embedding_dim: int) -> list[tuple[int, str, str]]:
        """The SQL text of every migration for this dialect, placeholders filled."""
        return [
            (version, name, path.read_text().replace("{{embedding_dim}}", str(int(embedding_dim))))
            for version, name, path in self.migration_files()
        ]


def get_dialect(name: DialectName) -> Dialect:
    if name not in ("postgres", "cockroach"):
        raise ValueError(f"unknown database dialect {name!r}")
    return Dialect(name)
