"""The console in a real browser: Debian's Chromium driven by Playwright, against the local stack."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from contextos import container
from contextos.models import Provenance

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def build_console() -> None:
    """The tests run what `make console` builds; build it if this checkout has not yet."""
    if not (REPO / "console" / "dist" / "index.html").is_file():
        subprocess.run(["make", "console"], cwd=REPO, check=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    from contextos.local.stack import LocalStack

    build_console()
    saved = dict(os.environ)
    os.environ["CONTEXTOS_DATABASE_URL"] = database_url
    os.environ["CONTEXTOS_DATA_DIR"] = str(tmp_path_factory.mktemp("console-stack"))
    os.environ["CONTEXTOS_UPLOAD_BUCKET"] = "console-uploads"
    os.environ["CONTEXTOS_COLD_BUCKET"] = "console-cold"
    os.environ["CONTEXTOS_LOCAL_QUEUE_PREFIX"] = "console"
    container.reset()
    stack = LocalStack(api_port=0, poll_wait_s=0, serve_mcp=False).start()
    # A tenant of its own, so the other suites sharing this database never see the console's memories.
    stack.console_tenant = f"console-{uuid.uuid4().hex[:8]}"
    stack.console_key = container.keys().create(
        stack.console_tenant, "console-user", principal="user", provenance_ceiling=Provenance.user_turn
    )
    yield stack
    stack.stop()
    os.environ.clear()
    os.environ.update(saved)
    container.reset()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, stack):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(stack.api_url + "/console/")
    page.fill("#api-key", stack.console_key)
    page.click("#key-form button")
    yield page
    context.close()


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def show(page, view: str) -> None:
    page.evaluate("v => { location.hash = v }", f"#/{view}")
    page.wait_for_selector(f'#view[data-view="{view.split("/")[0].split("?")[0]}"][data-ready="true"]')


def http(stack, method, path, body=None, key=None, timeout=30):
    key = key or stack.console_key
    request = urllib.request.Request(
        stack.api_url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def ingest(stack, text: str, filename: str) -> str:
    status, accepted = http(stack, "POST", "/v1/documents", {"text": text, "filename": filename})
    assert status == 202
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, doc = http(stack, "GET", f"/v1/documents/{accepted['id']}")
        if doc["status"] in ("done", "failed"):
            assert doc["status"] == "done", doc
            return accepted["id"]
        time.sleep(0.2)
    raise AssertionError("document not processed in time")
