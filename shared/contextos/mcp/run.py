"""``contextos mcp``: the MCP server over stdio (one caller) or streamable HTTP (a caller per
request, from its API key), against the local store or a deployed API."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import cast

from contextos.mcp.backend import ApiBackend, Backend, Caller, LocalBackend, current_caller
from contextos.mcp.server import build_server, http_app, key_identifier


def local_backend(default: Caller | None = None) -> LocalBackend:
    """The in-process services; the caller is the request's (HTTP) or ``default`` (stdio)."""

    def caller() -> Caller:
        found = current_caller.get() or default
        if found is None:
            from contextos.errors import Unauthorized

            raise Unauthorized("no caller: pass an API key")
        return found

    return LocalBackend(caller)


def stdio_caller(api_key: str | None, tenant: str | None) -> Caller:
    """Who a local stdio server acts for: the key's identity, else the named (or local dev) tenant."""
    from contextos import container
    from contextos.errors import Unauthorized
    from contextos.local.running import DEV_TENANT

    if api_key:
        caller = key_identifier(container.keys())(api_key)
        if caller is None:
            raise Unauthorized("the API key is unknown or revoked")
        return caller
    return Caller(tenant_id=tenant or DEV_TENANT, subject="mcp-stdio")


def serve(
    *,
    http_port: int | None = None,
    host: str = "127.0.0.1",
    api_url: str | None = None,
    api_key: str | None = None,
    tenant: str | None = None,
) -> None:
    if http_port is None:
        _keep_stdout_for_the_protocol()
    api_url, api_key = where_to_serve(api_url, api_key)
    backend: Backend
    if api_url:
        backend = ApiBackend(api_url, api_key)
    elif http_port is None:
        backend = local_backend(stdio_caller(api_key, tenant))
    else:
        backend = local_backend()
    if http_port is None:
        build_server(backend).run("stdio")
        return
    import uvicorn

    identify: Callable[[str], Caller | None]
    if api_url:
        # The deployed API checks each caller's key; here every request just needs to carry one.
        def identify(key: str) -> Caller | None:
            return Caller(tenant_id="remote", subject="mcp-http", api_key=key)
    else:
        from contextos import container

        identify = key_identifier(container.keys())
    uvicorn.run(http_app(backend, identify), host=host, port=http_port, log_level="warning")


class NoStack(RuntimeError):
    """Nothing to serve: no API named, no store in this folder, no running ``contextos dev``."""


def where_to_serve(api_url: str | None, api_key: str | None) -> tuple[str | None, str | None]:
    """(API URL or None for the in-process store, API key): flags, then ``CONTEXTOS_API_URL`` /
    ``CONTEXTOS_API_KEY``; with neither, this folder's store when it has one, else the running
    ``contextos dev`` wherever it was started — never a new, empty store in a folder that has none."""
    import os

    from contextos.current_settings import get_settings
    from contextos.local.running import running_stack

    api_url = api_url or os.environ.get("CONTEXTOS_API_URL") or None
    api_key = api_key or os.environ.get("CONTEXTOS_API_KEY") or None
    settings = get_settings()
    if api_url or settings.database_url or settings.database_secret_arn or (settings.data_dir / "pg").exists():
        return api_url, api_key
    state = running_stack()
    if state is None:
        raise NoStack(
            "no ContextOS to serve: start `make dev` (or `contextos dev`), or pass --api-url / set CONTEXTOS_API_URL"
        )
    return state["api_url"], api_key or state["api_key"]


def _keep_stdout_for_the_protocol() -> None:
    """Over stdio, stdout carries JSON-RPC only: logs go to stderr and no metric blob is printed."""
    import os
    import sys

    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    from contextos.observability import logger

    cast(logging.StreamHandler, logger.registered_handler).setStream(sys.stderr)
