"""Queued work: the queue port, the ingest queue's message shapes, and the one claimed-job runner.

A job's own row is its ledger (a document, a conversation flush): it is claimed before the work,
ends ``failed`` for good on a property of its input, and is handed back to the queue's retry on a
transient problem until its attempts run out. ``run_claimed`` writes that ledger for every kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from pydantic import ConfigDict, Field

from contextos.errors import ContextOSError, TransientError
from contextos.modelbase import BaseModel
from contextos.models import DocumentJob
from contextos.observability import logger, metrics


class JobQueue(Protocol):
    def send(self, message: dict) -> str: ...


# S3 → SQS notifications, read leniently: only the fields used, each optional. Powertools' S3Model
# requires every field S3 sends, and one record short of one would fail the whole message.
class S3BucketRef(BaseModel):
    name: str | None = None


class S3ObjectRef(BaseModel):
    key: str | None = None


class S3Entity(BaseModel):
    bucket: S3BucketRef = Field(default_factory=S3BucketRef)
    object: S3ObjectRef = Field(default_factory=S3ObjectRef)


class S3NotificationRecord(BaseModel):
    eventName: str = ""
    s3: S3Entity | None = None


class S3Notification(BaseModel):
    Records: list[S3NotificationRecord]


class S3TestEvent(BaseModel):
    """What S3 sends once when a notification is configured."""

    model_config = ConfigDict(extra="allow")
    Event: Literal["s3:TestEvent"]


# The ingest queue carries our own document jobs and the upload bucket's notifications.
IngestMessage = S3TestEvent | S3Notification | DocumentJob


Claimed = TypeVar("Claimed", bound=Mapping[str, Any])


@dataclass(frozen=True, slots=True)
class ClaimLedger:
    """How one claimed job ends: its name in logs, and its row's two ways out."""

    noun: str  # "document", "flush"
    log_extra: dict[str, Any]
    failed_metric: str
    max_attempts: int
    fail: Callable[[str], None]  # ends the job as failed, with a reason
    release: Callable[[str], None]  # hands it back for the queue's retry


def run_claimed(claimed: Claimed | None, work: Callable[[Claimed], None], ledger: ClaimLedger) -> None:
    """Run ``work`` on a claimed job. Nothing claimed (done, or another worker has it): a no-op.
    A domain error is a property of the input: the job fails for good and the message is consumed.
    Anything else is transient: the job goes back (or fails on its last attempt) and this raises."""
    if claimed is None:
        logger.info(f"{ledger.noun} already handled", extra=ledger.log_extra)
        return
    try:
        work(claimed)
    except TransientError:
        _retry_or_give_up(ledger, claimed["attempts"], "transient: dependency unavailable")
        raise
    except ContextOSError as exc:
        logger.info(f"{ledger.noun} failed", extra={**ledger.log_extra, "code": exc.code})
        metrics.add_metric(name=ledger.failed_metric, unit="Count", value=1)
        ledger.fail(exc.message)
    except Exception as exc:
        reason = f"transient: {type(exc).__name__}"
        _retry_or_give_up(ledger, claimed["attempts"], reason)
        raise TransientError(reason) from exc


def _retry_or_give_up(ledger: ClaimLedger, attempts: int, reason: str) -> None:
    if attempts >= ledger.max_attempts:
        ledger.fail(f"gave up after {attempts} attempts ({reason})")
    else:
        ledger.release(reason)
