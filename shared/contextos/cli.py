"""``contextos``: the command line (S11). ``dev`` runs the local stack; the rest talk to an API."""

from __future__ import annotations

import argparse
import base64
import json
import signal
import sys
import threading
import time
from pathlib import Path

from contextos.cli_target import ApiTarget, ApiUnreachable
from contextos.cli_verbs import (
    cmd_keys_list,
    cmd_keys_revoke,
    register,
    register_keys,
    scope_flags,
    scope_of,
    sdk_target,
)


def cmd_dev(args: argparse.Namespace) -> int:
    from contextos.local.stack import LocalStack

    stack = LocalStack(
        api_port=args.port,
        moto_port=args.moto_port,
        lifecycle_every_s=args.lifecycle_every,
        sweep_every_s=args.sweep_every,
        serve_mcp=not args.no_mcp,
    ).start()
    state = stack.state()
    print(f"ContextOS local stack on {state['api_url']}  (API key: {state['api_key']}, tenant: {state['tenant']})")
    print(
        f"moto S3/SQS at {state['aws_endpoint']}; drop files into s3://{state['upload_bucket']}/"
        f"{state['upload_prefix']}{state['tenant']}/"
    )
    if "mcp_url" in state:
        print(f"MCP (streamable HTTP) at {state['mcp_url']} with the same API key")
    print("Ctrl-C to stop.", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        print(f"no such file: {path}", file=sys.stderr)
        return 2
    target = ApiTarget(args)
    try:
        status, body = target.client.call(
            "POST",
            "/v1/documents",
            {"content_base64": base64.b64encode(path.read_bytes()).decode(), "filename": path.name},
        )
        if status >= 400:
            print(json.dumps(body, indent=2), file=sys.stderr)
            return 1
        document_id = body["id"]
        print(f"document {document_id} {'(duplicate) ' if body['duplicate'] else ''}{body['status']}", file=sys.stderr)
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            status, doc = target.client.call("GET", f"/v1/documents/{document_id}")
            if doc.get("status") in ("done", "failed"):
                print(json.dumps(doc, indent=2))
                return 0 if doc["status"] == "done" else 1
            print(f"  … {doc.get('status')}", file=sys.stderr)
            time.sleep(0.5)
        print("timed out waiting for the document", file=sys.stderr)
        return 1
    finally:
        target.close()


def cmd_query(args: argparse.Namespace) -> int:
    target = ApiTarget(args)
    try:
        status, body = target.client.call(
            "POST",
            "/v1/context",
            {
                "query": args.query,
                "dry_run": args.dry_run,
                "format": args.format,
                **({"max_memories": args.max_memories} if args.max_memories else {}),
                **({"scope": scope} if (scope := scope_of(args)) else {}),
            },
        )
    finally:
        target.close()
    if status >= 400:
        print(json.dumps(body, indent=2), file=sys.stderr)
        return 1
    print(json.dumps(body, indent=2) if args.json else body["context"])
    return 0


def cmd_lifecycle(args: argparse.Namespace) -> int:
    from contextos import container

    def progress(tenant: str, stage: str, done: int) -> None:
        print(f"\r  {tenant}: {stage} {done} memories   ", end="", file=sys.stderr, flush=True)

    report = container.lifecycle().run(progress=progress, tenants=args.tenant or None)
    print(file=sys.stderr)
    print(report.model_dump_json(indent=2))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``report health|governance`` read the API; ``report run`` runs the daily governance job here."""
    if args.kind == "run":
        from contextos import container

        print(container.reports().run_all().model_dump_json(indent=2))
        return 0
    target = ApiTarget(args)
    try:
        status, body = target.client.call("GET", f"/v1/{args.kind}")
    finally:
        target.close()
    print(json.dumps(body, indent=2), file=sys.stderr if status >= 400 else sys.stdout)
    return 1 if status >= 400 else 0


# A person's own key vouches for what the person says; an agent's, for what an agent relays.
DEFAULT_CEILING = {"user": "user_turn", "agent": "agent_turn"}


def cmd_keys(args: argparse.Namespace) -> int:
    from contextos import container
    from contextos.models import Provenance

    if args.action == "list":
        return cmd_keys_list(args)
    if not (args.tenant and args.name):
        print("keys create/revoke need --tenant and --name", file=sys.stderr)
        return 2
    if args.action == "revoke":
        return cmd_keys_revoke(args)

    from contextos.access import KeyScope

    scope = KeyScope(user_id=args.scope_user_id, agent_id=args.scope_agent_id, tags=tuple(args.scope_tag or ()))
    verbs = [v for part in args.verbs.split(",") for v in [part.strip()] if v] if args.verbs is not None else None
    from contextos.errors import BadRequest

    try:
        key = container.keys().create(
            args.tenant,
            args.name,
            principal=args.principal,
            provenance_ceiling=Provenance(args.ceiling or DEFAULT_CEILING[args.principal]),
            verbs=verbs,
            scope=scope,
        )
    except BadRequest as exc:
        print(exc.message, file=sys.stderr)
        return 2
    print(key)
    return 0


def cmd_erase(args: argparse.Namespace) -> int:
    """``erase user ID`` / ``erase tenant --confirm T`` through the API (the key needs ``erase``)."""
    target = ApiTarget(args)
    try:
        if args.what == "user":
            status, body = target.client.call("POST", "/v1/erasure/user", {"user_id": args.id})
        else:
            status, body = target.client.call("POST", "/v1/erasure/tenant", {"confirm": args.confirm or ""})
    finally:
        target.close()
    print(json.dumps(body, indent=2), file=sys.stderr if status >= 400 else sys.stdout)
    return 1 if status >= 400 else 0


def cmd_audit_verify(args: argparse.Namespace) -> int:
    """Recompute every tenant's audit hash chain; exit 1 when any entry was edited, deleted,
    re-ordered or inserted."""
    from contextos import container

    reports = container.governance().verify_all(args.tenant or None)
    for report in reports:
        print(report.model_dump_json())
        if not report.ok:
            for problem in report.problems:
                where = f"{report.tenant_id}: entry {problem.chain_seq}"
                print(f"  {where}: {problem.kind}: {problem.detail}", file=sys.stderr)
    broken = [r.tenant_id for r in reports if not r.ok]
    print(
        f"{len(reports)} tenant chain(s) checked, {sum(r.entries for r in reports)} entries; "
        + (f"BROKEN: {', '.join(broken)}" if broken else "all intact"),
        file=sys.stderr,
    )
    return 1 if broken else 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from contextos.store.bootstrap import migrate_from_settings

    print(json.dumps({"applied": migrate_from_settings()}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="contextos", description="ContextOS: governed, decaying memory for agents")
    sub = parser.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="run the local stack (embedded PostgreSQL, moto, API, pollers)")
    dev.add_argument("--port", type=int, default=8787)
    dev.add_argument("--moto-port", type=int, default=0)
    dev.add_argument("--no-mcp", action="store_true", help="do not serve MCP (streamable HTTP) at /mcp")
    dev.add_argument("--lifecycle-every", type=float, default=4 * 3600, help="seconds between lifecycle scans")
    dev.add_argument(
        "--sweep-every", type=float, default=None, help="seconds between session sweeps (default: 300, as deployed)"
    )
    dev.set_defaults(func=cmd_dev)

    def api_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--api",
            "--api-url",
            dest="api",
            help="API base URL (default: the running `contextos dev`, else in-process)",
        )
        p.add_argument("--key", "--api-key", dest="key", help="API key (default: the local stack's dev key)")

    ingest = sub.add_parser("ingest", help="ingest a file and wait for its memories")
    ingest.add_argument("file")
    ingest.add_argument("--timeout", type=float, default=300)
    api_flags(ingest)
    ingest.set_defaults(func=cmd_ingest)

    query = sub.add_parser("query", help="get a context block for a query")
    query.add_argument("query")
    query.add_argument("--dry-run", action="store_true")
    query.add_argument("--format", choices=["markdown", "json", "plain"], default="markdown")
    query.add_argument("--max-memories", type=int)
    query.add_argument("--json", action="store_true", help="print the whole result with score breakdowns")
    scope_flags(query)
    api_flags(query)
    query.set_defaults(func=cmd_query)

    lifecycle = sub.add_parser("lifecycle", help="lifecycle jobs")
    lifecycle_sub = lifecycle.add_subparsers(dest="action", required=True)
    run = lifecycle_sub.add_parser("run", help="run the lifecycle scan now")
    run.add_argument("--tenant", action="append", help="scan only this tenant (repeatable), e.g. one a scan failed")
    run.set_defaults(func=cmd_lifecycle)

    report = sub.add_parser("report", help="health score, governance report, or run the governance job now")
    report.add_argument("kind", choices=["health", "governance", "run"])
    api_flags(report)
    report.set_defaults(func=cmd_report)

    keys = sub.add_parser("keys", help="create (default), list or revoke API keys")
    register_keys(keys)
    keys.add_argument("--tenant", help="the key's tenant (create, revoke; list: only this tenant)")
    keys.add_argument("--name", help="the key's name (create, revoke)")
    keys.add_argument("--principal", choices=["agent", "user"], default="agent")
    keys.add_argument(
        "--ceiling",
        help="highest provenance this key may claim (default: user_turn for a user, agent_turn for an agent)",
    )
    keys.add_argument("--verbs", help="comma-separated verbs this key may use (default: its principal's; README)")
    keys.add_argument("--scope-user-id", help="confine the key to this user_id (writes carry it, reads see only it)")
    keys.add_argument("--scope-agent-id", help="confine the key to this agent_id")
    keys.add_argument("--scope-tag", action="append", help="confine the key to memories with this tag (repeatable)")
    keys.set_defaults(func=cmd_keys)

    erase = sub.add_parser("erase", help="erase a user scope or the whole tenant (cannot be undone)")
    erase.add_argument("what", choices=["user", "tenant"])
    erase.add_argument("id", nargs="?", help="the user_id to erase (erase user)")
    erase.add_argument("--confirm", help="erase tenant: repeat the tenant id")
    api_flags(erase)
    erase.set_defaults(func=cmd_erase)

    audit = sub.add_parser("audit", help="the audit log")
    audit_sub = audit.add_subparsers(dest="action", required=True)
    verify = audit_sub.add_parser("verify", help="check each tenant's hash chain for edited, deleted or moved entries")
    verify.add_argument("--tenant", action="append", help="only this tenant (repeatable)")
    verify.set_defaults(func=cmd_audit_verify)

    migrate = sub.add_parser("migrate", help="apply database migrations")
    migrate.set_defaults(func=cmd_migrate)

    from contextos.cli_workspace import register as register_workspace

    register_workspace(sub, api_flags, ApiTarget)

    from contextos.cli_chats import register as register_chats
    from contextos.hooks import register as register_hooks

    register_hooks(sub, api_flags)
    register_chats(sub, api_flags, sdk_target)
    register(sub, api_flags)
    return parser


def main(argv: list[str] | None = None) -> int:
    _logs_to_stderr()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ApiUnreachable as exc:
        print(f"contextos: {exc}", file=sys.stderr)
        return 3


def _logs_to_stderr() -> None:
    """Standard output carries a verb's answer (a key, a block, MCP's JSON-RPC): logs go to stderr."""
    import logging

    from contextos.observability import logger

    handler = logger.registered_handler
    if isinstance(handler, logging.StreamHandler) and not isinstance(handler.stream, _CurrentStderr):
        handler.setStream(_CurrentStderr())


class _CurrentStderr:
    """Whatever ``sys.stderr`` is at the time of writing (it is replaced under test runners)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
