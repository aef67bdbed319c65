"""Removing knowledge from cold storage: a cold object holds a batch of memories, one gzip member
each, so taking one out means writing the batch again without it.

Inside the caller's transaction every stub of each touched object is locked, the object is read,
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
from typing import Any, Protocol
from uuid import UUID

from contextos.services.cold import pack
from contextos.store.cold import ArchiveRecord


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
    conn: Any,
    tenant_id: str,
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
    stubs = conn.execute(
        """SELECT id, cold_object_key, cold_byte_start, cold_byte_end FROM memories
           WHERE tenant_id = %(tenant)s AND tier = 'cold' AND cold_object_key IN (
               SELECT cold_object_key FROM memories
               WHERE tenant_id = %(tenant)s AND id = ANY(%(ids)s) AND tier = 'cold' AND cold_object_key IS NOT NULL)
           ORDER BY cold_object_key, cold_byte_start
           FOR UPDATE""",
        {"tenant": tenant_id, "ids": list(memory_ids)},
    ).fetchall()
    targets = set(memory_ids)
    by_object: dict[str, list[dict]] = {}
    for stub in stubs:
        by_object.setdefault(stub["cold_object_key"], []).append(stub)
    for key, members in by_object.items():
        data = blobs.get(bucket, key)
        kept: list[tuple[UUID, bytes]] = []
        for stub in members:
            raw = data[stub["cold_byte_start"] : stub["cold_byte_end"] + 1]
            if stub["id"] not in targets:
                kept.append((stub["id"], gzip.decompress(raw)))
                continue
            payload = rewrite(json.loads(gzip.decompress(raw)))
            if payload is None:
                out.dropped.append(stub["id"])
            else:
                out.rewritten.append(stub["id"])
                kept.append((stub["id"], json.dumps(payload).encode()))
        if kept:
            body, ranges = pack([ArchiveRecord(memory_id=i, was_active=True, reason="", payload=p) for i, p in kept])
            fresh = new_key()
            blobs.put(bucket, fresh, body, content_type="application/gzip")
            conn.execute(
                """UPDATE memories AS m SET cold_object_key = %(key)s, cold_byte_start = s.b, cold_byte_end = s.e
                   FROM unnest(%(ids)s::uuid[], %(starts)s::int8[], %(ends)s::int8[]) AS s(id, b, e)
                   WHERE m.tenant_id = %(tenant)s AND m.id = s.id""",
                {
                    "tenant": tenant_id,
                    "key": fresh,
                    "ids": [i for i, _ in kept],
                    "starts": [r[0] for r in ranges],
                    "ends": [r[1] for r in ranges],
                },
            )
        out.stale_objects.append(key)
    return out
