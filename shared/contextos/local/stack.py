"""``contextos dev``: embedded PostgreSQL, moto, the API bridge, queue pollers and schedules (S12)."""

from __future__ import annotations

import json
import logging
import os
import warnings
from dataclasses import dataclass, field

from contextos import container
from contextos.current_settings import get_settings, reset_settings
from contextos.local.aws import LocalAws, start_local_aws
from contextos.local.bridge import ApiBridge
from contextos.local.console import ConsoleApp
from contextos.local.mcp_http import mcp_app
from contextos.local.running import DEV_API_KEY, DEV_TENANT, stack_pointer, state_file
from contextos.local.workers import QueuePoller, Scheduler
from contextos.models import Provenance
from contextos.observability import logger

LIFECYCLE_EVERY_S = 4 * 3600
GOVERNANCE_EVERY_S = 24 * 3600


@dataclass
class LocalStack:
    api_port: int = 8787
    moto_port: int = 0
    lifecycle_every_s: float = LIFECYCLE_EVERY_S
    governance_every_s: float = GOVERNANCE_EVERY_S
    sweep_every_s: float | None = None  # default: the configured sweeper schedule (5 minutes)
    events_every_s: float = 2.0  # the lifecycle events' relay (every minute when deployed)
    poll_wait_s: int = 1
    visibility_timeout_s: int = 30
    aws: LocalAws | None = None
    bridge: ApiBridge | None = None
    serve_mcp: bool = True  # the MCP streamable HTTP app at <api_url>/mcp
    workers: list = field(default_factory=list)
    serve_console: bool = True  # the web console's build (console/dist) at <api_url>/console
    mounts: dict = field(default_factory=dict)  # path prefix → ASGI app served beside the API (local.front)

    def start(self) -> LocalStack:
        quiet_local_logs()
        settings = get_settings()
        self.aws = start_local_aws(
            region=settings.region,
            upload_bucket=settings.upload_bucket,
            cold_bucket=settings.cold_bucket,
            upload_prefix=settings.upload_prefix,
            queue_prefix=settings.local_queue_prefix,
            visibility_timeout_s=self.visibility_timeout_s,
            port=self.moto_port,
            event_bus=settings.event_bus_name,
        )
        os.environ["CONTEXTOS_INGEST_QUEUE_URL"] = self.aws.ingest_queue_url
        os.environ["CONTEXTOS_CONVERSATION_QUEUE_URL"] = self.aws.conversation_queue_url
        container.reset()
        reset_settings()
        container.database()  # start the embedded database and migrate before serving
        container.keys().create(
            DEV_TENANT, "local-dev", principal="user", provenance_ceiling=Provenance.user_turn, key=DEV_API_KEY
        )
        if self.serve_mcp:
            self.mounts.setdefault("/mcp", mcp_app())
        if self.serve_console:
            self.mounts.setdefault("/console", ConsoleApp())
        self.bridge = ApiBridge(port=self.api_port)
        for prefix, app in self.mounts.items():
            self.bridge.mount(prefix, app)
        self.bridge.start()
        sqs = container.aws_client("sqs")
        self.workers = [
            QueuePoller(sqs, self.aws.ingest_queue_url, self.aws.ingest_queue_arn, "ingest", wait_s=self.poll_wait_s),
            QueuePoller(
                sqs,
                self.aws.conversation_queue_url,
                self.aws.conversation_queue_arn,
                "conversation",
                wait_s=self.poll_wait_s,
            ),
            Scheduler("contextos-lifecycle", "lifecycle", self.lifecycle_every_s),
            Scheduler("contextos-governance", "governance", self.governance_every_s),
            Scheduler("contextos-events", "events", self.events_every_s),
            Scheduler(
                "contextos-session-sweeper",
                "sweeper",
                self.sweep_every_s or get_settings().conversation.sweep_every_s,
            ),
        ]
        for worker in self.workers:
            worker.start()
        self._write_state()
        logger.info("local stack up", extra={"api": self.api_url, "moto": self.aws.endpoint})
        return self

    @property
    def api_url(self) -> str:
        assert self.bridge is not None
        return self.bridge.url

    def state(self) -> dict:
        assert self.aws is not None
        return {
            "api_url": self.api_url,
            "api_key": DEV_API_KEY,
            "tenant": DEV_TENANT,
            "aws_endpoint": self.aws.endpoint,
            "upload_bucket": self.aws.upload_bucket,
            "upload_prefix": get_settings().upload_prefix,
            "event_bus": get_settings().event_bus_name,
            "pid": os.getpid(),
        } | ({"mcp_url": self.api_url + "/mcp"} if "/mcp" in self.mounts else {})

    def _write_state(self) -> None:
        state = self.state() | {"data_dir": str(get_settings().data_dir.resolve())}
        for path in (state_file(), stack_pointer()):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(state, indent=2))
            except OSError:  # a read-only home: the stack still runs, found from its own folder
                logger.warning("could not write the stack's address", extra={"path": str(path)})

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        for worker in self.workers:
            worker.join(timeout=5)
        if self.bridge:
            self.bridge.stop()
        if self.aws:
            self.aws.stop()
        for path in (state_file(), stack_pointer()):
            if path.exists() and json.loads(path.read_text() or "{}").get("pid") == os.getpid():
                path.unlink()
        container.reset()


def quiet_local_logs() -> None:
    """The dev stack prints what matters: no per-request moto lines, no EMF metric blobs."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    warnings.filterwarnings("ignore", message="No application metrics to publish.*")
