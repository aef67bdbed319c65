"""One way to call Bedrock: throttling backs off and retries, other failures are sorted into
transient (the queue retries the message) and permanent (the input fails with a reason).

botocore's adaptive retry mode already paces the client; this loop adds bounded, jittered
retries that hold across the fan-out threads of one batch and are visible to tests.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from contextos.errors import PermanentError, TransientError

THROTTLING_CODES = frozenset({"ThrottlingException", "TooManyRequestsException", "ServiceQuotaExceededException"})
TRANSIENT_CODES = THROTTLING_CODES | {
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "InternalServerException",
    "ModelTimeoutException",
}


class Backoff:
    """Exponential backoff with full jitter, shared by the threads of one adapter: after a
    throttle every thread waits at least until the shared pause ends (adaptive pacing)."""

    def __init__(
        self, *, attempts: int = 5, base_s: float = 0.2, cap_s: float = 8.0, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.attempts, self.base_s, self.cap_s, self._sleep = attempts, base_s, cap_s, sleep
        self._pause_until = 0.0
        self._lock = threading.Lock()

    def wait_turn(self) -> None:
        with self._lock:
            delay = self._pause_until - time.monotonic()
        if delay > 0:
            self._sleep(delay)

    def throttled(self, attempt: int) -> None:
        delay = random.uniform(0, min(self.cap_s, self.base_s * 2**attempt))
        with self._lock:
            self._pause_until = max(self._pause_until, time.monotonic() + delay)
        self._sleep(delay)


def call(operation: Callable[..., Any], backoff: Backoff, what: str, **request: Any) -> Any:
    """Run one Bedrock operation with retries on throttling; map failures to domain errors."""
    for attempt in range(backoff.attempts):
        backoff.wait_turn()
        try:
            return operation(**request)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in THROTTLING_CODES and attempt + 1 < backoff.attempts:
                backoff.throttled(attempt)
                continue
            if code in TRANSIENT_CODES:
                raise TransientError(f"{what} failed transiently: {code}") from exc
            raise PermanentError(f"{what} refused the request: {code}") from exc
        except BotoCoreError as exc:
            raise TransientError(f"{what} could not be reached") from exc
    raise TransientError(f"{what} stayed throttled")  # pragma: no cover - the loop returns or raises
