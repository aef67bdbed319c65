"""The workspace verbs against the local stack over HTTP: export, edit, sync, import, router files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_local_stack import http, stack  # noqa: F401  (the module's stack fixture)

KEY = "ctx_local_dev_key"


def test_export_edit_sync_import_and_a_router_file_through_the_cli(stack, tmp_path: Path, capsys):  # noqa: F811
    from contextos.cli import main

    status, body = http(
        stack,
        "POST",
        "/v1/memories",
        {"label": "E2E workspace rule", "definition": "Workspace files sync both ways in the e2e run.", "type": "rule"},
    )
    assert status == 201, body
    memory_id = body["memory_id"]
    flags = ["--api", stack.api_url, "--key", KEY]
    workspace = tmp_path / "memory"
    assert main(["export", str(workspace), *flags]) == 0
    path = next(workspace.glob(f"08-rules/e2e-workspace-rule-{memory_id[:8]}.md"))
    path.write_text(path.read_text().replace("sync both ways", "sync both ways, edited by hand"))
    capsys.readouterr()

    assert main(["workspace", "sync", str(workspace), *flags]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["updated"] == 1 and "failed" not in counts
    assert "version: 2" in path.read_text() and "edited by hand" in path.read_text()

    other = tmp_path / "hand"
    (other / "07-tasks").mkdir(parents=True)
    (other / "07-tasks" / "todo.md").write_text("---\nl0: E2E hand task\n---\nWrite the e2e workspace test.\n")
    (other / "07-tasks" / "bad.md").write_text("---\nl0: [\n---\nbroken\n")
    assert main(["import", str(other), *flags]) == 1  # one file failed, the other was created
    assert json.loads(capsys.readouterr().out) == {"created": 1, "failed": 1}

    assert main(["export", str(tmp_path / "router"), "--router", "claude", "--budget", "1500", *flags]) == 0
    claude = (tmp_path / "router" / "CLAUDE.md").read_text()
    assert "## Rules" in claude and "E2E workspace rule" in claude
    server = json.loads((tmp_path / "router" / ".mcp.json").read_text())["mcpServers"]["contextos"]
    assert server["args"] == ["mcp"] and Path(server["command"]).is_absolute()
    assert Path(server["command"]).name == "contextos" and Path(server["command"]).exists()
    assert set(server["env"]) == {"CONTEXTOS_API_URL", "CONTEXTOS_API_KEY"} and server["env"]["CONTEXTOS_API_KEY"]
