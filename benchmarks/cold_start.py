"""Cold start: how long importing each Lambda function's handler takes, and the layer's size.

Lambda imports ``handler.py`` from the function's directory with the domain layer on the path;
that import is most of a cold start we control. Each handler is imported in a fresh interpreter,
``--runs`` times, the runs of all handlers interleaved so drifting load spreads evenly, and the
median is reported beside two baselines measured in the same run: an empty interpreter and a
bare Powertools handler (Logger, Metrics, Tracer, a validating REST resolver with one route).

``--compare-ref REF`` measures the handlers of another commit (exported with ``git archive``)
in the same run, interleaved with this tree's, so before/after share the machine's load.

Modes: ``local`` (no Lambda variables: tracing off, as in the local stack and the tests) and
``lambda`` (``AWS_LAMBDA_FUNCTION_NAME`` set: tracing on). In ``lambda`` mode the one-time cost
of building the X-Ray tracer, which a handler defers to its first traced call, is timed as well.

``--layer`` builds the domain layer (``layers/build.sh``: pip downloads the arm64 wheels) and
reports its unzipped size against Lambda's 250 MB limit for function code plus layers.

Run: ``python -m benchmarks.cold_start [--runs 7] [--compare-ref 969afea] [--layer]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchmarks.report import write_report

ROOT = Path(__file__).resolve().parents[1]
NO_BYTECODE = "_without_bytecode"  # a subject imported with no bytecode at all (see env_for)
LAMBDA_UNZIPPED_LIMIT_MB = 250.0

BARE_POWERTOOLS = """
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.logging import correlation_paths

logger = Logger()
tracer = Tracer()
metrics = Metrics()
app = APIGatewayRestResolver(enable_validation=True)


@app.get("/ping")
def ping() -> dict:
    return {"ok": True}


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event, context):
    return app.resolve(event, context)
"""

# Runs inside the fresh interpreter: the import, then (lambda mode) the deferred tracer build, then
# (given an event) the first invocation, which pays for whatever the import left for later.
PROBE = """
import json, sys, time, types
c0 = time.process_time()
t0 = time.perf_counter()
import handler
t1 = time.perf_counter()
cpu = time.process_time() - c0
extra = 0.0
if sys.argv[1] == "lambda":
    obs = sys.modules.get("contextos.observability")
    lazy = getattr(obs, "tracer", None)
    if lazy is not None and hasattr(type(lazy), "tracer"):
        lazy.tracer
    extra = time.perf_counter() - t1
first = first_cpu = 0.0
if len(sys.argv) > 2:
    event = json.loads(open(sys.argv[2]).read())
    context = types.SimpleNamespace(function_name="bench", function_version="1", memory_limit_in_mb=1024,
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:bench", aws_request_id="bench",
        log_group_name="bench", log_stream_name="bench", get_remaining_time_in_millis=lambda: 30000)
    handler.lambda_handler(event, context)
    first = time.perf_counter() - t0
    first_cpu = time.process_time() - c0
print(f"{t1 - t0:.6f} {extra:.6f} {cpu:.6f} {first:.6f} {first_cpu:.6f}")
"""

# A first request needing no database: the API's edge, route matching, the route's request model
# built and validated (a 422: the body lacks its query). Its time includes the import's.
FIRST_REQUESTS = {
    "api": {
        **json.loads((ROOT / "events" / "api__post_context.json").read_text()),
        "body": json.dumps({"dry_run": True}),
    }
}


def export_ref(ref: str, into: Path) -> Path:
    """The tree of ``ref`` (its functions and domain package), without touching any work tree."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "ref.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), ref, "functions", "shared"],
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def targets(tree: Path, label: str, only: list[str] | None) -> dict[str, tuple[Path, Path | None]]:
    """name → (directory holding handler.py, domain package root or None)."""
    functions = sorted(fn for fn in (tree / "functions").iterdir() if fn.is_dir() and (not only or fn.name in only))
    return {f"{label}{fn.name}": (fn, tree / "shared") for fn in functions}


