"""``contextos export | import | workspace sync``: the markdown workspace (S10) from the command line.

Each verb talks to the API (the running local stack, an in-process one, or ``--api``), as every
other verb does; archives and files stay on disk as they stream."""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextos.workspace.router import MCP_FILE, mcp_snippet

IMPORT_CHUNK = 200  # files per request: well under the API's body limit for ordinary memories
# What the folder held after the last export or sync (path → memory id): a memory whose file is gone
# from it since was deleted by the user, not created elsewhere, so sync does not write it back.
MANIFEST = Path(".contextos") / "workspace.json"
_ID_LINE = re.compile(rb"^id:\s*['\"]?([0-9a-fA-F-]{36})['\"]?\s*$", re.MULTILINE)


class NotAWorkspace(SystemExit):
    """The folder named is not there (or not a folder): nothing is read, created or sent."""

    def __init__(self, directory: Path) -> None:
        super().__init__(f"contextos: no such folder: {directory}")


def _workspace_files(directory: Path) -> tuple[list[dict[str, str]], list[str]]:
    """The workspace's markdown files, and the paths of those that are not UTF-8: those are never sent
    with replacement characters (that would store, and later write back, a corrupted text)."""
    if not directory.is_dir():
        raise NotAWorkspace(directory)
    files, not_utf8 = [], []
    for path in sorted(directory.rglob("*.md")):
        relative = path.relative_to(directory)
        if any(part.startswith(".") for part in relative.parts):
            continue
        try:
            files.append({"path": relative.as_posix(), "content": path.read_bytes().decode("utf-8")})
        except UnicodeDecodeError:
            not_utf8.append(relative.as_posix())
    for relative_path in not_utf8:
        print(f"failed: {relative_path}: not_utf8: the file is not UTF-8 text; it was not sent", file=sys.stderr)
    return files, not_utf8


def _file_id(path: Path) -> str | None:
    """The id in a file's frontmatter, read even when the rest of the file is broken or not UTF-8."""
    head = path.read_bytes()[:4096]
    if not head.startswith(b"---"):
        return None
    match = _ID_LINE.search(head)
    return match.group(1).decode("ascii").lower() if match else None


def _folder_ids(directory: Path) -> dict[str, str]:
    ids = {}
    for path in sorted(directory.rglob("*.md")):
        relative = path.relative_to(directory)
        if not any(part.startswith(".") for part in relative.parts) and (memory_id := _file_id(path)):
            ids[relative.as_posix()] = memory_id
    return ids


def _write_manifest(directory: Path, still_deleted: dict[str, str] | None = None) -> None:
    """``still_deleted`` (id → path): deleted files whose memories were kept stay listed, so the next
    sync still knows them as deleted and does not write them back."""
    files = _folder_ids(directory) | {path: memory_id for memory_id, path in (still_deleted or {}).items()}
    target = directory / MANIFEST
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"files": files}, indent=1, sort_keys=True), encoding="utf-8")


def _deleted_since_last_sync(directory: Path) -> dict[str, str]:
    """id → path of the files the last export or sync left here that are gone now (and whose id no
    other file carries: a renamed file is not a deleted one)."""
    try:
        last = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError):
        return {}
    present = set(_folder_ids(directory).values())
    return {i: p for p, i in last.items() if not (directory / p).exists() and i not in present}


def contextos_command() -> str:
    """The absolute path of the ``contextos`` executable: the one on PATH, else the one installed
    beside this interpreter (a venv's ``bin``)."""
    import shutil

    found = shutil.which("contextos") or shutil.which("contextos", path=str(Path(sys.executable).parent))
    return str(Path(found).absolute()) if found else str(Path(sys.executable).parent / "contextos")


def _safe_target(directory: Path, relative: str) -> Path:
    target = (directory / relative).resolve()
    if not target.is_relative_to(directory.resolve()):
        raise SystemExit(f"refusing to write outside the workspace: {relative}")
    return target


