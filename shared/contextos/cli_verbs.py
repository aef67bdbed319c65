"""The management verbs of ``contextos`` (S11): ``search``, ``memories list|show|edit|forget|restore``,
``sessions list``, ``keys list|revoke``, ``mcp``, ``reembed`` and ``bench``. The API verbs go through the SDK, to a
running ``contextos dev``, an in-process stack, or ``--api-url``."""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextos.cli_target import ApiTarget, ApiUnreachable

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def sdk_target(args: argparse.Namespace) -> tuple[Any, Any]:
    """(SDK client, the target to close): the API the CLI's other verbs talk to."""
    from contextos.sdk import Client

    target = ApiTarget(args)
    return Client(target.client.url, api_key=target.client.key), target


def _api_verb(run: Callable[[Any, argparse.Namespace], Any]) -> Callable[[argparse.Namespace], int]:
    def verb(args: argparse.Namespace) -> int:
        import httpx

        from contextos.sdk import ApiError

        client, target = sdk_target(args)
        try:
            run(client, args)
        except ApiError as exc:
            print(f"error {exc.status} {exc.code}: {exc.message}", file=sys.stderr)
            return 1
        except httpx.TransportError as exc:
            raise ApiUnreachable(target.client.url, exc) from exc
        finally:
            client.close()
            target.close()
        return 0

    return verb


def _print(model: Any, as_json: bool = True) -> None:
    print(json.dumps(model.model_dump(mode="json"), indent=2) if as_json else model)


def scope_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user-id")
    p.add_argument("--agent-id")
    p.add_argument("--run-id")
    p.add_argument("--tag", action="append", dest="tags", help="repeatable: all of them")


def scope_of(args: argparse.Namespace) -> dict[str, Any]:
    scope = {"user_id": args.user_id, "agent_id": args.agent_id, "run_id": args.run_id, "tags": args.tags or []}
    return {k: v for k, v in scope.items() if v}


def search(client: Any, args: argparse.Namespace) -> None:
    options: dict[str, Any] = {"limit": args.limit}
    if scope := scope_of(args):
        options["scope"] = scope
    result = client.search(args.query, **options)
    if args.json:
        _print(result)
        return
    for m in result.memories:
        print(f"{m.score.relevance:6.3f}  {m.id}  [{m.type}/{m.band}] {m.label}: {m.definition}")


def memories_list(client: Any, args: argparse.Namespace) -> None:
    filters = {k: v for k, v in vars(args).items() if k in ("type", "state", "band", "tier", "prefix") and v}
    filters |= scope_of(args)
    for shown, m in enumerate(client.iter_memories(**filters), start=1):
        print(f"{m.id}  [{m.type}/{m.band}/{m.state}] {m.label}: {m.definition[:100]}")
        if shown >= args.limit:
            break


def sessions_list(client: Any, args: argparse.Namespace) -> None:
    filters = {"status": args.status} if args.status else {}
    for shown, s in enumerate(client.iter_sessions(**filters), start=1):
        c = s.counts
        print(
            f"{s.id}  [{s.status}] {s.message_count} messages, {s.flushed_through} flushed; "
            f"flushes {c.flushes_done}/{c.flushes} done, {c.flushes_failed} failed; "
            f"{c.memories_created} memories created, {c.held_for_review} held"
        )
        if shown >= args.limit:
            break


def memories_show(client: Any, args: argparse.Namespace) -> None:
    _print(client.get_memory(args.id))


def memories_edit(client: Any, args: argparse.Namespace) -> None:
    changes: dict[str, Any] = {
        k: v for k, v in vars(args).items() if k in ("label", "definition", "importance", "type") and v is not None
    }
    if args.tags is not None:
        changes["tags"] = args.tags
    for flag in ("protected", "always_load"):
        if getattr(args, flag) is not None:
            changes[flag] = getattr(args, flag)
    if args.unlock:
        changes["unlock"] = True
    _print(client.edit_memory(args.id, **changes))


def memories_forget(client: Any, args: argparse.Namespace) -> None:
    _print(client.forget_memory(args.id, reason=args.reason))


def memories_restore(client: Any, args: argparse.Namespace) -> None:
    _print(client.restore_memory(args.id, mode="both" if args.both else "current"))


def cmd_keys_list(args: argparse.Namespace) -> int:
    from contextos import container

    for row in container.keys().list(args.tenant):
        state = "revoked" if row["revoked_at"] else "live"
        verbs = ",".join(row["verbs"]) if row["verbs"] is not None else "default verbs"
        scope = " ".join(
            f"{k}={v}" for k, v in (("user", row["scope_user_id"]), ("agent", row["scope_agent_id"])) if v
        ) + "".join(f" tag={t}" for t in row["scope_tags"])
        print(
            f"{row['tenant_id']}  {row['name']}  {row['principal']}/{row['provenance_ceiling']}  {verbs}"
            f"{'  ' + scope.strip() if scope.strip() else ''}  "
            f"{row['key_hash_prefix']}…  {row['created_at']:%Y-%m-%d}  {state}"
        )
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    from contextos import container

    revoked = container.keys().revoke(args.tenant, args.name)
    print(f"revoked {revoked} key(s)")
    return 0 if revoked else 1


