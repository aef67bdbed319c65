"""Warm connections for the retrieval benchmarks: a pool of one (one Lambda container), a large and a
small tenant interleaved on it, and each vector search against the tenant's exact top k.

psycopg prepares a statement after its fifth run and PostgreSQL may then keep one generic plan for it:
a connection that served a large tenant (ANN path) first can answer a small one (exact path) with
the large one's plan. A benchmark on a fresh pool of several connections never sees that; this one
warms its connection with both tenants before timing, then reports, per tenant, the read path's
vector recall at k against the exact top k (owner side, no index) beside latency, and the same for
the vector search as it was when a planner switch (``SET LOCAL enable_indexscan = off``) steered one
shared statement text: on its own warm connection, and with every plan custom (what it meant).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import psycopg
from contextos.embedding import Embedder
from contextos.models import ContextRequest
from contextos.observability import metrics
from contextos.scopes import ScopeFilter
from contextos.services.cold import ColdBlobs, ColdStorage
from contextos.services.retrieval import RetrievalService
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import Dialect, get_dialect
from contextos.store.lifecycle import LifecycleStore
from contextos.store.scoped_reads import ScopedReads
from contextos.store.stores import Stores
from pgvector import Vector
from pgvector.psycopg import register_vector

# The vector search before its exact pass had a statement text of its own: one text for both paths.
SWITCH_STEERED_SQL = """
            SELECT memory_id AS id, 1.0 - min(distance) AS vector_sim FROM (
                (SELECT v.memory_id, v.embedding <=> %(q)s AS distance
                 FROM memory_vectors v
                 WHERE v.tenant_id = %(tenant)s AND v.searchable AND v.indexed
                 ORDER BY v.embedding <=> %(q)s LIMIT %(k)s)
                UNION ALL
                (SELECT v.memory_id, v.embedding <=> %(q)s AS distance
                 FROM memory_vectors v
                 WHERE v.tenant_id = %(tenant)s AND v.searchable AND NOT v.indexed
                 ORDER BY v.embedding <=> %(q)s LIMIT %(k)s)
            ) segments
            GROUP BY memory_id
            ORDER BY min(distance), memory_id
            LIMIT %(k)s"""
EXACT_OFF = ("SET LOCAL enable_indexscan = off", None)

EXACT_TOP = """SELECT v.memory_id FROM memory_vectors v
               WHERE v.tenant_id = %(tenant)s AND v.searchable
               ORDER BY (v.embedding <=> %(q)s) + 0.0, v.memory_id LIMIT %(k)s"""


def switch_steered_search(db: Database, tenant: str, q: Sequence[float], *, k: int, ef: int, exact: bool) -> list:
    """The old read path's vector search: exact by ``SET LOCAL enable_indexscan = off`` when the
    tenant is small, else the ANN, re-asked with the switch when short."""
    params = {"q": Vector(list(q)), "tenant": tenant, "k": k}
    if exact:
        return db.tenant_read(tenant, EXACT_OFF, (SWITCH_STEERED_SQL, params))
    rows = db.tenant_read(tenant, (f"SET LOCAL hnsw.ef_search = {max(int(ef), k)}", None), (SWITCH_STEERED_SQL, params))
    return rows if len(rows) >= k else db.tenant_read(tenant, EXACT_OFF, (SWITCH_STEERED_SQL, params))


def pool_of_one(url: str, dialect: Dialect, *, plan_cache_mode: str | None = None) -> Database:
    db = Database(url, dialect, min_size=1, max_size=1)
    if plan_cache_mode:
        with db.pool.connection() as conn:
            conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")  # the session's: the one connection keeps it
    return db


def read_service(db: Database, settings: Settings, embedder: Embedder, blobs: ColdBlobs) -> RetrievalService:
    """The read path as deployed on ``db`` (a warm pool of one): its store, lifecycle and cold storage."""
    life = LifecycleStore(db, settings.decay, settings.lifecycle)
    return RetrievalService(
        settings=settings,
        store=Stores.over(db, settings.decay, settings.merge).reads,
        embedder=embedder,
        cold=ColdStorage(life, blobs, settings.cold_bucket, settings.lifecycle),
    )


def prepared_plans(db: Database, marker: str) -> list[dict]:
    """The connection's prepared statements whose text holds ``marker``: generic and custom plans run."""
    with db.pool.connection() as conn:
        rows = conn.execute(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            [f"%{marker}%"],
        ).fetchall()
    return [
        {"statement": " ".join(r["statement"].split())[:90], **{k: r[k] for k in ("generic_plans", "custom_plans")}}
        for r in rows
    ]


