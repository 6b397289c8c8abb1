"""The op library, its compute rules and the ONNX converters share code only through
public names, and the op files import each other without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

COMPILER = Path(__file__).resolve().parent.parent / "compiler"
AREAS = ("ops", "lower/te/topi", "frontend/onnx")


def _imports(path: Path) -> list[ast.ImportFrom]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)]


def test_no_private_name_is_imported_across_modules():
    found = [f"{path.relative_to(COMPILER)}:{node.lineno}: {alias.name}"
             for area in AREAS for path in sorted((COMPILER / area).glob("*.py"))
             for node in _imports(path) if node.module != "__future__"
             for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (found := visit(dep, path + [dep])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_the_op_files_import_each_other_without_a_cycle():
    files = {p.stem: p for p in (COMPILER / "ops").glob("*.py") if p.stem != "__init__"}
    graph = {name: {alias.name if node.module is None else node.module.split(".")[0]
                    for node in _imports(path) if node.level == 1 for alias in node.names}
             & files.keys() - {name} for name, path in files.items()}
    assert _cycle(graph) is None


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
