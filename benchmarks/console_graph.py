"""The console's graph view with 5,000 nodes in headless Chromium: time to first paint.

The console is served by its real static app (``contextos.local.console``) under uvicorn; the
browser's ``GET /v1/graph`` is answered with a synthetic tenant graph of N nodes (10 communities,
~2 edges per node, every band and edge type) so the figure is the console's own cost — fetch,
graph build, layout, WebGL draw — not the database's. The baseline in the same run is 500 nodes.
First paint = from the view starting to load until the animation frame after sigma's first render.

    PYTHONPATH=shared:. python -m benchmarks.console_graph [--nodes 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import threading
import time

import uvicorn
from contextos.local.console import ConsoleApp
from playwright.sync_api import sync_playwright

from benchmarks.report import write_report
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, build_console

BANDS = ["strong", "fading", "weak", "archive"]
EDGE_TYPES = ["related_to", "part_of", "causes", "contradicts", "supersedes"]


def synthetic_graph(n: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(n)]
    nodes = [
        {
            "id": ids[i],
            "label": f"memory {i}",
            "type": "fact",
            "band": BANDS[i % 4],
            "importance": 1 + i % 10,
            "community": i % 10,
            "hops": 0,
        }
        for i in range(n)
    ]
    edges = [
        {"source": ids[i], "target": ids[rng.randrange(n)], "type": EDGE_TYPES[rng.randrange(5)]}
        for i in range(n)
        for _ in range(2)
    ]
    return {"nodes": nodes, "edges": edges, "truncated": False}


def serve_console() -> tuple[uvicorn.Server, str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()

    async def app(scope, receive, send):  # the console at /console, as the local front mounts it
        if scope["type"] == "http" and scope["path"].startswith("/console"):
            scope = dict(scope, path=scope["path"][len("/console") :] or "/")
        await ConsoleApp()(scope, receive, send)

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def first_paint_ms(browser, url: str, body: str) -> float:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.route("**/v1/graph*", lambda route: route.fulfill(status=200, content_type="application/json", body=body))
    page.goto(url + "/console/#/graph")
    page.evaluate("sessionStorage.setItem('contextos.apiKey', 'bench')")
    page.reload()
    page.wait_for_selector('#graph-canvas[data-painted="true"]', timeout=120_000)
    shown = page.inner_text("#graph-status")
    value = page.evaluate("window.contextosFirstPaintMs")
    context.close()
    assert shown.startswith(f"{len(json.loads(body)['nodes'])} memories"), shown
    return float(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--baseline-nodes", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    build_console()
    server, url = serve_console()
    big, small = json.dumps(synthetic_graph(args.nodes)), json.dumps(synthetic_graph(args.baseline_nodes))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        first_paint_ms(browser, url, small)  # warm the browser's caches once
        baseline = [first_paint_ms(browser, url, small) for _ in range(args.runs)]
        measured = [first_paint_ms(browser, url, big) for _ in range(args.runs)]
        browser.close()
    server.should_exit = True
    figures = {
        "nodes": args.nodes,
        "edges": args.nodes * 2,
        "first_paint_ms_median": round(statistics.median(measured), 1),
        "first_paint_ms_max": round(max(measured), 1),
        "baseline_nodes": args.baseline_nodes,
        "baseline_first_paint_ms_median": round(statistics.median(baseline), 1),
        "ratio_vs_baseline": round(statistics.median(measured) / statistics.median(baseline), 2),
        "runs": args.runs,
        "runs_ms": [round(x, 1) for x in measured],
    }
    write_report(
        "console_graph",
        figures,
        title="Console graph view: first paint in headless Chromium",
        notes=[
            "Debian chromium, --headless --disable-gpu (WebGL on SwiftShader, the CPU: a real GPU is faster).",
            "GET /v1/graph answered with a synthetic graph (10 communities, 2 edges per node); console served "
            "by its real static app. The live API caps one graph page at 1,000 nodes.",
            f"Baseline: {args.baseline_nodes} nodes in the same run; first paint = load start → frame after "
            "sigma's first render.",
        ],
    )
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
