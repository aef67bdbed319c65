"""Scoped retrieval latency (S11 scopes, S14): the full read path at 100k memories with scope
filters applied, beside the raw pgvector HNSW top-20 on the same data and queries.

Reuses ``benchmarks/retrieval.py``'s corpus, loader and index build (one owner of the benchmark
data). After the load, every memory gets a scope the way a multi-user deployment would have
them: one of 50 users (≈2 % of the tenant each), one of 2 agents (≈50 % each), and a tag on 10 %.
Measured, each with the pipeline ``RetrievalService.context(dry_run=True, query_vector=v)``:

- ``user``: ``scope={"user_id": …}`` — the small-scope path (exact scan through the scope index);
- ``agent``: ``scope={"agent_id": …}`` — the large-scope path (ANN widened, then filtered);
- ``tag``: ``scope={"tags": [...]}`` — a tag filter (GIN), ≈10 % of the tenant;
- ``unscoped``: the same queries with no scope (the present read path, for reference);
- raw: ``SELECT … ORDER BY embedding <=> $q LIMIT 20`` as the owner, unscoped (the floor).

Every returned memory is checked against its scope (``scope_violations`` must be 0) and the mean
number returned shows whether a small scope still fills its answer.

Run: ``.venv/bin/python benchmarks/retrieval_scoped.py`` (``--large 20000`` for a quick look).
Figures go to ``benchmarks/reports/retrieval_scoped.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from contextos.models import ContextRequest
from contextos.observability import metrics
from contextos.scopes import ScopeFilter
from contextos.services.cold import ColdStorage
from contextos.services.retrieval import RetrievalService
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.lifecycle import LifecycleStore
from contextos.store.migrate import migrate
from contextos.store.scoped_reads import ScopedReads
from contextos.store.stores import Stores
from pgvector.psycopg import register_vector

from benchmarks.locomo import MemoryBlobs
from benchmarks.report import write_report
from benchmarks.retrieval import (
    DIM,
    LARGE_TENANT,
    PARALLEL,
    RAW_HNSW,
    SMALL_TENANT,
    ServerCpu,
    TimingStore,
    build_corpus,
    build_index,
    corpus_vectors,
    load,
    make_queries,
    pct,
    prototypes,
    timed,
)
from benchmarks.warm import WarmTenant, read_service, warm_figures, warm_interleaved

USERS = 50
AGENTS = 2
TAG_SHARE = 10  # one memory in this many carries the tag


def assign_scopes(url: str, tenant: str) -> dict:
    """Users, agents and a tag over the loaded memories, set-based, then compacted and analysed."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """UPDATE memories SET
                   user_id = 'user-' || (abs(hashtext(id::text)) %% %(users)s),
                   agent_id = 'agent-' || (abs(hashtext(id::text || 'a')) %% %(agents)s),
                   tags = CASE WHEN abs(hashtext(id::text || 't')) %% %(share)s = 0 THEN '{billing}'::text[]
                               ELSE '{}'::text[] END
               WHERE tenant_id = %(tenant)s""",
            {"users": USERS, "agents": AGENTS, "share": TAG_SHARE, "tenant": tenant},
        )
        # Rewritten in place, every row left a dead version behind (tables twice their size, a
        # scope's rows spread over twice the pages): compacted as a load that carried the scopes
        # from the start would have left them, then analysed (the HNSW index is built after this).
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("VACUUM (FULL, ANALYZE) memories")
        conn.execute("VACUUM (FULL, ANALYZE) memory_vectors")
    return {"scope_rows": scope_sizes(url, tenant)["scope_rows"], "assign_s": round(time.perf_counter() - started, 1)}


def scope_sizes(url: str, tenant: str) -> dict:
    """How many memories the first user, the first agent and the tag hold."""
    with psycopg.connect(url, autocommit=True) as conn:
        sizes = dict(
            conn.execute(
                """SELECT 'user-0', count(*) FILTER (WHERE user_id = 'user-0') FROM memories WHERE tenant_id = %(t)s
                   UNION ALL SELECT 'agent-0', count(*) FILTER (WHERE agent_id = 'agent-0') FROM memories
                   WHERE tenant_id = %(t)s
                   UNION ALL SELECT 'billing', count(*) FILTER (WHERE tags @> '{billing}') FROM memories
                   WHERE tenant_id = %(t)s""",
                {"t": tenant},
            ).fetchall()
        )
    return {"scope_rows": sizes}


def table_state(url: str) -> dict:
    """Dead rows and the last (auto)vacuum/analyze of the tables the read path reads: whether the
    measured state is the settled one a user has, not the one the scope rewrite just left."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            """SELECT relname, n_live_tup, n_dead_tup, last_vacuum, last_autovacuum, last_analyze, last_autoanalyze
               FROM pg_stat_user_tables WHERE relname IN ('memories', 'memory_vectors') ORDER BY relname"""
        ).fetchall()
        running = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'")
        workers = running.fetchone()[0]
    state = {
        r[0]: {"live": r[1], "dead": r[2]}
        | {k: str(v) if v else None for k, v in zip(_STATE_COLUMNS, r[3:], strict=True)}
        for r in rows
    }
    return state | {"autovacuum_workers_running": workers}


_STATE_COLUMNS = ("last_vacuum", "last_autovacuum", "last_analyze", "last_autoanalyze")


def in_scope(conn: psycopg.Connection, tenant: str, ids: set, scope: ScopeFilter | None) -> int:
    """How many of ``ids`` fall outside ``scope`` (must be 0). On the benchmark's one open connection:
    a backend that ends takes its CPU time out of the server's sum (`ServerCpu`)."""
    if scope is None or not ids:
        return 0
    rows = conn.execute(
        "SELECT id, user_id, agent_id, tags FROM memories WHERE tenant_id = %s AND id = ANY(%s)",
        [tenant, list(ids)],
    ).fetchall()

    def outside(user: str, agent: str, tags: list[str]) -> bool:
        wrong_owner = (scope.user_id and user != scope.user_id) or (scope.agent_id and agent != scope.agent_id)
        return bool(wrong_owner or (scope.tags and not set(scope.tags) <= set(tags)))

    return sum(1 for _, user, agent, tags in rows if outside(user, agent, tags))


