"""The console's graph view in headless Chromium against the real local stack, at 1,000 / 5,000 / 10,000 memories.

Each size is a tenant of its own, written through the public API (``POST /v1/import``: one
workspace file per memory, each with typed edges to earlier ones, strength anchors over every
band), so what the browser draws is the real ``/v1/graph`` reply from the real store. Per size:

- ``first_paint_ms_N``: from navigation (the page's time origin) to the second animation frame
  after sigma's first frame of every node and edge (pages fetched, graph built, WebGL drawn; the
  commit between the two frames reads the WebGL canvases back, so the pixels are on screen);
- ``pan_zoom_p95_ms_N``: p95 over camera steps (alternating pans and zooms, in bursts of 8 with a
  pause after each), each from the camera change to the animation frame after the one in which the
  camera on screen became the new one, however the renderer got it there (a full redraw, or the
  last full frame moved by a compositor transform);
- ``settle_redraw_ms_N``: the deferred full redraw after each burst (from its start to the frame
  after it) and ``settle_redraw_after_ms_N``, how long after the burst's last camera change it
  began; ``drag_p95_ms_N``: real mouse drags (Chromium input events), from the event's time stamp
  to the frame after the one showing its camera;
- ``edges_api_N`` (edges the API returned over the pages) and ``edges_drawn_N`` (in the graph);
- ``api_columns_ms_N``: the columns the console reads (``GET /v1/graph/columns``, 5,000 memories a
  request) fetched by this process in parallel, as the console does; ``api_pages_ms_N``: the object
  pages of ``GET /v1/graph`` (1,000 a page) that the console read before, fetched the same way.

The variants are measured in the same run, interleaved with the default: ``before`` is the
console of another git ref (``--before-ref``, main by default), built once into the data dir and
served beside this one at ``/console-before/`` by the same stack; ``full`` redraws everything on
each camera change with the same programs; ``sigma`` also uses sigma's own instanced programs.
The 1,000-node figures of the same run are the baseline the larger sizes are divided by.

    .venv/bin/python -m benchmarks.console_graph [--sizes 1000 5000 10000] [--variants before full]
        [--data-dir /work/cache/console-bench]   # keeps the seeded tenants (and the before build) for the next run
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.report import write_report

REPO = Path(__file__).resolve().parents[1]
BEFORE_PREFIX = "/console-before"

# Camera steps in bursts; each step waits for the camera on screen (window.contextosShown) to be
# the one asked for, then for the next frame. After each burst, the pause lets the deferred redraw
# happen (and records it) before the next burst starts.
STEPS_JS = r"""async ([bursts, perBurst, pauseMs]) => {
  const cam = window.contextosRenderer.getCamera();
  const raf = () => new Promise((done) => requestAnimationFrame(() => done()));
  const same = (a, b) => a.x === b.x && a.y === b.y && a.ratio === b.ratio && a.angle === b.angle;
  const steps = [], redraws = [];
  let settledFull = 0;
  for (let b = 0; b < bursts; b++) {
    let last = 0;
    for (let i = 0; i < perBurst; i++) {
      const s = cam.getState();
      const next = i % 2 === 0
        ? { ...s, x: s.x + (i % 4 === 0 ? 0.03 : -0.03) * s.ratio }
        : { ...s, ratio: s.ratio * (i % 4 === 1 ? 0.85 : 1 / 0.85) };
      const t0 = performance.now();
      last = t0;
      cam.setState(next);
      while (!(window.contextosShown && same(window.contextosShown.camera, next))) await raf();
      await raf();
      steps.push(performance.now() - t0);
    }
    const pauseStart = performance.now();
    let recorded = false;
    while (performance.now() - pauseStart < pauseMs) {
      const shown = window.contextosShown;
      if (!recorded && shown.kind === "full" && shown.began >= last) {
        const began = shown.began;
        await raf();
        redraws.push({ ms: performance.now() - began, after_ms: began - last });
        recorded = true;
      }
      await raf();
    }
    if (window.contextosShown.kind === "full" && same(window.contextosShown.camera, cam.getState())) settledFull++;
  }
  return { steps, redraws, settledFull };
}"""

# Real input: sigma moves the camera in its own mousemove listener on the document; this one is
# added after it, so it sees the moved camera, then waits for that camera on screen and the next
# frame, and measures from the event's time stamp.
DRAG_RECORDER_JS = r"""() => {
  const cam = window.contextosRenderer.getCamera(), out = [];
  const raf = () => new Promise((done) => requestAnimationFrame(() => done()));
  const same = (a, b) => a.x === b.x && a.y === b.y && a.ratio === b.ratio && a.angle === b.angle;
  window.contextosDrag = out;
  document.addEventListener("mousemove", async (event) => {
    const want = cam.getState();
    if (same(want, window.contextosShown.camera)) return; // not a camera move (no button held)
    while (!same(window.contextosShown.camera, want) && same(cam.getState(), want)) await raf();
    if (!same(cam.getState(), want)) return; // overtaken by the next move before it was shown
    await raf();
    out.push(performance.now() - event.timeStamp);
  });
}"""


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)] if ordered else float("nan")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


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


def api_graph(api_url: str, key: str, n: int) -> tuple[int, int, float]:
    """Nodes and edges over the pages the console reads for ``n``, fetched in parallel as it does."""
    offsets = list(range(0, n, 1000))
    started = time.perf_counter()
    with ThreadPoolExecutor(len(offsets)) as pool:
        pages = list(pool.map(lambda o: call(api_url, key, "GET", f"/v1/graph?limit=1000&offset={o}"), offsets))
    wall_ms = (time.perf_counter() - started) * 1000
    nodes = edges = 0
    for page in pages:
        nodes += len(page["nodes"])
        edges += len(page["edges"])
        if not page["truncated"]:
            break
    return nodes, edges, wall_ms


def api_columns(api_url: str, key: str, n: int) -> tuple[int, int, float]:
    """Nodes and edges over the columns the console reads for ``n``, fetched in parallel as it does."""
    offsets = list(range(0, n, 5000))
    started = time.perf_counter()
    with ThreadPoolExecutor(len(offsets)) as pool:
        path = "/v1/graph/columns?limit={}&offset={}"
        pages = list(pool.map(lambda o: call(api_url, key, "GET", path.format(min(5000, n - o), o)), offsets))
    wall_ms = (time.perf_counter() - started) * 1000
    return sum(len(p["ids"]) for p in pages), sum(len(p["edge_src"]) for p in pages), wall_ms


def api_cpu_ms(key: str, path: str, offsets: list[int], limit: int) -> float:
    """Python CPU for the requests the console makes at one size, run in this process through the
    same handlers the local stack calls (no HTTP, no parsing on a client): what the reply's validation
    and serialisation cost. PostgreSQL's CPU is its own process's, not counted here."""
    from contextos.local.bridge import handle
    from contextos.local.front import HttpRequest

    started = time.process_time()
    for offset in offsets:
        reply = handle(
            HttpRequest(
                "GET", path, f"limit={limit}&offset={offset}", {"authorization": f"Bearer {key}"}, None, "127.0.0.1"
            )
        )
        assert reply.status == 200, reply.status
    return (time.process_time() - started) * 1000


def api_figures(api_url: str, key: str, n: int) -> dict[str, float]:
    """The API side of what the console reads at ``n``: wall over HTTP (in parallel, as the console)
    and Python CPU in process, for the object pages before and the columns now; medians of three."""
    pages, columns = list(range(0, n, 1000)), list(range(0, n, 5000))
    return {
        f"api_pages_ms_{n}": round(median([api_graph(api_url, key, n)[2] for _ in range(3)]), 1),
        f"api_columns_ms_{n}": round(median([api_columns(api_url, key, n)[2] for _ in range(3)]), 1),
        f"api_pages_cpu_ms_{n}": round(median([api_cpu_ms(key, "/v1/graph", pages, 1000) for _ in range(3)]), 1),
        f"api_columns_cpu_ms_{n}": round(
            median([api_cpu_ms(key, "/v1/graph/columns", columns, min(n, 5000)) for _ in range(3)]), 1
        ),
    }


def report_api(api_url: str, keys: dict[int, str], report: str) -> None:
    load_before = os.getloadavg()
    figures: dict[str, object] = {}
    for n, key in keys.items():
        api = api_figures(api_url, key, n)
        figures |= api
        figures[f"api_cpu_ratio_pages_vs_columns_{n}"] = round(
            api[f"api_pages_cpu_ms_{n}"] / max(api[f"api_columns_cpu_ms_{n}"], 0.1), 2
        )
    figures |= {"loadavg_before": [round(x, 2) for x in load_before]}
    figures |= {"loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    write_report(
        report,
        figures,
        title="What the console graph reads from the API: the /v1/graph pages before, /v1/graph/columns now",
        notes=[
            "api_*_ms: wall over HTTP from this process, the requests in parallel as the console makes them "
            "(1,000-memory pages of GET /v1/graph; 5,000-memory requests of GET /v1/graph/columns); median of 3.",
            "api_*_cpu_ms: Python CPU (time.process_time) of the same requests run in process through the "
            "handlers the local stack calls, one after another; PostgreSQL's CPU is not counted; median of 3.",
            "loadavg_before/after: the machine's load around the measurements (2 cores, shared).",
        ],
    )
    print(json.dumps(figures, indent=2))


def seeded_key(api_url: str, earlier: dict | None, n: int) -> str | None:
    if not earlier:
        return None
    try:
        return earlier["key"] if api_graph(api_url, earlier["key"], n)[0] == n else None
    except urllib.error.HTTPError:  # a data dir from another stack: that key is unknown here
        return None


def measure(browser, api_url: str, key: str, n: int, bursts: int, variant: str = "", pause_ms: int = 600) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(f"sessionStorage.setItem('contextos.apiKey', {json.dumps(key)})")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    if variant == "before":
        page.goto(f"{api_url}{BEFORE_PREFIX}/#/graph?nodes={n}")
    else:
        page.goto(f"{api_url}/console/#/graph?nodes={n}{f'&render={variant}' if variant else ''}")
    page.wait_for_selector('#graph-canvas[data-painted="true"]', timeout=300_000)
    first_paint = page.evaluate("window.contextosFirstPaintAt")
    marks = page.evaluate("window.contextosMarks")
    page.wait_for_function("() => window.contextosLayoutRunning === false", timeout=300_000)
    page.wait_for_timeout(1000)  # the layout's last redraw
    page.evaluate(STEPS_JS, [1, 4, 600])  # warm
    steps = page.evaluate(STEPS_JS, [bursts, 8, pause_ms])
    # a mouse drag across the middle of the canvas, one move every 30 ms
    page.evaluate(DRAG_RECORDER_JS)
    box = page.locator("#graph-canvas").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    for k in range(1, 25):
        page.mouse.move(x + 6 * k, y + 3 * k)
        page.wait_for_timeout(30)
    page.mouse.up()
    page.wait_for_timeout(1000)
    drag = page.evaluate("window.contextosDrag")
    drawn = page.evaluate("window.contextosGraph.size")
    nodes = page.evaluate("window.contextosGraph.order")
    context.close()
    assert not errors, errors
    return {
        "first_paint_ms": first_paint,
        "marks": marks,
        "steps": steps["steps"],
        "redraws": steps["redraws"],
        "settled_full": steps["settledFull"],
        "bursts": bursts,
        "drag": drag,
        "edges_drawn": drawn,
        "nodes_drawn": nodes,
    }


def build_before(ref: str, cache: Path) -> Path:
    """The console of ``ref`` built for ``BEFORE_PREFIX`` (once per commit, under ``cache``) with this
    checkout's node_modules, or its own ``npm ci`` when its lockfile differs."""
    commit = subprocess.run(
        ["git", "rev-parse", ref], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()
    home = cache / f"console-{commit[:12]}"
    dist = home / "dist"
    if (dist / "index.html").is_file():
        return dist
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, "console"], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(home)], input=archive, check=True)
    source = home / "console"
    ours = REPO / "console"
    if (source / "package-lock.json").read_bytes() == (ours / "package-lock.json").read_bytes():
        (source / "node_modules").symlink_to(ours / "node_modules")
    else:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=source, check=True)
    vite = ["npx", "vite", "build", "--base", f"{BEFORE_PREFIX}/", "--outDir", str(dist), "--emptyOutDir"]
    subprocess.run(vite, cwd=source, check=True)  # no type check: its generated API types are not in git
    return dist


