"""Lifecycle scan at 100k and 1M memories: wall time and peak RSS of the scanning process.

The stores are built with set-based SQL in a fresh embedded PostgreSQL, as a steady state would
look 4 hours after the previous scan: every memory was last accessed at some point in the past
and has decayed since (its strength then log-uniform over [0.10, 1], the shape that constant
creation plus exponential decay gives), λ follows its importance and type, and strength, band and
next transition were materialized by that previous scan. The scan then does its real work: the
memories whose band changed in those 4 hours are materialized, newly critical ones get reminders,
newly forgotten ones are archived to S3 (a moto server in its own process), scratch expiry and
vector settling run (and find nothing). Each scan runs in a fresh process (spawned), so its
peak RSS (``ru_maxrss``) is its own and not the loader's.

Run: ``python -m benchmarks.lifecycle [--sizes 100000 1000000]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pgserver
import psycopg
from contextos.decay import decay_rate
from contextos.settings import Settings
from contextos.store.dialect import get_dialect
from contextos.store.migrate import migrate
from contextos.store.sql import band_case, next_transition

from benchmarks.fixtures import summary_ms
from benchmarks.report import write_report

DIM = 384
TYPES = ["fact", "decision", "problem", "entity", "event", "preference", "code"]
SINCE_LAST_SCAN = "4 hours"
CHUNK = 250_000
BUCKET = "contextos-cold-bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    """A moto server in its own process: the objects it holds are not the scanner's memory."""
    port = free_port()
    moto = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a loaded machine takes a while to import moto's server
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"moto did not start on port {port}") from None
            time.sleep(0.1)
    return proc, endpoint


def load(url: str, tenant: str, n: int, settings: Settings) -> float:
    """N memories, one item each, a related edge for every second one, one vector each."""
    d = settings.decay
    rates = [(imp, t, decay_rate(imp, t, d)) for imp in range(1, 11) for t in TYPES]
    strength_then = "r.s_prev"
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT setseed(0.42)")
        conn.execute("INSERT INTO tenants (tenant_id, hot_memories) VALUES (%s, %s)", [tenant, n])
        for lo in range(1, n + 1, CHUNK):
            hi = min(lo + CHUNK - 1, n)
            conn.execute(
                f"""
                INSERT INTO memories (tenant_id, norm_key, label, definition, type, importance, strength_anchor,
                    strength_anchor_at, decay_policy, decay_rate, decay_scale, decay_shape, strength, band,
                    strength_materialized_at, next_transition_at, last_accessed_at, access_count, provenance,
                    base_trust, created_at, updated_at)
                SELECT %(tenant)s, 'concept ' || r.g, 'Concept ' || r.g,
                       'Concept ' || r.g || ' matters here because the service depends on it when traffic shifts.',
                       q.type, r.imp, 1.0, a.anchor_at, 'exponential', q.rate, 7.0, 0.8, r.s_prev,
                       {band_case(strength_then, d, "'exponential'")}, a.prev_scan,
                       {
                    next_transition(
                        "1.0",
                        "a.anchor_at",
                        "q.rate",
                        strength_then,
                        d,
                        policy_sql="'exponential'",
                        scale_sql="7.0",
                        shape_sql="0.8",
                    )
                },
                       a.anchor_at, 0, 'user_upload', 0.9, a.anchor_at, a.anchor_at
                FROM (
                    SELECT g, 1 + floor(random() * 10)::int AS imp, floor(random() * {len(TYPES)})::int AS type_index,
                           exp(ln(0.1) * random()) AS s_prev
                    FROM generate_series(%(lo)s::int, %(hi)s::int) AS g
                ) r
                JOIN unnest(%(imps)s::int[], %(types)s::text[], %(rates)s::float8[], %(indexes)s::int[])
                     AS q(imp, type, rate, type_index) ON q.imp = r.imp AND q.type_index = r.type_index
                CROSS JOIN LATERAL (
                    SELECT now() - interval '{SINCE_LAST_SCAN}' AS prev_scan,
                           now() - interval '{SINCE_LAST_SCAN}'
                               - (ln(r.s_prev) / ln(1.0 - q.rate)) * interval '1 day' AS anchor_at
                ) a""",
                {
                    "tenant": tenant,
                    "lo": lo,
                    "hi": hi,
                    "imps": [r[0] for r in rates],
                    "types": [r[1] for r in rates],
                    "rates": [r[2] for r in rates],
                    "indexes": [TYPES.index(r[1]) for r in rates],
                },
            )
        vector = "[" + ",".join(["0.051"] * DIM) + "]"
        conn.execute(
            """INSERT INTO memory_items (tenant_id, memory_id, session_id, label, definition, importance)
               SELECT tenant_id, id, 'bench', label, definition, importance FROM memories WHERE tenant_id = %s""",
            [tenant],
        )
        conn.execute(
            """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
               SELECT tenant_id, id, next_id, 'related', 0.5 FROM (
                   SELECT tenant_id, id, lead(id) OVER (ORDER BY norm_key) AS next_id,
                          row_number() OVER (ORDER BY norm_key) AS n
                   FROM memories WHERE tenant_id = %s) pairs
               WHERE n %% 2 = 0 AND next_id IS NOT NULL""",
            [tenant],
        )
        conn.execute(
            """INSERT INTO memory_vectors (tenant_id, memory_id, type, embedding, embedder_id, indexed)
               SELECT tenant_id, id, type, %s::vector, 'bench', true FROM memories WHERE tenant_id = %s""",
            [vector, tenant],
        )
        for table in ("memories", "memory_items", "relationships", "memory_vectors"):
            conn.execute(f"VACUUM ANALYZE {table}")
    return time.perf_counter() - started