def env_for(mode: str, shared: Path | None, pycache: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_LAMBDA", "POWERTOOLS_", "CONTEXTOS_"))}
    env["PYTHONPATH"] = str(shared) if shared else ""
    if pycache is None:
        # No bytecode anywhere, none written: every module compiles at import, as in a Lambda
        # whose read-only layer ships without it.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "contextos-cold-no-bytecode")
        return env | _lambda_env(mode)
    # Every subject imports from bytecode, as the installed libraries already do: without this a
    # PYTHONDONTWRITEBYTECODE in the caller's environment times our modules' compilation instead.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env | _lambda_env(mode)


def _lambda_env(mode: str) -> dict[str, str]:
    env = {"AWS_REGION": os.environ.get("AWS_REGION", "us-east-1")}
    if mode == "lambda":
        env["AWS_LAMBDA_FUNCTION_NAME"] = "contextos-cold-start-bench"
        env["AWS_XRAY_CONTEXT_MISSING"] = "IGNORE_ERROR"
    return env


def probe(
    directory: Path, shared: Path | None, mode: str, pycache: Path | None, event: Path | None = None
) -> tuple[float, ...]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode, *([str(event)] if event else [])],
        cwd=directory,
        env=env_for(mode, shared, pycache),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"importing {directory}/handler.py failed:\n{out.stderr[-2000:]}")
    return tuple(float(x) for x in out.stdout.split()[-5:])


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def layer_size(work: Path) -> dict[str, float]:
    out = work / "layer"
    subprocess.run(["bash", str(ROOT / "layers" / "build.sh"), str(out)], check=True, env={**os.environ})
    total = sum(f.stat().st_size for f in (out / "python").rglob("*") if f.is_file())
    top: dict[str, int] = {}
    for entry in (out / "python").iterdir():
        files = [entry] if entry.is_file() else [f for f in entry.rglob("*") if f.is_file()]
        top[entry.name] = sum(f.stat().st_size for f in files)
    biggest = sorted(top.items(), key=lambda kv: -kv[1])[:8]
    bytecode = list((out / "python").rglob("*.cpython-312.pyc"))
    return {
        "layer_unzipped_mb": round(total / 1e6, 1),
        "layer_bytecode_files": len(bytecode),
        "layer_bytecode_mb": round(sum(f.stat().st_size for f in bytecode) / 1e6, 1),
        "layer_limit_mb": LAMBDA_UNZIPPED_LIMIT_MB,
        "layer_headroom_mb": round(LAMBDA_UNZIPPED_LIMIT_MB - total / 1e6, 1),
        **{f"layer_part_{name}_mb": round(size / 1e6, 1) for name, size in biggest},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--modes", nargs="+", default=["local", "lambda"], choices=["local", "lambda"])
    parser.add_argument("--compare-ref", help="a commit whose handlers are measured in the same run (before)")
    parser.add_argument("--layer", action="store_true", help="also build the layer and report its size")
    parser.add_argument("--only", nargs="+", help="measure only these functions (e.g. api)")
    parser.add_argument("--name", default="cold_start")
    args = parser.parse_args()

    figures: dict[str, float | str] = {"load_average_start": load_average(), "runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="contextos-cold-") as tmp:
        work = Path(tmp)
        bare = work / "bare"
        bare.mkdir()
        (bare / "handler.py").write_text(BARE_POWERTOOLS)
        empty = work / "empty"
        empty.mkdir()
        (empty / "handler.py").write_text("")
        subjects = {"baseline_empty_python": (empty, None), "baseline_bare_powertools": (bare, None)}
        subjects |= targets(ROOT, "", args.only)
        if "api" in subjects:
            subjects[f"api{NO_BYTECODE}"] = subjects["api"]
        if args.compare_ref:
            figures["compare_ref"] = args.compare_ref
            subjects |= targets(export_ref(args.compare_ref, work / "ref"), "before_", args.only)

        events: dict[str, Path] = {}
        for function, event in FIRST_REQUESTS.items():
            events[function] = work / f"{function}-event.json"
            events[function].write_text(json.dumps(event))
        for mode in args.modes:
            samples: dict[str, list[tuple[float, ...]]] = {name: [] for name in subjects}
            pycache = work / "pycache"
            for directory, shared in subjects.values():  # discarded: writes the bytecode caches
                probe(directory, shared, mode, pycache, events.get(directory.name))
            for _ in range(args.runs):
                for name, (directory, shared) in subjects.items():
                    cache = None if name.endswith(NO_BYTECODE) else pycache
                    samples[name].append(probe(directory, shared, mode, cache, events.get(directory.name)))
            bare_ms = statistics.median(s[0] for s in samples["baseline_bare_powertools"]) * 1000
            for name, runs in samples.items():
                median_ms = statistics.median(r[0] for r in runs) * 1000
                figures[f"{mode}_{name}_import_ms"] = round(median_ms, 1)
                figures[f"{mode}_{name}_vs_bare_powertools"] = round(median_ms / bare_ms, 2)
                figures[f"{mode}_{name}_import_cpu_ms"] = round(statistics.median(r[2] for r in runs) * 1000, 1)
                if mode == "lambda":
                    first = statistics.median(r[0] + r[1] for r in runs) * 1000
                    figures[f"{mode}_{name}_import_plus_tracer_ms"] = round(first, 1)
                if any(r[3] for r in runs):
                    first_ms, first_cpu_ms = (statistics.median(r[i] for r in runs) * 1000 for i in (3, 4))
                    figures[f"{mode}_{name}_first_request_ms"] = round(first_ms, 1)
                    figures[f"{mode}_{name}_first_request_cpu_ms"] = round(first_cpu_ms, 1)
            print(f"[{mode}] load {load_average()}")
            for name in subjects:
                wall, cpu = figures[f"{mode}_{name}_import_ms"], figures[f"{mode}_{name}_import_cpu_ms"]
                first_cpu = figures.get(f"{mode}_{name}_first_request_cpu_ms")
                more = f"  first request (cpu) {first_cpu:7.1f} ms" if first_cpu else ""
                print(f"  {name:32s} {wall:8.1f} ms  (cpu {cpu:7.1f} ms){more}")
        if args.layer:
            figures |= layer_size(work)
    figures["load_average_end"] = load_average()
    notes = [
        "Median of the runs; each run a fresh interpreter importing handler.py from the function's directory, "
        "from bytecode caches written by a discarded first run (`import_cpu_ms`: the process's CPU time, "
        "far less sensitive to the machine's load than the wall time).",
        "`before_*`: the handlers of `compare_ref`, measured interleaved in the same run.",
        "`first_request_*`: the import plus one invocation that needs no database (the API: a POST /v1/context "
        "whose body lacks its query, so edge, routing, settings and the request model's validation, then a 422).",
        "`lambda` mode sets AWS_LAMBDA_FUNCTION_NAME (tracing on); `import_plus_tracer` adds the deferred "
        "X-Ray tracer build a handler pays at its first traced call.",
        f"Lambda's limit for function code plus layers, unzipped: {LAMBDA_UNZIPPED_LIMIT_MB:.0f} MB; the layer "
        "as layers/build.sh builds it, with its CPython 3.12 bytecode (`layer_bytecode_*`).",
        f"`api{NO_BYTECODE}`: the API's import with no bytecode for any module (none written either), as a "
        "Lambda pays it when the read-only layer ships none: every module compiles.",
    ]
    path = write_report(args.name, figures, title="Cold start: handler import time and layer size", notes=notes)
    print(f"report: {path}")


if __name__ == "__main__":
    main()