def exact_scoped(conn: psycopg.Connection, tenant: str, vector: np.ndarray, scope: ScopeFilter, k: int) -> set:
    """The scope's exact top-k by cosine, as the owner (no index: every vector of the scope)."""
    where = ["m.user_id = %(user)s"] if scope.user_id else []
    where += ["m.agent_id = %(agent)s"] if scope.agent_id else []
    where += ["m.tags @> %(tags)s::text[]"] if scope.tags else []
    rows = conn.execute(
        f"""SELECT v.memory_id FROM memory_vectors v
            JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
            WHERE v.tenant_id = %(tenant)s AND v.searchable AND {" AND ".join(where)}
            ORDER BY (v.embedding <=> %(q)s) + 0.0 LIMIT %(k)s""",
        {"tenant": tenant, "user": scope.user_id, "agent": scope.agent_id, "tags": list(scope.tags)}
        | {"q": vector, "k": k},
    ).fetchall()
    return {r[0] for r in rows}


def interleaved(
    service: RetrievalService,
    url: str,
    tenant: str,
    queries: list[str],
    vectors: np.ndarray,
    variants: dict[str, list[ScopeFilter | None]],
    ef_search: int,
    warmup: int,
) -> tuple[dict, dict]:
    """Per query, the raw HNSW top-20 and then every variant's pipeline, back to back: on a shared
    machine whose load moves by the minute, each ratio compares timings taken at the same moments."""

    def run(q: str, v: np.ndarray, scope: ScopeFilter | None):
        request = ContextRequest(query=q, dry_run=True, scope=scope)
        return service.context(tenant, request, query_vector=v.tolist())

    cfg = service.settings.retrieval
    store = service.store
    recall: dict[str, list[float]] = {name: [] for name in variants}
    times: dict[str, list[float]] = {name: [] for name in variants}
    returned: dict[str, list[int]] = {name: [] for name in variants}
    violations = dict.fromkeys(variants, 0)
    raw_times: list[float] = []
    cpu: dict[str, list[float]] = {name: [] for name in [*variants, "raw"]}
    server = ServerCpu(url)

    def on_cpu(fn):
        """(wall ms, result, client + server CPU ms) of one call."""
        before, client = server.ms(), time.process_time()
        ms, out = timed(fn)
        return ms, out, server.ms() - before + (time.process_time() - client) * 1000.0

    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(f"SET hnsw.ef_search = {int(ef_search)}")
        for i, (q, v) in enumerate(zip(queries, vectors, strict=True)):
            measuring = i >= warmup
            ms, _, spent = on_cpu(lambda v=v: conn.execute(RAW_HNSW, [tenant, v]).fetchall())
            if measuring:
                raw_times.append(ms)
                cpu["raw"].append(spent)
            for name, scopes in variants.items():
                scope = scopes[i % len(scopes)]
                ms, result, spent = on_cpu(lambda q=q, v=v, scope=scope: run(q, v, scope))
                metrics.clear_metrics()
                if not measuring:
                    continue
                ids = {m.id for m in result.memories}
                times[name].append(ms)
                cpu[name].append(spent)
                returned[name].append(len(ids))
                violations[name] += in_scope(conn, tenant, ids, scope)
                if scope is not None:  # the vector side against the exact scoped top-k
                    reads = ScopedReads(store, scope, cfg.exact_scan_max_rows, cfg.scope_size_cache_s)
                    got = reads.vector_search(
                        tenant,
                        v.tolist(),
                        k=cfg.vector_k,
                        ef_search=cfg.hnsw_ef_search,
                        exact_scan_max_rows=cfg.exact_scan_max_rows,
                        scope_cache_s=cfg.scope_size_cache_s,
                    )
                    exact = exact_scoped(conn, tenant, v, scope, cfg.vector_k)
                    recall[name].append(len({r["id"] for r in got} & exact) / max(len(exact), 1))
                    violations[name] += in_scope(conn, tenant, {r["id"] for r in got}, scope)
    server.close()
    results = {
        name: {
            "pipeline": pct(times[name]),
            "cpu": pct(cpu[name]),
            "mean_returned": round(float(np.mean(returned[name])), 2),
            "violations": violations[name],
            "vector_recall": round(float(np.mean(recall[name])), 4) if recall[name] else None,
        }
        for name in variants
    }
    return results, pct(raw_times) | {"cpu": pct(cpu["raw"])}


