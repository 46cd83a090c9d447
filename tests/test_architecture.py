"""Architecture rules, checked on the source's syntax trees (nothing is imported, stdlib only).

1. The run-time imports between robotlab modules form a DAG. Every ``import``
   counts, lazy ones inside functions too; only those under ``if TYPE_CHECKING:``
   do not. ``from pkg import name`` imports the submodule ``pkg.name`` when there
   is one, else ``pkg`` itself: so a submodule that imports its package's face
   while that face imports the submodule is a cycle as well.
2. No class is over 350 lines and no function over 60.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from itertools import pairwise
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "robotlab"
MAX_LINES = {"class": 350, "function": 60}


@functools.cache
def modules() -> dict[str, tuple[Path, ast.Module]]:
    """Each module of robotlab by dotted name (a package by its own name): its file and syntax tree."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = (path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


@functools.cache
def module_names() -> frozenset[str]:
    """Every importable robotlab module, compiled extensions included (they import nothing of ours)."""
    extensions = {
        ".".join((*path.relative_to(PACKAGE.parent).parent.parts, path.name.partition(".")[0]))
        for suffix in EXTENSION_SUFFIXES
        for path in PACKAGE.rglob(f"*{suffix}")
    }
    return frozenset(modules()) | extensions


def runtime_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements anywhere under *node*, except in the body of an ``if TYPE_CHECKING:``."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    children = node.orelse if is_type_checking(node) else ast.iter_child_nodes(node)
    for child in children:
        yield from runtime_imports(child)


def is_type_checking(node: ast.AST) -> bool:
    """Whether *node* is ``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(module: str, statement: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules *statement*, in *module*, imports."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    base = statement.module or ""
    if statement.level:
        is_package = modules()[module][0].name == "__init__.py"
        anchor = module if is_package else module.rpartition(".")[0]
        for _ in range(statement.level - 1):
            anchor = anchor.rpartition(".")[0]
        base = f"{anchor}.{base}" if base else anchor
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in module_names() else base for a in statement.names]


@functools.cache
def import_graph() -> dict[str, dict[str, int]]:
    """module -> {robotlab module it imports at run time: line of the first such import}."""
    graph: dict[str, dict[str, int]] = {}
    for name, (_, tree) in modules().items():
        edges = graph.setdefault(name, {})
        for statement in runtime_imports(tree):
            for target in imported(name, statement):
                if target != name and (target == "robotlab" or target.startswith("robotlab.")):
                    edges.setdefault(target, statement.lineno)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of modules that reach each other, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = [stack.pop()]
            while group[-1] != node:
                group.append(stack.pop())
            on_stack.difference_update(group)
            groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted((g for g in groups if len(g) > 1), key=lambda g: (-len(g), g))


def cycles(graph: dict[str, dict[str, int]], group: list[str]) -> Iterator[list[str]]:
    """Each simple cycle within *group*, once, starting at its alphabetically first module."""
    for i, start in enumerate(group):
        allowed = set(group[i:])

        def walk(path: list[str], start: str = start, allowed: set[str] = allowed) -> Iterator[list[str]]:
            for target in sorted(graph.get(path[-1], ())):
                if target == start:
                    yield [*path, start]
                elif target in allowed and target not in path:
                    yield from walk([*path, target])

        yield from walk([start])


def where(graph: dict[str, dict[str, int]], chain: list[str]) -> str:
    """The file and line of each import along *chain*."""
    return ", ".join(f"{modules()[a][0].relative_to(PACKAGE.parent)}:{graph[a][b]}" for a, b in pairwise(chain))


def test_runtime_imports_form_a_dag():
    graph = import_graph()
    assert graph.get("robotlab.robot"), "the source was not found or not read"
    lines = []
    for group in strongly_connected(graph):
        for chain in cycles(graph, group):
            lines.append(f"  {' -> '.join(chain)}   ({where(graph, chain)})")
    if lines:  # raised, not asserted: pytest would print the list a second time
        raise AssertionError(f"{len(lines)} import cycle(s) between robotlab modules:\n" + "\n".join(lines))


def sizes(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, str, int, int]]:
    """(kind, qualified name, first line, length in lines) of each class and function under *node*."""
    for child in ast.iter_child_nodes(node):
        name = prefix
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            kind = "class" if isinstance(child, ast.ClassDef) else "function"
            yield kind, name, child.lineno, child.end_lineno - child.lineno + 1
            name += "."
        yield from sizes(child, name)


def test_no_class_over_350_lines_and_no_function_over_60():
    too_long = []
    for path, tree in modules().values():
        for kind, name, line, length in sizes(tree):
            limit = MAX_LINES[kind]
            if length > limit:
                too_long.append(f"  {path.relative_to(PACKAGE.parent)}:{line}: {kind} {name} is {length} lines"
                                f" (at most {limit})")
    if too_long:
        raise AssertionError("too long (split by concern):\n" + "\n".join(too_long))
