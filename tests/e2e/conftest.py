"""The e2e suites each run a real local stack; this starts one with its own buckets and queues."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from contextos import container


@contextmanager
def running_stack(
    data_dir: str, database_url: str, name: str, env: dict[str, str] | None = None, **options: Any
) -> Iterator[object]:
    """A LocalStack on a free port over the session's database; ``name`` keeps its buckets and
    queues apart from the other suites' stacks; ``env`` adds settings and ``options`` go to the
    LocalStack. The environment is restored afterwards."""
    from contextos.local.stack import LocalStack

    saved = dict(os.environ)
    os.environ["CONTEXTOS_DATABASE_URL"] = database_url
    os.environ["CONTEXTOS_DATA_DIR"] = data_dir
    os.environ["CONTEXTOS_UPLOAD_BUCKET"] = f"{name}-uploads"
    os.environ["CONTEXTOS_COLD_BUCKET"] = f"{name}-cold"
    os.environ["CONTEXTOS_LOCAL_QUEUE_PREFIX"] = name
    os.environ.update(env or {})
    container.reset()
    stack = LocalStack(api_port=0, poll_wait_s=0, **options).start()
    try:
        yield stack
    finally:
        stack.stop()
        os.environ.clear()
        os.environ.update(saved)
        container.reset()
