"""``contextos reembed``: give every hot memory a vector from the configured embedder, in batches.

Resumable by construction: a memory whose vector already carries the configured embedder's id is
done, so a run that stops half way (or a second run) continues with the rest. Each batch is
embedded outside any transaction and written in one, with its LSH bands, set-based. Cold stubs
keep their vector until a query brings them back (their text lives in cold storage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
from pgvector import Vector

from contextos.embedding import Embedder
from contextos.errors import SchemaMismatch
from contextos.lsh import sketch
from contextos.store.bands import delete_bands, insert_bands, keys_literal
from contextos.store.db import Database


@dataclass
class ReembedReport:
    tenants: int = 0
    reembedded: int = 0
    remaining_by_tenant: dict[str, int] = field(default_factory=dict)


@dataclass
class Reembedder:
    db: Database
    embedder: Embedder
    batch_size: int = 128

    def pending(self, tenant_id: str) -> int:
        rows = self.db.tenant_read(
            tenant_id,
            (
                """SELECT count(*) AS n FROM memory_vectors v
                   JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                   WHERE v.tenant_id = %s AND v.embedder_id <> %s AND m.tier = 'hot'""",
                [tenant_id, self.embedder.model_id],
            ),
        )
        return int(rows[0]["n"])

    def check_dimension(self) -> None:
        with self.db.system_tx() as conn:
            row = conn.execute("SELECT value FROM store_meta WHERE key = 'embedding_dim'").fetchone()
        if row and int(row["value"]) != self.embedder.dimensions:
            raise SchemaMismatch(
                f"the store holds {row['value']}-d vectors and {self.embedder.model_id} gives "
                f"{self.embedder.dimensions}-d: re-embedding in place needs the same dimension; "
                "point CONTEXTOS_DATABASE_URL at a new database and re-ingest (or export/import) instead"
            )

    def run(self, tenant_ids: list[str], *, progress: Callable[[str, int, int], None] | None = None) -> ReembedReport:
        """Re-embed each tenant's pending memories; ``progress(tenant, done, total)`` after each batch."""
        self.check_dimension()
        report = ReembedReport()
        for tenant_id in tenant_ids:
            total = self.pending(tenant_id)
            done = 0
            after = UUID(int=0)
            report.tenants += 1
            while total:
                batch = self._batch(tenant_id, after)
                if not batch:
                    break
                vectors = self.embedder.embed([f"{r['label']}: {r['definition']}" for r in batch])
                self._write(tenant_id, batch, vectors)
                done += len(batch)
                after = batch[-1]["id"]
                if progress:
                    progress(tenant_id, done, total)
            report.reembedded += done
            report.remaining_by_tenant[tenant_id] = self.pending(tenant_id)
        return report

    def _batch(self, tenant_id: str, after: UUID) -> list[dict]:
        return self.db.tenant_read(
            tenant_id,
            (
                """SELECT m.id, m.label, m.definition FROM memory_vectors v
                   JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                   WHERE v.tenant_id = %s AND v.embedder_id <> %s AND m.tier = 'hot' AND m.id > %s
                   ORDER BY m.id LIMIT %s""",
                [tenant_id, self.embedder.model_id, after, self.batch_size],
            ),
        )

    def _write(self, tenant_id: str, batch: list[dict], vectors: list[list[float]]) -> None:
        ids = [r["id"] for r in batch]
        lsh = sketch(np.asarray(vectors, dtype=np.float32))
        with self.db.tenant_tx(tenant_id) as conn:
            delete_bands(conn, self.db.dialect, tenant_id, ids)
            conn.execute(
                """UPDATE memory_vectors AS v SET embedding = s.e, embedder_id = %s, band_keys = s.k::int[],
                          updated_at = now()
                   FROM unnest(%s::uuid[], %s::vector[], %s::text[]) AS s(id, e, k)
                   WHERE v.tenant_id = %s AND v.memory_id = s.id""",
                [
                    self.embedder.model_id,
                    ids,
                    [Vector(v) for v in vectors],
                    [keys_literal(k) for k in lsh.band_keys],
                    tenant_id,
                ],
            )
            insert_bands(conn, tenant_id, ids, lsh.signatures, lsh.band_keys, fresh=False)
