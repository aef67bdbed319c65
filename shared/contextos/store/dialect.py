"""The one seam between PostgreSQL and CockroachDB (S1): DDL sections, search breadth, locks.

Queries are shared where the engines agree; where they differ, a ``match`` on the dialect
picks the SQL, so a new backend is a new case, not a fork.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DialectName = Literal["postgres", "cockroach"]
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
DEFINITIONS_DIR = Path(__file__).with_name("definitions")
_SECTION = re.compile(r"-- dialect: (postgres|cockroach|end)")


@dataclass(frozen=True, slots=True)
class Dialect:
    name: DialectName
    # pgvector >= 0.8 (Aurora PostgreSQL 16.x ships it): a filtered HNSW scan keeps walking the graph
    # until enough rows pass the filter, instead of filtering one beam (the embedded 0.6.2 has none)
    iterative_scan: bool = False

    def search_breadth_sql(self, breadth: int) -> str:
        """Set the ANN index's search breadth for the current transaction only."""
        breadth = int(breadth)
        match self.name:
            case "postgres":
                return f"SET LOCAL hnsw.ef_search = {breadth}"
            case "cockroach":
                return f"SET LOCAL vector_search_beam_size = {breadth}"

    def filtered_scan_sql(self) -> str | None:
        """For an ANN scan filtered inside the tenant (a scope): let the index keep scanning, in
        distance order, until the filter has passed enough rows, where the engine can (pgvector
        >= 0.8's iterative scans); None where it cannot, and the caller widens its breadth instead."""
        match self.name:
            case "postgres":
                return "SET LOCAL hnsw.iterative_scan = strict_order" if self.iterative_scan else None
            case "cockroach":
                return None  # its vector index is prefixed by the tenant; a scope is filtered after it

    def tenant_vector_index_sql(self, index: str, tenant_id: str) -> str | None:
        """DDL building one tenant's own ANN index online, or None where one index already serves
        each tenant alone (CockroachDB's is prefixed by tenant_id, migration 0002). The tenant is a
        literal in the predicate: a partial index is only matched by a statement that names it."""
        match self.name:
            case "postgres":
                return (
                    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {_identifier(index)} ON memory_vectors"
                    " USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
                    f" WHERE tenant_id = {_literal(tenant_id)} AND searchable AND indexed"
                )
            case "cockroach":
                return None

    def drop_index_sql(self, index: str) -> str:
        """Drop an index without blocking the table's reads and writes."""
        match self.name:
            case "postgres":
                return f"DROP INDEX CONCURRENTLY IF EXISTS {_identifier(index)}"
            case "cockroach":
                return f"DROP INDEX IF EXISTS memory_vectors@{_identifier(index)}"

    def tenant_literal(self, tenant_id: str) -> str:
        """The tenant as an SQL string literal, for the statements a partial index must match."""
        return _literal(tenant_id)

    def ann_post_filters(self) -> bool:
        """Whether the ANN index filters after its scan, so a small tenant can come up short and
        needs an exact pass (pgvector 0.6); the exact pass is a statement text the index cannot
        serve, never a planner switch a cached plan would ignore.

        CockroachDB's vector index is prefixed by tenant_id, so its ANN is already scoped.
        """
        match self.name:
            case "postgres":
                return True
            case "cockroach":
                return False

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

    def band_bucket_sql(self, key: str) -> str:
        """What ``band_row_sql`` compares a band row with, computed from a band ``key`` (same
        parameters as ``band_match_sql``)."""
        match self.name:
            case "postgres":
                return f"(%(tenant_bucket)s::int8 | {key})"
            case "cockroach":
                return key

    def band_row_sql(self, band: str, bucket: str) -> str:
        """``band_match_sql`` against a ``band_bucket_sql`` value computed in a fenced subquery (a
        plain column, ``bucket``). A join condition that applies ``|`` to another relation's column
        is not leakproof, so under row-level security PostgreSQL cannot probe the band index with it
        and reads the whole band table instead (seconds at 100k memories); a column compared by
        plain equality can."""
        match self.name:
            case "postgres":
                return f"{band}.bucket = {bucket} AND {band}.tenant_id = %(tenant)s"
            case "cockroach":
                return f"{band}.tenant_id = %(tenant)s AND {band}.band_key = {bucket}"

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

    def migration_lock_sql(self) -> tuple[str, str] | None:
        """(try-lock, unlock) statements that hold one migrator at a time per database, each taking
        the lock key (the try-lock returns whether it got it: a migrator waits between short tries,
        never inside a statement, so a ``CREATE INDEX CONCURRENTLY`` of the one holding it does not
        wait for the waiters' snapshots); None where the engine has no session lock (CockroachDB's
        schema changes are transactional and ``IF NOT EXISTS`` keeps a concurrent rerun harmless)."""
        match self.name:
            case "postgres":
                return "SELECT pg_try_advisory_lock(%s)", "SELECT pg_advisory_unlock(%s)"
            case "cockroach":
                return None

    def ranks_in_sql(self) -> bool:
        """Whether text search ranks in SQL: the phrase and BM25 functions (migration 0015 and
        store/definitions/) and a scope's own BM25 over tsvector positions; CockroachDB has neither, so the store
        ranks there by inline phrase queries."""
        match self.name:
            case "postgres":
                return True
            case "cockroach":
                return False

    def has_definitions(self) -> bool:
        """Whether the engine has the store's SQL functions (store/definitions/: BM25, the lifecycle's
        work list); CockroachDB has none, and its callers do the work in plainer SQL."""
        match self.name:
            case "postgres":
                return True
            case "cockroach":
                return False

    def vectors_carry_scope(self) -> bool:
        """Whether memory_vectors holds a copy of each memory's user, agent, run and tags (migration
        0023, kept by triggers); CockroachDB reads them from memories."""
        match self.name:
            case "postgres":
                return True
            case "cockroach":
                return False

    def containment_predicates(self, alias: str, *, tags: bool, metadata: bool, enumerates: bool) -> list[str]:
        """A scope's tag and metadata containment on a memories ``alias`` (parameters ``scope_tags``
        and ``scope_metadata``). A statement that finds a scope's rows from the filter alone
        (``enumerates``) on PostgreSQL goes through the owner-side functions of migration 0018, so
        their GIN indexes serve it under row-level security; one that only checks rows it already has
        tests containment on them directly."""
        match self.name:
            case "postgres" if enumerates:
                return [
                    *([f"{alias}.id IN (SELECT contextos_tagged_memories(%(scope_tags)s::text[]))"] if tags else []),
                    *([f"{alias}.id IN (SELECT contextos_metadata_memories(%(scope_metadata)s))"] if metadata else []),
                ]
            case _:
                return [
                    *([f"{alias}.tags @> %(scope_tags)s::text[]"] if tags else []),
                    *([f"{alias}.metadata @> %(scope_metadata)s"] if metadata else []),
                ]

    def keeps_subject_terms(self) -> bool:
        """Whether the contradiction gate's subject index (``memory_subject_terms``, migration 0021)
        and the cold stubs' kept lexemes exist, so a large tenant is probed by subject and cold stubs
        can be found as updated; CockroachDB has neither, and its gate scans its (tenant-prefixed)
        vector index instead."""
        match self.name:
            case "postgres":
                return True
            case "cockroach":
                return False

    def combines_statements(self) -> bool:
        """Whether independent writes may go as one multi-statement string in a pipeline
        (``contextos.store.batch``); other engines run them one by one."""
        match self.name:
            case "postgres":
                return True
            case "cockroach":
                return False

    def keeps_text_statistics(self) -> bool:
        """Whether the lifecycle scan counts lexemes with ``ts_stat`` (the common words and BM25's
        document frequencies); without it every word is searched and counts are read live."""
        match self.name:
            case "postgres":
                return True
            case "cockroach":
                return False

    def migration_files(self) -> list[tuple[int, str, Path]]:
        """(version, name, file) for every migration: one ``NNNN_name.sql`` file each, both dialects."""
        files: dict[int, tuple[str, Path]] = {}
        for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
            version, name = path.stem.split("_", 1)
            if int(version) in files:
                raise ValueError(f"two migrations numbered {version}: {files[int(version)][1].name}, {path.name}")
            files[int(version)] = (name, path)
        return [(v, n, p) for v, (n, p) in sorted(files.items())]

    def migration_sql(self, text: str) -> str:
        """A migration file's SQL for this dialect: shared lines, plus this dialect's sections.

        A section runs from a ``-- dialect: <name>`` line to the next marker line
        (``-- dialect: end`` closes it); marker lines themselves are dropped, so the rendered
        text is byte-for-byte what the engine runs (and what ``schema_version`` checksums).
        """
        kept: list[str] = []
        section: str | None = None
        for line in text.splitlines(keepends=True):
            marker = _SECTION.fullmatch(line.rstrip("\r\n"))
            if marker:
                name = marker.group(1)
                section = None if name == "end" else name
                continue
            if section is None or section == self.name:
                kept.append(line)
        if section is not None:
            raise ValueError(f"a '-- dialect: {section}' section is not closed with '-- dialect: end'")
        return "".join(kept)

    def render_migrations(self, embedding_dim: int) -> list[tuple[int, str, str]]:
        """The SQL text of every migration for this dialect, placeholders filled."""
        return [
            (version, name, _fill(self.migration_sql(path.read_text()), embedding_dim))
            for version, name, path in self.migration_files()
        ]

    def render_definitions(self, embedding_dim: int, directory: Path = DEFINITIONS_DIR) -> list[tuple[str, str]]:
        """(name, SQL) of every repeatable definition this dialect has: one ``<name>.sql`` file per
        function or view, sectioned like a migration; a file with no statement for this dialect
        (only comments) is not one of its definitions."""
        rendered = (
            (path.stem, _fill(self.migration_sql(path.read_text()), embedding_dim))
            for path in sorted(directory.glob("*.sql"))
        )
        return [(name, sql) for name, sql in rendered if _has_statement(sql)]


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _identifier(name: str) -> str:
    """An index name the store made itself (`vector_indexes.index_name`); anything else is refused."""
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"not a plain identifier: {name!r}")
    return name


def _literal(text: str) -> str:
    """A standard-conforming SQL string literal (quotes doubled; no backslash escapes in either engine)."""
    if "\x00" in text:
        raise ValueError("a NUL cannot be part of an SQL literal")
    return "'" + text.replace("'", "''") + "'"


def _fill(sql: str, embedding_dim: int) -> str:
    return sql.replace("{{embedding_dim}}", str(int(embedding_dim)))


def _has_statement(sql: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("--") for line in sql.splitlines())


def get_dialect(name: DialectName, *, iterative_scan: bool = False) -> Dialect:
    if name not in ("postgres", "cockroach"):
        raise ValueError(f"unknown database dialect {name!r}")
    return Dialect(name, iterative_scan)
