"""``GET /v1/sessions`` (through ``ConversationService.list``): page latency against tenant size.

A tenant holds N sessions (each with 1-3 flushes whose counts are summed per row) beside four
other tenants of N/4 each. Measured, p50/p95 in ms over ``--runs`` calls each:

- ``first_page``: the newest 50; ``deep_page``: the 50 after following the cursor 20 pages;
  ``ended_page``: the newest 50 ended sessions (the status filter);
- baseline in the same run: ``get_one`` (``GET /v1/sessions/{id}``, a primary-key read plus its
  flushes), so ``first_page / get_one`` is what listing costs over the cheapest tenant read;
- ``*_indexed``: the same pages with migration 0026's ``sessions_listing`` index
  ``(tenant_id, created_at DESC, id DESC)``; the unsuffixed figures are measured first with that
  index dropped, so ``*_unindexed_over_indexed`` is what the migration buys.

A fresh embedded PostgreSQL in a temp dir; nothing touches ``.contextos/``. Run:
``PYTHONPATH=shared:. python -m benchmarks.sessions_list [--sessions 20000] [--runs 30]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from contextos.conversations import SessionListQuery
from contextos.services.conversations import ConversationService
from contextos.services.firewall import Firewall
from contextos.settings import Settings
from contextos.store.conversations import ConversationStore
from contextos.store.db import Database
from contextos.store.privacy import PrivacyStore

from benchmarks.fixtures import embedded_store, summary_ms
from benchmarks.report import write_report

TENANT = "bench"
INDEX = "sessions_listing"  # migration 0026
INDEX_DDL = f"CREATE INDEX IF NOT EXISTS {INDEX} ON sessions (tenant_id, created_at DESC, id DESC)"


def seed(db: Database, tenant: str, n: int) -> None:
    """N sessions (every third ended) and 1-3 flushes each, set-based."""
    with db.tenant_tx(tenant) as conn:
        conn.execute(
            """INSERT INTO tenants (tenant_id) VALUES (%(t)s) ON CONFLICT DO NOTHING""",
            {"t": tenant},
        )
        conn.execute(
            """INSERT INTO sessions (tenant_id, id, status, message_count, flushed_through, last_message_at,
                                     ended_at, created_at)
               SELECT %(t)s, 's-' || lpad(i::text, 7, '0'),
                      CASE WHEN i %% 3 = 0 THEN 'ended' ELSE 'open' END, 30, 20,
                      now() - make_interval(secs => %(n)s - i), CASE WHEN i %% 3 = 0 THEN now() END,
                      now() - make_interval(secs => 2 * (%(n)s - i))
               FROM generate_series(1, %(n)s) AS i""",
            {"t": tenant, "n": n},
        )
        conn.execute(
            """INSERT INTO conversation_flushes (tenant_id, session_id, message_from, message_to, trigger, status,
                                                 counts)
               SELECT %(t)s, 's-' || lpad(i::text, 7, '0'), 1 + 10 * (k - 1), 10 * k, 'size',
                      CASE WHEN k = 3 THEN 'queued' ELSE 'done' END,
                      jsonb_build_object('memories_created', 4, 'memories_merged', 1, 'held_for_review', k - 1)
               FROM generate_series(1, %(n)s) AS i, generate_series(1, 1 + i %% 3) AS k""",
            {"t": tenant, "n": n},
        )


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    fn()  # warm the plan and the pool
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    figures = summary_ms(samples)
    return figures["p50_ms"], figures["p95_ms"]


def as_owner(db: Database, *statements: str) -> None:
    """DDL and ANALYZE need the tables' owner, not the application role."""
    with db.system_tx() as conn:
        conn.execute("RESET ROLE")
        for statement in statements:
            conn.execute(statement)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    settings = Settings()
    with embedded_store(Path(tempfile.mkdtemp(prefix="contextos-bench-")), settings) as memories:
        run(
            memories.db,
            ConversationService(
                settings=settings,
                store=ConversationStore(memories.db),
                tenant_ids=memories.tenants.tenant_ids,
                firewall=Firewall(PrivacyStore(memories.db)),
                queue=None,
            ),
            args,
        )


def run(db: Database, service: ConversationService, args: argparse.Namespace) -> None:
    seed(db, TENANT, args.sessions)
    for other in range(4):
        seed(db, f"other-{other}", args.sessions // 4)
    as_owner(db, f"DROP INDEX {INDEX}", "ANALYZE sessions", "ANALYZE conversation_flushes")

    cursor = None
    for _ in range(20):
        cursor = service.list_sessions(TENANT, SessionListQuery(cursor=cursor)).next_cursor
    checks = service.list_sessions(TENANT, SessionListQuery(limit=3))
    assert [s.id for s in checks.sessions] == [f"s-{args.sessions - i:07d}" for i in range(3)], checks
    assert checks.sessions[0].counts.flushes == 1 + args.sessions % 3

    calls: dict[str, Callable[[], object]] = {
        "get_one": lambda: service.get(TENANT, f"s-{args.sessions // 2:07d}"),
        "first_page": lambda: service.list_sessions(TENANT, SessionListQuery()),
        "deep_page": lambda: service.list_sessions(TENANT, SessionListQuery(cursor=cursor)),
        "ended_page": lambda: service.list_sessions(TENANT, SessionListQuery(status="ended")),
    }
    figures: dict[str, float | int | str] = {"sessions": args.sessions, "other_tenants_sessions": args.sessions}
    for name, fn in calls.items():
        figures[f"{name}_p50_ms"], figures[f"{name}_p95_ms"] = timed(fn, args.runs)
    as_owner(db, INDEX_DDL, "ANALYZE sessions")
    for name in ("first_page", "deep_page", "ended_page"):
        figures[f"{name}_indexed_p50_ms"], figures[f"{name}_indexed_p95_ms"] = timed(calls[name], args.runs)
    for name in ("first_page", "deep_page", "ended_page"):
        figures[f"{name}_over_get_one_p50"] = round(figures[f"{name}_p50_ms"] / figures["get_one_p50_ms"], 2)
        figures[f"{name}_unindexed_over_indexed_p50"] = round(
            figures[f"{name}_p50_ms"] / figures[f"{name}_indexed_p50_ms"], 2
        )
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    path = write_report(
        "sessions_list",
        figures,
        title="GET /v1/sessions: page latency against tenant size",
        notes=[
            f"One tenant with {args.sessions} sessions (1-3 flushes each) beside four tenants of "
            f"{args.sessions // 4}; pages of 50 through ConversationService.list_sessions (no HTTP).",
            "Baseline in the same run: get_one, one session by primary key with its flushes.",
            "*_indexed: with migration 0026's (tenant_id, created_at DESC, id DESC) index; the "
            "unsuffixed pages are measured first with it dropped.",
            "Latencies are from a shared 2-core machine; read the ratios, and the load average.",
        ],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
