"""Cold storage (S5): archive forgotten memories to S3, bring them back when a query needs them.

Archival writes the full memories of a batch to ONE object first (each memory its own gzip
member, so its byte range is readable alone), then shrinks the hot rows to stubs in one
transaction that was holding their row locks all along. A crash before the commit leaves the
memories hot and the object unreferenced (the next scan writes a fresh one); after it, they are
cold and the object holds them. Either way each memory exists exactly once, hot or cold.

Reactivation costs one ranged GET and one transaction; it never deletes the object (other
memories share it, and a stale copy is harmless because the row's pointer is the truth).
"""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol
from uuid import UUID

from contextos.config import LifecycleSettings
from contextos.errors import ContextOSError
from contextos.faults import crash_point
from contextos.models import Reactivation
from contextos.observability import logger, metrics
from contextos.ports.lifecycle import ArchiveRecord, ColdPort


class ColdBlobs(Protocol):
    def put(self, bucket: str, key: str, data: bytes, *, content_type: str = ...) -> None: ...

    def get_range(self, bucket: str, key: str, start: int, end: int) -> bytes: ...


def pack(records: Sequence[ArchiveRecord]) -> tuple[bytes, list[tuple[int, int]]]:
    """One object for a batch: each memory a complete gzip member; (start, end) inclusive ranges."""
    chunks, ranges, offset = [], [], 0
    for record in records:
        chunk = gzip.compress(record.payload, compresslevel=6, mtime=0)
        chunks.append(chunk)
        ranges.append((offset, offset + len(chunk) - 1))
        offset += len(chunk)
    return b"".join(chunks), ranges


def unpack(member: bytes) -> dict:
    return json.loads(gzip.decompress(member))


def _no_step(step: str) -> None:
    """Default observer of the archival and reactivation steps (fault tests raise or crash here)."""
    crash_point(step)


@dataclass
class ColdStorage:
    store: ColdPort
    blobs: ColdBlobs
    bucket: str
    settings: LifecycleSettings
    on_step: Callable[[str], None] = field(default=_no_step)

    def object_key(self, tenant_id: str) -> str:
        day = datetime.now(UTC).strftime("%Y/%m/%d")
        return f"{self.settings.cold_prefix}{tenant_id}/{day}/{uuid.uuid4().hex}.jsonl.gz"

    def archive_batch(self, tenant_id: str, *, after: UUID | None) -> tuple[int, UUID | None]:
        """Archive one batch; return (memories archived, key to continue after, or None when done)."""
        with self.store.claim_archivable(tenant_id, after=after, limit=self.settings.archive_batch_size) as claim:
            if not claim.records:
                return 0, None
            data, ranges = pack(claim.records)
            key = self.object_key(tenant_id)
            self.blobs.put(self.bucket, key, data, content_type="application/gzip")
            self.on_step("archive:after_put")
            claim.stub(key, ranges)
            self.on_step("archive:before_commit")
        metrics.add_metric(name="MemoriesArchived", unit="Count", value=len(claim.records))
        return len(claim.records), claim.last_id

    def reactivate(self, tenant_id: str, query_vector: Sequence[float], *, dry_run: bool) -> list[Reactivation]:
        """Cold stubs close enough to the query come back hot at the configured strength.

        A dry run changes nothing: it lists what would come back (``restored`` false). Any failure
        (S3, the database) rolls that memory's restore back and costs the query only the
        reactivation, never its answer.
        """
        cfg = self.settings
        matches = self.store.cold_matches(
            tenant_id, query_vector, min_similarity=cfg.reactivation_cosine, limit=cfg.reactivation_max_per_query
        )
        return [r for r, _ in self.bring_back(tenant_id, matches, dry_run=dry_run, reason="query match cosine")]

    def bring_back(
        self, tenant_id: str, matches: Sequence[dict], *, dry_run: bool, reason: str, read_definition: bool = False
    ) -> list[tuple[Reactivation, dict | None]]:
        """Restore the given cold stubs (rows of `cold_matches` or `cold_candidates`), each with its
        archive (``{"memory", "items", ...}``; ``read_definition``: a dry run reads it too, changing
        nothing, so that it shows what would be injected)."""
        cfg = self.settings
        out: list[tuple[Reactivation, dict | None]] = []
        for match in matches:
            similarity = round(float(match["similarity"]), 4)
            if dry_run and not read_definition:
                out.append(
                    (Reactivation(id=match["id"], label=match["label"], similarity=similarity, restored=False), None)
                )
                continue
            restored = False
            try:
                member = self.blobs.get_range(
                    self.bucket, match["cold_object_key"], match["cold_byte_start"], match["cold_byte_end"]
                )
                payload = unpack(member)
                self.on_step("reactivate:after_get")
                if not dry_run:
                    with self.store.claim_cold(tenant_id, match["id"]) as claim:
                        if claim is None or claim.object_key != match["cold_object_key"]:
                            continue  # reactivated (or re-archived) by someone else meanwhile
                        restored = self.store.restore(
                            claim, payload, strength=cfg.reactivation_strength, reason=f"{reason} {similarity}"
                        )
                        self.on_step("reactivate:before_commit")
            except Exception as exc:  # the query answers without it; the next matching query retries
                logger.warning(
                    "cold memory not reactivated",
                    extra={"memory_id": str(match["id"]), "error": type(exc).__name__},
                    exc_info=not isinstance(exc, ContextOSError),
                )
                continue
            if restored:
                metrics.add_metric(name="MemoriesReactivated", unit="Count", value=1)
            if restored or dry_run:
                reactivation = Reactivation(
                    id=match["id"], label=match["label"], similarity=similarity, restored=restored
                )
                out.append((reactivation, payload))
        return out
