"""The lifecycle scan (S5): set-based, keyset-batched, touching only memories whose band is due.

Per tenant: materialize due band transitions (opening reminders for newly critical memories),
archive forgotten and long-superseded memories to cold storage, expire scratch memories, settle
fresh vectors into the ANN index, then recount the words too common to search by (S6.2). After the
tenants, the tenants that grew past the line get an ANN index of their own, built online, and those
that shrank lose it (store/vector_indexes.py). Each batch
is its own transaction that claims its rows
with SKIP LOCKED, so a second scan running at once takes other rows, and a scan that dies is
resumed by the next one: the work left is whatever the indexes still find.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from contextos.config import LifecycleSettings
from contextos.models import LifecycleReport, Reminder, ReminderAcknowledged, ReminderPage
from contextos.observability import logger, metrics
from contextos.ports.admission import VectorSettling
from contextos.ports.lifecycle import LifecyclePort, TenantPort, VectorIndexJob
from contextos.services.cold import ColdStorage

Progress = Callable[[str, str, int], None]  # (tenant, stage, memories done in that stage)


@dataclass
class LifecycleService:
    tenants: TenantPort
    vectors: VectorSettling  # fresh vectors into the ANN index
    lifecycle: LifecyclePort
    cold: ColdStorage | None
    settings: LifecycleSettings = field(default_factory=LifecycleSettings)
    housekeeping: list[Callable[[], int]] = field(default_factory=list)  # e.g. expired idempotency records
    vector_indexes: VectorIndexJob | None = None  # each large tenant's own ANN index, after the tenants

    def run(self, *, progress: Progress | None = None, tenants: Collection[str] | None = None) -> LifecycleReport:
        """One scan over every tenant (or only ``tenants``). A tenant whose step fails is logged and left
        for the next scan."""
        started = time.perf_counter()
        report = LifecycleReport()
        work = self.lifecycle.due_work()  # one statement: the stages each tenant has something for
        for tenant_id in self.tenants.tenant_ids():
            if tenants is not None and tenant_id not in tenants:
                continue
            report.tenants += 1
            stages = None if work is None else work.get(tenant_id, frozenset())
            if stages is not None and not stages:
                continue
            try:
                self.scan_tenant(tenant_id, report, progress, stages=stages)
            except Exception:
                logger.exception("lifecycle scan of a tenant failed", extra={"tenant": tenant_id})
                report.failed_tenants.append(tenant_id)
        if self.vector_indexes is not None:
            # after the tenants: their settled vectors and fresh counts decide who gets an index
            clock = _StageClock(report)
            indexes = self.vector_indexes.run()
            report.vector_indexes_built += len(indexes.built)
            report.vector_indexes_dropped += len(indexes.dropped)
            clock.lap("vector_indexes")
        for chore in self.housekeeping:
            report.housekeeping += chore()
        report.elapsed_s = round(time.perf_counter() - started, 3)
        metrics.add_metric(name="MemoriesMaterialized", unit="Count", value=report.materialized)
        metrics.add_metric(name="MemoriesChangedBand", unit="Count", value=report.changed_band)
        logger.info("lifecycle scan finished", extra=report.model_dump())
        return report

    def scan_tenant(
        self,
        tenant_id: str,
        report: LifecycleReport,
        progress: Progress | None = None,
        *,
        stages: frozenset[str] | None = None,
    ) -> None:
        """Every stage for the tenant, or only ``stages`` (those `LifecycleStore.due_work` found work for)."""
        notify = progress or (lambda *_: None)
        batch = self.settings.batch_size
        clock = _StageClock(report)
        after = None
        forgotten_before = report.bands.get("forgotten", 0)
        while stages is None or "materialize" in stages:
            done = self.lifecycle.materialize(tenant_id, after=after, limit=batch)
            report.materialized += done.claimed
            report.changed_band += done.changed
            report.reminders_opened += done.reminders_opened
            for band, n in done.bands.items():
                report.bands[band] = report.bands.get(band, 0) + n
            notify(tenant_id, "materialized", report.materialized)
            if (after := done.after) is None:
                break
        clock.lap("materialize")
        # a memory the materialize step just moved into `forgotten` is archived in the same pass
        forgotten_here = report.bands.get("forgotten", 0) - forgotten_before
        if self.cold is not None and (stages is None or "archive" in stages or forgotten_here):
            after_id = None
            while True:
                archived, after_id = self.cold.archive_batch(tenant_id, after=after_id)
                report.archived += archived
                if archived:
                    notify(tenant_id, "archived", report.archived)
                if after_id is None:
                    break
            clock.lap("archive")
        while (stages is None or "expire" in stages) and (
            expired := self.lifecycle.expire_scratch(tenant_id, limit=batch)
        ):
            report.expired += expired
            notify(tenant_id, "expired", report.expired)
        clock.lap("expire")
        while (stages is None or "settle" in stages) and (
            settled := self.vectors.settle_vectors(tenant_id, limit=batch)
        ):
            report.vectors_indexed += settled
        clock.lap("settle_vectors")
        if stages is None or "text_statistics" in stages:
            report.common_lexemes += self.lifecycle.refresh_text_statistics(tenant_id)[0]
        clock.lap("text_statistics")

    def reminders(
        self, tenant_id: str, *, include_acknowledged: bool = False, limit: int | None = None, cursor: str | None = None
    ) -> ReminderPage:
        cap = self.settings.max_reminders_listed
        rows, next_cursor = self.lifecycle.reminders(
            tenant_id, include_acknowledged=include_acknowledged, limit=min(limit or cap, cap), cursor=cursor
        )
        return ReminderPage(reminders=[Reminder.model_validate(r) for r in rows], next_cursor=next_cursor)

    def acknowledge(self, tenant_id: str, reminder_id) -> ReminderAcknowledged:
        return ReminderAcknowledged.model_validate(self.lifecycle.acknowledge(tenant_id, reminder_id))


class _StageClock:
    """Adds the seconds since the last lap to the report's per-stage totals."""

    def __init__(self, report: LifecycleReport) -> None:
        self.report = report
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.report.stage_s[stage] = round(self.report.stage_s.get(stage, 0.0) + now - self.last, 4)
        self.last = now
