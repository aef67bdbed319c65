"""Retrieval latency (S6, S14): the full read path at 10k and 100k memories beside raw pgvector.

One run, one fresh embedded PostgreSQL in a temp dir (nothing touches ``.contextos/``):

1. a vocabulary-driven corpus (systems, components, aspects, teams; labels of 2-4 words,
   definitions of 1-2 templated sentences) in documents of ~20 memories, with ``memory_items``
   pointing at the documents (implicit shared-source edges) and explicit ``related`` edges within
   and across documents;
2. embeddings: a pool of distinct "prototype" texts is embedded once with the local MiniLM; every
   memory's vector is a normalized noisy mix of its prototype's vector and another prototype of
   its document (embedding-like geometry without embedding 110k texts);
3. phase A: the 10k tenant alone in the database (HNSW built over it) — the scaling baseline;
   phase B: the 100k tenant loaded beside it, HNSW rebuilt over all 110k rows; the 100k tenant is
   measured, and the 10k tenant again ("a small tenant beside a large one");
4. per size: warm-up, then the full pipeline ``RetrievalService.context(dry_run=True,
   query_vector=v)`` (the query embedding excluded), the raw pgvector HNSW top-20 on the same
   data and queries, and a per-stage profile (each store call timed directly, same inputs);
5. the row-level-security question: the text search at 100k ranking every match as
   ``contextos_app`` (row-level security) and as the owner (no RLS), beside the store's own
   SECURITY DEFINER function (migration 0008), with EXPLAIN ANALYZE plans.

Run: ``.venv/bin/python benchmarks/retrieval.py`` (about 5 minutes on 2 cores; ``--large 20000``
for a quick look). Figures go to ``benchmarks/reports/retrieval.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from contextos.decay import decay_rate
from contextos.lsh import sketch
from contextos.models import ContextRequest
from contextos.normalization import initials, norm_key
from contextos.observability import metrics
from contextos.ports.reads import BM25Params
from contextos.query_analysis import analyze
from contextos.services.cold import ColdStorage
from contextos.services.retrieval import RetrievalService
from contextos.settings import Settings
from contextos.store.db import APP_ROLE, Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.lifecycle import LifecycleStore
from contextos.store.migrate import migrate
from contextos.store.reads import ReadStore
from contextos.store.stores import Stores
from contextos.store.text_search import phrase_forms
from pgvector.psycopg import register_vector

from benchmarks.locomo import MemoryBlobs
from benchmarks.report import write_report
from benchmarks.warm import WarmTenant, read_service, warm_figures, warm_interleaved

DIM = 384
SMALL_TENANT = "bench-10k"
LARGE_TENANT = "bench-100k"

# -- vocabulary ---------------------------------------------------------------------------------
SYSTEMS = (
    "Atlas Nimbus Orion Helix Quartz Beacon Cobalt Falcon Juniper Kestrel Lumen Meridian Nova Onyx "
    "Pioneer Redwood Sierra Tundra Vega Zephyr Apollo Borealis Cascade Ember Fjord Granite Harbor Iris "
    "Jasper Lantern Magnolia Nebula Obsidian Polaris Raven Saffron Tempest Umber Willow Yarrow"
).split()
COMPONENTS = [
    "read replica",
    "write cache",
    "job queue",
    "cron scheduler",
    "api gateway",
    "payment ledger",
    "search index",
    "webhook dispatcher",
    "billing job",
    "invoice renderer",
    "session store",
    "feature flag service",
    "event bus",
    "audit log",
    "object store",
    "image resizer",
    "email sender",
    "sms relay",
    "rate limiter",
    "load balancer",
    "dns resolver",
    "certificate manager",
    "secrets vault",
    "config service",
    "metrics pipeline",
    "log shipper",
    "trace collector",
    "alert router",
    "pager rotation",
    "deploy pipeline",
    "build cache",
    "artifact registry",
    "container registry",
    "kubernetes cluster",
    "node pool",
    "autoscaler",
    "service mesh",
    "sidecar proxy",
    "connection pool",
    "database primary",
    "analytics warehouse",
    "etl job",
    "stream processor",
    "kafka topic",
    "consumer group",
    "dead letter queue",
    "retry worker",
    "outbox table",
    "cdc connector",
    "schema registry",
    "graphql layer",
    "mobile backend",
    "push notifier",
    "recommendation model",
    "ranking service",
    "embedding service",
    "vector index",
    "fraud detector",
    "risk engine",
    "tax calculator",
    "currency converter",
    "pricing engine",
    "checkout flow",
    "cart service",
    "inventory sync",
    "shipping estimator",
    "order router",
    "refund processor",
    "ledger reconciler",
    "identity provider",
    "oauth server",
    "token signer",
    "password reset flow",
    "mfa service",
    "permission checker",
    "tenant router",
    "usage meter",
    "quota enforcer",
    "backup job",
    "snapshot scheduler",
    "archive bucket",
    "cdn edge",
    "static site",
    "admin console",
    "support inbox",
    "chat widget",
    "survey service",
    "experiment platform",
    "data catalog",
    "lineage tracker",
    "privacy scrubber",
    "consent store",
    "geo index",
    "map tiles",
    "translation service",
    "spell checker",
    "document parser",
    "ocr worker",
    "pdf exporter",
    "report builder",
    "dashboard service",
    "notebook server",
    "gpu scheduler",
    "training job",
]
ASPECTS = [
    "latency",
    "timeout",
    "retry policy",
    "rate limit",
    "schema",
    "migration",
    "alert",
    "dashboard",
    "runbook",
    "quota",
    "backfill",
    "rollout",
    "owner",
    "budget",
    "threshold",
    "failover",
    "encryption",
    "retention",
    "audit trail",
    "capacity plan",
    "sla",
    "error budget",
    "on-call handoff",
    "cost report",
    "access policy",
    "version pin",
    "dependency",
    "health check",
    "circuit breaker",
    "cache ttl",
    "batch size",
    "concurrency limit",
    "memory limit",
    "disk usage",
    "cold start",
    "warm pool",
    "region pinning",
    "replication lag",
    "consistency model",
    "idempotency key",
    "naming convention",
    "test coverage",
    "load test",
    "chaos drill",
    "incident review",
    "deprecation plan",
    "sunset date",
    "billing code",
    "log level",
    "sampling rate",
    "trace context",
    "api contract",
    "pagination",
]
MODIFIERS = (
    "nightly regional primary secondary legacy shared internal async batch streaming cold hot canary "
    "weekly hourly global staging production fallback experimental standby sandbox partner enterprise "
    "free-tier premium eu us apac blue green"
).split()
TEAMS = (
    "platform payments growth data security mobile search infra support ml billing identity "
    "checkout analytics reliability frontend"
).split()
REGIONS = ["eu-west-1", "us-east-1", "us-west-2", "ap-southeast-2", "eu-central-1", "ca-central-1"]
CONDITIONS = [
    "traffic doubles during the monthly billing run",
    "a node is drained for maintenance",
    "the primary fails over to the standby",
    "a deploy overlaps with the nightly backfill",
    "the upstream provider throttles requests",
    "a tenant uploads very large files",
    "clock skew exceeds two seconds",
    "the connection pool is exhausted",
    "a schema change is half applied",
    "the cache is cold after a restart",
    "retries pile up behind a slow dependency",
    "certificates rotate while requests are in flight",
    "the consumer group rebalances",
]
REASONS = [
    "the old setup caused two incidents last quarter",
    "it halves the monthly cost",
    "customers in the EU need data residency",
    "the vendor is ending support next year",
    "p95 latency was above the SLA",
    "on-call load was too high",
    "it simplifies the audit",
    "the team could not reproduce failures locally",
    "it removes a single point of failure",
]
FIXES = [
    "raise the timeout and add jitter to retries",
    "drain the queue before the deploy",
    "pin the client library to the previous version",
    "scale the node pool ahead of the run",
    "switch reads to the replica",
    "invalidate the cache by prefix",
    "replay the dead letter queue",
    "rotate the credentials and restart the workers",
    "lower the batch size",
    "enable the circuit breaker",
]
VERBS = ["protects", "feeds", "throttles", "replicates", "validates", "schedules", "routes", "encrypts", "caches"]
TYPES = ["fact"] * 5 + ["decision"] * 2 + ["problem"] * 2 + ["entity", "rule", "preference", "event", "task"]


@dataclass
class Prototype:
    system: str
    component: str
    aspect: str
    team: str

    def text(self) -> str:
        return (
            f"{self.system} {self.component} {self.aspect}: the {self.component} {self.aspect} of {self.system},"
            f" owned by the {self.team} team."
        )


@dataclass
class Corpus:
    tenant: str
    labels: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    importance: list[int] = field(default_factory=list)
    protos: list[int] = field(default_factory=list)
    mix: list[int] = field(default_factory=list)  # a second prototype of the same document
    doc_of: list[int] = field(default_factory=list)
    extra_doc: dict[int, int] = field(default_factory=dict)  # a few memories taught by two documents
    doc_names: list[str] = field(default_factory=list)
    edges: set[tuple[int, int]] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.labels)


def prototypes(n: int, rng: random.Random) -> list[Prototype]:
    seen: set[tuple[str, str, str]] = set()
    out: list[Prototype] = []
    while len(out) < n:
        key = (rng.choice(SYSTEMS), rng.choice(COMPONENTS), rng.choice(ASPECTS))
        if key not in seen:
            seen.add(key)
            out.append(Prototype(*key, team=rng.choice(TEAMS)))
    return out


def memory_text(p: Prototype, kind: str, rng: random.Random) -> tuple[str, str]:
    """A label of 2-4 words and a definition of 1-2 sentences about one prototype."""
    mod = rng.choice(MODIFIERS)
    label = rng.choice(
        [
            f"{p.component} {p.aspect}",
            f"{mod} {p.component} {p.aspect}",
            f"{p.system} {p.component} {p.aspect}",
            f"{p.system} {p.aspect}",
            f"{mod} {p.component}",
            f"{p.system} {mod} {p.aspect}",
        ]
    )
    cond, reason, fix, region = rng.choice(CONDITIONS), rng.choice(REASONS), rng.choice(FIXES), rng.choice(REGIONS)
    n = rng.choice([2, 5, 15, 30, 90, 250, 500, 1000])
    definition = {
        "fact": f"The {mod} {p.component} {rng.choice(VERBS)} the {p.aspect} for {p.system} in {region}."
        f" It is owned by the {p.team} team and reviewed every {n} days.",
        "decision": f"We decided to change the {p.aspect} of the {p.component} in {p.system} because {reason}.",
        "problem": f"The {p.system} {p.component} breaks its {p.aspect} when {cond}; the workaround is to {fix}.",
        "entity": f"{p.system} is the {p.team} team's {p.component}; it owns the {mod} {p.aspect} in {region}.",
        "rule": f"Always check the {p.aspect} of the {p.component} before {cond.split(' ', 1)[1]}.",
        "preference": f"The {p.team} team prefers a {mod} {p.component} with a {p.aspect} of {n} ms over the default.",
        "event": f"On day {n} the {p.system} {p.component} missed its {p.aspect} when {cond}.",
        "task": f"Set up the {p.aspect} for the {mod} {p.component} in {p.system} so that {p.team} can {fix}.",
    }[kind]
    return label, definition


def build_corpus(tenant: str, n: int, protos: list[Prototype], generic: list[str], seed: int) -> Corpus:
    """``n`` memories in documents of 15-25, each document about one system; unique norm keys."""
    rng = random.Random(seed)
    by_system: dict[str, list[int]] = {}
    for i, p in enumerate(protos):
        by_system.setdefault(p.system, []).append(i)
    corpus = Corpus(tenant)
    keys: set[str] = set()
    by_component: dict[str, list[int]] = {}
    doc = 0
    while len(corpus) < n:
        system = rng.choice(SYSTEMS)
        pool = by_system[system]
        size = min(rng.randint(15, 25), n - len(corpus))
        doc_protos = rng.sample(pool, min(len(pool), max(3, size // 3)))  # a document keeps to a few topics
        corpus.doc_names.append(f"{system.lower()}-{protos[doc_protos[0]].component.replace(' ', '-')}-{doc}.md")
        members: list[int] = []
        while len(members) < size:
            proto = rng.choice(doc_protos)
            kind = rng.choice(TYPES)
            label, definition = memory_text(protos[proto], kind, rng)
            key = norm_key(label, generic)
            if key in keys:
                label = f"{label} {rng.choice(MODIFIERS)}"
                key = norm_key(label, generic)
                if key in keys:
                    continue
            keys.add(key)
            i = len(corpus)
            corpus.labels.append(label)
            corpus.definitions.append(definition)
            corpus.types.append(kind)
            corpus.importance.append(min(10, max(1, int(rng.gauss(5.5, 2)))))
            corpus.protos.append(proto)
            corpus.mix.append(rng.choice(doc_protos))
            corpus.doc_of.append(doc)
            members.append(i)
            by_component.setdefault(protos[proto].component, []).append(i)
        for j, i in enumerate(members):  # related edges: a chain, a random sibling, a cross-document link
            if j:
                corpus.edges.add((i, members[j - 1]))
            if rng.random() < 0.5:
                other = rng.choice(members)
                if other != i:
                    corpus.edges.add((i, other))
        doc += 1
    for i in range(len(corpus)):
        if rng.random() < 0.5:
            same = by_component[protos[corpus.protos[i]].component]
            other = same[rng.randrange(len(same))]
            if other != i and corpus.doc_of[other] != corpus.doc_of[i]:
                corpus.edges.add((i, other))
        if rng.random() < 0.05:
            corpus.extra_doc[i] = rng.randrange(doc)
    return corpus


def corpus_vectors(corpus: Corpus, pool: np.ndarray, seed: int) -> np.ndarray:
    """Unit vectors: own prototype + 0.35 x a document sibling prototype + isotropic noise (norm 0.45)."""
    rng = np.random.default_rng(seed)
    base = pool[np.asarray(corpus.protos)] + 0.35 * pool[np.asarray(corpus.mix)]
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    noise = rng.standard_normal(base.shape).astype(np.float32)
    noise *= 0.45 / np.linalg.norm(noise, axis=1, keepdims=True)
    v = base + noise
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def make_queries(corpus: Corpus, protos: list[Prototype], n: int, seed: int) -> list[str]:
    """Paraphrases and fragments of the tenant's memories, as an agent would ask."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        i = rng.randrange(len(corpus))
        p = protos[corpus.protos[i]]
        words = corpus.definitions[i].rstrip(".").split()
        start = rng.randrange(max(1, len(words) - 6))
        out.append(
            rng.choice(
                [
                    f"what did we decide about the {p.component} {p.aspect} in {p.system}?",
                    f"how does {p.system} handle {p.aspect}?",
                    f"why is the {corpus.labels[i]} failing with errors",
                    f"{p.team} team notes on the {p.component} {p.aspect}",
                    corpus.labels[i],
                    " ".join(words[start : start + rng.randint(4, 8)]),
                    f"remember the {p.component} issue when {rng.choice(CONDITIONS)}",
                    f"ideas to improve the {p.aspect} of our {p.component}",
                ]
            )
        )
    return out


