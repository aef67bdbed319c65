"""The lifecycle events' relay: each tenant's new audit decisions and reminders onto the event bus.

At least once: a position moves only after its events were accepted, so a crash publishes some
events again (each carries a stable id for consumers to de-duplicate) and never skips one. Safe to
run twice at once for the same reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from contextos.lifecycle_events import KIND_OF_ACTION, PUT_EVENTS_MAX, MemoryEvent, put_entries
from contextos.modelbase import BaseModel
from contextos.ports.reports import EventOutboxPort
from contextos.ports.rows import AuditEventRow, ReminderEventRow

BATCH = 500


class EventBus(Protocol):
    """Puts at most ``PUT_EVENTS_MAX`` entries; raises when any entry was not accepted."""

    def put(self, entries: list[dict]) -> None: ...


class RelayReport(BaseModel):
    tenants: int
    published: int
    by_kind: dict[str, int]


class EventRelay:
    def __init__(
        self, outbox: EventOutboxPort, bus: EventBus, bus_name: str, tenant_ids: Callable[[], list[str]]
    ) -> None:
        self._outbox, self._bus, self._bus_name, self._tenant_ids = outbox, bus, bus_name, tenant_ids

    def run(self, tenant_ids: list[str] | None = None) -> RelayReport:
        by_kind: dict[str, int] = {}
        tenants = self._tenant_ids() if tenant_ids is None else tenant_ids
        for tenant_id in tenants:
            for event in self._relay_audit(tenant_id) + self._relay_reminders(tenant_id):
                by_kind[event.kind] = by_kind.get(event.kind, 0) + 1
        return RelayReport(tenants=len(tenants), published=sum(by_kind.values()), by_kind=by_kind)

    def _relay_audit(self, tenant_id: str) -> list[MemoryEvent]:
        sent: list[MemoryEvent] = []
        while True:
            _after, rows = self._outbox.audit_after_cursor(tenant_id, BATCH)
            if not rows:
                return sent
            events = [audit_event(tenant_id, r) for r in rows if r["action"] in KIND_OF_ACTION]
            self._publish(events)
            self._outbox.advance(tenant_id, rows[-1]["chain_seq"])
            sent += events
            if len(rows) < BATCH:
                return sent

    def _relay_reminders(self, tenant_id: str) -> list[MemoryEvent]:
        sent: list[MemoryEvent] = []
        while rows := self._outbox.unpublished_reminders(tenant_id, BATCH):
            events = [reminder_event(tenant_id, r) for r in rows]
            self._publish(events)
            self._outbox.mark_reminders(tenant_id, [r["id"] for r in rows])
            sent += events
            if len(rows) < BATCH:
                break
        return sent

    def _publish(self, events: list[MemoryEvent]) -> None:
        entries = put_entries(events, self._bus_name)
        for start in range(0, len(entries), PUT_EVENTS_MAX):
            self._bus.put(entries[start : start + PUT_EVENTS_MAX])


def audit_event(tenant_id: str, row: AuditEventRow) -> MemoryEvent:
    return MemoryEvent(
        id=f"{tenant_id}:audit:{row['chain_seq']}",
        kind=KIND_OF_ACTION[row["action"]],
        tenant_id=tenant_id,
        memory_id=row["memory_id"],
        label=row["label"],
        at=row["at"],
        actor=row["actor"],
        reason=row["reason"],
    )


def reminder_event(tenant_id: str, row: ReminderEventRow) -> MemoryEvent:
    return MemoryEvent(
        id=f"{tenant_id}:reminder:{row['id']}",
        kind="reminder.due",
        tenant_id=tenant_id,
        memory_id=row["memory_id"],
        label=row["label"],
        at=row["opened_at"],
    )
