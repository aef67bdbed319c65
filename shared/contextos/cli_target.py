"""The API a CLI verb talks to: ``--api``/``--key``, else a running ``contextos dev``, else an
in-process stack; and the small JSON client it talks through."""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from typing import Any


class ApiUnreachable(Exception):
    """No answer from the API's address (refused, unknown host, timed out)."""

    def __init__(self, url: str, reason: object) -> None:
        super().__init__(f"cannot reach the API at {url}: {reason}")


class ApiClient:
    """A small JSON client for a ContextOS API: the local stack or a deployed one."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url.rstrip("/"), key

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")
        except (urllib.error.URLError, OSError) as exc:
            raise ApiUnreachable(self.url, getattr(exc, "reason", exc)) from exc


def _running_stack() -> dict | None:
    from contextos.local.running import running_stack

    return running_stack()


class ApiTarget:
    """The API to talk to: --api/--key, else a running ``contextos dev``, else an in-process stack."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.stack = None
        if args.api:
            self.client = ApiClient(args.api, args.key or "")
            return
        state = _running_stack()
        if state is None:
            from contextos.local.stack import LocalStack

            self.stack = LocalStack(api_port=0, poll_wait_s=0).start()
            state = self.stack.state()
        self.client = ApiClient(state["api_url"], args.key or state["api_key"])

    def close(self) -> None:
        if self.stack:
            self.stack.stop()
