"""Logger, Tracer and Metrics, created once for the whole package (STYLE 4).

Powertools works without AWS credentials; these defaults keep it quiet and offline when the
Lambda environment variables are absent (local stack, tests, CLI).
"""

from __future__ import annotations

import os

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "contextos")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "ContextOS")
if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
tracer = Tracer()
metrics = Metrics()
