"""The SQL of re-embedding: which hot memories carry another embedder's vector, and the batch write."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from contextos.lsh import Sketch
from contextos.ports.rows import ReembedRow, rows_of
from contextos.store.bands import delete_bands, insert_bands, keys_literal
from contextos.store.db import Database
from pgvector import Vector


@dataclass
class ReembedStore:
    db: Database

    def pending(self, tenant_id: str, embedder_id: str) -> int:
        rows = self.db.tenant_read(
            tenant_id,
            (
                """SELECT count(*) AS n FROM memory_vectors v
                   JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                   WHERE v.tenant_id = %s AND v.embedder_id <> %s AND m.tier = 'hot'""",
                [tenant_id, embedder_id],
            ),
        )
        return int(rows[0]["n"])

    def stored_dimension(self) -> int | None:
        """The vector dimension the schema was built for (None before the first migration wrote it)."""
        with self.db.system_tx() as conn:
            row = conn.execute("SELECT value FROM store_meta WHERE key = 'embedding_dim'").fetchone()
        return int(row["value"]) if row else None

    def batch(self, tenant_id: str, embedder_id: str, after: UUID, limit: int) -> list[ReembedRow]:
        """The next pending memories (id, label, definition) in id order after ``after``."""
        rows = self.db.tenant_read(
            tenant_id,
            (
                """SELECT m.id, m.label, m.definition FROM memory_vectors v
                   JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                   WHERE v.tenant_id = %s AND v.embedder_id <> %s AND m.tier = 'hot' AND m.id > %s
                   ORDER BY m.id LIMIT %s""",
                [tenant_id, embedder_id, after, limit],
            ),
        )
        return rows_of(ReembedRow, rows)

    def write(self, tenant_id: str, embedder_id: str, ids: list[UUID], vectors: list[list[float]], lsh: Sketch) -> None:
        """The new vectors and their LSH bands, set-based, in one transaction."""
        with self.db.tenant_tx(tenant_id) as conn:
            delete_bands(conn, self.db.dialect, tenant_id, ids)
            conn.execute(
                """UPDATE memory_vectors AS v SET embedding = s.e, embedder_id = %s, band_keys = s.k::int[],
                          updated_at = now()
                   FROM unnest(%s::uuid[], %s::vector[], %s::text[]) AS s(id, e, k)
                   WHERE v.tenant_id = %s AND v.memory_id = s.id""",
                [embedder_id, ids, [Vector(v) for v in vectors], [keys_literal(k) for k in lsh.band_keys], tenant_id],
            )
            insert_bands(conn, tenant_id, ids, lsh.signatures, lsh.band_keys, fresh=False)
