"""The MCP streamable HTTP app served beside the local API bridge (uvicorn in a thread): agents
connect to http://127.0.0.1:<port>/mcp with the same API keys as the API."""

from __future__ import annotations

import threading
import time

from contextos.errors import TransientError


class McpHttp:
    def __init__(self, host: str = "127.0.0.1", port: int = 8788) -> None:
        import uvicorn

        from contextos import container
        from contextos.mcp.run import local_backend
        from contextos.mcp.server import http_app, key_identifier

        app = http_app(local_backend(), key_identifier(container.keys()))
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="mcp-http", daemon=True)

    @property
    def url(self) -> str:
        sockets = [s for server in self.server.servers for s in server.sockets]
        host, port = sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/mcp"

    def start(self, timeout_s: float = 20.0) -> McpHttp:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise TransientError("the MCP HTTP server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