def cmd_mcp(args: argparse.Namespace) -> int:
    from contextos.mcp.run import NoStack, serve

    try:
        serve(http_port=args.http, host=args.host, api_url=args.api, api_key=args.key, tenant=args.tenant)
    except NoStack as exc:
        print(f"contextos mcp: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from contextos import container
    from contextos.services.reembed import Reembedder

    reembedder = Reembedder(container.reembed_store(), container.embedder(), batch_size=args.batch)
    tenants = args.tenant or container.tenants().tenant_ids()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=False) as bar:
        tasks: dict[str, Any] = {}

        def progress(tenant: str, done: int, total: int) -> None:
            if tenant not in tasks:
                tasks[tenant] = bar.add_task(f"re-embedding {tenant}", total=total)
            bar.update(tasks[tenant], completed=done)

        report = reembedder.run(tenants, progress=progress)
    print(
        f"re-embedded {report.reembedded} memories in {report.tenants} tenant(s) with {container.embedder().model_id}"
    )
    return 0 if not any(report.remaining_by_tenant.values()) else 1


def cmd_bench(args: argparse.Namespace) -> int:
    names = sorted(p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_") and p.stem != "report")
    if args.name not in names:
        print(f"unknown benchmark {args.name!r}; available: {', '.join(names)}", file=sys.stderr)
        return 2
    sys.argv = [f"benchmarks/{args.name}.py", *args.args]
    root = str(BENCHMARKS.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        runpy.run_module(f"benchmarks.{args.name}", run_name="__main__")
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def register(sub: Any, api_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("search", help="rank memories for a query, with scores (changes nothing)")
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--json", action="store_true")
    scope_flags(p)
    api_flags(p)
    p.set_defaults(func=_api_verb(search))

    memories = sub.add_parser("memories", help="list, show, edit, forget or restore memories")
    msub = memories.add_subparsers(dest="memories_command", required=True)
    p = msub.add_parser("list", help="newest first, with filters")
    for flag in ("--type", "--state", "--band", "--tier", "--prefix"):
        p.add_argument(flag)
    p.add_argument("--limit", type=int, default=50)
    scope_flags(p)
    api_flags(p)
    p.set_defaults(func=_api_verb(memories_list))
    p = msub.add_parser("show", help="one memory with its sources")
    p.add_argument("id")
    api_flags(p)
    p.set_defaults(func=_api_verb(memories_show))
    p = msub.add_parser("edit", help="change fields (a protected memory needs --unlock)")
    p.add_argument("id")
    p.add_argument("--label")
    p.add_argument("--definition")
    p.add_argument("--importance", type=int)
    p.add_argument("--type")
    p.add_argument("--tag", action="append", dest="tags")
    p.add_argument("--protect", dest="protected", action="store_const", const=True, default=None)
    p.add_argument("--unprotect", dest="protected", action="store_const", const=False)
    p.add_argument("--always-load", dest="always_load", action="store_const", const=True, default=None)
    p.add_argument("--no-always-load", dest="always_load", action="store_const", const=False)
    p.add_argument("--unlock", action="store_true")
    api_flags(p)
    p.set_defaults(func=_api_verb(memories_edit))
    p = msub.add_parser("forget", help="forget a memory (audited; restorable while hot)")
    p.add_argument("id")
    p.add_argument("--reason")
    api_flags(p)
    p.set_defaults(func=_api_verb(memories_forget))
    p = msub.add_parser("restore", help="undo a forget or a supersession")
    p.add_argument("id")
    p.add_argument("--both", action="store_true", help="a superseded memory stands beside its successor as a conflict")
    api_flags(p)
    p.set_defaults(func=_api_verb(memories_restore))

    sessions = sub.add_parser("sessions", help="list conversation sessions")
    ssub = sessions.add_subparsers(dest="sessions_command", required=True)
    p = ssub.add_parser("list", help="newest first, with status and counts")
    p.add_argument("--status", choices=["open", "ended"])
    p.add_argument("--limit", type=int, default=50)
    api_flags(p)
    p.set_defaults(func=_api_verb(sessions_list))

    p = sub.add_parser("mcp", help="the MCP server: stdio (default) or --http PORT")
    p.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP at http://HOST:PORT/mcp")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--tenant", help="stdio against the local store: act for this tenant (default: local)")
    p.add_argument("--api", "--api-url", dest="api", help="serve a deployed API instead of the local store")
    p.add_argument("--key", "--api-key", dest="key", help="the API key to act with")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("reembed", help="re-embed memories with the configured embedder (batches, resumable)")
    p.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    p.add_argument("--batch", type=int, default=128)
    p.set_defaults(func=cmd_reembed)

    p = sub.add_parser("bench", help="run a named benchmark from benchmarks/ (arguments passed on)")
    p.add_argument("name")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_bench)


def register_keys(keys: argparse.ArgumentParser) -> None:
    """``keys list`` and ``keys revoke`` beside ``keys --tenant T --name N`` (create)."""
    keys.add_argument("action", nargs="?", choices=["create", "list", "revoke"], default="create")