def scan_in_fresh_process(env: dict, out: multiprocessing.Queue) -> None:
    """The scanner: the real composition root, its own process, its own peak RSS."""
    import resource

    os.environ.update(env)
    from contextos import container

    container.database()  # open the pool (and check migrations) before the clock starts
    service = container.lifecycle()
    pgdata = Path(env["BENCH_PGDATA"])
    backends_before = client_backends_cpu_s(pgdata)
    cpu_before = time.process_time()
    started = time.perf_counter()
    report = service.run()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_before
    # Read while the pool's connections are still open: their backends are this scan's server work.
    backends = client_backends_cpu_s(pgdata)
    backend_cpu = sum(t - backends_before.get(pid, 0.0) for pid, t in backends.items())
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    container.reset()
    out.put(
        {
            "elapsed_s": elapsed,
            "cpu_s": cpu,
            "backend_cpu_s": backend_cpu,
            "peak_rss_mb": peak_kb / 1024,
            "report": report.model_dump(),
        }
    )


def process_cpu_s(pid: int, *, children: bool = False) -> float:
    """utime + stime of a process (and of its reaped children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in ((11, 12, 13, 14) if children else (11, 12)))
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu_s(pgdata: Path) -> float:
    """CPU of the PostgreSQL server: the postmaster, its exited backends and the live ones."""
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    total = process_cpu_s(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    total += process_cpu_s(int(entry.name))
            except (OSError, ValueError):
                continue  # exited meanwhile: its time is in the postmaster's children total
    return total


def server_children(pgdata: Path) -> dict[int, str]:
    """pid → process title of every live child of the PostgreSQL postmaster."""
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    children[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError):
                continue
    return children


# Background processes: their work (autovacuum after the load, checkpoints) is not the scan's queries.
AUXILIARY = ("checkpointer", "background writer", "walwriter", "autovacuum", "logical replication", "archiver")


def client_backends_cpu_s(pgdata: Path) -> dict[int, float]:
    """CPU seconds of each live client backend (a connection's server process)."""
    cpu = {}
    for pid, title in server_children(pgdata).items():
        if not any(f"postgres: {name}" in title for name in AUXILIARY):
            try:
                cpu[pid] = process_cpu_s(pid)
            except OSError:
                continue
    return cpu


def run_scan(env: dict) -> dict:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=scan_in_fresh_process, args=(env, out))
    proc.start()
    result = out.get()
    proc.join()
    return result


def cold_search_ms(url: str, tenant: str, settings: Settings, queries: int = 21) -> float:
    """p50 of the cold-stub search a context query runs before its searches (exact, over this scan's stubs)."""
    import numpy as np
    from contextos.store.db import Database
    from contextos.store.lifecycle import LifecycleStore

    db = Database(url, get_dialect("postgres"), max_size=1)
    store = LifecycleStore(db, settings.decay, settings.lifecycle)
    rng = np.random.default_rng(7)
    times = []
    for _ in range(queries):
        vector = rng.standard_normal(DIM)
        vector /= np.linalg.norm(vector)
        started = time.perf_counter()
        store.cold_matches(tenant, vector.tolist(), min_similarity=0.8, limit=3)
        times.append((time.perf_counter() - started) * 1000)
    db.close()
    return summary_ms(times)["p50_ms"]


