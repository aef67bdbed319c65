"""One worker run in its own process for the fault tests; ``CONTEXTOS_CRASH_AT`` may SIGKILL it.

python -m tests.fault_worker ingest|conversation <queue_url> <queue_arn>   one real SQS poll
python -m tests.fault_worker archive <tenant>                              one tenant's lifecycle scan
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    import boto3
    from contextos import container
    from contextos.local.workers import QueuePoller
    from contextos.models import LifecycleReport

    mode = argv[0]
    if mode in ("ingest", "conversation"):
        sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
        handled = QueuePoller(sqs, argv[1], argv[2], mode, wait_s=2).poll_once()
        print(f"handled {handled}")
    elif mode == "archive":
        report = LifecycleReport()
        container.lifecycle().scan_tenant(argv[1], report)
        print(f"archived {report.archived}")
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
