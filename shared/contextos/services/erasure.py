"""Erasure (S3): forget a user scope or a whole tenant everywhere it is kept — rows, vectors,
text statistics, review items, raw and upload objects, cold objects — leaving the audit chain a
hash-only tombstone per erased row (`store/erasure.py`). Objects go after the commit, as a
forget's do: a crash in between leaves an unreferenced object a rerun deletes, never a row that
points at nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from contextos.errors import BadRequest
from contextos.management_models import ErasureReport
from contextos.observability import logger
from contextos.ports.unit_of_work import ErasedRows, UnitOfWork
from contextos.services.forgetting import Blobs, drop, expunge
from contextos.settings import Settings


class PrefixBlobs(Blobs, Protocol):
    def delete_prefix(self, bucket: str, prefix: str) -> int: ...


@dataclass
class ErasureService:
    settings: Settings
    work: UnitOfWork
    blobs: PrefixBlobs

    def erase_user(self, tenant_id: str, user_id: str, *, actor: str) -> ErasureReport:
        """Everything of one ``user_id`` in the tenant: its memories (and the memories only its
        documents and sessions taught), documents, sessions, turns, held candidates, raw and cold
        objects; memories it shared with other sources keep only the others' text."""
        if not user_id.strip():
            raise BadRequest("user_id is empty")
        cfg = self.settings
        with self.work.tenant(tenant_id) as tx:
            ids = tx.erasure.user_rows(user_id)
            cold = expunge(
                tx.cold,
                ids["cold"],
                drop,
                blobs=self.blobs,
                bucket=cfg.cold_bucket,
                new_key=lambda: f"{cfg.lifecycle.cold_prefix}{tenant_id}/{_day()}/erasure-{_stamp()}.jsonl.gz",
            )
            erased = tx.erasure.erase_user(user_id, ids, actor=actor)
        cold.finish(self.blobs, cfg.cold_bucket)
        deleted = self._delete_objects(erased) + len(cold.stale_objects)
        logger.info("user scope erased", extra={"tenant_id": tenant_id, "counts": erased.counts})
        return ErasureReport(scope="user", counts=erased.counts, objects_deleted=deleted)

    def erase_tenant(self, tenant_id: str, *, actor: str, confirm: str) -> ErasureReport:
        """Every row and object of the tenant; its API keys too. ``confirm`` must repeat the tenant id."""
        if confirm != tenant_id:
            raise BadRequest("confirm must repeat the tenant id: erasing a tenant cannot be undone")
        cfg = self.settings
        with self.work.tenant(tenant_id) as tx:
            erased = tx.erasure.erase_tenant(actor=actor)
        deleted = sum(
            self.blobs.delete_prefix(bucket, f"{prefix}{tenant_id}/")
            for bucket, prefix in {
                (cfg.cold_bucket, cfg.lifecycle.cold_prefix),
                (cfg.raw_bucket_name, cfg.raw_prefix),
                (cfg.upload_bucket, cfg.upload_prefix),
            }
            if bucket
        )
        logger.info("tenant erased", extra={"tenant_id": tenant_id, "counts": erased.counts})
        return ErasureReport(scope="tenant", counts=erased.counts, objects_deleted=deleted)

    def _delete_objects(self, erased: ErasedRows) -> int:
        buckets = {"raw": self.settings.raw_bucket_name, "upload": self.settings.upload_bucket}
        for role, key in erased.objects:
            self.blobs.delete(buckets[role], key)
        return len(erased.objects)


def _day() -> str:
    return datetime.now(UTC).strftime("%Y/%m/%d")


def _stamp() -> str:
    import uuid

    return uuid.uuid4().hex