def band_shares(url: str, tenant: str) -> dict:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tier, band, count(*) FROM memories WHERE tenant_id = %s GROUP BY tier, band", [tenant]
        ).fetchall()
    return {f"{tier}/{band}": n for tier, band, n in rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--name", default="lifecycle", help="the report's name (benchmarks/reports/<name>)")
    args = parser.parse_args()
    settings = Settings()
    figures: dict = {}
    details: dict = {}
    moto, endpoint = start_moto()
    try:
        import boto3

        boto3.client(
            "s3", region_name="us-east-1", endpoint_url=endpoint, aws_access_key_id="x", aws_secret_access_key="x"
        ).create_bucket(Bucket=BUCKET)
        env_base = {
            "CONTEXTOS_COLD_BUCKET": BUCKET,
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_SERVICE_NAME": "contextos-bench",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "POWERTOOLS_METRICS_NAMESPACE": "ContextOS",
        }
        for n in args.sizes:
            with tempfile.TemporaryDirectory(prefix="contextos-bench-lifecycle-", ignore_cleanup_errors=True) as tmp:
                pgdata = Path(tmp) / "pg"
                server = pgserver.get_server(pgdata)
                url = server.get_uri()
                migrate(url, get_dialect("postgres"), DIM, "bench")
                with psycopg.connect(url, autocommit=True) as conn:
                    # The scan never inserts into HNSW (archived vectors leave its predicate); building
                    # it for 1M vectors would take an hour here and measure nothing about the scan.
                    conn.execute("DROP INDEX IF EXISTS memory_vectors_hnsw")
                tenant = f"bench-{n}"
                load_s = load(url, tenant, n, settings)
                print(f"{n:,} memories loaded in {load_s:.0f} s", flush=True)
                # A restart empties PostgreSQL's buffer pool (the OS page cache stays): at 100k the
                # whole freshly loaded store would otherwise still sit in the 128 MB pool, at 1M not,
                # and the two sizes would be measured in different states.
                server.cleanup()
                server = pgserver.get_server(pgdata)
                server_before, moto_before = server_cpu_s(pgdata), process_cpu_s(moto.pid)
                result = run_scan({**env_base, "CONTEXTOS_DATABASE_URL": server.get_uri(), "BENCH_PGDATA": str(pgdata)})
                time.sleep(0.5)  # the scanner's backends exit and are reaped: their time is counted
                result["server_cpu_s"] = server_cpu_s(pgdata) - server_before
                result["moto_cpu_s"] = process_cpu_s(moto.pid) - moto_before
                after = band_shares(server.get_uri(), tenant)
                cold_ms = cold_search_ms(server.get_uri(), tenant, settings)
                server.cleanup()
            report = result["report"]
            label = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}m"
            figures[f"scan_s_{label}"] = round(result["elapsed_s"], 2)
            figures[f"scan_cpu_s_{label}"] = round(result["cpu_s"], 2)
            figures[f"server_cpu_s_{label}"] = round(result["server_cpu_s"], 2)
            figures[f"backend_cpu_s_{label}"] = round(result["backend_cpu_s"], 2)
            figures[f"moto_cpu_s_{label}"] = round(result["moto_cpu_s"], 2)
            figures[f"load_average_{label}"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
            figures[f"peak_rss_mb_{label}"] = round(result["peak_rss_mb"], 1)
            figures[f"changed_band_share_{label}"] = round(report["changed_band"] / n, 4)
            figures[f"archived_{label}"] = report["archived"]
            figures[f"reminders_opened_{label}"] = report["reminders_opened"]
            figures[f"cold_search_p50_ms_{label}"] = round(cold_ms, 2)
            details[label] = {"load_s": round(load_s, 1), "report": report, "after": after}
            print(
                f"scan at {n:,}: {result['elapsed_s']:.2f} s, peak RSS {result['peak_rss_mb']:.0f} MB, "
                f"{report['changed_band']:,} changed band ({report['changed_band'] / n:.2%}), "
                f"{report['reminders_opened']:,} reminders, {report['archived']:,} archived, "
                f"stages {report['stage_s']}",
                flush=True,
            )
    finally:
        moto.terminate()
        moto.wait()
    if "scan_s_100k" in figures and "scan_s_1m" in figures:
        figures["scan_1m_over_100k"] = round(figures["scan_s_1m"] / figures["scan_s_100k"], 2)
        figures["rss_1m_over_100k"] = round(figures["peak_rss_mb_1m"] / figures["peak_rss_mb_100k"], 3)
    path = write_report(
        args.name,
        {**figures, "details": details},
        title="Lifecycle scan",
        notes=[
            "One fresh embedded PostgreSQL 16 (default settings: 128 MB shared_buffers) per size, restarted after "
            "the load so both sizes start with an empty buffer pool; the stores are steady states 4 hours after "
            "the previous scan (strength log-uniform over [0.10, 1] then, λ by importance and type).",
            "The scan is the real LifecycleService (materialize due transitions, reminders, archival to S3 in "
            "batches of 500 per object, scratch expiry, vector settling) in a fresh process; peak RSS is its "
            "ru_maxrss. S3 is a moto server in another process.",
            "Each memory has one item, every second one a related edge, and a (constant) 384-d vector; the HNSW "
            "index is dropped because the scan never inserts into it.",
            "cold_search_p50_ms: the exact cold-stub vector search each context query runs (over the stubs this "
            "scan made), measured after the scan.",
            "CPU seconds of the scan, far less sensitive to the machine's load than its wall time: "
            "`scan_cpu_s` the scanning process, `server_cpu_s` PostgreSQL (postmaster and backends), "
            "`moto_cpu_s` the S3 stand-in; `load_average_*` when that size finished.",
            "Targets: 1M in <= 30 s, RSS flat from 100k to 1M, 1M <= 12x the 100k time.",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
