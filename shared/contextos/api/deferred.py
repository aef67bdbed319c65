"""Packages whose ``__init__`` only re-exports, registered without running it.

Importing ``aws_lambda_powertools.event_handler.api_gateway`` runs ``event_handler/__init__.py``
first, which imports every resolver Powertools ships (AppSync's pulls in asyncio, Bedrock's, the
HTTP resolver's), and ``utilities/data_classes/__init__.py`` imports thirty event classes; the API
uses one resolver and one event. A deferred package is an empty module carrying the package's
spec: its submodules import as usual, and a name the ``__init__`` re-exports is resolved at first
use by importing only the submodule that defines it. Any other attribute runs the real
``__init__`` (so ``__all__``, ``import *`` and anything unforeseen behave as before).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any


def defer_package_init(name: str) -> None:
    """Register package ``name`` unexecuted, if its ``__init__`` is nothing but a docstring,
    ``from … import`` statements and ``__all__`` (otherwise, or if already imported, do nothing)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    exports = _reexports(name, Path(spec.origin))
    if exports is None:
        return
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(attr: str) -> Any:
        if attr in exports:
            source, original = exports[attr]
            value = getattr(importlib.import_module(source), original)
            setattr(module, attr, value)
            return value
        if importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")  # binds itself on the package
        # Not a re-export: behave exactly like the package, by running its __init__ once.
        module.__dict__.pop("__getattr__", None)
        loader.exec_module(module)
        return getattr(module, attr)

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module


def _reexports(package: str, init: Path) -> dict[str, tuple[str, str]] | None:
    """name → (module, name in it) for every name the ``__init__`` re-exports; None if it does more."""
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    exports: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and all(a.name != "*" for a in node.names):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            source = f"{base}.{node.module}" if node.level else node.module
            for alias in node.names:
                exports[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the docstring
        elif isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            continue
        else:
            return None
    return exports
