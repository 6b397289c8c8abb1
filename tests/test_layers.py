"""The structure of the code, checked: the layers of docs/architecture.md (import-linter,
contracts in pyproject.toml), and no import hidden inside a function unless it is a
deliberate lazy load that says so in a comment (on its line, or above its group of
imports)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("compiler", "server")


def test_the_layers_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    result = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def imports_inside_functions(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every import inside a function of `path` with no comment saying why."""
    lines = path.read_text().splitlines()
    found = []
    for fn in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not _explained(lines, node.lineno - 1):
                found.append((node.lineno, lines[node.lineno - 1].strip()))
    return found


def _explained(lines: list[str], i: int) -> bool:
    if "#" in lines[i]:
        return True
    while i > 0 and lines[i - 1].strip().startswith(("from ", "import ")):
        i -= 1  # a group of imports shares the comment above it
    return i > 0 and "#" in lines[i - 1]  # a comment line, or `try:  # why`


def test_no_import_hides_inside_a_function():
    hidden = [f"{path.relative_to(ROOT)}:{line}: {text}"
              for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
              for line, text in imports_inside_functions(path)]
    assert not hidden, "imports inside functions without a comment saying why:\n" + "\n".join(hidden)


def test_the_check_finds_a_hidden_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    import json\n    return json\n\n\ndef g():\n"
                      "    # lazy: numpy only when asked\n    import numpy\n    import math\n    return numpy, math\n")
    assert imports_inside_functions(sample) == [(2, "import json")]
