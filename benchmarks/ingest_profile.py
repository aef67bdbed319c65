"""Where end-to-end ingestion spends its CPU: the worker split (parse / extraction / embedding / the
rest) under cProfile, and the settle step's server CPU beside a bare HNSW insert of the same vectors.

Run: ``python -m benchmarks.ingest_profile [--data-dir .contextos/bench-ingest] [--docs 20]``. With
``--data-dir`` the embedded server (and its preloaded 100k tenant) is kept and reused by the next
run, and by ``benchmarks.ingest --data-dir``; without it a temp dir is used.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from contextos.models import DocumentJob
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.migrate import migrate
from contextos.store.stores import Stores

from benchmarks.ingest import (
    DIM,
    _e2e_service,
    create_documents,
    preload,
    server_cpu_ns,
    set_shared_buffers,
    synthetic_document,
    unit_vectors,
)

FULL_TENANT = "bench-full"


@contextmanager
def bench_server(data_dir: str | None, *, existing: int, shared_buffers: str = "1GB"):
    """(url, pgdata, preload seconds or None when reused) of an embedded server holding ``existing``
    memories in the full tenant: kept in ``data_dir`` across runs, else in a temp dir."""
    import psycopg

    with tempfile.TemporaryDirectory(prefix="contextos-bench-") as tmp:
        root = Path(data_dir).resolve() if data_dir else Path(tmp)
        url = embedded_database_url(root)
        pgdata = root / "pg"
        with psycopg.connect(url, autocommit=True) as conn:
            shown = conn.execute("SHOW shared_buffers").fetchone()[0]  # type: ignore[index]
        if shared_buffers and shown.lower() != shared_buffers.lower():
            set_shared_buffers(url, pgdata, shared_buffers)
        migrate(url, get_dialect("postgres"), DIM, "bench")
        with psycopg.connect(url, autocommit=True) as conn:
            have = conn.execute("SELECT count(*) FROM memories WHERE tenant_id = %s", [FULL_TENANT]).fetchone()[0]  # type: ignore[index]
        load_s = None
        if have < existing:
            load_s = preload(url, FULL_TENANT, existing)
            print(f"preloaded {existing:,} memories in {load_s:.0f} s")
        else:
            print(f"reusing {have:,} memories in {root}")
        yield url, pgdata, load_s


def server_split(store, pgdata: Path) -> dict[str, int]:
    """Wrap the store's admission and settle calls to add up the server's CPU inside each (one
    worker in this process: the server's CPU meanwhile is this worker's, and background work)."""
    spent = {"store_concepts": 0, "settle_vectors": 0}
    for name in spent:
        inner = getattr(store, name)

        def timed(*args, _inner=inner, _name=name, **kwargs):
            started = server_cpu_ns(pgdata)
            try:
                return _inner(*args, **kwargs)
            finally:
                spent[_name] += server_cpu_ns(pgdata) - started

        setattr(store, name, timed)
    return spent


def profile_worker(url: str, pgdata: Path, tenant: str, docs: int, *, threads: int | None) -> None:
    """One worker in this process under cProfile: the CPU split by stage, and the server's CPU in
    the store path and in settling."""
    settings = Settings()
    db, store, service = _e2e_service(url, settings, threads=threads)
    server = server_split(store.admission, pgdata)
    rng = random.Random(5)
    texts = [synthetic_document(rng, 10_000 + i) for i in range(docs + 1)]
    ids = create_documents(store, tenant, texts)
    service.process(DocumentJob(tenant_id=tenant, document_id=ids[0]), data=texts[0].encode())  # warm
    server.update(dict.fromkeys(server, 0))
    server_started = server_cpu_ns(pgdata)
    profiler = cProfile.Profile(time.process_time)
    started = time.process_time()
    profiler.enable()
    for doc_id, text in zip(ids[1:], texts[1:], strict=True):
        service.process(DocumentJob(tenant_id=tenant, document_id=doc_id), data=text.encode())
    profiler.disable()
    total = (time.process_time() - started) / docs * 1e3
    stats = pstats.Stats(profiler)
    stages = {
        "parse": "parse_document",
        "extract": "_extract",
        "embed": "embed",
        "trust_gate": "split",
        "store_concepts": "store_concepts",
        "settle": "settle_vectors",
        "scope_document_memories": "scope_document_memories",
        "claim": "claim_document",
    }
    server_total = (server_cpu_ns(pgdata) - server_started) / docs / 1e6
    print(
        f"server CPU per document: {server_total:.1f} ms; in store_concepts"
        f" {server['store_concepts'] / docs / 1e6:.1f}, in settle_vectors {server['settle_vectors'] / docs / 1e6:.1f}"
    )
    print(f"worker CPU per document: {total:.1f} ms (under cProfile)")
    for stage, fn in stages.items():
        cum = sum(v[3] for k, v in stats.stats.items() if k[2] == fn)  # type: ignore[attr-defined]
        print(f"  {stage:26s} {cum / docs * 1e3:7.1f} ms")
    stats.sort_stats("cumulative").print_stats(45)
    db.close()


def settle_vs_insert(url: str, pgdata: Path, n: int) -> None:
    """Server CPU per vector: ``n`` fresh vectors settled (the UPDATE) vs ``n`` inserted straight into
    the HNSW index (indexed = true), into the same 100k index, interleaved halves."""
    import psycopg
    from pgvector.psycopg import register_vector

    tenant = "bench-settle"
    rng = np.random.default_rng(99)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant])

        def rows(indexed: bool) -> list[uuid.UUID]:
            ids = [uuid.uuid4() for _ in range(n)]
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memories (tenant_id, id, norm_key, label, definition, type, importance,"
                    " decay_rate, provenance, base_trust) VALUES (%s, %s, %s, %s, 'd', 'fact', 5, 0.1,"
                    " 'user_upload', 0.9)",
                    [(tenant, i, str(i), str(i)) for i in ids],
                )
            vectors = unit_vectors(n, rng)
            _t0, s0 = time.process_time(), server_cpu_ns(pgdata)
            w0 = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memory_vectors (tenant_id, memory_id, type, embedding, embedder_id, indexed)"
                    " VALUES (%s, %s, 'fact', %s, 'bench', %s)",
                    [(tenant, i, v, indexed) for i, v in zip(ids, vectors, strict=True)],
                )
            ms = (server_cpu_ns(pgdata) - s0) / n / 1e6
            print(
                f"  insert indexed={indexed}: {ms:.2f} server CPU ms/vector,"
                f" {(time.perf_counter() - w0) / n * 1e3:.2f} wall ms ({os.getloadavg()[0]:.1f} load)"
            )
            return ids

        rows(True)
        rows(False)
        s0, w0 = server_cpu_ns(pgdata), time.perf_counter()
        settled = 0
        settings = Settings()
        db = Database(url, get_dialect("postgres"), max_size=1)
        store = Stores.over(db, settings.decay, settings.merge)
        while moved := store.admission.settle_vectors(tenant, limit=200):
            settled += moved
        print(
            f"  settle {settled}: {(server_cpu_ns(pgdata) - s0) / max(settled, 1) / 1e6:.2f} server CPU ms/vector,"
            f" {(time.perf_counter() - w0) / max(settled, 1) * 1e3:.2f} wall ms"
        )
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--existing", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--vectors", type=int, default=1000)
    parser.add_argument("--skip", default="", help="comma list of: worker, settle")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    print(f"load average {os.getloadavg()}")
    with bench_server(args.data_dir, existing=args.existing) as (url, pgdata, _):
        if "settle" not in skip:
            settle_vs_insert(url, pgdata, args.vectors)
        if "worker" not in skip:
            profile_worker(url, pgdata, f"bench-prof-{uuid.uuid4().hex[:6]}", args.docs, threads=args.threads)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
