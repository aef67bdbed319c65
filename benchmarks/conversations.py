"""Conversation buffer (S8): chat-time append latency, concurrent appends, the sweeper's claim time.

- append: one message through ``ConversationService.append`` (one statement; every 50th also
  claims a range and sends a job), p50/p95 in ms, sequential and with 4 threads;
- recent turns: the read a context query with a ``session_id`` adds, p50/p95 in ms;
- sweep: claim every idle session of many tenants, in sessions/s.

The queue is an in-process list (the SQS send is not what is measured). Run:
``python -m benchmarks.conversations [--sessions 200] [--messages 20] [--tenants 20]``.
A fresh embedded PostgreSQL is started in a temp dir, so nothing touches ``.contextos/``.
"""

from __future__ import annotations

import argparse
import threading
import time

from contextos.conversations import MessageCreate
from contextos.models import Provenance
from contextos.services.conversations import ConversationService
from contextos.services.firewall import Firewall
from contextos.settings import Settings
from contextos.store.conversations import ConversationStore
from contextos.store.db import Database
from contextos.store.privacy import PrivacyStore
from contextos.store.tenants import TenantStore

from benchmarks.fixtures import embedded_database, summary_ms
from benchmarks.report import write_report


class ListQueue:
    def __init__(self) -> None:
        self.sent: list[dict] = []
        self._lock = threading.Lock()

    def send(self, message: dict) -> str:
        with self._lock:
            self.sent.append(message)
            return str(len(self.sent))


def percentiles(samples: list[float]) -> tuple[float, float]:
    figures = summary_ms(samples)
    return figures["p50_ms"], figures["p95_ms"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--tenants", type=int, default=20)
    args = parser.parse_args()

    settings = Settings()
    with embedded_database(min_size=4, max_size=8) as db:
        run(args, settings, db)


def run(args: argparse.Namespace, settings: Settings, db: Database) -> None:
    queue = ListQueue()
    service = ConversationService(
        settings=settings,
        store=ConversationStore(db),
        tenant_ids=TenantStore(db).tenant_ids,
        firewall=Firewall(PrivacyStore(db)),
        queue=queue,
    )
    line = "The deploy of the checkout service failed on the canary because the cache warmed too slowly."

    sequential: list[float] = []
    for m in range(args.messages):
        for s in range(args.sessions // 2):
            started = time.perf_counter()
            service.append(
                "bench", Provenance.user_turn, f"seq-{s}", MessageCreate(role="user", content=f"{m}: {line}")
            )
            sequential.append((time.perf_counter() - started) * 1000)

    threaded: list[float] = []
    lock = threading.Lock()

    def worker(offset: int) -> None:
        for m in range(args.messages):
            for s in range(offset, args.sessions // 2, 4):
                started = time.perf_counter()
                service.append(
                    "bench", Provenance.user_turn, f"par-{s}", MessageCreate(role="user", content=f"{m}: {line}")
                )
                with lock:
                    threaded.append((time.perf_counter() - started) * 1000)

    wall = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall

    reads: list[float] = []
    for s in range(args.sessions // 2):
        started = time.perf_counter()
        service.recent_turns("bench", f"seq-{s}")
        reads.append((time.perf_counter() - started) * 1000)

    idle = 0
    for t in range(args.tenants):
        for s in range(args.sessions):
            service.append(f"idle-{t}", Provenance.user_turn, f"s-{s}", MessageCreate(role="user", content=line))
            idle += 1
    with db.system_tx() as conn:
        conn.execute("RESET ROLE")
        conn.execute("UPDATE sessions SET last_message_at = now() - interval '1 hour' WHERE tenant_id LIKE 'idle-%'")
    started = time.perf_counter()
    report = service.sweep()
    sweep_s = time.perf_counter() - started

    append_p50, append_p95 = percentiles(sequential)
    threaded_p50, threaded_p95 = percentiles(threaded)
    read_p50, read_p95 = percentiles(reads)
    figures = {
        "append_ms_p50": append_p50,
        "append_ms_p95": append_p95,
        "append_4_threads_ms_p50": threaded_p50,
        "append_4_threads_ms_p95": threaded_p95,
        "append_4_threads_per_s": round(len(threaded) / wall, 1),
        "recent_turns_ms_p50": read_p50,
        "recent_turns_ms_p95": read_p95,
        "sweep_sessions_claimed": report.claimed,
        "sweep_tenants": report.tenants,
        "sweep_s": round(sweep_s, 3),
        "sweep_sessions_per_s": round(report.claimed / sweep_s, 1),
        "idle_sessions_created": idle,
        "jobs_sent": len(queue.sent),
    }
    path = write_report(
        "conversations",
        figures,
        title="Conversation buffer: append, recent turns, sweep",
        notes=[
            f"{len(sequential)} sequential appends over {args.sessions // 2} sessions, then {len(threaded)} from 4"
            " threads; with 20 messages per session no size flush fires (threshold 50)",
            "the sweep claims every idle session of every tenant (one statement per tenant) and sends one job each"
            " to an in-process list",
        ],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
