"""The CLI as a person types it, when something is wrong: a missing folder, an unreachable API, a file
that is not UTF-8, a workspace file the server cannot apply — one line on stderr and an exit code,
nothing created, nothing overwritten; and standard output that carries only the answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from contextos.cli import main

from tests.e2e.test_local_stack import http, stack  # noqa: F401  (the module's stack fixture)

KEY = "ctx_local_dev_key"
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens there


@pytest.mark.parametrize("verb", [["import"], ["workspace", "sync"]])
def test_a_missing_workspace_folder_is_one_line_and_a_failure_and_is_not_created(tmp_path: Path, verb):
    missing = tmp_path / "no" / "such" / "dir"
    with pytest.raises(SystemExit) as exited:
        main([*verb, str(missing), "--api-url", NOWHERE, "--api-key", KEY])
    assert exited.value.code == f"contextos: no such folder: {missing}"
    assert not missing.exists() and not missing.parent.exists()


@pytest.mark.parametrize(
    "argv", [["query", "what is the rota?"], ["search", "rota"], ["memories", "list"], ["report", "health"]]
)
def test_an_unreachable_api_is_one_line_on_stderr_and_exit_code_3(capsys, argv):
    assert main([*argv, "--api-url", NOWHERE, "--api-key", KEY]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"contextos: cannot reach the API at {NOWHERE}"), captured.err


def test_keys_prints_only_the_key_on_stdout():
    # a fresh data dir, so the embedded server starts and migrates (and logs it) in this process;
    # not under pytest's tmp_path, whose private modes the embedded server's own OS user cannot enter
    data_dir = Path(tempfile.mkdtemp(prefix="contextos-cli-"))
    data_dir.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTOS_", "POWERTOOLS_LOG"))}
    env |= {"CONTEXTOS_DATA_DIR": str(data_dir), "POWERTOOLS_LOG_LEVEL": "INFO"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "contextos.cli", "keys", "--tenant", "cli-stdout", "--name", "ci"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("ctx_"), done.stdout
    assert "embedded PostgreSQL started" in done.stderr  # the log line is still there, on stderr


def test_a_file_that_is_not_utf8_is_refused_and_nothing_else_is_lost(stack, tmp_path: Path, capsys):  # noqa: F811
    flags = ["--api-url", stack.api_url, "--api-key", KEY]
    folder = tmp_path / "hand"
    (folder / "07-tasks").mkdir(parents=True)
    (folder / "07-tasks" / "latin1.md").write_bytes(
        "---\nl0: Café opening task\n---\nOpen the café.\n".encode("latin-1")
    )
    (folder / "07-tasks" / "fine.md").write_text("---\nl0: CLI encoding task\n---\nCheck the file encoding.\n")
    assert main(["import", str(folder), *flags]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"failed": 1, "created": 1}
    assert "latin1.md: not_utf8" in captured.err
    status, page = http(stack, "GET", "/v1/memories?prefix=caf")
    assert status == 200 and page["memories"] == []
    before = (folder / "07-tasks" / "latin1.md").read_bytes()
    assert main(["workspace", "sync", str(folder), *flags]) == 1
    assert (folder / "07-tasks" / "latin1.md").read_bytes() == before


def test_sync_never_overwrites_a_file_it_could_not_apply(stack, tmp_path: Path, capsys):  # noqa: F811
    flags = ["--api-url", stack.api_url, "--api-key", KEY]
    status, body = http(
        stack,
        "POST",
        "/v1/memories",
        {"label": "CLI kept edit rule", "definition": "A broken edit stays on disk for its author.", "type": "rule"},
    )
    assert status == 201, body
    workspace = tmp_path / "memory"
    assert main(["export", str(workspace), *flags]) == 0
    path = next(workspace.glob(f"08-rules/cli-kept-edit-rule-{body['memory_id'][:8]}.md"))
    broken = path.read_text().replace("type: rule", "type: [rule", 1)
    assert broken != path.read_text()
    path.write_text(broken)
    capsys.readouterr()
    assert main(["workspace", "sync", str(workspace), *flags]) == 1
    assert path.read_text() == broken  # the author's text, not the stored version
    assert f"{path.relative_to(workspace).as_posix()}: broken_yaml" in capsys.readouterr().err


def test_query_takes_scope_flags(stack, capsys):  # noqa: F811
    for user in ("ana", "bo"):
        status, body = http(
            stack,
            "POST",
            "/v1/memories",
            {"label": f"CLI lunch order {user}", "definition": f"{user} orders the noodle soup.", "user_id": user},
        )
        assert status == 201, body
    assert (
        main(
            [
                "query",
                "noodle soup lunch order",
                "--user-id",
                "bo",
                "--json",
                "--api-url",
                stack.api_url,
                "--api-key",
                KEY,
            ]
        )
        == 0
    )
    labels = {m["label"] for m in json.loads(capsys.readouterr().out)["memories"]}
    assert "CLI lunch order bo" in labels and "CLI lunch order ana" not in labels
