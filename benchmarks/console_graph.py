"""The console's graph view in headless Chromium against the real local stack, at 1,000 / 5,000 / 10,000 memories.

Each size is a tenant of its own, written through the public API (``POST /v1/import``: one
workspace file per memory, each with typed edges to earlier ones, strength anchors over every
band), so what the browser draws is the real ``/v1/graph`` reply from the real store. Per size:

- ``first_paint_ms_N``: from navigation (the page's time origin) to the animation frame after
  sigma's first render of every node and edge (pages fetched, graph built, WebGL drawn);
- ``pan_zoom_p95_ms_N``: p95 over alternating pan and zoom steps, each from the camera change to
  the animation frame after sigma re-rendered (after the ForceAtlas2 worker has stopped);
- ``edges_api_N`` (edges the API returned over the pages) and ``edges_drawn_N`` (in the graph).

The same run's 1,000-node figures are the baseline the larger sizes are divided by.

    .venv/bin/python -m benchmarks.console_graph [--sizes 1000 5000 10000] [--steps 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

from benchmarks.report import write_report

STEP_JS = """async (steps) => {
  const r = window.contextosRenderer, cam = r.getCamera();
  const frame = () => new Promise((done) => r.once("afterRender", () => requestAnimationFrame(() => done())));
  const out = [];
  for (let i = 0; i < steps; i++) {
    const s = cam.getState();
    const next = i % 2 === 0
      ? { ...s, x: s.x + (i % 4 === 0 ? 0.03 : -0.03) * s.ratio }
      : { ...s, ratio: s.ratio * (i % 4 === 1 ? 0.85 : 1 / 0.85) };
    const t0 = performance.now();
    const drawn = frame();
    cam.setState(next);
    await drawn;
    out.push(performance.now() - t0);
  }
  return out;
}"""


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def call(api_url: str, key: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        api_url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def seed(api_url: str, key: str, n: int) -> float:
    from tests.graph_seed import batches, graph_files

    started = time.perf_counter()
    for files in batches(graph_files(n, prefix=f"n{n} "), 1000):
        report = call(api_url, key, "POST", "/v1/import", {"files": files})
        assert report["counts"].get("created") == len(files), report["counts"]
    return time.perf_counter() - started


def api_edges(api_url: str, key: str, n: int) -> tuple[int, int]:
    nodes = edges = 0
    while nodes < n:
        page = call(api_url, key, "GET", f"/v1/graph?limit=1000&offset={nodes}")
        nodes += len(page["nodes"])
        edges += len(page["edges"])
        if not page["truncated"]:
            break
    return nodes, edges


def measure(browser, api_url: str, key: str, n: int, steps: int, variant: str = "") -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(f"sessionStorage.setItem('contextos.apiKey', {json.dumps(key)})")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{api_url}/console/#/graph?nodes={n}{f'&render={variant}' if variant else ''}")
    page.wait_for_selector('#graph-canvas[data-painted="true"]', timeout=300_000)
    first_paint = page.evaluate("window.contextosFirstPaintAt")
    page.wait_for_function("() => window.contextosLayoutRunning === false", timeout=120_000)
    page.evaluate(STEP_JS, 4)  # warm
    timings = page.evaluate(STEP_JS, steps)
    drawn = page.evaluate("window.contextosGraph.size")
    nodes = page.evaluate("window.contextosGraph.order")
    context.close()
    assert not errors, errors
    return {"first_paint_ms": first_paint, "steps": timings, "edges_drawn": drawn, "nodes_drawn": nodes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--runs", type=int, default=2, help="page loads per size (median first paint)")
    parser.add_argument("--variants", nargs="*", default=[], help="console render variants measured beside the default")
    parser.add_argument("--report", default="console_graph")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="contextos-console-bench-"))
    os.environ.update(
        {
            "CONTEXTOS_DATA_DIR": str(workdir),
            "POWERTOOLS_LOG_LEVEL": "ERROR",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )
    os.environ.pop("CONTEXTOS_DATABASE_URL", None)
    from contextos import container
    from contextos.local.stack import LocalStack
    from contextos.models import Provenance
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, build_console

    build_console()
    load_before = os.getloadavg()
    cpu_before = os.times()
    stack = LocalStack(api_port=0, poll_wait_s=1, serve_mcp=False).start()
    figures: dict = {}
    detail: dict = {}
    try:
        keys = {}
        for n in args.sizes:
            tenant = f"console-bench-{n}-{uuid.uuid4().hex[:6]}"
            keys[n] = container.keys().create(
                tenant, "bench", principal="user", provenance_ceiling=Provenance.user_turn
            )
            detail[f"seed_s_{n}"] = round(seed(stack.api_url, keys[n], n), 1)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            measure(browser, stack.api_url, keys[args.sizes[0]], args.sizes[0], 4)  # warm caches once
            for n in args.sizes:
                nodes_api, edges_api = api_edges(stack.api_url, keys[n], n)
                runs = [measure(browser, stack.api_url, keys[n], n, args.steps) for _ in range(args.runs)]
                steps = [t for r in runs for t in r["steps"]]
                figures[f"first_paint_ms_{n}"] = round(statistics.median(r["first_paint_ms"] for r in runs), 1)
                figures[f"pan_zoom_p95_ms_{n}"] = round(p95(steps), 1)
                figures[f"edges_api_{n}"] = edges_api
                figures[f"edges_drawn_{n}"] = runs[-1]["edges_drawn"]
                detail[f"nodes_api_{n}"] = nodes_api
                detail[f"nodes_drawn_{n}"] = runs[-1]["nodes_drawn"]
                detail[f"pan_zoom_median_ms_{n}"] = round(statistics.median(steps), 1)
                detail[f"first_paint_runs_ms_{n}"] = [round(r["first_paint_ms"], 1) for r in runs]
                for variant in args.variants:  # interleaved with the default in the same run
                    vruns = [measure(browser, stack.api_url, keys[n], n, args.steps, variant) for _ in range(args.runs)]
                    vsteps = [t for r in vruns for t in r["steps"]]
                    detail[f"{variant}_first_paint_ms_{n}"] = round(
                        statistics.median(r["first_paint_ms"] for r in vruns), 1
                    )
                    detail[f"{variant}_pan_zoom_p95_ms_{n}"] = round(p95(vsteps), 1)
                    detail[f"{variant}_pan_zoom_median_ms_{n}"] = round(statistics.median(vsteps), 1)
                    detail[f"{variant}_edges_drawn_{n}"] = vruns[-1]["edges_drawn"]
                    detail[f"{variant}_pan_zoom_p95_ratio_vs_default_{n}"] = round(
                        detail[f"{variant}_pan_zoom_p95_ms_{n}"] / max(figures[f"pan_zoom_p95_ms_{n}"], 0.1), 2
                    )
            browser.close()
    finally:
        stack.stop()
    base = args.sizes[0]
    for n in args.sizes[1:]:
        detail[f"first_paint_ratio_{n}_vs_{base}"] = round(
            figures[f"first_paint_ms_{n}"] / figures[f"first_paint_ms_{base}"], 2
        )
        detail[f"pan_zoom_p95_ratio_{n}_vs_{base}"] = round(
            figures[f"pan_zoom_p95_ms_{n}"] / max(figures[f"pan_zoom_p95_ms_{base}"], 0.1), 2
        )
    cpu_after = os.times()
    figures |= detail | {
        "steps_per_run": args.steps,
        "runs": args.runs,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "bench_process_cpu_s": round((cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system), 1),
    }
    write_report(
        args.report,
        figures,
        title="Console graph view in headless Chromium against the real local stack",
        notes=[
            "Each size is its own tenant written through POST /v1/import (typed edges, every band); the browser "
            "reads the real /v1/graph pages (1,000 memories a page, fetched in parallel).",
            "Debian chromium --headless --disable-gpu: WebGL on SwiftShader (the CPU).",
            "first paint: page time origin (navigation) -> animation frame after sigma's first full render.",
            "pan/zoom: camera change -> animation frame after sigma's re-render, alternating pan and zoom steps, "
            "after the ForceAtlas2 worker stopped; labels and edges stay drawn while moving.",
            f"Ratios divide each size by the {base}-node figures of the same run.",
        ],
    )
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
