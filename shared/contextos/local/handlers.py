"""Load the real ``functions/<name>/handler.py`` modules, as Lambda would, from the checkout."""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import contextos
from contextos.current_settings import get_settings
from contextos.local.events import LocalLambdaContext

_modules: dict[str, ModuleType] = {}
_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


def functions_dir() -> Path:
    override = os.environ.get("CONTEXTOS_FUNCTIONS_DIR")
    return Path(override) if override else Path(contextos.__file__).resolve().parents[2] / "functions"


def load_handler(name: str) -> Callable[[dict, object], dict]:
    with _guard:
        module = _modules.get(name)
        if module is None:
            path = functions_dir() / name / "handler.py"
            if not path.exists():
                raise FileNotFoundError(f"no handler at {path}: run the local stack from a checkout")
            spec = importlib.util.spec_from_file_location(f"contextos_functions_{name}", path)
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _modules[name] = module
            _locks[name] = threading.Lock()
    return module.lambda_handler


def invoke(name: str, event: dict) -> dict:
    """Invoke a function like one warm Lambda instance: one event at a time."""
    handler = load_handler(name)
    with _locks[name]:
        timeout_s = get_settings().local_server.function_timeout_s
        return handler(event, LocalLambdaContext(f"contextos-{name}", timeout_s=timeout_s))
