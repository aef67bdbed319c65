"""The package's import graph (grimp, as import-linter reads it) has no cycle, and no module imports
another's private name: a circle means neither side can be read, tested or replaced alone."""

import ast
from pathlib import Path

import contextos
import grimp

PACKAGE = Path(contextos.__file__).parent


def import_cycles(imports: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in imports:
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(imports.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_cycle_finder_finds_a_circle_and_only_a_circle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_package_has_no_import_cycle():
    # the store is a namespace package (no __init__.py): a root of its own, as in .importlinter
    graph = grimp.build_graph("contextos", "contextos.store", include_external_packages=False)
    imports = {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    read = {
        path.relative_to(PACKAGE.parent).with_suffix("").as_posix().replace("/", ".") for path in PACKAGE.rglob("*.py")
    }
    assert {m.removesuffix(".__init__") for m in read} <= set(imports)  # every module was read
    assert [sorted(c) for c in import_cycles(imports)] == []


def test_no_module_imports_another_modules_private_name():
    private = [
        f"{path.relative_to(PACKAGE)}: {node.module}.{alias.name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("contextos")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert private == []