def pct(values: Sequence[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None, "mean": None}
    a = np.asarray(values, dtype=float)
    return {
        k: round(float(f(a)), 2)
        for k, f in (("p50", np.median), ("p95", lambda x: np.percentile(x, 95)), ("mean", np.mean))
    }


@dataclass
class WarmTenant:
    name: str
    queries: list[str]
    vectors: np.ndarray
    size: int  # hot memories (picks the exact or the ANN path)
    scopes: list[ScopeFilter | None] = field(default_factory=lambda: [None])


@dataclass
class Series:
    pipeline_ms: list[float] = field(default_factory=list)
    vector_ms: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    short: int = 0
    old_recall: list[float] = field(default_factory=list)
    old_short: int = 0
    old_ms: list[float] = field(default_factory=list)
    custom_recall: list[float] = field(default_factory=list)
    custom_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "pipeline": pct(self.pipeline_ms),
            "vector_search": pct(self.vector_ms),
            "vector_recall_at_k": round(float(np.mean(self.recall)), 4) if self.recall else None,
            "short_answers": self.short,
            "switch_steered_warm": {
                "vector_recall_at_k": round(float(np.mean(self.old_recall)), 4) if self.old_recall else None,
                "short_answers": self.old_short,
                "vector_search": pct(self.old_ms),
            },
            "switch_steered_custom_plans": {
                "vector_recall_at_k": round(float(np.mean(self.custom_recall)), 4) if self.custom_recall else None,
                "vector_search": pct(self.custom_ms),
            },
        }


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000.0, out


def warm_interleaved(
    url: str,
    make_service: Callable[[Database], RetrievalService],
    tenants: Sequence[WarmTenant],
    *,
    warmup: int,
    measured: int,
    baselines: bool = True,
) -> dict:
    """``warmup`` then ``measured`` rounds; each round every tenant once (each scope in turn), the
    tenants' order flipping every round, all on one connection. Per call: the pipeline timed, then
    the read path's vector search (same settings) and its recall at k against the exact top k; the
    switch-steered search beside it on its own warm connection and on one with custom plans only."""
    service = make_service(pool_of_one(url, _dialect()))
    db = service.store.db
    cfg = service.settings.retrieval
    k, ef, bound = cfg.vector_k, cfg.hnsw_ef_search, cfg.exact_scan_max_rows
    old_db = pool_of_one(url, _dialect()) if baselines else None
    custom_db = pool_of_one(url, _dialect(), plan_cache_mode="force_custom_plan") if baselines else None
    series: dict[str, Series] = {}
    load_before = os.getloadavg()
    with psycopg.connect(url, autocommit=True) as owner:
        register_vector(owner)
        for i in range(warmup + measured):
            measuring = i >= warmup
            order = list(tenants) if i % 2 == 0 else list(reversed(tenants))
            for t in order:
                j = i % len(t.queries)
                q, v = t.queries[j], t.vectors[j]
                scope = t.scopes[i % len(t.scopes)]
                name = t.name if scope is None else f"{t.name}_{_scope_kind(scope)}"
                s = series.setdefault(name, Series())
                request = ContextRequest(query=q, dry_run=True, scope=scope)
                ms, _ = _timed(
                    lambda request=request, t=t, v=v: service.context(t.name, request, query_vector=v.tolist())
                )
                metrics.clear_metrics()
                reads = (
                    service.store if scope is None else ScopedReads(service.store, scope, bound, cfg.scope_size_cache_s)
                )
                vms, hits = _timed(
                    lambda reads=reads, t=t, v=v: reads.vector_search(
                        t.name,
                        v.tolist(),
                        k=k,
                        ef_search=ef,
                        exact_scan_max_rows=bound,
                        scope_cache_s=cfg.scope_size_cache_s,
                    )
                )
                old = custom = None
                if baselines and scope is None:
                    small = t.size <= bound
                    oms, old = _timed(
                        lambda t=t, v=v, small=small: switch_steered_search(
                            old_db, t.name, v.tolist(), k=k, ef=ef, exact=small
                        )
                    )
                    cms, custom = _timed(
                        lambda t=t, v=v, small=small: switch_steered_search(
                            custom_db, t.name, v.tolist(), k=k, ef=ef, exact=small
                        )
                    )
                metrics.clear_metrics()
                if not measuring:
                    continue
                exact = {r[0] for r in owner.execute(_exact_sql(scope), _exact_params(t.name, v, k, scope)).fetchall()}
                s.pipeline_ms.append(ms)
                s.vector_ms.append(vms)
                got = {h["id"] for h in hits}
                s.recall.append(len(got & exact) / max(len(exact), 1))
                s.short += len(hits) < min(k, len(exact))
                if old is not None and custom is not None:
                    s.old_ms.append(oms)
                    s.custom_ms.append(cms)
                    s.old_recall.append(len({r["id"] for r in old} & exact) / max(len(exact), 1))
                    s.old_short += len(old) < min(k, len(exact))
                    s.custom_recall.append(len({r["id"] for r in custom} & exact) / max(len(exact), 1))
    out = {
        "pool": "one connection (min_size = max_size = 1)",
        "warmup_rounds": warmup,
        "measured_rounds": measured,
        "order": " / ".join(t.name for t in tenants) + ", flipped every round",
        "load_average_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "by_tenant": {name: s.summary() for name, s in series.items()},
        "prepared_vector_statements": prepared_plans(db, "AS vector_sim"),
    }
    if old_db is not None and custom_db is not None:
        out["switch_steered_prepared"] = prepared_plans(old_db, "AS vector_sim")
        old_db.close()
        custom_db.close()
    db.close()
    return out


