"""The console's static app: only files inside the build, right content types, clear errors."""

from __future__ import annotations

from pathlib import Path

from contextos.local.console import ConsoleApp


def build(tmp_path: Path) -> Path:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><title>c</title>")
    (dist / "assets" / "app-1.js").write_text("console.log(1)")
    (dist / "assets" / "app-1.css").write_text("body{}")
    (tmp_path / "secret.txt").write_text("outside")
    return dist


def test_files_are_served_with_their_content_types(tmp_path):
    app = ConsoleApp(build(tmp_path))
    status, headers, body = app.resolve("GET", "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8" and body.startswith(b"<!doctype")
    status, headers, _ = app.resolve("GET", "/assets/app-1.js")
    assert status == 200 and "javascript" in headers["content-type"] and "immutable" in headers["cache-control"]
    assert app.resolve("GET", "/assets/app-1.css")[1]["content-type"].startswith("text/css")


def test_paths_outside_the_build_are_not_found(tmp_path):
    app = ConsoleApp(build(tmp_path))
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/assets/..%2f..%2fsecret.txt", "/a%00b", "/missing.js"):
        status, _, body = app.resolve("GET", path)
        assert status == 404 and b"not_found" in body and b"outside" not in body, path


def test_a_missing_build_and_a_write_get_clear_json_errors(tmp_path):
    status, headers, body = ConsoleApp(tmp_path / "nothing").resolve("GET", "/")
    assert status == 503 and headers["content-type"] == "application/json" and b"console_not_built" in body
    assert ConsoleApp(build(tmp_path)).resolve("POST", "/")[0] == 405


def test_config_json_is_empty_locally_and_the_deployments_own_when_written(tmp_path):
    dist = build(tmp_path)
    status, headers, body = ConsoleApp(dist).resolve("GET", "/config.json")
    assert status == 200 and headers["content-type"] == "application/json" and body == b"{}"  # no 404 in the console
    (dist / "config.json").write_text('{"apiBaseUrl": "https://example.test"}')
    assert b"example.test" in ConsoleApp(dist).resolve("GET", "/config.json")[2]
