"""Workspace export (S10) at 10k and 100k memories: seconds and peak RSS of the exporting process.

Each size gets a fresh embedded PostgreSQL loaded with set-based SQL (one item and a source
document per memory, a related edge for every second one, scopes, tags and metadata). The export
is the real ``WorkspaceService.archive`` (keyset pages → rendered files → tar.gz stream) in a
fresh spawned process writing to /dev/null, so its ``ru_maxrss`` is its own. The baseline in the
same run is the same process shape doing everything but the export (imports, pool, one page):
bounded memory means the export's peak stays near that baseline at both sizes, while the same
rows read in one statement (the "whole" figure) grow with the store.

Run: ``.venv/bin/python -m benchmarks.workspace_export [--sizes 10000 100000]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

import pgserver
import psycopg
from contextos.services.workspace import memory_of_row
from contextos.store.dialect import get_dialect
from contextos.store.migrate import migrate
from contextos.workspace.format import render_file

from benchmarks.report import write_report

DIM = 384
CHUNK = 50_000
ENV = {
    "POWERTOOLS_SERVICE_NAME": "contextos-bench",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_METRICS_NAMESPACE": "ContextOS",
}


def load(url: str, tenant: str, n: int) -> float:
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO tenants (tenant_id, hot_memories) VALUES (%s, %s)", [tenant, n])
        conn.execute(
            """INSERT INTO documents (tenant_id, content_hash, filename, status)
               VALUES (%s, 'bench', 'bench.md', 'done')""",
            [tenant],
        )
        for lo in range(1, n + 1, CHUNK):
            hi = min(lo + CHUNK - 1, n)
            conn.execute(
                """INSERT INTO memories (tenant_id, norm_key, label, definition, type, importance, decay_rate,
                       provenance, base_trust, tags, metadata, user_id, agent_id)
                   SELECT %(tenant)s, 'concept ' || g, 'Concept ' || g,
                          'Concept ' || g || ' matters here because the service depends on it when traffic shifts.',
                          (ARRAY['fact','problem','decision','rule','task','event'])[1 + g %% 6], 1 + g %% 10, 0.15,
                          'user_upload', 0.9, ARRAY['bench', 'tag ' || (g %% 7)],
                          jsonb_build_object('batch', g %% 13, 'source', 'bench'), 'user-' || (g %% 5), 'agent-1'
                   FROM generate_series(%(lo)s::int, %(hi)s::int) AS g""",
                {"tenant": tenant, "lo": lo, "hi": hi},
            )
        conn.execute(
            """INSERT INTO memory_items (tenant_id, memory_id, document_id, label, definition, importance)
               SELECT m.tenant_id, m.id, d.id, m.label, 'The source said: ' || m.definition, m.importance
               FROM memories m JOIN documents d ON d.tenant_id = m.tenant_id WHERE m.tenant_id = %s""",
            [tenant],
        )
        conn.execute(
            """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
               SELECT tenant_id, id, next_id, 'related', 0.5 FROM (
                   SELECT tenant_id, id, lead(id) OVER (ORDER BY id) AS next_id, row_number() OVER (ORDER BY id) AS n
                   FROM memories WHERE tenant_id = %s) pairs
               WHERE n %% 2 = 0 AND next_id IS NOT NULL""",
            [tenant],
        )
        for table in ("memories", "memory_items", "relationships", "documents"):
            conn.execute(f"VACUUM ANALYZE {table}")
    return time.perf_counter() - started


def export_in_fresh_process(env: dict, tenant: str, mode: str, out: multiprocessing.Queue) -> None:
    import resource

    os.environ.update(env)
    from contextos import container

    service = container.workspace()
    next(iter(service.workspace.export_page(tenant, after=None, limit=service.page_size)), None)
    started = time.perf_counter()
    size = 0
    if mode == "stream":
        with open(os.devnull, "wb") as sink:
            for chunk in service.archive(tenant, "tar"):
                sink.write(chunk)
                size += len(chunk)
    elif mode == "whole":
        # What an export without keyset pages would hold: every row of the tenant at once.
        rows = service.workspace.export_page(tenant, after=None, limit=10**9)
        size = sum(len(render_file(memory_of_row(r))) for r in rows)
    elapsed = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    container.reset()
    out.put({"elapsed_s": elapsed, "peak_rss_mb": peak_kb / 1024, "bytes": size})


def run(env: dict, tenant: str, mode: str) -> dict:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=export_in_fresh_process, args=(env, tenant, mode, out))
    proc.start()
    result = out.get()
    proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    figures: dict = {}
    for n in args.sizes:
        label = f"{n // 1000}k"
        with tempfile.TemporaryDirectory(prefix="contextos-bench-workspace-", ignore_cleanup_errors=True) as tmp:
            server = pgserver.get_server(Path(tmp) / "pg")
            url = server.get_uri()
            migrate(url, get_dialect("postgres"), DIM, "local:all-MiniLM-L6-v2-int8")
            tenant = f"bench-{n}"
            load_s = load(url, tenant, n)
            env = {**ENV, "CONTEXTOS_DATABASE_URL": url}
            baseline = run(env, tenant, "idle")
            result = run(env, tenant, "stream")
            whole = run(env, tenant, "whole")
            server.cleanup()
        figures[f"export_s_{label}"] = round(result["elapsed_s"], 2)
        figures[f"files_per_s_{label}"] = round(n / result["elapsed_s"])
        figures[f"peak_rss_mb_{label}"] = round(result["peak_rss_mb"], 1)
        figures[f"baseline_rss_mb_{label}"] = round(baseline["peak_rss_mb"], 1)
        figures[f"rss_over_baseline_{label}"] = round(result["peak_rss_mb"] / baseline["peak_rss_mb"], 3)
        figures[f"whole_rss_mb_{label}"] = round(whole["peak_rss_mb"], 1)
        figures[f"archive_mb_{label}"] = round(result["bytes"] / 1e6, 1)
        figures[f"load_s_{label}"] = round(load_s, 1)
        print(
            f"export of {n:,}: {result['elapsed_s']:.1f} s ({n / result['elapsed_s']:.0f} files/s), peak RSS "
            f"{result['peak_rss_mb']:.0f} MB (idle {baseline['peak_rss_mb']:.0f} MB, all rows at once "
            f"{whole['peak_rss_mb']:.0f} MB), "
            f"archive {result['bytes'] / 1e6:.1f} MB",
            flush=True,
        )
    if "peak_rss_mb_10k" in figures and "peak_rss_mb_100k" in figures:
        figures["rss_100k_over_10k"] = round(figures["peak_rss_mb_100k"] / figures["peak_rss_mb_10k"], 3)
        figures["whole_rss_100k_over_10k"] = round(figures["whole_rss_mb_100k"] / figures["whole_rss_mb_10k"], 3)
        figures["time_100k_over_10k"] = round(figures["export_s_100k"] / figures["export_s_10k"], 2)
    path = write_report(
        "workspace_export",
        figures,
        title="Workspace export (tar.gz stream)",
        notes=[
            "One fresh embedded PostgreSQL 16 per size; memories with one sourced item, a source document, a related "
            "edge for every second one, scopes, tags and metadata, loaded with set-based SQL.",
            "The export is the real WorkspaceService.archive (keyset pages of 500 by id, one statement per page "
            "with the edges and sources aggregated, rendered files, a streaming tar.gz) in a fresh process writing "
            "to /dev/null; peak RSS is its ru_maxrss.",
            "baseline: the same fresh process with the same imports, pool and one page read, but no export; "
            "whole: the same rows fetched in one statement and rendered (what an unpaginated export holds).",
            "The embedding model is not loaded for an export (the service loads it on the first import).",
            "Target: peak RSS flat from 10k to 100k (rss_100k_over_10k close to 1).",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
