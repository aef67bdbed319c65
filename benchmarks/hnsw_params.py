"""What an HNSW insert costs in pgvector 0.6.2 at other index parameters, and what recall they keep.

A scratch table of ``--n`` unit vectors, one HNSW index per parameter pair built in turn; for
each: server CPU per inserted vector (schedstat) and recall@10 of the queries against the exact
top 10 (numpy). Random vectors are the hard case for HNSW recall (in 384 dimensions every
distance is alike); with ``--real`` (a .npy of MiniLM vectors, e.g. LoCoMo's turns from the
locomo benchmark's cache, and ``--real-queries``, its questions) those are the first rows and
the queries, random ones fill the table up to ``--n``.
Run: ``python -m benchmarks.hnsw_params [--data-dir .contextos/bench-ingest] [--n 30000]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from pgvector.psycopg import register_vector

from benchmarks.ingest import server_cpu_ns, unit_vectors
from benchmarks.ingest_profile import bench_server
from benchmarks.report import write_report


def main() -> None:
    import psycopg

    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--inserts", type=int, default=300)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--params", default="16:64,16:32,12:48,8:32", help="m:ef_construction pairs")
    parser.add_argument("--real", default=None, help="a .npy of real (unit) embeddings: the table's first rows")
    parser.add_argument("--real-queries", default=None, help="a .npy of real (unit) query embeddings")
    parser.add_argument("--ef-search", default="40,100", help="hnsw.ef_search values (the read path uses 100)")
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    base = unit_vectors(args.n, rng)
    queries = unit_vectors(args.queries, rng)
    real_rows = 0
    if args.real:
        real = np.load(args.real).astype(np.float32)
        real_rows = min(args.n, len(real))
        base[:real_rows] = real[:real_rows]
        queries = np.load(args.real_queries).astype(np.float32)[: args.queries]
    exact = [set((np.argsort(-(base @ q))[:10] + 1).tolist()) for q in queries]  # ids are 1-based
    with bench_server(args.data_dir, existing=0) as (url, pgdata, _), psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("DROP TABLE IF EXISTS hnsw_scratch")
        conn.execute("CREATE TABLE hnsw_scratch (id bigserial PRIMARY KEY, embedding vector(384) NOT NULL)")
        with conn.cursor().copy("COPY hnsw_scratch (embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["vector"])
            for v in base:
                copy.write_row([v])
        conn.execute("SET maintenance_work_mem = '1GB'")
        figures: dict[str, object] = {"rows": args.n, "real_rows": real_rows}
        print(f"load {os.getloadavg()}")
        for pair in args.params.split(","):
            m, efc = (int(x) for x in pair.split(":"))
            conn.execute("DROP INDEX IF EXISTS hnsw_scratch_idx")
            built = time.perf_counter()
            conn.execute(
                f"CREATE INDEX hnsw_scratch_idx ON hnsw_scratch USING hnsw (embedding vector_cosine_ops)"
                f" WITH (m = {m}, ef_construction = {efc})"
            )
            built = time.perf_counter() - built
            recall = {}
            for ef in (int(x) for x in args.ef_search.split(",")):
                conn.execute(f"SET hnsw.ef_search = {ef}")
                hits = 0
                for q, want in zip(queries, exact, strict=True):
                    found = conn.execute(
                        "SELECT id FROM hnsw_scratch ORDER BY embedding <=> %s LIMIT 10", [q]
                    ).fetchall()
                    hits += len(want & {r[0] for r in found})
                recall[f"recall_at_10_ef_search_{ef}"] = round(hits / (10 * len(queries)), 4)
            vectors = unit_vectors(args.inserts, rng)
            s0 = server_cpu_ns(pgdata)
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany("INSERT INTO hnsw_scratch (embedding) VALUES (%s)", [(v,) for v in vectors])
            insert_ms = (server_cpu_ns(pgdata) - s0) / args.inserts / 1e6
            conn.execute("DELETE FROM hnsw_scratch WHERE id > %s", [args.n])
            measured = {
                "insert_server_cpu_ms_per_vector": round(insert_ms, 2),
                **recall,
                "build_s": round(built, 1),
                "load_1min": round(os.getloadavg()[0], 1),
            }
            figures.update({f"m{m}_efc{efc}_{k}": v for k, v in measured.items()})
            print(f"m={m} ef_construction={efc}: {measured}", flush=True)
        conn.execute("DROP TABLE hnsw_scratch")
    write_report(
        "hnsw_params",
        figures,
        title="HNSW parameters: insert cost and recall (pgvector 0.6.2)",
        notes=[
            f"{args.n:,} rows in a scratch table; the first {figures['real_rows']:,} are real MiniLM vectors"
            f" ({args.real or 'none'}), the rest random unit vectors; queries: {len(queries)}"
            f" ({args.real_queries or 'random'}). Exact top 10 by numpy over the same rows.",
            f"Insert: server CPU (schedstat) per row of {args.inserts} random vectors INSERTed one statement each"
            " into the built index, in one transaction; after the recall probes, removed again.",
            "The deployed index is m = 16, ef_construction = 64 (migration 0006); the read path sets"
            " hnsw.ef_search = 100. Changing the index is a quality decision: this is the cost side and a"
            " first recall figure, not a retrieval benchmark.",
            "load_1min: os.getloadavg() after each index (other work on this shared machine).",
        ],
    )


if __name__ == "__main__":
    main()
