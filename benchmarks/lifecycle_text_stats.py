"""The lifecycle scan's text statistics at 100k: one ts_stat pass against the three passes before it.

The store of ``benchmarks.lifecycle`` (100k memories by default) in a fresh embedded PostgreSQL;
then, interleaved, ``before`` (what the scan ran until this change: the common lexemes from one
ts_stat pass, BM25's frequencies from a second, its mean vector length from an aggregate) and
``after`` (``LifecycleStore.refresh_text_statistics``: one pass feeds all three). Each arm runs in
one transaction on the same pooled connection; its wall time and its backend's CPU seconds (from
/proc, far less sensitive to the machine's load) are the figures, and both arms must store the
same rows.

Run: ``python -m benchmarks.lifecycle_text_stats [--size 100000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pgserver
import psycopg
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.lifecycle import LifecycleStore
from contextos.store.migrate import migrate

from benchmarks.lifecycle import DIM, load, process_cpu_s
from benchmarks.report import write_report

HOT = (
    "FROM ts_stat(format('SELECT search_tsv FROM memories WHERE tenant_id = %%L'\n"
    " ' AND state = ''active'' AND tier = ''hot''', %(tenant)s::text)) AS s"
)
BEFORE = [
    "DELETE FROM text_common_lexemes WHERE tenant_id = %(tenant)s",
    f"INSERT INTO text_common_lexemes (tenant_id, lexeme, share) SELECT %(tenant)s, s.word, s.ndoc::real / %(hot)s "
    f"{HOT} WHERE s.ndoc >= %(share)s * %(hot)s",
    "DELETE FROM text_lexeme_stats WHERE tenant_id = %(tenant)s",
    "DELETE FROM text_tenant_stats WHERE tenant_id = %(tenant)s",
    """INSERT INTO text_tenant_stats (tenant_id, docs, avg_length)
       SELECT %(tenant)s, count(*), coalesce(avg(length(m.search_tsv)), 1)
       FROM memories m WHERE m.tenant_id = %(tenant)s AND m.state = 'active' AND m.tier = 'hot'""",
    f"INSERT INTO text_lexeme_stats (tenant_id, lexeme, docs) SELECT %(tenant)s, s.word, s.ndoc {HOT} "
    "WHERE s.ndoc >= %(min_docs)s",
]


def stored(db: Database, tenant: str) -> tuple:
    with db.tenant_tx(tenant) as conn:
        return tuple(
            conn.execute(sql).fetchall()
            for sql in (
                "SELECT lexeme, share FROM text_common_lexemes ORDER BY lexeme",
                "SELECT lexeme, docs FROM text_lexeme_stats ORDER BY lexeme",
                "SELECT docs, avg_length FROM text_tenant_stats",
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    settings = Settings()
    cfg = settings.lifecycle
    tenant = f"bench-{args.size}"
    samples: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="contextos-bench-textstats-", ignore_cleanup_errors=True) as tmp:
        server = pgserver.get_server(Path(tmp) / "pg")
        url = server.get_uri()
        migrate(url, get_dialect("postgres"), DIM, "bench")
        with psycopg.connect(url, autocommit=True) as conn:  # as benchmarks.lifecycle: no search reads it
            conn.execute("DROP INDEX IF EXISTS memory_vectors_hnsw")
        load_s = load(url, tenant, args.size, settings)
        db = Database(url, get_dialect("postgres"), max_size=1)
        store = LifecycleStore(db, settings.decay, cfg)
        with db.tenant_tx(tenant) as conn:
            pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        params = {
            "tenant": tenant,
            "hot": args.size,
            "share": cfg.common_lexeme_share,
            "min_docs": cfg.text_stats_min_docs,
        }

        def before() -> None:
            with db.tenant_tx(tenant) as conn:
                for sql in BEFORE:
                    conn.execute(sql, params)

        def after() -> None:
            store.refresh_text_statistics(tenant)

        arms = {"before": before, "after": after}
        results = {}
        for name, arm in arms.items():  # warm-up, and the rows each arm stores
            arm()
            results[name] = stored(db, tenant)
        same = results["before"] == results["after"]
        for _ in range(args.rounds):
            for name, arm in arms.items():
                cpu, started = process_cpu_s(pid), time.perf_counter()
                arm()
                samples[name].append((time.perf_counter() - started, process_cpu_s(pid) - cpu))
        db.close()
        server.cleanup()
    figures: dict = {"size": args.size, "rounds": args.rounds, "load_s": round(load_s, 1), "same_rows": same}
    for name, runs in samples.items():
        figures[f"{name}_ms"] = round(statistics.median(r[0] for r in runs) * 1000, 1)
        figures[f"{name}_backend_cpu_ms"] = round(statistics.median(r[1] for r in runs) * 1000, 1)
    figures["after_over_before_cpu"] = round(figures["after_backend_cpu_ms"] / figures["before_backend_cpu_ms"], 3)
    figures["after_over_before_wall"] = round(figures["after_ms"] / figures["before_ms"], 3)
    figures["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for key, value in figures.items():
        print(f"{key:28s} {value}")
    path = write_report(
        "lifecycle_text_stats",
        figures,
        title="Lifecycle scan: text statistics, one pass vs three",
        notes=[
            "The store of benchmarks.lifecycle in a fresh embedded PostgreSQL 16; `before` is the scan's previous "
            "statements (two ts_stat passes and an aggregate over the tenant's hot search vectors), `after` "
            "`LifecycleStore.refresh_text_statistics` (one pass); medians of interleaved rounds after a warm-up.",
            "`*_backend_cpu_ms`: the CPU of the one pooled connection's backend (utime + stime from /proc); "
            "`same_rows`: both arms stored identical common lexemes, frequencies and tenant statistics.",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
