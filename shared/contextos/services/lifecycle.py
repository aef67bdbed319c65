"""The lifecycle scan (S5): set-based, keyset-batched, touching only memories whose band is due."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from contextos.models import LifecycleReport
from contextos.observability import logger, metrics
from contextos.store.repository import MemoryStore


@dataclass
class LifecycleService:
    store: MemoryStore
    batch_size: int = 5000
    housekeeping: list[Callable[[], int]] = field(default_factory=list)  # e.g. expired idempotency records

    def run(self, *, progress: Callable[[str, int], None] | None = None) -> LifecycleReport:
        """Materialize strengths and bands for every tenant. Safe to run twice at once (SKIP LOCKED)."""
        started = time.perf_counter()
        report = LifecycleReport()
        for tenant_id in self.store.tenant_ids():
            report.tenants += 1
            after = None
            while True:
                updated, after, bands = self.store.materialize_transitions(
                    tenant_id, batch_size=self.batch_size, after=after
                )
                report.materialized += updated
                for band, n in bands.items():
                    report.bands[band] = report.bands.get(band, 0) + n
                if progress:
                    progress(tenant_id, report.materialized)
                if after is None:
                    break
            while settled := self.store.settle_vectors(tenant_id, limit=self.batch_size):
                report.vectors_indexed += settled
        for chore in self.housekeeping:
            report.housekeeping += chore()
        report.elapsed_s = round(time.perf_counter() - started, 3)
        metrics.add_metric(name="MemoriesMaterialized", unit="Count", value=report.materialized)
        logger.info("lifecycle scan finished", extra=report.model_dump())
        return report
