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


def _remember(stack, label: str, definition: str, key: str = KEY) -> str:  # noqa: F811
    status, body = http(
        stack, "POST", "/v1/memories", {"label": label, "definition": definition, "type": "rule"}, key=key
    )
    assert status == 201 and body["status"] == "admitted", body  # not merged: each label its own memory
    return body["memory_id"]


def test_sync_never_loses_an_edit_and_forgets_a_deleted_file_only_with_prune(stack, tmp_path: Path, capsys):  # noqa: F811
    from contextos.cli import main

    broken_id = _remember(stack, "E2E never lost broken", "A file whose edit breaks its frontmatter.")
    typo_id = _remember(stack, "E2E never lost typo", "A file whose edit names an unknown type.")
    gone_id = _remember(stack, "E2E never lost deleted", "A file the user deletes.")
    flags = ["--api", stack.api_url, "--key", KEY]
    workspace = tmp_path / "memory"
    assert main(["export", str(workspace), *flags]) == 0
    broken = next(workspace.rglob(f"*-{broken_id[:8]}.md"))
    typo = next(workspace.rglob(f"*-{typo_id[:8]}.md"))
    gone = next(workspace.rglob(f"*-{gone_id[:8]}.md"))
    broken_text = broken.read_text().replace("l0: E2E never lost broken", "l0: [E2E never lost broken, my edit")
    typo_text = typo.read_text().replace("type: rule", "type: rulez").replace("unknown type.", "unknown type, edited.")
    broken.write_text(broken_text)
    typo.write_text(typo_text)
    gone.unlink()
    capsys.readouterr()

    # the server's answer itself carries no stored text for a file that failed, nor for its memory
    files = [{"path": p.relative_to(workspace).as_posix(), "content": p.read_text()} for p in (broken, typo)]
    status, body = http(stack, "POST", "/v1/workspace/sync", {"files": files})
    assert status == 200, body
    assert {line["status"] for line in body["files"]} == {"failed"}
    written = {f["path"] for f in body["write"]}
    assert not written & {f["path"] for f in files}
    assert not any(memory_id[:8] in path for path in written for memory_id in (broken_id, typo_id))

    assert main(["workspace", "sync", str(workspace), *flags]) == 1  # two files failed
    err = capsys.readouterr().err
    assert broken.read_text() == broken_text and typo.read_text() == typo_text  # both edits kept, untouched
    assert f"deleted (kept; --prune forgets it): {gone.relative_to(workspace).as_posix()}" in err
    assert not gone.exists()  # a deleted file is not written back
    assert http(stack, "GET", f"/v1/memories/{gone_id}")[0] == 200  # ... and its memory is not forgotten

    assert main(["workspace", "sync", str(workspace), *flags]) == 1
    capsys.readouterr()
    assert not gone.exists()  # still deleted on the next sync

    assert main(["workspace", "sync", str(workspace), "--prune", *flags]) == 1
    out, err = capsys.readouterr()
    assert f"forgetting: {gone.relative_to(workspace).as_posix()}: memory {gone_id}" in err
    assert json.loads(out)["forgotten"] == 1
    assert http(stack, "GET", f"/v1/memories/{gone_id}")[0] == 404
    assert main(["workspace", "sync", str(workspace), *flags]) == 1
    capsys.readouterr()
    assert not gone.exists()
    assert broken.read_text() == broken_text and typo.read_text() == typo_text


def test_the_server_refuses_a_file_that_is_not_utf8_with_not_utf8_and_writes_nothing_over_it(stack):  # noqa: F811
    import base64

    latin1 = "---\nl0: E2E caf\xe9 cr\xe8me\ntype: fact\n---\nA Latin-1 file.\n".encode("latin-1")
    good = "---\nl0: E2E UTF-8 caf\xe9\ntype: fact\n---\nA UTF-8 file.\n".encode()
    files = [
        {"path": "05-resources/latin1.md", "content": base64.b64encode(latin1).decode(), "encoding": "base64"},
        {"path": "05-resources/utf8.md", "content": base64.b64encode(good).decode(), "encoding": "base64"},
    ]
    for route, utf8_outcome in (("/v1/workspace/sync", (None, "created")), ("/v1/import", ("duplicate_key", "failed"))):
        status, body = http(stack, "POST", route, {"files": files})
        assert status == 200, body
        lines = {line["path"]: line for line in body["files"]}
        assert lines["05-resources/latin1.md"]["status"] == "failed"
        assert lines["05-resources/latin1.md"]["code"] == "not_utf8"
        # the UTF-8 file beside it is applied: created by the sync, its label then taken for the import
        assert (lines["05-resources/utf8.md"].get("code"), lines["05-resources/utf8.md"]["status"]) == utf8_outcome
        assert "05-resources/latin1.md" not in {f["path"] for f in body.get("write", [])}
    status, body = http(
        stack, "POST", "/v1/import", {"files": [{"path": "x.md", "content": "%%", "encoding": "base64"}]}
    )
    assert status == 422, body


def test_after_import_restore_into_a_second_tenant_both_tenants_keys_sync_the_folder(stack, tmp_path: Path, capsys):  # noqa: F811
    import shutil

    from contextos import container
    from contextos.cli import main
    from contextos.models import Provenance

    # A tenant of its own: the export holds exactly what this test wrote (the shared e2e tenant by now
    # holds archived chats whose cold pointers another tenant may not read: foreign_cold_object).
    exporter = container.keys().create(
        "e2e-exporting", "exporter", principal="user", provenance_ceiling=Provenance.user_turn
    )
    restorer = container.keys().create(
        "e2e-restored", "restorer", principal="user", provenance_ceiling=Provenance.user_turn
    )
    first = _remember(
        stack, "Quarterly invoices archive in Glacier", "Kept seven years, as the exporting tenant wrote it.", exporter
    )
    second = _remember(
        stack, "Pager rotation swaps on Mondays", "Handover at ten, as the exporting tenant wrote it.", exporter
    )
    workspace = tmp_path / "memory"
    assert main(["export", str(workspace), "--api", stack.api_url, "--key", exporter]) == 0
    capsys.readouterr()
    code = main(["import", str(workspace), "--restore", "--api", stack.api_url, "--key", restorer])
    out, err = capsys.readouterr()
    assert code == 0 and "failed" not in err, err
    assert json.loads(out)["created"] == 2
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)

    for folder, key, memory_id in ((workspace, exporter, first), (copy, restorer, second)):
        path = next(folder.rglob(f"*-{memory_id[:8]}.md"))
        edited = path.read_text().replace("as the exporting tenant wrote it", f"edited for {key[:8]}")
        path.write_text(edited)
        capsys.readouterr()
        assert main(["workspace", "sync", str(folder), "--api", stack.api_url, "--key", key]) == 0
        out, err = capsys.readouterr()
        assert "foreign_id" not in err and "failed" not in err, err
        assert json.loads(out)["updated"] == 1
        assert f"edited for {key[:8]}" in path.read_text()  # the edit is in the file ...
        status, memory = http(stack, "GET", f"/v1/memories/{memory_id}", key=key)
        assert status == 200 and f"edited for {key[:8]}" in memory["definition"]  # ... and in that tenant
    # each tenant holds its own copy: the other tenant's edit did not reach it
    assert "exporting tenant" in http(stack, "GET", f"/v1/memories/{first}", key=restorer)[1]["definition"]
    assert "exporting tenant" in http(stack, "GET", f"/v1/memories/{second}", key=exporter)[1]["definition"]
