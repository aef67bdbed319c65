"""A workspace export's pieces (S10): a stored memory as its file's model, and the byte sink an
archive streams through."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any, overload

from contextos.workspace.model import (
    Access,
    Scope,
    State,
    Strength,
    WorkspaceEdge,
    WorkspaceMemory,
    WorkspaceSource,
)


@overload
def _utc(value: datetime | str) -> datetime: ...
@overload
def _utc(value: None) -> None: ...
def _utc(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC)


def memory_of_row(row: dict) -> WorkspaceMemory:
    """A stored memory (an export row) as its workspace file's model."""
    cold = (
        {"object": row["cold_object_key"], "start": row["cold_byte_start"], "end": row["cold_byte_end"]}
        if row["cold_object_key"]
        else None
    )
    return WorkspaceMemory(
        id=row["id"],
        type=row["type"],
        l0=row["label"],
        importance=row["importance"],
        tags=list(row["tags"] or []),
        related=[WorkspaceEdge.model_validate(e) for e in row["edges"]],
        created=_utc(row["created_at"]),
        modified=_utc(row["updated_at"]),
        version=row["version"],
        always_load=row["always_load"],
        protected=row["protected"],
        strength=Strength(
            anchor=row["strength_anchor"],
            anchored=_utc(row["strength_anchor_at"]),
            policy=row["decay_policy"],
            rate=row["decay_rate"],
            scale=row["decay_scale"],
            shape=row["decay_shape"],
        ),
        provenance=row["provenance"],
        trust=row["base_trust"],
        scope=Scope(user_id=row["user_id"], agent_id=row["agent_id"], run_id=row["run_id"]),
        metadata=row["metadata"] or {},
        sources=[
            WorkspaceSource(
                document=s["document"],
                filename=s["filename"],
                session=s["session"],
                messages=[s["message_from"], s["message_to"]] if s["message_from"] is not None else None,
                at=_utc(s["at"]),
                importance=s["importance"],
                label=s["label"],
                excerpt=s["excerpt"],
            )
            for s in row["sources"]
        ],
        state=State(
            state=row["state"],
            tier=row["tier"],
            superseded_by=row["superseded_by"],
            superseded_at=_utc(row["superseded_at"]),
            valid_from=_utc(row["valid_from"]),
            valid_to=_utc(row["valid_to"]),
            recorded_at=_utc(row["recorded_at"]),
            expires_at=_utc(row["expires_at"]),
            cold=cold,
        ),
        access=Access(count=row["access_count"], last=_utc(row["last_accessed_at"])),
        l1=row["definition"],
    )


class ByteSink(io.RawIOBase):
    """A write-only stream whose bytes are taken out as they come: archives stream, never pile up."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self.chunks)
        self.chunks.clear()
        return out
