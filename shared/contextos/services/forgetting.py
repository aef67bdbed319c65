"""Removing knowledge from cold storage: a cold object holds a batch of memories, one gzip member
each, so taking one out means writing the batch again without it.

Inside the caller's unit of work every stub of each touched object is locked, the object is read,
its members are kept, rewritten or dropped, the new object is written under a fresh key and the
surviving stubs point at their new ranges. The old object is deleted only after the commit
(`Expunged.finish`): a crash before it leaves an unreferenced copy that a retry deletes, never a
stub pointing at nothing.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

from contextos.ports.lifecycle import ArchiveRecord
from contextos.ports.unit_of_work import ColdMember, ColdObjects
from contextos.services.cold import pack


class Blobs(Protocol):
    def put(self, bucket: str, key: str, data: bytes, *, content_type: str = ...) -> None: ...

    def get(self, bucket: str, key: str, *, max_bytes: int | None = None) -> bytes: ...

    def delete(self, bucket: str, key: str) -> None: ...


# A cold memory's payload → the payload to keep (maybe rewritten), or None to drop the memory.
Rewrite = Callable[[dict], dict | None]


def drop(_: dict) -> dict | None:
    return None


@dataclass
class Expunged:
    dropped: list[UUID] = field(default_factory=list)
    rewritten: list[UUID] = field(default_factory=list)
    stale_objects: list[str] = field(default_factory=list)

    def finish(self, blobs: Blobs, bucket: str) -> None:
        """After the commit: the objects nothing points at any more."""
        for key in self.stale_objects:
            blobs.delete(bucket, key)


def expunge(
    cold: ColdObjects,
    memory_ids: Sequence[UUID],
    rewrite: Rewrite,
    *,
    blobs: Blobs,
    bucket: str,
    new_key: Callable[[], str],
) -> Expunged:
    """Apply ``rewrite`` to the cold members of ``memory_ids``; rewrite their objects. The caller
    deletes the rows of ``dropped`` in the same transaction."""
    out = Expunged()
    if not memory_ids:
        return out
    targets = set(memory_ids)
    by_object: dict[str, list[ColdMember]] = {}
    for member in cold.lock_members_sharing(memory_ids):
        by_object.setdefault(member.object_key, []).append(member)
    for key, members in by_object.items():
        data = blobs.get(bucket, key)
        kept: list[tuple[UUID, bytes]] = []
        for member in members:
            raw = data[member.byte_start : member.byte_end + 1]
            if member.memory_id not in targets:
                kept.append((member.memory_id, gzip.decompress(raw)))
                continue
            payload = rewrite(json.loads(gzip.decompress(raw)))
            if payload is None:
                out.dropped.append(member.memory_id)
            else:
                out.rewritten.append(member.memory_id)
                kept.append((member.memory_id, json.dumps(payload).encode()))
        if kept:
            body, ranges = pack([ArchiveRecord(memory_id=i, was_active=True, reason="", payload=p) for i, p in kept])
            fresh = new_key()
            blobs.put(bucket, fresh, body, content_type="application/gzip")
            cold.repoint(fresh, [(i, r) for (i, _), r in zip(kept, ranges, strict=True)])
        out.stale_objects.append(key)
    return out
