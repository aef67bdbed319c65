"""The console's build output (``console/dist``) as a small static ASGI app for the local front.

Only files under the dist folder are served: the request path is resolved and must stay inside it,
so ``..`` or encoded escapes get 404. Content types come from ``mimetypes``; a missing build answers
a JSON error that says how to build it.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path
from urllib.parse import unquote

from contextos.local.front import Receive, Scope, Send

DEFAULT_DIST = Path(__file__).resolve().parents[3] / "console" / "dist"


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"error": {"code": code, "message": message, "details": None}}).encode()
    return status, {"content-type": "application/json"}, body


class ConsoleApp:
    def __init__(self, dist: Path | None = None) -> None:
        self.dist = (dist or DEFAULT_DIST).resolve()

    def resolve(self, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
        if method not in ("GET", "HEAD"):
            return _error(405, "method_not_allowed", "the console is read-only")
        if not (self.dist / "index.html").is_file():
            return _error(503, "console_not_built", f"the console is not built: run `make console` ({self.dist})")
        relative = unquote(path).lstrip("/") or "index.html"
        if "\x00" in relative:
            return _error(404, "not_found", "no such console file")
        if relative == "config.json" and not (self.dist / relative).is_file():
            # A deployment writes its own; locally the API is this origin, which an empty config means.
            return 200, {"content-type": "application/json", "cache-control": "no-cache"}, b"{}"
        target = (self.dist / relative).resolve()
        if not target.is_relative_to(self.dist) or not target.is_file():
            return _error(404, "not_found", "no such console file")
        content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if content_type.startswith("text/") or content_type in ("application/javascript", "text/javascript"):
            content_type += "; charset=utf-8"
        # Hashed assets never change; index.html must be re-read so a rebuild shows up.
        cache = "public, max-age=31536000, immutable" if relative.startswith("assets/") else "no-cache"
        headers = {"content-type": content_type, "cache-control": cache, "x-content-type-options": "nosniff"}
        return 200, headers, target.read_bytes()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        status, headers, body = self.resolve(scope["method"].upper(), scope["path"])
        headers["content-length"] = str(len(body))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": b"" if scope["method"].upper() == "HEAD" else body})
