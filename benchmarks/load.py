"""The local stack's HTTP front under load (SPEC S14): many clients over loopback beside the same
calls made in-process, in one run.

Three phases against one local stack (embedded PostgreSQL, moto, uvicorn), on the same data:

1. in-process: the adapter API Gateway would be (authorizer function, then API function), one
   call at a time, no HTTP; the baseline;
2. one HTTP client: the same calls over loopback, one at a time: what the HTTP front adds;
3. ``--clients`` HTTP clients for ``--seconds`` (default 50 x 60 s).

The HTTP clients run in a separate process (their own interpreter: they do not share the
server's GIL), the in-process calls in the server's.

The mix is context, search, a memory by id and a message appended, in fixed proportions. Each
phase reports req/s and p50/p95/p99 per route; errors are any non-2xx answer, and resets any
connection the server dropped or refused (with the kernel's listen-queue overflow counter
beside them). Every loop ends at its deadline.

Run: ``python -m benchmarks.load [--clients 50] [--seconds 60] [--baseline-seconds 20]``.
A fresh embedded PostgreSQL is started in a temp dir, so nothing touches ``.contextos/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from benchmarks.fixtures import percentile
from benchmarks.report import write_report

ROUTES = ("context", "search", "memory", "message")
WEIGHTS = (3, 3, 3, 1)
TOPICS = [
    ("Circuit breaker", "The circuit breaker opens after five failed calls to the card processor."),
    ("Idempotency key", "An idempotency key makes a retried payment charge safe to repeat."),
    ("Blue-green deployment", "Two identical production environments; the router switches between them."),
    ("Canary release", "A canary release sends a small share of traffic to the new version first."),
    ("Feature flag", "A feature flag turns a risky change off without a deploy."),
    ("Rate limiter", "The rate limiter allows one hundred requests per second per API key."),
    ("Dead letter queue", "Messages that fail three times move to the dead letter queue for review."),
    ("Read replica", "Reporting queries run on the read replica, never on the primary database."),
    ("On-call rotation", "The on-call rotation changes every Monday at nine in the morning."),
    ("Backup policy", "Database backups are taken nightly and kept for thirty five days."),
    ("Schema migration", "Every schema migration is applied by the migrate function before a deploy."),
    ("Cache eviction", "The session cache evicts the least recently used entries after one hour."),
]
QUERIES = [
    "what protects the payment service from failures?",
    "how are retried charges made safe?",
    "how do we deploy without downtime?",
    "where do reporting queries run?",
    "when does the on-call rotation change?",
    "how long are backups kept?",
    "what happens to messages that keep failing?",
    "how many requests per second are allowed?",
]
ROTATE_SESSION_EVERY = 40  # below the flush threshold: no background extraction during a phase


def plan(rng: random.Random, memory_ids: list[str], client: int, n: int) -> tuple[str, str, str, dict | None]:
    """The n-th call of a client: (route, method, path, body)."""
    route = rng.choices(ROUTES, weights=WEIGHTS)[0]
    match route:
        case "context":
            return route, "POST", "/v1/context", {"query": rng.choice(QUERIES), "max_memories": 10}
        case "search":
            return route, "POST", "/v1/search", {"query": rng.choice(QUERIES), "limit": 10}
        case "memory":
            return route, "GET", f"/v1/memories/{rng.choice(memory_ids)}", None
        case _:
            session = f"load-{client}-{n // ROTATE_SESSION_EVERY}"
            body = {"role": "user", "content": f"Turn {n}: {rng.choice(TOPICS)[1]}"}
            return route, "POST", f"/v1/sessions/{session}/messages", body


def percentiles(samples: list[float]) -> dict[str, float]:
    """Latencies in seconds → n and p50/p95/p99 in milliseconds."""
    if not samples:
        return {"n": 0}
    return {"n": len(samples), **{f"p{q}_ms": round(percentile(samples, q / 100) * 1000, 2) for q in (50, 95, 99)}}


def summarize(samples: dict[str, list[float]], elapsed_s: float) -> dict:
    total = sum(len(v) for v in samples.values())
    return {
        "requests": total,
        "req_per_s": round(total / elapsed_s, 1) if elapsed_s else 0.0,
        "routes": {route: percentiles(samples.get(route, [])) for route in ROUTES},
        "all": percentiles([s for v in samples.values() for s in v]),
    }


# -- the clients' process ------------------------------------------------------------------------
async def run_clients(url: str, key: str, memory_ids: list[str], clients: int, seconds: float) -> dict:
    import httpx

    samples: dict[str, list[float]] = defaultdict(list)
    statuses: dict[str, int] = defaultdict(int)
    failures: dict[str, int] = defaultdict(int)
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60.0, headers=headers) as http:

        async def client(index: int) -> None:
            rng = random.Random(1000 + index)
            n = 0
            while time.perf_counter() < deadline:
                route, method, path, body = plan(rng, memory_ids, index, n)
                n += 1
                started = time.perf_counter()
                try:
                    response = await http.request(method, path, json=body)
                except (httpx.TransportError, OSError) as exc:
                    failures[type(exc).__name__] += 1
                    continue
                elapsed = time.perf_counter() - started
                statuses[str(response.status_code)] += 1
                if 200 <= response.status_code < 300:
                    samples[route].append(elapsed)
                else:
                    failures[f"http_{response.status_code}"] += 1

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        elapsed = time.perf_counter() - started
    return {**summarize(samples, elapsed), "statuses": dict(statuses), "failures": dict(failures)}


def client_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args(argv)
    ids = json.loads(Path(args.ids).read_text())
    print(json.dumps(asyncio.run(run_clients(args.client, args.key, ids, args.clients, args.seconds))))


# -- the server's process ----------------------------------------------------------------------
def listen_overflows() -> int | None:
    """The kernel's ListenOverflows counter (connections dropped because the accept queue was full)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=True))
            return int(table.get("ListenOverflows", 0))
    return None