# -- loading ------------------------------------------------------------------------------------
def load(url: str, corpus: Corpus, vectors: np.ndarray, settings: Settings, seed: int) -> dict:
    """Binary COPY of documents, memories, vectors (indexed), bands, items and edges; no index build."""
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    tenant = corpus.tenant
    ids = [uuid.uuid4() for _ in range(len(corpus))]
    doc_ids = [uuid.uuid4() for _ in corpus.doc_names]
    # last touched within the past two weeks, most in the last days: a mix of strong and fading bands
    ages = np.minimum(rng.exponential(1.5, len(corpus)), 14.0)
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        # the ANN index goes before the load (one HNSW insert per row costs milliseconds) and is rebuilt after
        conn.execute("DROP INDEX IF EXISTS memory_vectors_hnsw")
        conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant])
        with conn.cursor().copy(
            "COPY documents (tenant_id, id, content_hash, filename, content_type, source_type, provenance,"
            " size_bytes, status) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "uuid", "text", "text", "text", "text", "text", "int8", "text"])
            for doc_id, name in zip(doc_ids, corpus.doc_names, strict=True):
                digest = hashlib.sha256(f"{tenant}/{name}".encode()).hexdigest()
                copy.write_row([tenant, doc_id, digest, name, "text/markdown", "markdown", "user_upload", 4096, "done"])
        with conn.cursor().copy(
            "COPY memories (tenant_id, id, norm_key, label, definition, type, importance, decay_rate, provenance,"
            " base_trust, initials, strength_anchor_at, last_accessed_at, created_at, updated_at, valid_from,"
            " recorded_at, always_load) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                ["text", "uuid", "text", "text", "text", "text", "int2", "float8", "text", "float4", "text"]
                + ["timestamptz"] * 6
                + ["bool"]
            )
            pinned = set([i for i, kind in enumerate(corpus.types) if kind == "rule"][:5])  # a few always_load rules
            generic = settings.extraction.generic_modifiers
            for i, memory_id in enumerate(ids):
                at = now - timedelta(days=float(ages[i]))
                label = corpus.labels[i]
                copy.write_row(
                    [
                        tenant,
                        memory_id,
                        norm_key(label, generic),
                        label,
                        corpus.definitions[i],
                        corpus.types[i],
                        corpus.importance[i],
                        decay_rate(corpus.importance[i], corpus.types[i], settings.decay),
                        "user_upload",
                        0.9,
                        initials(label),
                        *([at] * 6),
                        i in pinned,
                    ]
                )
        sketches = sketch(vectors)
        with conn.cursor().copy(
            "COPY memory_vectors (tenant_id, memory_id, type, embedding, embedder_id, indexed)"
            " FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "uuid", "text", "vector", "text", "bool"])
            for memory_id, kind, vector in zip(ids, corpus.types, vectors, strict=True):
                copy.write_row([tenant, memory_id, kind, vector, "bench", True])
        with conn.cursor().copy(
            "COPY memory_vector_bands (tenant_id, band_key, memory_id, signature) FROM STDIN"
        ) as copy:
            for memory_id, keys, signature in zip(ids, sketches.band_keys, sketches.signatures, strict=True):
                for key in keys:
                    copy.write_row([tenant, key, memory_id, signature])
        with conn.cursor().copy(
            "COPY memory_items (tenant_id, memory_id, document_id, label, definition, importance)"
            " FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "uuid", "uuid", "text", "text", "int2"])
            items = [(i, corpus.doc_of[i]) for i in range(len(corpus))] + list(corpus.extra_doc.items())
            for i, d in items:
                copy.write_row(
                    [tenant, ids[i], doc_ids[d], corpus.labels[i], corpus.definitions[i], corpus.importance[i]]
                )
        with conn.cursor().copy(
            "COPY relationships (tenant_id, src_id, dst_id, type, weight) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "uuid", "uuid", "text", "float8"])
            for src, dst in sorted(corpus.edges):
                copy.write_row([tenant, ids[src], ids[dst], "related", settings.merge.related_edge_weight])
        conn.execute("UPDATE tenants SET hot_memories = %s WHERE tenant_id = %s", [len(corpus), tenant])
    return {
        "memories": len(corpus),
        "documents": len(doc_ids),
        "items": len(corpus) + len(corpus.extra_doc),
        "edges": len(corpus.edges),
        "load_s": round(time.perf_counter() - started, 1),
    }


def build_index(url: str) -> float:
    """Rebuild the partial HNSW index over every tenant's indexed vectors, then ANALYZE."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX IF EXISTS memory_vectors_hnsw")
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(
            "CREATE INDEX memory_vectors_hnsw ON memory_vectors USING hnsw (embedding vector_cosine_ops)"
            " WITH (m = 16, ef_construction = 64) WHERE searchable AND indexed"
        )
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


# -- measuring ----------------------------------------------------------------------------------
def pct(values: Sequence[float]) -> dict:
    a = np.asarray(values, dtype=float)
    return {
        "p50": round(float(np.percentile(a, 50)), 2),
        "p95": round(float(np.percentile(a, 95)), 2),
        "mean": round(float(a.mean()), 2),
    }


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000.0, out


class ServerCpu:
    """CPU time the embedded server's backends spent (``/proc/<pid>/schedstat``, nanoseconds on CPU):
    on a shared machine wall time mostly measures the queue for the cores, CPU time the work. The
    server runs on this machine, and this process is its only client."""

    def __init__(self, url: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True)

    def ms(self) -> float:
        pids = [
            r[0]
            for r in self._conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            )
        ]
        total = 0
        for pid in pids:
            with suppress(FileNotFoundError, ProcessLookupError):  # a backend that just ended
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        return total / 1e6

    def close(self) -> None:
        self._conn.close()


def pipeline_latency(
    service: RetrievalService, tenant: str, queries: list[str], vectors: np.ndarray, warmup: int, cpu: ServerCpu
):
    for q, v in zip(queries[:warmup], vectors[:warmup], strict=True):
        service.context(tenant, ContextRequest(query=q, dry_run=True), query_vector=v.tolist())
    metrics.clear_metrics()
    times, returned, client_cpu, server_cpu = [], [], [], []
    for q, v in zip(queries, vectors, strict=True):
        server, client = cpu.ms(), time.process_time()
        ms, result = timed(
            lambda q=q, v=v: service.context(tenant, ContextRequest(query=q, dry_run=True), query_vector=v.tolist())
        )
        client_cpu.append((time.process_time() - client) * 1000.0)
        server_cpu.append(cpu.ms() - server)
        times.append(ms)
        returned.append(len(result.memories))
        metrics.clear_metrics()  # Powertools flushes to stdout every 100 metrics: keep that out of the timing
    return times, returned, client_cpu, server_cpu


RAW_HNSW = (
    "SELECT memory_id FROM memory_vectors WHERE tenant_id = %s AND searchable AND indexed"
    " ORDER BY embedding <=> %s LIMIT 20"
)


def raw_hnsw(
    url: str, tenant: str, vectors: np.ndarray, ef_search: int, warmup: int, cpu: ServerCpu
) -> tuple[list[float], list[int], str, list[float]]:
    """The bare pgvector top-20 (as the owner, one connection, no RLS): the floor under the pipeline."""
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(f"SET hnsw.ef_search = {int(ef_search)}")
        for v in vectors[:warmup]:
            conn.execute(RAW_HNSW, [tenant, v]).fetchall()
        times, counts, cpu_ms = [], [], []
        for v in vectors:
            server, client = cpu.ms(), time.process_time()
            ms, rows = timed(lambda v=v: conn.execute(RAW_HNSW, [tenant, v]).fetchall())
            cpu_ms.append(cpu.ms() - server + (time.process_time() - client) * 1000.0)
            times.append(ms)
            counts.append(len(rows))
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + RAW_HNSW, [tenant, vectors[0]]).fetchall()
        )
    return times, counts, plan, cpu_ms


class TimingStore:
    """Stands in for the read store inside a ``RetrievalService``: every store call the pipeline
    makes is passed through, timed (start and end, so the overlap of the threaded searches shows)
    and recorded with its arguments, so each one can be replayed on its own with the same inputs."""

    def __init__(self, store: ReadStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self.calls: list[tuple[str, tuple, dict, float, float]] = []

    def __getattr__(self, name: str):
        target = getattr(self._store, name)
        if not callable(target):
            return target

        def call(*args, **kwargs):
            started = time.perf_counter()
            try:
                return target(*args, **kwargs)
            finally:
                ended = time.perf_counter()
                with self._lock:
                    self.calls.append((name, args, kwargs, started, ended))

        return call


PARALLEL = ("vector_search", "text_rank")  # what RetrievalService._search runs in threads


def stage_profile(settings: Settings, store: Stores, tenant: str, queries: list[str], vectors: np.ndarray) -> dict:
    """Where the time goes. Each query runs through the real pipeline with a ``TimingStore``:

    - ``in_pipeline``: each store call as timed inside the pipeline (vector and text overlap in
      threads; ``parallel_searches`` is the wall time of that overlapped section), and ``python``:
      the rest of the pipeline's wall time (query analysis, thread pool, scoring, budgets, assembly);
    - ``isolated``: every recorded store call replayed alone, sequentially, with the same arguments.
    """
    proxy = TimingStore(store.reads)
    service = RetrievalService(settings=settings, store=proxy, embedder=None)  # type: ignore[arg-type]
    inside: dict[str, list[float]] = {}
    alone: dict[str, list[float]] = {}
    text_each_inside: list[float] = []
    text_each_alone: list[float] = []
    floor: list[float] = []
    counts: dict[str, list[int]] = {"text_rows": [], "candidate_pool_rows": []}
    for q, vec in zip(queries, vectors, strict=True):
        proxy.calls.clear()
        total, _ = timed(
            lambda q=q, vec=vec: service.context(
                tenant, ContextRequest(query=q, dry_run=True), query_vector=vec.tolist()
            )
        )
        calls = list(proxy.calls)
        metrics.clear_metrics()
        per: dict[str, float] = {}
        for name, _a, _k, s, e in calls:
            per[name] = per.get(name, 0.0) + (e - s) * 1000.0
            if name == "text_rank":
                text_each_inside.append((e - s) * 1000.0)
        par = [c for c in calls if c[0] in PARALLEL]
        parallel_ms = (max(c[4] for c in par) - min(c[3] for c in par)) * 1000.0 if par else 0.0
        sequential_ms = sum(v for k, v in per.items() if k not in PARALLEL)
        for name, v in per.items():
            inside.setdefault(name, []).append(v)
        inside.setdefault("parallel_searches", []).append(parallel_ms)
        inside.setdefault("python", []).append(max(total - parallel_ms - sequential_ms, 0.0))
        inside.setdefault("total", []).append(total)
        replay: dict[str, float] = {}
        for name, args, kwargs, _s, _e in calls:
            ms, rows = timed(lambda name=name, args=args, kwargs=kwargs: getattr(store.reads, name)(*args, **kwargs))
            replay[name] = replay.get(name, 0.0) + ms
            if name == "text_rank":
                text_each_alone.append(ms)
            if name == "text_rank":
                counts["text_rows"].append(len(rows))
            if name == "candidate_pool":
                counts["candidate_pool_rows"].append(len(rows))
        for name, v in replay.items():
            alone.setdefault(name, []).append(v)
        # the statements alone, the searches perfectly overlapped: no Python, no contention
        floor.append(
            max((v for k, v in replay.items() if k in PARALLEL), default=0.0)
            + sum(v for k, v in replay.items() if k not in PARALLEL)
        )
    n = len(queries)
    # a store method a query did not call counts as 0 ms for that query
    fill = lambda d: {k: pct(v + [0.0] * (n - len(v))) for k, v in d.items()}  # noqa: E731
    return {
        "in_pipeline": fill(inside) | {"text_search_each": pct(text_each_inside)},
        "isolated": fill(alone) | {"text_search_each": pct(text_each_alone)},
        "statement_floor": pct(floor),
        "mean_counts": {k: round(float(np.mean(v)), 1) if v else 0.0 for k, v in counts.items()},
    }


# -- the text search: ranking every match vs the store's bounded call ---------------------------
MATCH_COUNT_SQL = """SELECT count(*) FROM memories m
WHERE m.tenant_id = %(tenant)s AND m.tier = 'hot' AND m.state = 'active'
  AND m.search_tsv @@ (websearch_to_tsquery('english', %(phrase)s)
                       || COALESCE(to_tsquery('english', %(any_terms)s), ''::tsquery))"""
# The text search as plain SQL that ranks every match: what the store ran before migration 0008.
# As the app role, row-level security keeps the GIN index out of the plan; as the owner it does not.
INLINE_UNCAPPED_SQL = """WITH q AS (
    SELECT websearch_to_tsquery('english', %(phrase)s) AS phrase_q,
           COALESCE(to_tsquery('english', %(any_terms)s), ''::tsquery) AS any_q,
           lower(%(phrase)s) AS lower_phrase
)
SELECT m.id,
       (2.0 * ts_rank_cd(m.search_tsv, q.phrase_q) + ts_rank(m.search_tsv, q.any_q))::real AS rank,
       (position(q.lower_phrase IN lower(m.label)) > 0
        OR position(q.lower_phrase IN lower(m.definition)) > 0) AS label_match
FROM memories m, q
WHERE m.tenant_id = %(tenant)s AND m.tier = 'hot' AND m.state = 'active'
  AND m.search_tsv @@ (q.phrase_q || q.any_q)
ORDER BY 3 DESC, 2 DESC
LIMIT %(k)s"""


def text_params(tenant: str, terms: list[str], k: int) -> dict:
    phrase = terms[0]
    return {
        "tenant": tenant,
        "phrase": phrase,
        "lower": phrase.lower(),
        "any_terms": phrase_forms(terms)[1],
        "k": k,
    }


def run_as(url: str, *, app: bool, tenant: str) -> psycopg.Connection:
    conn = psycopg.connect(url, autocommit=True)
    if app:
        conn.execute(f"SET ROLE {APP_ROLE}")
        conn.execute("SELECT set_config('app.tenant_id', %s, false)", [tenant])  # session-wide for the bench
    return conn


class OwnerDatabase(Database):
    """The same pool without ``SET ROLE contextos_app``: the table owner (a superuser here), whom
    row-level security does not apply to. Only for measuring what RLS costs."""

    @staticmethod
    def _configure(conn: psycopg.Connection) -> None:
        register_vector(conn)


def bm25_exactness(db: Database, settings: Settings, tenant: str, queries: list[str], limit: int) -> dict:
    """The deployed BM25 text search (``contextos_bm25_rank``, bounded by ``bm25_cap``) against the exact BM25
    ranking of every match (the same function with no bound), per query: the share of the exact top
    k the deployed call returns. Ties count: a returned memory whose exact score reaches the k-th
    exact score is in the exact top k (a templated corpus has many equal scores)."""
    cfg = settings.retrieval
    params = BM25Params(
        k1=cfg.bm25_k1, b=cfg.bm25_b, extra_weight=cfg.bm25_extra_weight, df_live_max=cfg.bm25_df_live_max
    )
    store = Stores.over(db, settings.decay, settings.merge)
    k = cfg.bm25_k
    cpu = ServerCpu(db.conninfo)
    exact_ms, deployed_ms, kept, compared = [], [], 0.0, 0
    deployed_cpu = []
    for query in queries[:limit]:
        ms, exact = timed(lambda q=query: store.reads.text_rank(tenant, q, [], [], k=k, cap=None, params=params))
        exact_ms.append(ms)
        server = cpu.ms()
        ms, deployed = timed(
            lambda q=query: store.reads.text_rank(tenant, q, [], [], k=k, cap=cfg.bm25_cap, params=params)
        )
        deployed_cpu.append(cpu.ms() - server)
        deployed_ms.append(ms)
        if not exact:
            continue
        kth = float(exact[min(k, len(exact)) - 1]["score"])
        kept += sum(1 for r in deployed[:k] if float(r["score"]) >= kth * (1 - 1e-5))
        compared += min(k, len(exact))
    cpu.close()
    with db.tenant_tx(tenant) as conn:
        stats = conn.execute("SELECT count(*) AS n FROM text_lexeme_stats WHERE tenant_id = %s", [tenant]).fetchone()
    return {
        "queries": len(exact_ms),
        "k": k,
        "cap": cfg.bm25_cap,
        "exact_per_query": pct(exact_ms),
        "deployed_per_query": pct(deployed_ms),
        "share_of_exact_top_k": round(kept / max(1, compared), 3),
        "lexemes_with_scan_counts": stats["n"],
        "function": "shared/contextos/store/definitions/contextos_bm25_rank.sql",
        "deployed_server_cpu": pct(deployed_cpu),
    }


def text_variants(url: str, db: Database, settings: Settings, tenant: str, queries: list[str], limit: int) -> dict:
    """Each query's text search two ways: ranking every match of every phrase (the pre-0008 SQL, as
    the owner so the GIN index is usable: the fastest way to rank everything), and the store's one
    bounded call for all phrases (migration 0015, as the app role). How many rows each phrase
    matches, and how much of the rank-everything top k the bounded call keeps."""
    k, cap = settings.retrieval.text_k, settings.retrieval.text_match_cap
    owner_db = OwnerDatabase(url, get_dialect("postgres"), max_size=2)
    app_store = Stores.over(db, settings.decay, settings.merge)
    per_query = [[a.terms(p) for p in a.phrases] for a in map(analyze, queries[:limit])]
    per_query = [phrases for phrases in per_query if phrases]

    def rank_everything(phrases: list[list[str]]) -> list[list]:
        with owner_db.tenant_tx(tenant) as conn:
            return [conn.execute(INLINE_UNCAPPED_SQL, text_params(tenant, t, k)).fetchall() for t in phrases]

    def store_call(phrases: list[list[str]]) -> list[dict]:
        return app_store.reads.text_search(tenant, phrases, k=k, cap=cap)

    for phrases in per_query[:20]:
        rank_everything(phrases)
        store_call(phrases)
    everything_ms, store_ms, kept, compared = [], [], 0, 0
    for phrases in per_query:
        ms, full = timed(lambda phrases=phrases: rank_everything(phrases))
        everything_ms.append(ms)
        ms, bounded = timed(lambda phrases=phrases: store_call(phrases))
        store_ms.append(ms)
        for number, rows in enumerate(full, start=1):
            mine = {r["id"] for r in bounded if r["phrase_no"] == number}
            kept += len({r["id"] for r in rows} & mine)
            compared += len(rows)
    with owner_db.tenant_tx(tenant) as conn:
        matched = [
            conn.execute(MATCH_COUNT_SQL, text_params(tenant, t, k)).fetchone()["count"]
            for phrases in per_query
            for t in phrases
        ]
        common = conn.execute(
            "SELECT count(*) AS n FROM text_common_lexemes WHERE tenant_id = %s", [tenant]
        ).fetchone()["n"]
    owner_db.close()
    return {
        "queries_timed": len(per_query),
        "phrases_per_query": round(float(np.mean([len(p) for p in per_query])), 2),
        "rank_every_match_per_query": pct(everything_ms),
        "store_one_bounded_call_per_query": pct(store_ms),
        "matched_rows_per_phrase": pct(matched),
        "share_of_rank_everything_top_k_kept": round(kept / max(1, compared), 3),
        "common_lexemes_left_out": common,
        "store_function": "shared/contextos/store/migrations/0015_text_search_phrases.sql",
    }


class ExplainingConnection:
    """Runs each SELECT once under EXPLAIN (ANALYZE, BUFFERS), records the plan, then runs it for real."""

    def __init__(self, conn: psycopg.Connection, sink: list[dict]) -> None:
        self._conn = conn
        self._sink = sink

    def execute(self, query, params=None, **kwargs):
        text = query if isinstance(query, str) else query.as_string(self._conn)
        head = text.lstrip().upper()
        if head.startswith(("SELECT", "WITH")) and "SET_CONFIG" not in head[:40]:
            method = next(  # the store method that sent it (reads.py, history.py, ...)
                (f.name for f in reversed(traceback.extract_stack()) if "/contextos/store/" in f.filename), "?"
            )
            rows = self._conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + text, params, **kwargs).fetchall()
            plan = "\n".join(r["QUERY PLAN"] for r in rows)
            found = re.search(r"Execution Time: ([\d.]+) ms", plan)
            self._sink.append(
                {"method": method, "execution_ms": float(found.group(1)) if found else None, "plan": plan}
            )
        return self._conn.execute(query, params, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


class ExplainingDatabase:
    """A ``Database`` whose tenant transactions EXPLAIN every read (as ``contextos_app``, under RLS)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.dialect = db.dialect
        self.plans: list[dict] = []

    @contextmanager
    def tenant_tx(self, tenant_id: str):
        with self._db.tenant_tx(tenant_id) as conn:
            yield ExplainingConnection(conn, self.plans)

    def tenant_read(self, tenant_id: str, *statements) -> list[dict]:
        """The pipelined read, one statement at a time, each explained."""
        rows: list[dict] = []
        with self.tenant_tx(tenant_id) as conn:
            for query, params in statements:
                cursor = conn.execute(query, params)
                rows = cursor.fetchall() if cursor.description else []
        return rows


def pipeline_plans(db: Database, settings: Settings, tenant: str, queries: list[str], vectors: np.ndarray) -> dict:
    """Every statement of a few real pipeline runs, EXPLAIN ANALYZEd as the app role: per store method,
    the median execution time, and the plan of its slowest run."""
    explaining = ExplainingDatabase(db)
    service = RetrievalService(
        settings=settings,
        store=Stores.over(explaining, settings.decay, settings.merge).reads,  # type: ignore[arg-type]
        embedder=None,  # type: ignore[arg-type]
    )
    for q, v in zip(queries, vectors, strict=True):
        service.context(tenant, ContextRequest(query=q, dry_run=True), query_vector=v.tolist())
    metrics.clear_metrics()
    by_method: dict[str, list[dict]] = {}
    for p in explaining.plans:
        by_method.setdefault(p["method"], []).append(p)
    out = {}
    for method, plans in by_method.items():
        times = [p["execution_ms"] or 0.0 for p in plans]
        slowest = max(plans, key=lambda p: p["execution_ms"] or 0.0)
        out[method] = {
            "statements": len(plans),
            "median_execution_ms": round(float(np.median(times)), 2),
            "max_execution_ms": round(max(times), 2),
            "slowest_plan": slowest["plan"],
        }
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["median_execution_ms"]))


# -- main ---------------------------------------------------------------------------------------
@contextmanager
def _data_dir(keep: Path | None):
    """A temporary data dir, or ``keep`` (created if missing) when the tenants are to be reused."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="contextos-bench-") as tmp:
            yield tmp
    else:
        keep.mkdir(parents=True, exist_ok=True)
        yield str(keep)


def _loaded(url: str, tenant: str, n: int) -> dict | None:
    """The tenant's load figures when a kept database already holds it, complete, with its index."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant]).fetchone()
        index = conn.execute("SELECT to_regclass('memory_vectors_hnsw')").fetchone()[0]
    if row is None or row[0] != n or index is None:
        return None
    return {"memories": n, "reused": True}


def measure(
    label: str,
    url: str,
    service: RetrievalService,
    store: Stores,
    tenant: str,
    queries: list[str],
    qvecs: np.ndarray,
    warmup: int,
    *,
    profile: bool = True,
) -> dict:
    ef = service.settings.retrieval.hnsw_ef_search
    cpu = ServerCpu(url)
    load_before = os.getloadavg()[0]
    times, returned, client_cpu, server_cpu = pipeline_latency(service, tenant, queries, qvecs, warmup, cpu)
    raw_times, raw_counts, raw_plan, raw_cpu = raw_hnsw(url, tenant, qvecs, ef, warmup, cpu)
    cpu.close()
    out = {
        "pipeline": pct(times),
        "raw_hnsw": pct(raw_times),
        "pipeline_cpu": pct(np.add(client_cpu, server_cpu)),
        "pipeline_client_cpu": pct(client_cpu),
        "pipeline_server_cpu": pct(server_cpu),
        "raw_hnsw_cpu": pct(raw_cpu),
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "raw_hnsw_mean_rows": round(float(np.mean(raw_counts)), 2),
        "raw_hnsw_short_answers": int(sum(1 for c in raw_counts if c < 20)),
        "pipeline_mean_memories_returned": round(float(np.mean(returned)), 2),
        "raw_hnsw_plan": raw_plan,
    }
    if profile:
        out["stages"] = stage_profile(service.settings, store, tenant, queries, qvecs)
    p, r = out["pipeline"], out["raw_hnsw"]
    c, rc = out["pipeline_cpu"], out["raw_hnsw_cpu"]
    print(
        f"{label}: pipeline p50/p95 {p['p50']:.1f}/{p['p95']:.1f} ms (CPU {c['p50']:.1f}/{c['p95']:.1f});"
        f" raw HNSW p50/p95 {r['p50']:.2f}/{r['p95']:.2f} ms (CPU {rc['p50']:.2f}/{rc['p95']:.2f});"
        f" load {out['load_average_1m']}"
        f" ({out['raw_hnsw_short_answers']} short answers, mean {out['raw_hnsw_mean_rows']} rows)",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--pool", type=int, default=5_000, help="distinct prototype texts embedded with MiniLM")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--text-phrases", type=int, default=150, help="phrases timed per text-search variant")
    parser.add_argument("--warm-warmup", type=int, default=50, help="rounds on the warm connection before timing")
    parser.add_argument("--warm-queries", type=int, default=150, help="timed rounds on the warm connection")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep the database here and reuse the tenants already loaded into it (the corpus is seeded, so a"
        " rerun rebuilds the same texts); phase A then runs with the HNSW index over both tenants",
    )
    parser.add_argument(
        "--corpus",
        choices=("templated", "real"),
        default="templated",
        help="templated: the vocabulary-driven worst case (reports/retrieval.*); real: distinct passages of real"
        " technical text with their own MiniLM vectors (benchmarks/real_text.py; reports/retrieval_real_text.*)",
    )
    parser.add_argument("--real-pool", type=int, default=102_400, help="passages in the real-text pool")
    args = parser.parse_args()
    wall = time.perf_counter()
    settings = Settings()
    generic = settings.extraction.generic_modifiers

    from contextos.embedding.local import LocalMiniLMEmbedder

    embedder = LocalMiniLMEmbedder()
    started = time.perf_counter()
    protos: list[Prototype] = []
    if args.corpus == "real":
        from benchmarks.real_text import pool as passage_pool
        from benchmarks.scale_corpus import real_corpus, real_queries, real_vectors

        text = passage_pool(args.real_pool)
        draw = np.random.default_rng(21)
        small = real_corpus(SMALL_TENANT, draw.choice(len(text.passages), args.small, replace=False), text, generic, 1)
        large = real_corpus(LARGE_TENANT, draw.choice(len(text.passages), args.large, replace=False), text, generic, 2)
        small_q = real_queries(small, args.queries + args.warmup, seed=3)
        large_q = real_queries(large, args.queries + args.warmup, seed=4)
        pool = text.vectors
        small_v, large_v = real_vectors(small, text), real_vectors(large, text)
    else:
        protos = prototypes(args.pool, random.Random(7))
        small = build_corpus(SMALL_TENANT, args.small, protos, generic, seed=1)
        large = build_corpus(LARGE_TENANT, args.large, protos, generic, seed=2)
        small_q = make_queries(small, protos, args.queries + args.warmup, seed=3)
        large_q = make_queries(large, protos, args.queries + args.warmup, seed=4)
        pool = np.asarray(embedder.embed([p.text() for p in protos]), dtype=np.float32)
    small_qv = np.asarray(embedder.embed(small_q), dtype=np.float32)
    large_qv = np.asarray(embedder.embed(large_q), dtype=np.float32)
    embed_s = time.perf_counter() - started
    print(
        f"{args.corpus} corpus built; {len(protos)} prototypes + {2 * len(small_q)} queries embedded"
        f" in {embed_s:.0f} s",
        flush=True,
    )
    if args.corpus == "templated":
        small_v = corpus_vectors(small, pool, seed=5)
        large_v = corpus_vectors(large, pool, seed=6)
    # how embedding-like is the geometry: a memory's nearest neighbours share its topic
    sample = large_v[:2000] @ large_v[:2000].T
    np.fill_diagonal(sample, -1)
    geometry = {
        "mean_cosine_random_pair": round(float(sample[sample > -1].mean()), 3),
        "mean_cosine_nearest_neighbour_in_2k": round(float(sample.max(axis=1).mean()), 3),
        "query_to_pool_mean_top1_cosine": round(float((large_qv @ pool[:20_000].T).max(axis=1).mean()), 3),
    }

    with _data_dir(args.data_dir) as tmp:
        url = embedded_database_url(Path(tmp))
        migrate(url, get_dialect("postgres"), DIM, "bench")
        db = Database(url, get_dialect("postgres"), max_size=settings.pool_max_size)
        store = Stores.over(db, settings.decay, settings.merge)
        lifecycle = LifecycleStore(db, settings.decay, settings.lifecycle)  # its text-statistics step
        # as deployed: cold stubs are searched too (there are none here, the searches still run)
        cold = ColdStorage(lifecycle, MemoryBlobs(), settings.cold_bucket, settings.lifecycle)
        service = RetrievalService(settings=settings, store=store.reads, embedder=embedder, cold=cold)

        small_load = _loaded(url, SMALL_TENANT, len(small)) or load(url, small, small_v, settings, seed=8)
        if not small_load.get("reused"):
            small_load["index_s"] = round(build_index(url), 1)
        small_load["common_lexemes"] = lifecycle.refresh_common_lexemes(SMALL_TENANT)
        small_load["text_stats_lexemes"] = lifecycle.refresh_text_stats(SMALL_TENANT)
        print(f"10k tenant loaded {small_load}", flush=True)
        at_10k = measure(
            "10k alone", url, service, store, SMALL_TENANT, small_q[args.warmup :], small_qv[args.warmup :], args.warmup
        )

        large_load = _loaded(url, LARGE_TENANT, len(large)) or load(url, large, large_v, settings, seed=9)
        if not large_load.get("reused"):
            print(f"100k tenant loaded in {large_load['load_s']} s; building HNSW over all vectors…", flush=True)
            large_load["index_s"] = round(build_index(url), 1)
        started = time.perf_counter()
        large_load["common_lexemes"] = lifecycle.refresh_common_lexemes(LARGE_TENANT)
        large_load["text_stats_lexemes"] = lifecycle.refresh_text_stats(LARGE_TENANT)
        large_load["common_lexemes_s"] = round(time.perf_counter() - started, 2)
        with psycopg.connect(url, autocommit=True) as conn:  # the 100k tenant's vocabulary
            frequencies = [
                r[0]
                for r in conn.execute(
                    "SELECT ndoc FROM ts_stat(format('SELECT search_tsv FROM memories WHERE tenant_id = %%L',"
                    " %s::text))",
                    [LARGE_TENANT],
                )
            ]
        from benchmarks.real_text import zipf_slope

        vocabulary = {"distinct_lexemes": len(frequencies), "zipf_slope": zipf_slope(frequencies)}
        print(f"100k tenant ready {large_load}", flush=True)
        lq, lv = large_q[args.warmup :], large_qv[args.warmup :]
        at_100k = measure("100k", url, service, store, LARGE_TENANT, lq, lv, args.warmup)
        beside = measure(
            "10k beside 100k",
            url,
            service,
            store,
            SMALL_TENANT,
            small_q[args.warmup :],
            small_qv[args.warmup :],
            args.warmup,
        )
        print("warm: one connection, the 100k and the 10k tenant interleaved…", flush=True)

        def make_service(one: Database) -> RetrievalService:
            return read_service(one, settings, embedder, MemoryBlobs())

        warm = warm_interleaved(
            url,
            make_service,
            [
                WarmTenant(LARGE_TENANT, large_q, large_qv, len(large)),
                WarmTenant(SMALL_TENANT, small_q, small_qv, len(small)),
            ],
            warmup=args.warm_warmup,
            measured=args.warm_queries,
        )
        print(f"warm: {warm_figures(warm, settings.retrieval.vector_k)}", flush=True)
        print("text search: ranking every match vs the store's bounded call…", flush=True)
        rls = text_variants(url, db, settings, LARGE_TENANT, lq, args.text_phrases)
        bm25 = bm25_exactness(db, settings, LARGE_TENANT, lq, args.text_phrases)
        print(f"BM25 at 100k: {bm25}", flush=True)
        print("EXPLAIN ANALYZE of every pipeline statement (app role)…", flush=True)
        plans_100k = pipeline_plans(db, settings, LARGE_TENANT, lq[:5], lv[:5])
        plans_beside = pipeline_plans(
            db, settings, SMALL_TENANT, small_q[args.warmup : args.warmup + 5], small_qv[args.warmup : args.warmup + 5]
        )
        with psycopg.connect(url, autocommit=True) as conn:
            sizes = {
                r[0]: r[1]
                for r in conn.execute(
                    "SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class"
                    " WHERE relname IN ('memories', 'memory_vectors', 'memory_vectors_hnsw', 'memory_items',"
                    " 'relationships', 'memory_vector_bands', 'memories_search_tsv')"
                )
            }
        db.close()

    p95_10k, p95_100k = at_10k["pipeline"]["p95"], at_100k["pipeline"]["p95"]
    raw_p95_100k = at_100k["raw_hnsw"]["p95"]
    ratio_raw = p95_100k / raw_p95_100k
    ratio_scale = p95_100k / p95_10k
    inside, alone = at_100k["stages"]["in_pipeline"], at_100k["stages"]["isolated"]
    stage_names = [k for k in inside if k not in ("total", "text_search_each")]
    floor = at_100k["stages"]["statement_floor"]
    figures = {
        "corpus": args.corpus,
        "corpus_distinct_lexemes_100k": vocabulary["distinct_lexemes"],
        "corpus_zipf_slope_100k": vocabulary["zipf_slope"],
        "p50_ms_10k": at_10k["pipeline"]["p50"],
        "p95_ms_10k": p95_10k,
        "p50_ms_100k": at_100k["pipeline"]["p50"],
        "p95_ms_100k": p95_100k,
        "raw_hnsw_p50_ms_10k": at_10k["raw_hnsw"]["p50"],
        "raw_hnsw_p95_ms_10k": at_10k["raw_hnsw"]["p95"],
        "raw_hnsw_p50_ms_100k": at_100k["raw_hnsw"]["p50"],
        "raw_hnsw_p95_ms_100k": raw_p95_100k,
        "pipeline_cpu_p50_ms_100k": at_100k["pipeline_cpu"]["p50"],
        "pipeline_cpu_p95_ms_100k": at_100k["pipeline_cpu"]["p95"],
        "pipeline_client_cpu_p50_ms_100k": at_100k["pipeline_client_cpu"]["p50"],
        "pipeline_server_cpu_p50_ms_100k": at_100k["pipeline_server_cpu"]["p50"],
        "raw_hnsw_cpu_p50_ms_100k": at_100k["raw_hnsw_cpu"]["p50"],
        "raw_hnsw_cpu_p95_ms_100k": at_100k["raw_hnsw_cpu"]["p95"],
        "pipeline_cpu_p95_over_raw_cpu_p95_100k": round(
            at_100k["pipeline_cpu"]["p95"] / max(at_100k["raw_hnsw_cpu"]["p95"], 1e-6), 2
        ),
        "load_average_1m_100k": at_100k["load_average_1m"],
        "p50_ms_10k_beside_100k": beside["pipeline"]["p50"],
        "p95_ms_10k_beside_100k": beside["pipeline"]["p95"],
        "raw_hnsw_p50_ms_10k_beside_100k": beside["raw_hnsw"]["p50"],
        "raw_hnsw_p95_ms_10k_beside_100k": beside["raw_hnsw"]["p95"],
        "raw_hnsw_short_answers_10k_beside_100k": beside["raw_hnsw_short_answers"],
        "pipeline_p95_over_raw_p95_100k": round(ratio_raw, 2),
        "p95_100k_over_p95_10k": round(ratio_scale, 2),
        "target_pipeline_le_5x_raw_100k": "pass" if ratio_raw <= 5 else "fail",
        "target_p95_100k_lt_50ms": "pass" if p95_100k < 50 else "fail",
        "target_100k_le_2x_10k": "pass" if ratio_scale <= 2 else "fail",
        **{f"stage_in_pipeline_p50_ms_100k_{k}": inside[k]["p50"] for k in stage_names},
        **{f"stage_in_pipeline_p95_ms_100k_{k}": inside[k]["p95"] for k in stage_names},
        **{f"stage_isolated_p95_ms_100k_{k}": v["p95"] for k, v in alone.items()},
        "statement_floor_p50_ms_100k": floor["p50"],
        "statement_floor_p95_ms_100k": floor["p95"],
        "statement_floor_p95_over_raw_p95_100k": round(floor["p95"] / raw_p95_100k, 2),
        "text_search_per_query_p50_ms_100k_rank_every_match": rls["rank_every_match_per_query"]["p50"],
        "text_search_per_query_p95_ms_100k_rank_every_match": rls["rank_every_match_per_query"]["p95"],
        "text_search_per_query_p50_ms_100k_store": rls["store_one_bounded_call_per_query"]["p50"],
        "text_search_per_query_p95_ms_100k_store": rls["store_one_bounded_call_per_query"]["p95"],
        "text_search_share_of_rank_everything_top_k_kept": rls["share_of_rank_everything_top_k_kept"],
        "text_common_lexemes_100k": rls["common_lexemes_left_out"],
        "text_top_k_exact_share_100k": bm25["share_of_exact_top_k"],
        "text_bm25_deployed_p50_ms_100k": bm25["deployed_per_query"]["p50"],
        "text_bm25_deployed_p95_ms_100k": bm25["deployed_per_query"]["p95"],
        "text_bm25_deployed_server_cpu_p50_ms_100k": bm25["deployed_server_cpu"]["p50"],
        "text_bm25_deployed_server_cpu_p95_ms_100k": bm25["deployed_server_cpu"]["p95"],
        "text_bm25_exact_p50_ms_100k": bm25["exact_per_query"]["p50"],
        "text_bm25_exact_p95_ms_100k": bm25["exact_per_query"]["p95"],
        "text_search_matched_rows_p50_100k": rls["matched_rows_per_phrase"]["p50"],
        "text_search_matched_rows_p95_100k": rls["matched_rows_per_phrase"]["p95"],
        **warm_figures(warm, settings.retrieval.vector_k),
        "queries_per_size": len(lq),
        "hnsw_ef_search": settings.retrieval.hnsw_ef_search,
        "hnsw_build_s_110k": large_load.get("index_s"),
        "data_reused": bool(large_load.get("reused")),
        "run_s": round(time.perf_counter() - wall, 0),
        # nested detail (JSON only)
        "at_10k": at_10k,
        "at_100k": at_100k,
        "at_10k_beside_100k": beside,
        "warm_interleaved": warm,
        "text_search_100k": rls,
        "text_bm25_100k": bm25,
        "plans_100k": plans_100k,
        "plans_10k_beside_100k": plans_beside,
        "data": {
            "small": small_load,
            "large": large_load,
            "prototypes_embedded": len(protos),
            "embed_s": round(embed_s, 1),
            "geometry": geometry,
            "relation_sizes": sizes,
        },
    }
    notes = [
        "One embedded PostgreSQL 16.2 + pgvector 0.6.2, two tenants: phase A measures the 10k tenant alone (HNSW"
        " over its 10k vectors) — the scaling baseline for the targets; phase B loads the 100k tenant beside it,"
        " rebuilds HNSW over all 110k vectors, and measures the 100k tenant and the 10k tenant again (the small"
        " tenant beside a large one, `*_10k_beside_100k`).",
        "Corpus: memories from templates over a vocabulary (40 systems, 108 components, 54 aspects, 16 teams;"
        " labels of 2-4 words, definitions of 1-2 sentences), in documents of 15-25 memories about one system,"
        " one memory_item per memory (5 % in a second document), related edges: a chain and a random sibling"
        " within each document plus a link across documents on a shared component (~2 per memory).",
        f"Vectors: {len(protos)} distinct prototype texts embedded once with the local MiniLM (int8 ONNX);"
        " each memory's vector = normalize(proto + 0.35·(another prototype of its document) + noise of norm 0.45)."
        " Embedding 110k texts would take ~5 minutes here; this keeps the anisotropic embedding geometry and"
        " the topic neighbourhoods (see data.geometry) at a fraction of that. Queries (paraphrases and fragments"
        " of memory texts) are embedded for real, once, before timing.",
        "Pipeline = RetrievalService.context(dry_run=True, query_vector=v): analysis, the vector search and the"
        " text search (all phrases, one call) on two connections at once, then one statement for the graph"
        " walk + candidate rows + sources + communities + pinned memories, scoring, budgets, excerpts, assembly;"
        " the query embedding is excluded."
        " Raw = `SELECT memory_id FROM memory_vectors WHERE tenant_id=$1 AND searchable AND indexed"
        " ORDER BY embedding <=> $2 LIMIT 20` at the pipeline's hnsw.ef_search, as the owner on one connection.",
        "Stage profile: every query runs through the real pipeline with each store call timed in place"
        " (`stage_in_pipeline_*`; vector and text searches overlap in threads, `parallel_searches` is the wall"
        " time of that section, `python` the rest of the wall time: analysis, thread pool, scoring, budgets,"
        " assembly), then each recorded store call is replayed alone with the same arguments"
        " (`stage_isolated_*`). `statement_floor_*`: per query, the replayed statements' sum with the two searches"
        " counted as the slower of them — what the pipeline would take with no Python, no thread hand-offs and the"
        " searches perfectly overlapped (the cold-stub search left out): a lower bound of this design on this"
        f" machine, {floor['p95']} ms p95 = {floor['p95'] / raw_p95_100k:.1f}x raw HNSW.",
        f"Results at 100k: pipeline p95 {p95_100k} ms = {ratio_raw:.1f}x raw HNSW p95 {raw_p95_100k} ms;"
        f" 100k/10k p95 = {ratio_scale:.2f}. In-pipeline p50 at 100k: "
        + ", ".join(f"{k} {inside[k]['p50']} ms" for k in stage_names)
        + f"; {at_100k['stages']['mean_counts']['candidate_pool_rows']} candidate rows per query on average.",
        f"Text search at 100k, p50/p95 per query ({rls['phrases_per_query']} phrases on average): ranking every"
        f" match of every phrase (the pre-0008 SQL, as the owner so its GIN index is usable)"
        f" {rls['rank_every_match_per_query']['p50']}/{rls['rank_every_match_per_query']['p95']} ms; the store's one"
        f" bounded call (migration 0015: all words first, at most {settings.retrieval.text_match_cap} matches per"
        f" form, {rls['common_lexemes_left_out']} common lexemes left out)"
        f" {rls['store_one_bounded_call_per_query']['p50']}/{rls['store_one_bounded_call_per_query']['p95']} ms,"
        f" keeping {rls['share_of_rank_everything_top_k_kept']:.0%} of the rank-everything"
        f" top {settings.retrieval.text_k}."
        f" Matched rows per phrase p50/p95: {rls['matched_rows_per_phrase']['p50']:.0f}/"
        f"{rls['matched_rows_per_phrase']['p95']:.0f}. The common lexemes are what the lifecycle scan records"
        " (run once here after each load, as a deployment would within 4 h).",
        f"BM25 text search at 100k (`contextos_bm25_rank`, what the read path runs): the deployed bounded call"
        f" {bm25['deployed_per_query']['p50']}/{bm25['deployed_per_query']['p95']} ms p50/p95, the exact ranking of"
        f" every match {bm25['exact_per_query']['p50']}/{bm25['exact_per_query']['p95']} ms; the deployed call returns"
        f" {bm25['share_of_exact_top_k']:.0%} of the exact top {bm25['k']} (ties at the k-th score count),"
        f" {bm25['queries']} queries; the document frequencies come from the lifecycle scan's count; server CPU"
        f" {bm25['deployed_server_cpu']['p50']}/{bm25['deployed_server_cpu']['p95']} ms. (An earlier text of the"
        " function is measured against this one by `benchmarks/ab.py` on the two revisions.)",
        "Warm connection (`warm_*`, `vector_recall_at_20_*`): a pool of ONE connection, as one Lambda container"
        f" has, serving the 100k and the 10k tenant in turn ({args.warm_warmup} rounds before timing, then"
        f" {args.warm_queries}; the order flips every round), every vector already settled into the HNSW index."
        " Per call the pipeline is timed, then the read path's vector search with the same settings, its rows"
        " against the tenant's exact top 20 (owner side, no index). Beside it, the vector search as it was while"
        " `SET LOCAL enable_indexscan = off` steered one shared statement text (`switch_steered_*`): on its own warm"
        " connection, and on one where every plan is custom (`switch_steered_custom_*`: what that switch meant, the"
        " cost baseline of the exact pass's own text). `warm_interleaved.prepared_vector_statements`: how many"
        " generic and custom plans each vector statement ran on the warm connection.",
        "CPU figures (`*_cpu_*`): the client process's CPU time (time.process_time, both threads) plus the CPU"
        " time the embedded server's backends spent (/proc/<pid>/schedstat), per query; far less sensitive to"
        " the machine's load than wall time. Raw HNSW CPU is the same for its one statement."
        f" 1-minute load average before/after the 100k measurement: {at_100k['load_average_1m']}.",
    ]
    if args.corpus == "real":
        notes.insert(
            0,
            "REAL-TEXT corpus (this report): each memory a distinct passage of Debian's python3-doc,"
            " postgresql-doc-15, perl-doc and git-doc text, split by ingestion's parse_document / split_sections /"
            " pack_sections (benchmarks/real_text.py), its section title as label, the passage's own MiniLM vector"
            " (no prototype mixing); documents of 15-25 passages of one source, related edges in each; queries are"
            f" labels, fragments and questions around them. The 100k tenant holds {vocabulary['distinct_lexemes']}"
            f" distinct lexemes (Zipf slope {vocabulary['zipf_slope']}). The vocabulary and prototype notes below"
            " describe the templated corpus (reports/retrieval.*), the worst case.",
        )
        figures["real_text_p95_over_raw_p95_cpu_100k"] = figures["pipeline_cpu_p95_over_raw_cpu_p95_100k"]
        figures["real_text_p95_ms_100k"] = figures["p95_ms_100k"]
        figures["real_text_exact_share_100k"] = figures["text_top_k_exact_share_100k"]
    name = "retrieval" if args.corpus == "templated" else "retrieval_real_text"
    title = "Retrieval latency" + (" (real text)" if args.corpus == "real" else "")
    path = write_report(name, figures, title=title, notes=notes)
    print(f"report: {path} (run {time.perf_counter() - wall:.0f} s)")


if __name__ == "__main__":
    main()
