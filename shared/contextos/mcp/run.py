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
    from contextos.local.stack import DEV_TENANT

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


def _keep_stdout_for_the_protocol() -> None:
    """Over stdio, stdout carries JSON-RPC only: logs go to stderr and no metric blob is printed."""
    import os
    import sys

    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    from contextos.observability import logger

    cast(logging.StreamHandler, logger.registered_handler).setStream(sys.stderr)
