"""Lifecycle events (S11): what happened to a memory, for other systems to react to, published on an
EventBridge bus. Pure: the schema, the audit actions it is made from, and the PutEvents entries.

Schema ``contextos.memory-event`` version ``1`` (the ``detail`` of each event; the detail-type names
the kind): ``version``, ``id`` (stable per event: a consumer de-duplicates on it, since delivery is at
least once), ``kind``, ``tenant_id``, ``memory_id``, ``label``, ``at``, ``actor``, ``reason``.
Never the memory's definition, excerpts or sources: an event names what changed, the API says what it
holds, to whoever may read it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from contextos.modelbase import BaseModel

EVENT_SOURCE = "contextos"
SCHEMA_VERSION = "1"
EventKind = Literal[
    "memory.admitted",
    "memory.superseded",
    "memory.held",
    "memory.promoted",
    "memory.forgotten",
    "memory.reactivated",
    "reminder.due",
]
# audit action → event kind; the other actions (merges, edits, corroborations, …) are not events
KIND_OF_ACTION: dict[str, EventKind] = {
    "admitted": "memory.admitted",
    "superseded": "memory.superseded",
    "held": "memory.held",
    "promoted": "memory.promoted",
    "deleted": "memory.forgotten",
    "reactivated": "memory.reactivated",
}
DETAIL_TYPES: dict[EventKind, str] = {
    "memory.admitted": "Memory Admitted",
    "memory.superseded": "Memory Superseded",
    "memory.held": "Memory Held For Review",
    "memory.promoted": "Memory Promoted",
    "memory.forgotten": "Memory Forgotten",
    "memory.reactivated": "Memory Reactivated",
    "reminder.due": "Reminder Due",
}
PUT_EVENTS_MAX = 10  # EventBridge's limit of entries per PutEvents call
LABEL_MAX = 200


class MemoryEvent(BaseModel):
    version: Literal["1"] = "1"  # SCHEMA_VERSION
    id: str
    kind: EventKind
    tenant_id: str
    memory_id: UUID | None = None
    label: str | None = None
    at: datetime
    actor: str | None = None
    reason: str | None = None


def put_entries(events: list[MemoryEvent], bus_name: str) -> list[dict[str, Any]]:
    """PutEvents entries, one per event; the caller sends them at most ``PUT_EVENTS_MAX`` at a time."""
    return [
        {
            "Source": EVENT_SOURCE,
            "DetailType": DETAIL_TYPES[event.kind],
            "Detail": json.dumps(
                event.model_copy(update={"label": (event.label or None) and event.label[:LABEL_MAX]}).model_dump(
                    mode="json"
                )
            ),
            "EventBusName": bus_name,
            "Time": event.at,
        }
        for event in events
    ]