def cmd_export(args: argparse.Namespace, target_of: Callable[[argparse.Namespace], Any]) -> int:
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = target_of(args)
    try:
        if args.router:
            status, body = target.client.call(
                "POST", "/v1/workspace/router", {"tool": args.router, "token_budget": args.budget}
            )
            if status >= 400:
                print(json.dumps(body, indent=2), file=sys.stderr)
                return 1
            for f in body["files"]:
                out = _safe_target(directory, f["path"])
                out.parent.mkdir(parents=True, exist_ok=True)
                content = f["content"]
                if f["path"] == MCP_FILE[args.router]:  # this machine's command, URL and key
                    content = mcp_snippet(
                        args.router, command=contextos_command(), api_url=target.client.url, api_key=target.client.key
                    )
                out.write_text(content, encoding="utf-8")
                print(out)
            return 0
        client = target.client
        request = urllib.request.Request(
            client.url + "/v1/export?format=tar", headers={"Authorization": f"Bearer {client.key}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                data = response.read()
        except urllib.error.HTTPError as exc:
            print(exc.read().decode("utf-8", "replace"), file=sys.stderr)
            return 1
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            members = archive.getmembers()
            archive.extractall(directory, filter="data")
        _write_manifest(directory)
        print(f"{len(members)} files in {directory}", file=sys.stderr)
        return 0
    finally:
        target.close()


def cmd_import(args: argparse.Namespace, target_of: Callable[[argparse.Namespace], Any]) -> int:
    files, not_utf8 = _workspace_files(Path(args.dir))
    target = target_of(args)
    failed = len(not_utf8)
    counts: dict[str, int] = {"failed": failed} if failed else {}
    try:
        for start in range(0, len(files), IMPORT_CHUNK):
            status, body = target.client.call(
                "POST",
                "/v1/import",
                {"files": files[start : start + IMPORT_CHUNK], "unlock": args.unlock or [], "restore": args.restore},
            )
            if status >= 400:
                print(json.dumps(body, indent=2), file=sys.stderr)
                return 1
            for line in body["files"]:
                counts[line["status"]] = counts.get(line["status"], 0) + 1
                if line["status"] in ("failed", "conflict", "refused", "held"):
                    failed += line["status"] != "held"
                    print(
                        f"{line['status']}: {line['path']}: {line.get('code')}: {line.get('reason')}", file=sys.stderr
                    )
            print(f"\r  {min(start + IMPORT_CHUNK, len(files))}/{len(files)} files", end="", file=sys.stderr)
        print(file=sys.stderr)
        print(json.dumps(counts))
        return 1 if failed else 0
    finally:
        target.close()


def cmd_sync(args: argparse.Namespace, target_of: Callable[[argparse.Namespace], Any]) -> int:
    directory = Path(args.dir)
    files, not_utf8 = _workspace_files(directory)
    deleted = _deleted_since_last_sync(directory)
    for memory_id, path in sorted(deleted.items(), key=lambda item: item[1]):
        # said before the request: with --prune the memory is forgotten by it
        verb = "forgetting" if args.prune else "deleted (kept; --prune forgets it)"
        print(f"{verb}: {path}: memory {memory_id}", file=sys.stderr)
    target = target_of(args)
    try:
        status, body = target.client.call(
            "POST",
            "/v1/workspace/sync",
            {"files": files, "unlock": args.unlock or [], "deleted": sorted(deleted), "prune": args.prune},
        )
    finally:
        target.close()
    if status >= 400:
        print(json.dumps(body, indent=2), file=sys.stderr)
        return 1
    unapplied = {line["path"] for line in body["files"] if line["status"] in UNAPPLIED} | set(not_utf8)
    # A file that could not be applied is the user's unsaved intent: it is reported, never overwritten.
    writes = [f for f in body["write"] if f["path"] not in unapplied]
    for f in writes:
        out = _safe_target(directory, f["path"])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(f["content"].encode("utf-8"))
    removed = [path for path in body["remove"] if path not in unapplied]
    for path in removed:
        _safe_target(directory, path).unlink(missing_ok=True)
    for line in body["files"]:
        if line["status"] in (*UNAPPLIED, "held"):
            print(f"{line['status']}: {line['path']}: {line.get('code')}: {line.get('reason')}", file=sys.stderr)
    outcome: dict[str, int] = {}
    kept: dict[str, str] = {}
    for line in body.get("deleted", []):
        outcome[line["status"]] = outcome.get(line["status"], 0) + 1
        path = deleted.get(line["memory_id"], line["memory_id"])
        if line["status"] == "kept":
            kept[line["memory_id"]] = path
        if line.get("code"):
            print(f"kept: {path}: {line['code']}: {line.get('reason')}", file=sys.stderr)
    _write_manifest(directory, still_deleted=kept)
    counts = body["counts"] | ({"not_utf8": len(not_utf8)} if not_utf8 else {})
    if outcome:
        counts |= {"deleted_kept": outcome.get("kept", 0), "forgotten": outcome.get("forgotten", 0)}
    print(json.dumps(counts | {"written": len(writes), "removed": len(removed)}))
    return 1 if unapplied else 0


UNAPPLIED = ("failed", "conflict", "refused")


def register(
    sub: Any, api_flags: Callable[[argparse.ArgumentParser], None], target_of: Callable[[argparse.Namespace], Any]
) -> None:
    """Add the workspace verbs to the ``contextos`` parser."""
    export = sub.add_parser("export", help="write the memory store as a markdown workspace (or a router file)")
    export.add_argument("dir")
    export.add_argument(
        "--router", choices=["claude", "agents", "cursor"], help="write CLAUDE.md / AGENTS.md / .cursorrules"
    )
    export.add_argument("--budget", type=int, default=4000, help="token budget of the router file")
    api_flags(export)
    export.set_defaults(func=lambda a: cmd_export(a, target_of))

    imp = sub.add_parser("import", help="create or update memories from a workspace folder")
    imp.add_argument("dir")
    imp.add_argument("--unlock", action="append", help="a protected memory id this import may change (repeatable)")
    imp.add_argument("--restore", action="store_true", help="accepted for older scripts: imports keep their ids")
    api_flags(imp)
    imp.set_defaults(func=lambda a: cmd_import(a, target_of))

    workspace = sub.add_parser("workspace", help="the markdown workspace")
    workspace_sub = workspace.add_subparsers(dest="action", required=True)
    sync = workspace_sub.add_parser("sync", help="edits in, new and changed memories out; conflicts reported")
    sync.add_argument("dir")
    sync.add_argument("--unlock", action="append", help="a protected memory id this sync may change (repeatable)")
    sync.add_argument(
        "--prune", action="store_true", help="forget the memories whose files were deleted since the last sync"
    )
    api_flags(sync)
    sync.set_defaults(func=lambda a: cmd_sync(a, target_of))
