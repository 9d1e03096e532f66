"""The architecture of docs/architecture.md as checked facts: layer contracts and no circles.

The contracts live in pyproject.toml (``[tool.importlinter]``); ``lint-imports`` checks them.
The module-level check below is stricter than the layers: no two modules of one package may
import each other, directly or through others, even inside one layer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_hold():
    result = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command;"
                             "lint_imports_command()"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", ["snapstate_capture", "snapstate_inspect"])
def test_no_import_circles_between_modules(package):
    graph = grimp.build_graph(package, exclude_type_checking_imports=True)
    edges = {module: {other for other in graph.find_modules_directly_imported_by(module)
                      if other.startswith(package) and other != package}
             for module in graph.modules if module != package}
    assert _cycles(edges) == []


def test_cycle_finder_finds_a_circle():
    """The check above can fail: a three-module circle is found, a module that only imports into
    it is not part of it."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
