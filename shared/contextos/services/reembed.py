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

from contextos.embedding import Embedder
from contextos.errors import SchemaMismatch
from contextos.lsh import sketch
from contextos.ports.keys import ReembedPort
from contextos.ports.rows import ReembedRow


@dataclass
class ReembedReport:
    tenants: int = 0
    reembedded: int = 0
    remaining_by_tenant: dict[str, int] = field(default_factory=dict)


@dataclass
class Reembedder:
    store: ReembedPort
    embedder: Embedder
    batch_size: int = 128

    def pending(self, tenant_id: str) -> int:
        return self.store.pending(tenant_id, self.embedder.model_id)

    def check_dimension(self) -> None:
        stored = self.store.stored_dimension()
        if stored is not None and stored != self.embedder.dimensions:
            raise SchemaMismatch(
                f"the store holds {stored}-d vectors and {self.embedder.model_id} gives "
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

    def _batch(self, tenant_id: str, after: UUID) -> list[ReembedRow]:
        return self.store.batch(tenant_id, self.embedder.model_id, after, self.batch_size)

    def _write(self, tenant_id: str, batch: list[ReembedRow], vectors: list[list[float]]) -> None:
        lsh = sketch(np.asarray(vectors, dtype=np.float32))
        self.store.write(tenant_id, self.embedder.model_id, [r["id"] for r in batch], vectors, lsh)