def timed_loop(call: Callable[[str, str, dict | None], int], memory_ids: list[str], seconds: float) -> dict:
    """One caller, one request at a time, until the deadline."""
    rng = random.Random(7)
    samples: dict[str, list[float]] = defaultdict(list)
    failures: dict[str, int] = defaultdict(int)
    started = time.perf_counter()
    deadline = started + seconds
    n = 0
    while time.perf_counter() < deadline:
        route, method, path, body = plan(rng, memory_ids, 10_000, n)
        n += 1
        t0 = time.perf_counter()
        status = call(method, path, body)
        if 200 <= status < 300:
            samples[route].append(time.perf_counter() - t0)
        else:
            failures[f"http_{status}"] += 1
    return {**summarize(samples, time.perf_counter() - started), "failures": dict(failures)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--baseline-seconds", type=float, default=20)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="contextos-load-"))
    os.environ.update(
        {
            "CONTEXTOS_DATA_DIR": str(workdir),
            "POWERTOOLS_SERVICE_NAME": "contextos-load",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "ERROR",
            "POWERTOOLS_METRICS_DISABLED": "true",
        }
    )
    os.environ.pop("CONTEXTOS_DATABASE_URL", None)
    from contextos.local.bridge import handle
    from contextos.local.front import HttpRequest
    from contextos.local.stack import DEV_API_KEY, LocalStack

    load_before = os.getloadavg()[0]
    stack = LocalStack(api_port=0, poll_wait_s=1).start()
    try:
        auth = {"authorization": f"Bearer {DEV_API_KEY}", "content-type": "application/json"}

        def in_process(method: str, path: str, body: dict | None) -> int:
            data = json.dumps(body).encode() if body is not None else None
            return handle(HttpRequest(method, path, "", auth, data, "127.0.0.1")).status

        memory_ids = []
        for label, definition in TOPICS:
            data = json.dumps({"label": label, "definition": definition, "type": "fact"}).encode()
            reply = handle(HttpRequest("POST", "/v1/memories", "", auth, data, "127.0.0.1"))
            assert reply.status == 201, reply.body
            memory_ids.append(json.loads(reply.body)["memory_id"])
        ids_file = workdir / "memory_ids.json"
        ids_file.write_text(json.dumps(memory_ids))
        for _ in range(3):  # warm every route
            timed_loop(in_process, memory_ids, 1.0)

        print(f"in-process baseline, {args.baseline_seconds:.0f} s ...", flush=True)
        baseline = timed_loop(in_process, memory_ids, args.baseline_seconds)

        def clients(n: int, seconds: float) -> dict:
            """``n`` HTTP clients in their own interpreter (none of them shares the server's GIL)."""
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.load",
                    "--client",
                    stack.api_url,
                    "--key",
                    DEV_API_KEY,
                    "--ids",
                    str(ids_file),
                    "--clients",
                    str(n),
                    "--seconds",
                    str(seconds),
                ],
                cwd=Path(__file__).resolve().parents[1],
                capture_output=True,
                text=True,
                timeout=seconds + 300,
                check=True,
            )
            return json.loads(done.stdout.strip().splitlines()[-1])

        print(f"one HTTP client, {args.baseline_seconds:.0f} s ...", flush=True)
        single = clients(1, args.baseline_seconds)

        print(f"{args.clients} HTTP clients, {args.seconds:.0f} s ...", flush=True)
        overflows_before = listen_overflows()
        loaded = clients(args.clients, args.seconds)
        overflows_after = listen_overflows()
    finally:
        stack.stop()

    resets = sum(n for r in (loaded, single) for kind, n in r["failures"].items() if not kind.startswith("http_"))
    errors = sum(loaded["failures"].values()) + sum(single["failures"].values())
    overflows = (
        overflows_after - overflows_before if overflows_before is not None and overflows_after is not None else None
    )
    figures: dict = {
        "clients": args.clients,
        "seconds": args.seconds,
        "errors": errors,
        "resets": resets,
        "listen_overflows": overflows,
        "load_req_per_s": loaded["req_per_s"],
        "single_http_req_per_s": single["req_per_s"],
        "in_process_req_per_s": baseline["req_per_s"],
        "machine_load_1min_before": round(load_before, 2),
        "machine_load_1min_after": round(os.getloadavg()[0], 2),
    }
    for route in ROUTES:
        base, one, many = baseline["routes"][route], single["routes"][route], loaded["routes"][route]
        for q in ("p50_ms", "p95_ms", "p99_ms"):
            figures[f"{route}_in_process_{q}"] = base.get(q)
            figures[f"{route}_single_http_{q}"] = one.get(q)
            figures[f"{route}_load_{q}"] = many.get(q)
        if base.get("p50_ms") and one.get("p50_ms"):
            figures[f"{route}_http_overhead_ratio_p50"] = round(one["p50_ms"] / base["p50_ms"], 3)
    figures["in_process"] = baseline
    figures["single_http"] = single
    figures["load"] = loaded
    path = write_report(
        "load",
        figures,
        title=f"HTTP front under load: {args.clients} clients x {args.seconds:.0f} s beside in-process calls",
        notes=[
            "in_process: the API Gateway adapter (authorizer + API function) called directly, one at a time.",
            "single_http: the same calls over loopback HTTP (uvicorn), one at a time: *_http_overhead_ratio_p50.",
            "load: the clients in a separate process; latency includes queueing for the one warm API function"
            " instance the local stack runs (calls are serialized per function, like one Lambda instance).",
            "errors: non-2xx answers plus transport failures; resets: connections dropped, refused or reset.",
            "machine_load_*: the 1-minute load average of this 2-core machine, shared with other work; on a"
            " busy machine every thread handoff of the HTTP path waits for a core, which the in-process"
            " calls never do.",
            f"Mix (weights): {dict(zip(ROUTES, WEIGHTS, strict=True))}; sessions rotate every"
            f" {ROTATE_SESSION_EVERY} messages so no flush runs during a phase.",
        ],
    )
    print(json.dumps({k: v for k, v in figures.items() if not isinstance(v, dict)}, indent=2))
    print(f"report: {path}")


if __name__ == "__main__":
    if "--client" in sys.argv:
        client_main(sys.argv[1:])
    else:
        main()