def summarise(prefix: str, n: int, runs: list[dict]) -> dict:
    steps = [t for r in runs for t in r["steps"]]
    redraws = [d for r in runs for d in r["redraws"]]
    drag = [t for r in runs for t in r["drag"]]
    first = runs[len(runs) // 2 if len(runs) % 2 else 0]
    stages = {k: round(v - first["marks"].get("started", 0), 1) for k, v in first["marks"].items() if k != "started"}
    return {
        f"{prefix}first_paint_ms_{n}": round(median([r["first_paint_ms"] for r in runs]), 1),
        f"{prefix}pan_zoom_p95_ms_{n}": round(p95(steps), 1),
        f"{prefix}pan_zoom_median_ms_{n}": round(median(steps), 1),
        f"{prefix}drag_p95_ms_{n}": round(p95(drag), 1),
        f"{prefix}drag_median_ms_{n}": round(median(drag), 1),
        f"{prefix}drag_events_{n}": len(drag),
        f"{prefix}settle_redraw_ms_{n}": round(median([d["ms"] for d in redraws]), 1),
        f"{prefix}settle_redraw_p95_ms_{n}": round(p95([d["ms"] for d in redraws]), 1),
        f"{prefix}settle_redraw_after_ms_{n}": round(median([d["after_ms"] for d in redraws]), 1),
        f"{prefix}settled_full_frames_{n}": f"{sum(r['settled_full'] for r in runs)}/{sum(r['bursts'] for r in runs)}",
        f"{prefix}edges_drawn_{n}": runs[-1]["edges_drawn"],
        f"{prefix}first_paint_runs_ms_{n}": [round(r["first_paint_ms"], 1) for r in runs],
        f"{prefix}first_paint_stages_ms_{n}": stages,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--bursts", type=int, default=5, help="bursts of 8 camera steps per page load")
    parser.add_argument("--runs", type=int, default=2, help="page loads per size and variant (median first paint)")
    parser.add_argument(
        "--variants", nargs="*", default=["before", "full"], help="measured beside the default (also: sigma)"
    )
    parser.add_argument("--before-ref", default="main", help="the git ref whose console the variant before runs")
    parser.add_argument(
        "--pause-ms", type=int, default=600, help="between bursts (under ~400 the next burst meets the settled redraw)"
    )
    parser.add_argument("--report", default="console_graph")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the stack's data here and reuse the tenants an earlier run seeded (default: a fresh temp dir)",
    )
    parser.add_argument("--seed-only", action="store_true", help="seed the tenants (into --data-dir) and stop")
    parser.add_argument(
        "--api-only",
        action="store_true",
        help="only the API's wall and CPU per size (use with --report console_graph_api)",
    )
    args = parser.parse_args()

    workdir = args.data_dir or Path(tempfile.mkdtemp(prefix="contextos-console-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
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
    from contextos.local.console import ConsoleApp
    from contextos.local.stack import LocalStack
    from contextos.models import Provenance
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, build_console

    build_console()
    mounts = {BEFORE_PREFIX: ConsoleApp(build_before(args.before_ref, workdir))} if "before" in args.variants else {}
    stack = LocalStack(api_port=0, poll_wait_s=1, serve_mcp=False, mounts=mounts).start()
    figures: dict = {}
    detail: dict = {}
    try:
        seeded_file = workdir / "console_bench_tenants.json"
        seeded = json.loads(seeded_file.read_text()) if seeded_file.is_file() else {}
        keys = {}
        for n in args.sizes:
            reused = seeded_key(stack.api_url, seeded.get(str(n)), n)
            if reused:
                keys[n] = reused
                detail[f"seed_s_{n}"] = seeded[str(n)]["seed_s"]  # seeded by an earlier run into this data dir
                continue
            tenant = f"console-bench-{n}-{uuid.uuid4().hex[:6]}"
            keys[n] = container.keys().create(
                tenant, "bench", principal="user", provenance_ceiling=Provenance.user_turn
            )
            detail[f"seed_s_{n}"] = round(seed(stack.api_url, keys[n], n), 1)
            seeded[str(n)] = {"key": keys[n], "seed_s": detail[f"seed_s_{n}"]}
            seeded_file.write_text(json.dumps(seeded))
        if args.seed_only:
            return
        if args.api_only:
            report_api(stack.api_url, keys, args.report)
            return
        load_before = os.getloadavg()
        cpu_before = os.times()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            measure(browser, stack.api_url, keys[args.sizes[0]], args.sizes[0], 1)  # warm caches once
            for n in args.sizes:
                nodes_api, edges_api, _ = api_graph(stack.api_url, keys[n], n)
                api_ms = [api_graph(stack.api_url, keys[n], n)[2] for _ in range(3)]
                nodes_columns, edges_columns, _ = api_columns(stack.api_url, keys[n], n)
                columns_ms = [api_columns(stack.api_url, keys[n], n)[2] for _ in range(3)]
                runs: dict[str, list[dict]] = {v: [] for v in ["", *args.variants]}
                for _ in range(args.runs):  # default and variants interleaved, so load drifts hit all
                    for variant in runs:
                        runs[variant].append(
                            measure(browser, stack.api_url, keys[n], n, args.bursts, variant, args.pause_ms)
                        )
                figures |= {
                    f"first_paint_ms_{n}": round(median([r["first_paint_ms"] for r in runs[""]]), 1),
                    f"pan_zoom_p95_ms_{n}": round(p95([t for r in runs[""] for t in r["steps"]]), 1),
                    f"edges_api_{n}": edges_api,
                    f"edges_drawn_{n}": runs[""][-1]["edges_drawn"],
                }
                detail[f"nodes_api_{n}"] = nodes_api
                detail[f"nodes_drawn_{n}"] = runs[""][-1]["nodes_drawn"]
                detail[f"api_pages_ms_{n}"] = round(median(api_ms), 1)
                detail[f"api_columns_ms_{n}"] = round(median(columns_ms), 1)
                detail[f"nodes_columns_{n}"] = nodes_columns
                detail[f"edges_columns_{n}"] = edges_columns
                for variant, vruns in runs.items():
                    detail |= summarise(f"{variant}_" if variant else "", n, vruns)
                for variant in args.variants:
                    detail[f"{variant}_pan_zoom_p95_ratio_vs_default_{n}"] = round(
                        detail[f"{variant}_pan_zoom_p95_ms_{n}"] / max(figures[f"pan_zoom_p95_ms_{n}"], 0.1), 2
                    )
                    detail[f"{variant}_first_paint_ratio_vs_default_{n}"] = round(
                        detail[f"{variant}_first_paint_ms_{n}"] / max(figures[f"first_paint_ms_{n}"], 0.1), 2
                    )
            browser.close()
        load_after = os.getloadavg()
        cpu_after = os.times()
    finally:
        stack.stop()
    base = args.sizes[0]
    for n in args.sizes[1:]:
        for name in ("first_paint_ms", "pan_zoom_p95_ms"):
            detail[f"{name.replace('_ms', '')}_ratio_{n}_vs_{base}"] = round(
                figures[f"{name}_{n}"] / max(figures[f"{name}_{base}"], 0.1), 2
            )
    figures |= detail | {
        "bursts_per_run": args.bursts,
        "pause_ms": args.pause_ms,
        "steps_per_burst": 8,
        "runs": args.runs,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "bench_process_cpu_s": round((cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system), 1),
    }
    write_report(
        args.report,
        figures,
        title="Console graph view in headless Chromium against the real local stack",
        notes=[
            "Each size is its own tenant written through POST /v1/import (typed edges, every band); the browser "
            "reads the real GET /v1/graph/columns (5,000 memories a request, fetched in parallel); the variant "
            f"before is the console of {args.before_ref} (the /v1/graph pages, 1,000 a page) on the same stack.",
            "Debian chromium --headless --disable-gpu: WebGL on SwiftShader (the CPU), software compositing.",
            "first paint: navigation -> the second animation frame after sigma's first frame (its commit reads "
            "the WebGL canvases back); first_paint_stages: ms after the view started (pages fetched, graph built, "
            "renderer constructed with its first frame).",
            "pan/zoom: camera change -> the frame after the one showing that camera, in bursts of 8 steps with "
            f"{args.pause_ms} ms pauses. Default: the last full frame moved by a compositor transform during a "
            "gesture, one full redraw once the camera has been still 160 ms (settle_redraw_*: its time and when it "
            "began). Variant full: the same programs, a full redraw per step; variant sigma: sigma's instanced "
            "programs, a full redraw per step.",
            "drag: Chromium mouse events (one every ~30 ms) -> the frame after the one showing their camera.",
            "settled_full_frames: bursts after which the screen showed a full frame (every node and edge drawn) "
            "of the final camera.",
            "loadavg_before/after: the machine's load around the measurements (2 cores, shared).",
            f"Ratios divide each size by the {base}-node figures of the same run.",
        ],
    )
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
