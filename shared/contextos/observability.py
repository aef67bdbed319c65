"""Logger, Tracer and Metrics, created once for the whole package (STYLE 4).

Powertools works without AWS credentials; these defaults keep it quiet and offline when the
Lambda environment variables are absent (local stack, tests, CLI).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "contextos")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "ContextOS")
if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

from aws_lambda_powertools import Logger, Metrics, Tracer

F = TypeVar("F", bound=Callable[..., Any])


class LazyTracer:
    """Powertools' Tracer, built at the first traced call rather than at import.

    Building a Tracer imports the X-Ray SDK and botocore (~0.3 s) even when tracing is disabled;
    deferring it keeps that out of every function's import and out of processes that never trace
    (local stack, CLI, tests). X-Ray patches client classes, so clients made earlier are traced too.
    """

    def __init__(self) -> None:
        self._tracer: Tracer | None = None

    @property
    def tracer(self) -> Tracer:
        if self._tracer is None:
            self._tracer = Tracer()
        return self._tracer

    def capture_lambda_handler(self, handler: F) -> F:
        return self._deferred(handler, lambda t: t.capture_lambda_handler(handler))

    def capture_method(self, method: F) -> F:
        return self._deferred(method, lambda t: t.capture_method(method))

    def _deferred(self, fn: F, decorate: Callable[[Tracer], Callable[..., Any]]) -> F:
        traced: list[Callable[..., Any]] = []

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if not traced:
                traced.append(decorate(self.tracer))
            return traced[0](*args, **kwargs)

        return call  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tracer, name)


logger = Logger()
tracer = LazyTracer()
metrics = Metrics()
