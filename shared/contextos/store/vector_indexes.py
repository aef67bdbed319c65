"""Each large tenant's own ANN index (migration 0052), built and dropped online by the lifecycle job.

pgvector 0.6 filters an HNSW scan after the index: one index over every tenant's vectors gives a
tenant holding a few per cent of them a partial top k. A partial index per large tenant
(``WHERE tenant_id = '<t>' AND searchable AND indexed``) holds only that tenant's graph, and is
built ``CONCURRENTLY`` (writes go on) when the tenant's hot memories reach ``build_at``; it is
dropped when they fall below ``drop_below`` (hysteresis: a tenant near the line is not rebuilt
every scan). ``tenants.vector_index`` names an index only once it is valid, so the read path never
sends its ANN statement to a tenant whose index is still building (it scans that tenant exactly).
The shared index of migration 0006 is dropped once no tenant above the line is without its own.

DDL comes from the dialect (`Dialect.tenant_vector_index_sql`); where one index already serves
each tenant alone (CockroachDB's tenant-prefixed vector index) there is nothing to build.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection
from dataclasses import dataclass, field

import psycopg
from contextos.observability import logger
from contextos.store.db import Database

SHARED_INDEX = "memory_vectors_hnsw"


def index_name(tenant_id: str) -> str:
    """A stable index name for the tenant (any text may be a tenant id; an index name is at most
    63 plain characters)."""
    return "memory_vectors_hnsw_t_" + hashlib.sha256(tenant_id.encode()).hexdigest()[:24]


@dataclass
class IndexWork:
    """What one pass of the job did."""

    built: list[str] = field(default_factory=list)  # tenants
    dropped: list[str] = field(default_factory=list)
    shared_retired: bool = False
    build_s: dict[str, float] = field(default_factory=dict)


@dataclass
class TenantVectorIndexes:
    db: Database
    build_at: int = 5_000  # hot memories from which a tenant gets its own index
    drop_below: int = 2_500  # ... and below which it loses it
    max_builds: int = 4  # per pass: a build holds a core for seconds to minutes; the next scan goes on
    retire_shared: bool = True  # drop the shared index once it serves no one (a benchmark keeps it)

    def plan(self, only: Collection[str] | None = None) -> tuple[list[tuple[str, int]], list[str]]:
        """(tenants to build for, with their size, largest first; tenants whose index goes), among
        ``only`` when given."""
        with self.db.system_tx() as conn:
            rows = conn.execute(
                """SELECT tenant_id, hot_memories, vector_index FROM tenants
                   WHERE hot_memories >= %s OR vector_index IS NOT NULL
                   ORDER BY hot_memories DESC, tenant_id""",
                [min(self.build_at, self.drop_below)],
            ).fetchall()
        rows = [r for r in rows if only is None or r["tenant_id"] in only]
        build = [
            (r["tenant_id"], int(r["hot_memories"]))
            for r in rows
            if r["vector_index"] is None and r["hot_memories"] >= self.build_at
        ]
        drop = [r["tenant_id"] for r in rows if r["vector_index"] is not None and r["hot_memories"] < self.drop_below]
        return build, drop

    def run(self, only: Collection[str] | None = None) -> IndexWork:
        """Build what is due (at most ``max_builds``), drop what shrank, retire the shared index
        when it serves no one. Safe to run twice at once: ``IF NOT EXISTS``, and a build that died
        leaves an invalid index that the next pass drops and builds again. ``only``: these tenants
        alone (the shared index is then left as it is)."""
        work = IndexWork()
        probe = self.db.dialect.tenant_vector_index_sql("x", "x")
        if probe is None:
            return work
        build, drop = self.plan(only)
        with psycopg.connect(self.db.conninfo, autocommit=True) as owner:
            owner.execute("SET maintenance_work_mem = '1GB'")
            for tenant_id in drop:
                self._drop(owner, tenant_id)
                work.dropped.append(tenant_id)
            for tenant_id, size in build[: self.max_builds]:
                started = time.perf_counter()
                self._build(owner, tenant_id)
                work.built.append(tenant_id)
                work.build_s[tenant_id] = round(time.perf_counter() - started, 2)
                logger.info(
                    "tenant vector index built",
                    extra={"tenant": tenant_id, "hot_memories": size, "seconds": work.build_s[tenant_id]},
                )
            if self.retire_shared and only is None and len(build) <= self.max_builds and _exists(owner, SHARED_INDEX):
                # no tenant above the line is left without its own: the shared index only costs writes
                owner.execute(self.db.dialect.drop_index_sql(SHARED_INDEX))
                work.shared_retired = True
                logger.info("shared vector index retired")
        return work

    def _build(self, owner: psycopg.Connection, tenant_id: str) -> None:
        name = index_name(tenant_id)
        if _exists(owner, name) and not _valid(owner, name):  # a build that died half way
            owner.execute(self.db.dialect.drop_index_sql(name))
        ddl = self.db.dialect.tenant_vector_index_sql(name, tenant_id)
        assert ddl is not None
        owner.execute(ddl)
        owner.execute("UPDATE tenants SET vector_index = %s WHERE tenant_id = %s", [name, tenant_id])

    def _drop(self, owner: psycopg.Connection, tenant_id: str) -> None:
        # the read path stops sending the ANN statement first; a read between the two statements plans
        # an exact scan of the tenant (correct), and the drop invalidates any plan cached on the index
        owner.execute("UPDATE tenants SET vector_index = NULL WHERE tenant_id = %s", [tenant_id])
        owner.execute(self.db.dialect.drop_index_sql(index_name(tenant_id)))


def _exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", [name]).fetchone()[0]  # type: ignore[index]


def _valid(conn: psycopg.Connection, name: str) -> bool:
    row = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name]).fetchone()
    return bool(row and row[0])