def _dialect() -> Dialect:
    return get_dialect("postgres")


def _scope_kind(scope: ScopeFilter) -> str:
    return "user" if scope.user_id else "agent" if scope.agent_id else "tag" if scope.tags else "scope"


def _exact_sql(scope: ScopeFilter | None) -> str:
    if scope is None:
        return EXACT_TOP
    where = ["m.user_id = %(user)s"] if scope.user_id else []
    where += ["m.agent_id = %(agent)s"] if scope.agent_id else []
    where += ["m.tags @> %(tags)s::text[]"] if scope.tags else []
    return f"""SELECT v.memory_id FROM memory_vectors v
               JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
               WHERE v.tenant_id = %(tenant)s AND v.searchable AND {" AND ".join(where)}
               ORDER BY (v.embedding <=> %(q)s) + 0.0, v.memory_id LIMIT %(k)s"""


def _exact_params(tenant: str, v: np.ndarray, k: int, scope: ScopeFilter | None) -> dict:
    params = {"tenant": tenant, "q": v, "k": k}
    if scope is not None:
        params |= {"user": scope.user_id, "agent": scope.agent_id, "tags": list(scope.tags)}
    return params


def warm_figures(warm: dict, k: int) -> dict:
    """The flat figures of a `warm_interleaved` run: per tenant (and scope), recall at k beside latency."""
    figures: dict = {}
    for name, r in warm["by_tenant"].items():
        label = name.removeprefix("bench-")
        figures[f"vector_recall_at_{k}_{label}"] = r["vector_recall_at_k"]
        figures[f"warm_short_answers_{label}"] = r["short_answers"]
        figures[f"warm_pipeline_p50_ms_{label}"] = r["pipeline"]["p50"]
        figures[f"warm_pipeline_p95_ms_{label}"] = r["pipeline"]["p95"]
        figures[f"warm_vector_search_p50_ms_{label}"] = r["vector_search"]["p50"]
        figures[f"warm_vector_search_p95_ms_{label}"] = r["vector_search"]["p95"]
        old, custom = r["switch_steered_warm"], r["switch_steered_custom_plans"]
        if old["vector_recall_at_k"] is not None:
            figures[f"switch_steered_vector_recall_at_{k}_{label}"] = old["vector_recall_at_k"]
            figures[f"switch_steered_short_answers_{label}"] = old["short_answers"]
            figures[f"switch_steered_vector_search_p50_ms_{label}"] = old["vector_search"]["p50"]
            figures[f"switch_steered_custom_vector_search_p50_ms_{label}"] = custom["vector_search"]["p50"]
            figures[f"switch_steered_custom_vector_search_p95_ms_{label}"] = custom["vector_search"]["p95"]
            if custom["vector_search"]["p50"] and r["vector_search"]["p50"]:
                figures[f"vector_search_p50_over_switch_steered_custom_p50_{label}"] = round(
                    r["vector_search"]["p50"] / custom["vector_search"]["p50"], 2
                )
    figures["warm_load_average_1m_before_after"] = warm["load_average_1m_before_after"]
    return figures
