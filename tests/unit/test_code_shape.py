"""The shape docs/architecture.md promises: short functions in the services and stores, service
modules of one responsibility, and one statement that writes new memories."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "contextos"
MAX_FUNCTION_LINES = 80
MAX_SERVICE_FILE_LINES = 400


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """(name, lines) of every function or method longer than ``limit`` lines."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_no_function_over_80_lines_in_services_or_stores():
    found = {
        f"{path.relative_to(PACKAGE)}:{name}": lines
        for folder in ("services", "store")
        for path in sorted((PACKAGE / folder).glob("*.py"))
        for name, lines in long_functions(path.read_text(encoding="utf-8"), MAX_FUNCTION_LINES)
    }
    assert found == {}


def test_the_length_check_sees_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}\n", MAX_FUNCTION_LINES) == [("f", MAX_FUNCTION_LINES + 1)]


def test_no_service_module_over_400_lines():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in (PACKAGE / "services").glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_SERVICE_FILE_LINES} == {}


def test_exactly_one_production_statement_inserts_memories():
    """Migrations create the table; everything else that makes a memory goes through admission."""
    statement = re.compile(r"INSERT\s+INTO\s+memories\b(?!_)", re.IGNORECASE)
    writers = [
        f"{path.relative_to(PACKAGE)}"
        for path in sorted(PACKAGE.rglob("*"))
        if path.suffix in (".py", ".sql") and "migrations" not in path.parts
        for _ in statement.finditer(path.read_text(encoding="utf-8"))
    ]
    assert writers == ["store/admission_writes.py"]
