"""The MCP streamable HTTP app the local stack mounts at ``/mcp`` on its HTTP front: agents
connect to http://127.0.0.1:<port>/mcp with the same API keys as the API."""

from __future__ import annotations

from typing import Any


def mcp_app() -> Any:
    from contextos import container
    from contextos.mcp.run import local_backend
    from contextos.mcp.server import http_app, key_identifier

    # The front strips its mount prefix, so the app answers at its own root.
    return http_app(local_backend(), key_identifier(container.keys()), path="/")