def _statement_kind(sql: str) -> str:
    """A short name for one of the read path's statements (the profile's per-statement figures)."""
    for marker, name in (
        ("contextos_bm25_rank", "bm25"),
        ("WITH size AS MATERIALIZED", "vector_exact_capped"),
        ("LIMIT %(breadth)s", "vector_ann_widened"),
        ("WITH scoped AS MATERIALIZED", "vector_exact_full"),
        ("hot_memories FROM tenants", "tenant_size"),
        ("ORDER BY embedding <=>", "vector_ann"),
    ):
        if marker in sql:
            return name
    return "other:" + " ".join(sql.split())[:40]


class TimingDatabase:
    """The store's ``Database`` with every ``tenant_read`` timed by the kind of its last statement."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self.calls: list[tuple[str, float]] = []

    def __getattr__(self, name: str):
        return getattr(self._db, name)

    def tenant_read(self, tenant_id: str, *statements):
        ms, rows = timed(lambda: self._db.tenant_read(tenant_id, *statements))
        with self._lock:
            self.calls.append((_statement_kind(statements[-1][0]), ms))
        return rows


def _filled(timings: dict[str, list[float]], n: int) -> dict:
    """Percentiles per call, a query that did not make the call counting 0 ms for it."""
    return {k: pct(v + [0.0] * (n - len(v))) | {"calls": len(v)} for k, v in timings.items()}


def scoped_stage_profile(
    settings: Settings,
    db: Database,
    lifecycle: LifecycleStore,
    tenant: str,
    queries: list[str],
    vectors: np.ndarray,
    variants: dict[str, list[ScopeFilter | None]],
) -> dict:
    """Per variant, each read-path call timed inside the real pipeline (the searches overlap in
    threads: ``parallel_searches`` is the wall time of that section) and each statement's
    ``tenant_read`` by kind, so what a scope adds over the unscoped pipeline shows per call."""
    timing_db = TimingDatabase(db)
    store = Stores.over(timing_db, settings.decay, settings.merge)  # type: ignore[arg-type]
    proxy = TimingStore(store.reads)
    calls = proxy.calls

    class Profiled(RetrievalService):
        def _reads(self, as_of, scope=None):
            reads = super()._reads(as_of, scope)
            if reads is proxy:
                return reads
            timed_reads = TimingStore(reads)  # type: ignore[arg-type]
            timed_reads.calls = calls
            return timed_reads

    cold_store = TimingStore(LifecycleStore(timing_db, settings.decay, settings.lifecycle))  # type: ignore[arg-type]
    cold_store.calls = calls
    cold = ColdStorage(cold_store, MemoryBlobs(), settings.cold_bucket, settings.lifecycle)  # type: ignore[arg-type]
    service = Profiled(settings=settings, store=proxy, embedder=None, cold=cold)  # type: ignore[arg-type]
    out: dict[str, dict] = {}
    for name, scopes in variants.items():
        per_call: dict[str, list[float]] = {}
        per_statement: dict[str, list[float]] = {}
        for i, (q, v) in enumerate(zip(queries, vectors, strict=True)):
            calls.clear()
            timing_db.calls.clear()
            request = ContextRequest(query=q, dry_run=True, scope=scopes[i % len(scopes)])
            total, _ = timed(lambda request=request, v=v: service.context(tenant, request, query_vector=v.tolist()))
            metrics.clear_metrics()
            this: dict[str, float] = {"total": total}
            for call, _a, _k, s, e in calls:
                this[call] = this.get(call, 0.0) + (e - s) * 1000.0
            par = [c for c in calls if c[0] in (*PARALLEL, "cold_candidates")]
            this["parallel_searches"] = (max(c[4] for c in par) - min(c[3] for c in par)) * 1000.0 if par else 0.0
            for key, value in this.items():
                per_call.setdefault(key, []).append(value)
            stmts: dict[str, float] = {}
            for kind, ms in timing_db.calls:
                stmts[kind] = stmts.get(kind, 0.0) + ms
            for key, value in stmts.items():
                per_statement.setdefault(key, []).append(value)
        out[name] = {"calls": _filled(per_call, len(queries)), "statements": _filled(per_statement, len(queries))}
    return out


def breadth_sweep(url: str, tenant: str, vectors: np.ndarray, breadths: list[int], k: int) -> dict:
    """What the widened ANN's breadth buys a large scope: per breadth, the ANN's first ``breadth``
    rows (hnsw.ef_search = breadth) filtered to the scope, against the scope's exact top-k (owner
    side): mean vector recall and median wall ms."""
    scopes = {"agent": "v.agent_id = 'agent-0'", "tag": "v.tags @> '{billing}'"}
    out: dict[str, dict] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        for name, where in scopes.items():
            recall: dict[int, list[float]] = {b: [] for b in breadths}
            wall: dict[int, list[float]] = {b: [] for b in breadths}
            for v in vectors:
                exact = conn.execute(
                    f"""SELECT memory_id FROM memory_vectors v WHERE tenant_id = %s AND searchable AND {where}
                        ORDER BY (embedding <=> %s) + 0.0 LIMIT %s""",
                    [tenant, v, k],
                ).fetchall()
                for b in breadths:
                    conn.execute(f"SET hnsw.ef_search = {int(b)}")
                    ms, rows = timed(
                        lambda b=b, v=v, where=where: conn.execute(
                            f"""SELECT memory_id FROM (
                                    SELECT memory_id, agent_id, tags, embedding <=> %s AS d FROM memory_vectors v
                                    WHERE tenant_id = %s AND searchable AND indexed
                                    ORDER BY embedding <=> %s LIMIT {int(b)}) v
                                WHERE {where} ORDER BY d LIMIT %s""",
                            [v, tenant, v, k],
                        ).fetchall()
                    )
                    wall[b].append(ms)
                    recall[b].append(len({r[0] for r in rows} & {r[0] for r in exact}) / max(len(exact), 1))
            out[name] = {
                str(b): {"recall": round(float(np.mean(recall[b])), 4), "p50_ms": pct(wall[b])["p50"]} for b in breadths
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000, help="the small tenant of the warm-connection phase")
    parser.add_argument("--warm-warmup", type=int, default=50, help="rounds on the warm connection before timing")
    parser.add_argument("--warm-queries", type=int, default=200, help="timed rounds on the warm connection")
    parser.add_argument("--pool", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--profile", type=int, default=0, help="also profile each read-path call and statement over this many queries"
    )
    parser.add_argument(
        "--breadth-sweep",
        type=int,
        default=0,
        help="vector recall of a large scope per ANN breadth over this many queries",
    )
    parser.add_argument(
        "--profile-only",
        action="store_true",
        help="only the profile and the A/B (iterating on a kept --data-dir): no report",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the database here; a later run with the same directory (and --large) measures it again"
        " without loading and indexing anew",
    )
    args = parser.parse_args()
    wall = time.perf_counter()
    settings = Settings()
    from contextos.embedding.local import LocalMiniLMEmbedder

    embedder = LocalMiniLMEmbedder()
    protos = prototypes(args.pool, random.Random(7))
    corpus = build_corpus(LARGE_TENANT, args.large, protos, settings.extraction.generic_modifiers, seed=2)
    queries = make_queries(corpus, protos, args.queries + args.warmup, seed=4)
    qvecs = np.asarray(embedder.embed(queries), dtype=np.float32)
    small = build_corpus(SMALL_TENANT, args.small, protos, settings.extraction.generic_modifiers, seed=1)
    small_queries = make_queries(small, protos, args.warm_warmup + args.warm_queries, seed=3)
    small_qvecs = np.asarray(embedder.embed(small_queries), dtype=np.float32)
    rng = random.Random(11)
    users = [ScopeFilter(user_id=f"user-{rng.randrange(USERS)}") for _ in range(25)]
    agents = [ScopeFilter(agent_id=f"agent-{n}") for n in range(AGENTS)]
    tags = [ScopeFilter(tags=["billing"])]

    with tempfile.TemporaryDirectory(prefix="contextos-bench-") as tmp:
        url = embedded_database_url(args.data_dir or Path(tmp))
        migrate(url, get_dialect("postgres"), DIM, "bench")
        db = Database(url, get_dialect("postgres"), max_size=settings.pool_max_size)
        store = Stores.over(db, settings.decay, settings.merge)
        lifecycle = LifecycleStore(db, settings.decay, settings.lifecycle)  # its text-statistics step
        # as deployed: cold stubs are searched too (there are none here, the searches still run)
        cold = ColdStorage(lifecycle, MemoryBlobs(), settings.cold_bucket, settings.lifecycle)
        service = RetrievalService(settings=settings, store=store.reads, embedder=embedder, cold=cold)
        held = db.tenant_read(LARGE_TENANT, ("SELECT count(*) AS n FROM memories", None))[0]["n"]
        if held == len(corpus):  # a kept database (--data-dir) built by an earlier run
            loaded, scopes = {"memories": held, "reused": str(args.data_dir)}, scope_sizes(url, LARGE_TENANT)
            with psycopg.connect(url, autocommit=True) as conn:  # settled as a fresh build leaves it
                conn.execute("VACUUM ANALYZE memories, memory_vectors")
        else:
            pool = np.asarray(embedder.embed([p.text() for p in protos]), dtype=np.float32)
            vectors = corpus_vectors(corpus, pool, seed=6)
            loaded = load(url, corpus, vectors, settings, seed=9)
            scopes = assign_scopes(url, LARGE_TENANT)
            print(f"{len(corpus)} memories loaded {loaded} {scopes}; building HNSW…", flush=True)
            loaded["index_s"] = round(build_index(url), 1)
        small_held = db.tenant_read(SMALL_TENANT, ("SELECT count(*) AS n FROM memories", None))[0]["n"]
        if small_held != len(small):  # the warm phase's small tenant, scoped the same way, then the index again
            pool = np.asarray(embedder.embed([p.text() for p in protos]), dtype=np.float32)
            loaded["small"] = load(url, small, corpus_vectors(small, pool, seed=5), settings, seed=8)
            loaded["small"]["scopes"] = assign_scopes(url, SMALL_TENANT)
            loaded["index_s_with_small"] = round(build_index(url), 1)
        # the lifecycle's text statistics (BM25's document frequencies and common words), as a
        # deployed tenant has them once its scheduled run has passed: retrieval.py does the same
        loaded["common_lexemes"] = lifecycle.refresh_common_lexemes(LARGE_TENANT)
        loaded["text_stats_lexemes"] = lifecycle.refresh_text_stats(LARGE_TENANT)
        lifecycle.refresh_common_lexemes(SMALL_TENANT)
        lifecycle.refresh_text_stats(SMALL_TENANT)
        variants = {"unscoped": [None], "user": users, "agent": agents, "tag": tags}
        profile = {}
        if args.profile:
            warm, prof = args.warmup, args.warmup + args.profile
            scoped_stage_profile(settings, db, lifecycle, LARGE_TENANT, queries[:warm], qvecs[:warm], variants)
            profile = scoped_stage_profile(
                settings, db, lifecycle, LARGE_TENANT, queries[warm:prof], qvecs[warm:prof], variants
            )
            print(json.dumps({"load_1m": os.getloadavg()[0], "profile": profile}, indent=1), flush=True)
        sweep = {}
        if args.breadth_sweep:
            picked = slice(args.warmup, args.warmup + args.breadth_sweep)
            sweep = breadth_sweep(url, LARGE_TENANT, qvecs[picked], [300, 500, 700, 1000], settings.retrieval.vector_k)
            print(json.dumps({"breadth_sweep": sweep}, indent=1), flush=True)
        if args.profile_only:
            db.close()
            return
        load_before, state_before = os.getloadavg(), table_state(url)
        results, raw = interleaved(
            service, url, LARGE_TENANT, queries, qvecs, variants, settings.retrieval.hnsw_ef_search, args.warmup
        )
        load_after, state_after = os.getloadavg(), table_state(url)
        for name, result in results.items():
            print(f"{name}: {result}", flush=True)
        print(f"raw: {raw}", flush=True)
        print("warm: one connection, the large and the small tenant interleaved, every scope in turn…", flush=True)
        turns: list[ScopeFilter | None] = []
        for j in range(len(users)):
            turns += [None, users[j], agents[j % len(agents)], tags[0]]

        def make_service(one: Database) -> RetrievalService:
            return read_service(one, settings, embedder, MemoryBlobs())

        warm = warm_interleaved(
            url,
            make_service,
            [
                WarmTenant(LARGE_TENANT, queries, qvecs, len(corpus), turns),
                WarmTenant(SMALL_TENANT, small_queries, small_qvecs, len(small), turns),
            ],
            warmup=args.warm_warmup,
            measured=args.warm_queries,
        )
        print(f"warm: {warm_figures(warm, settings.retrieval.vector_k)}", flush=True)
        db.close()

    size = f"{args.large // 1000}k"
    scoped = ("user", "agent", "tag")
    worst = max(scoped, key=lambda name: results[name]["pipeline"]["p95"])  # the target holds for every scope
    p95 = results[worst]["pipeline"]["p95"]
    ratio = p95 / raw["p95"]
    figures = {
        f"p95_ms_{size}_scoped": p95,
        f"p50_ms_{size}_scoped": results[worst]["pipeline"]["p50"],
        "scoped_worst_filter": worst,
        f"raw_hnsw_p95_ms_{size}": raw["p95"],
        f"raw_hnsw_p50_ms_{size}": raw["p50"],
        f"scoped_p95_over_raw_p95_{size}": round(ratio, 2),
        f"target_scoped_le_5x_raw_{size}": "pass" if ratio <= 5 else "fail",
        f"scoped_p95_over_unscoped_p95_{size}": round(p95 / results["unscoped"]["pipeline"]["p95"], 2),
        **{f"p95_ms_{size}_{name}": r["pipeline"]["p95"] for name, r in results.items()},
        **{f"p50_ms_{size}_{name}": r["pipeline"]["p50"] for name, r in results.items()},
        **{f"{name}_over_raw_p95_{size}": round(r["pipeline"]["p95"] / raw["p95"], 2) for name, r in results.items()},
        **{f"cpu_p95_ms_{size}_{name}": r["cpu"]["p95"] for name, r in results.items()},
        **{f"cpu_p50_ms_{size}_{name}": r["cpu"]["p50"] for name, r in results.items()},
        f"raw_hnsw_cpu_p95_ms_{size}": raw["cpu"]["p95"],
        f"raw_hnsw_cpu_p50_ms_{size}": raw["cpu"]["p50"],
        **{
            f"{name}_cpu_over_raw_cpu_p95_{size}": round(r["cpu"]["p95"] / raw["cpu"]["p95"], 2)
            for name, r in results.items()
        },
        **{f"mean_returned_{name}": r["mean_returned"] for name, r in results.items()},
        **{f"vector_recall_at_k_{name}": r["vector_recall"] for name, r in results.items() if r["vector_recall"]},
        "scope_violations": sum(r["violations"] for r in results.values()),
        **warm_figures(warm, settings.retrieval.vector_k),
        "load_average_1m_before_after": [round(load_before[0], 1), round(load_after[0], 1)],
        "queries_per_variant": args.queries,
        "hnsw_ef_search": settings.retrieval.hnsw_ef_search,
        "exact_scan_max_rows": settings.retrieval.exact_scan_max_rows,
        "run_s": round(time.perf_counter() - wall, 0),
        "data": {"load": loaded, "scopes": scopes},
        "table_state_before_after": [state_before, state_after],
        "warm_interleaved": warm,
    }
    if profile:
        figures["stage_profile"] = {"queries": args.profile, "variants": profile}
    if sweep:
        figures["breadth_sweep"] = {"queries": args.breadth_sweep} | sweep
    verdict = "pass" if ratio <= 5 else "fail"
    notes = [
        f"One embedded PostgreSQL 16.2 + pgvector 0.6.2 (shared_buffers 128MB), one tenant of {len(corpus)} memories"
        " built by benchmarks/retrieval.py's corpus and loader; then every memory gets a user (one of"
        f" {USERS}), an agent (one of {AGENTS}) and, for one in {TAG_SHARE}, the tag 'billing'. The state measured is"
        " the settled one a deployed tenant has: after the scope rewrite the tables are compacted (VACUUM FULL: the"
        " rewrite had left every row's old version behind) and analysed before the HNSW build, and the lifecycle's"
        " text statistics step (BM25 document frequencies, common words) has run, as benchmarks/retrieval.py does"
        " (without it every BM25 call counts frequencies live: unscoped p95 was 468 ms against 51 ms there). Dead"
        " rows and (auto)vacuum times before/after the measurement: `table_state_before_after`.",
        "Pipeline = RetrievalService.context(dry_run=True, query_vector=v, scope=…) with cold search as deployed, the"
        " query embedding excluded; the scope varies per query within each variant (25 users, both agents, the tag)."
        " Raw = the unscoped owner-side pgvector HNSW top-20 at the pipeline's hnsw.ef_search on the same"
        " data and queries: the floor the target compares against. Per query the raw query and then every"
        " variant run back to back, so each ratio compares timings taken at the same moments (the machine"
        f" is shared: 1-minute load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, on"
        f" {os.cpu_count()} cores). CPU figures (`cpu_*`): this process's CPU time plus the embedded server's"
        " backends' (/proc/<pid>/schedstat) per query, far less sensitive to the load than wall time.",
        f"Result: the slowest scope filter ({worst}) has pipeline p95 {p95} ms = {ratio:.1f}x raw HNSW p95"
        f" {raw['p95']} ms (target ≤ 5x for every filter: {verdict}); user"
        f" {results['user']['pipeline']['p95']} ms, agent (half the tenant) {results['agent']['pipeline']['p95']} ms,"
        f" tag (a tenth) {results['tag']['pipeline']['p95']} ms, unscoped {results['unscoped']['pipeline']['p95']} ms."
        f" Scope violations: {figures['scope_violations']} (every returned memory was checked against its scope).",
        "Vector recall: per scoped query, the read path's vector search (ScopedReads.vector_search, outside the"
        " timed region) against the scope's exact top-k by cosine (owner-side, every vector of the scope):"
        + ", ".join(f" {name} {r['vector_recall']}" for name, r in results.items() if r["vector_recall"])
        + ". A small scope (at most 4000 rows) is scanned exactly (recall 1 by construction); a large one goes"
        " through the ANN widened to hold about 25·k of its rows by its share of the index's candidates, learnt from"
        " its previous queries (pgvector 0.6.2 has no iterative index scans), never below hnsw.ef_search.",
        "Warm connection (`warm_*`, `vector_recall_at_20_<tenant>_<scope>`): a pool of ONE connection, as one"
        f" Lambda container has, serving this tenant and a small one of {len(small)} memories (scoped the same way)"
        f" in turn, the order flipping every round, each round the next of unscoped / a user / an agent / the tag;"
        f" {args.warm_warmup} rounds before timing, then {args.warm_queries}; every vector settled into the HNSW"
        " index. Per call the pipeline is timed, then the read path's vector search (ScopedReads for a scope) and"
        " its rows against the exact top 20 of the tenant or scope (owner side, no index). Unscoped calls also run"
        " the vector search as it was while `SET LOCAL enable_indexscan = off` steered one shared statement text"
        " (`switch_steered_*`), on its own warm connection and on one with custom plans only.",
        "Text: one BM25 function for every scope: an owner (user, agent, run) of at most 20·bm25_cap hot memories"
        " has every match ranked with the tenant's statistics, its rows read through the owner's btree and scored"
        " in the same statement (migration 0035; 0032 gathered ids through the text index, then scored them by id);"
        " a larger scope, or tags alone, is gathered by 0027's levels within the scope.",
    ]
    if sweep:
        notes.append(
            "Breadth sweep (`breadth_sweep`): a large scope's vector recall per widened-ANN breadth, the ANN's first"
            " `breadth` rows filtered to the scope against its exact top-k (agent-0 and the tag, owner side): "
            + "; ".join(
                f"{name} " + ", ".join(f"{b}: {r['recall']} ({r['p50_ms']} ms)" for b, r in by.items())
                for name, by in sweep.items()
            )
            + ". The read path asks the ANN for 1000 for both (`MAX_BREADTH`); every smaller breadth gives up recall."
        )
    path = write_report("retrieval_scoped", figures, title="Scoped retrieval latency", notes=notes)
    print(f"report: {path} (run {time.perf_counter() - wall:.0f} s)")


if __name__ == "__main__":
    main()
