"""Pollers that hand SQS messages to the queue functions, and a scheduler for EventBridge rules."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from contextos.local.events import scheduled_event, sqs_event
from contextos.local.handlers import invoke
from contextos.observability import logger


class QueuePoller(threading.Thread):
    """Like an SQS event source mapping with ReportBatchItemFailures: delete what succeeded."""

    def __init__(
        self, sqs: Any, queue_url: str, queue_arn: str, function: str, *, batch_size: int = 10, wait_s: int = 1
    ) -> None:
        super().__init__(name=f"poller-{function}", daemon=True)
        self.sqs, self.queue_url, self.queue_arn, self.function = sqs, queue_url, queue_arn, function
        self.batch_size, self.wait_s = batch_size, wait_s
        self._stop_event = threading.Event()

    def poll_once(self) -> int:
        messages = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=self.batch_size,
            WaitTimeSeconds=self.wait_s,
            AttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return 0
        try:
            result = invoke(self.function, sqs_event(messages, self.queue_arn))
            failed = {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}
        except Exception:
            logger.exception("local poller: the function failed as a whole", extra={"function": self.function})
            failed = {m["MessageId"] for m in messages}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self.sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        return len(messages)

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self.poll_once()
            except Exception:
                logger.exception("local poller error", extra={"function": self.function})
                self._stop_event.wait(1.0)

    def stop(self) -> None:
        self._stop_event.set()


class Scheduler(threading.Thread):
    """Fires a function with an EventBridge scheduled event every ``every_s`` seconds."""

    def __init__(
        self, rule: str, function: str, every_s: float, on_result: Callable[[dict], None] | None = None
    ) -> None:
        super().__init__(name=f"schedule-{rule}", daemon=True)
        self.rule, self.function, self.every_s, self.on_result = rule, function, every_s, on_result
        self._stop_event = threading.Event()

    def fire(self) -> dict:
        return invoke(self.function, scheduled_event(self.rule))

    def run(self) -> None:
        while not self._stop_event.wait(self.every_s):
            try:
                result = self.fire()
                if self.on_result:
                    self.on_result(result)
            except Exception:
                logger.exception("local scheduler error", extra={"rule": self.rule})

    def stop(self) -> None:
        self._stop_event.set()
