"""Crash points for the fault-injection tests: a named step where a test may kill the process.

Inert in production: a step crashes only when ``CONTEXTOS_CRASH_AT`` names it, and nothing sets
that variable but the tests, which run the real handler in a subprocess and restart it after
the SIGKILL. SIGKILL, not an exception: no ``finally``, no rollback by us, no flushed buffer,
exactly what a Lambda timeout or an out-of-memory kill leaves behind.
"""

from __future__ import annotations

import os
import signal

CRASH_AT_ENV = "CONTEXTOS_CRASH_AT"

# Every step a test may name, in the order work reaches them.
INGEST_STEPS = ("ingest:after_parse", "ingest:after_extraction", "store:before_commit", "store:after_commit")
FLUSH_STEPS = ("flush:after_extraction", "store:before_commit", "store:after_commit")
ARCHIVE_STEPS = ("archive:after_put", "archive:before_commit")


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_AT_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
