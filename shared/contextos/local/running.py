"""Where a running ``contextos dev`` is: its state file in this folder, or the user's pointer to
the last one started, and the local tenant and key it serves. Read by the CLI, the hooks and the MCP
entry without importing the stack itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

from contextos.current_settings import get_settings

DEV_TENANT = "local"
DEV_API_KEY = "ctx_local_dev_key"


def state_file() -> Path:
    return get_settings().data_dir / "stack.json"


def stack_pointer() -> Path:
    return get_settings().local_stack_pointer


def running_stack() -> dict | None:
    """The ``contextos dev`` that is up: this folder's, else the one the user's pointer names (its
    process alive and its port accepting connections: a cheap check, run before every CLI verb)."""
    import socket
    from urllib.parse import urlsplit

    for path in (state_file(), stack_pointer()):
        try:
            state = json.loads(path.read_text())
            os.kill(int(state["pid"]), 0)
            where = urlsplit(state["api_url"])
            socket.create_connection((where.hostname, where.port or 80), timeout=2).close()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        return state
    return None
