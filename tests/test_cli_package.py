"""The shape of compiler/cli/: one module per subcommand, none importing another's, the
shared modules importing no subcommand, and nothing outside the CLI importing it (the ONNX
frontend least of all)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from relaylens.compiler import cli

COMPILER = Path(cli.__file__).resolve().parents[1]
CLI = COMPILER / "cli"
SUBCOMMANDS = set(cli.SUBCOMMANDS)


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, as an absolute dotted name under `relaylens.compiler`
    (relative imports resolved; `from . import x` counts as importing the module `x`)."""
    package = ["relaylens", "compiler", *path.relative_to(COMPILER).with_suffix("").parts]
    package.pop()  # the module itself, or __init__: what is left is the package relative imports start from
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def test_the_subcommands_are_the_commands_of_the_parser():
    commands = next(a for a in cli.build_parser()._actions if a.dest == "command")
    assert set(commands.choices) == {"check", "print", "run", "profile", "build", "explain", "import", "serve", "cache", "graph"}
    assert {c if c not in ("print", "import") else c + "_" for c in commands.choices} == SUBCOMMANDS


def test_a_command_line_imports_its_command_alone():
    code = ("import json, sys; from relaylens.compiler.cli import main; main(['cache', '--info']); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('relaylens.compiler.cli.'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert [m for m in imported if m.rsplit(".", 1)[1] in SUBCOMMANDS] == ["relaylens.compiler.cli.cache"]


@pytest.mark.parametrize("path", sorted(p for p in CLI.glob("*.py") if p.name != "__init__.py"), ids=lambda p: p.name)
def test_no_cli_module_imports_a_subcommand_module(path):
    own = path.stem
    others = {f"relaylens.compiler.cli.{name}" for name in SUBCOMMANDS - {own}}
    assert "relaylens.compiler.cli" not in imported_modules(path)  # the package: main and every subcommand
    assert not imported_modules(path) & others


def test_nothing_outside_the_cli_imports_it():
    users = [str(p.relative_to(COMPILER)) for p in COMPILER.rglob("*.py")
             if CLI not in p.parents and p.name != "__main__.py"
             and any(m == "relaylens.compiler.cli" or m.startswith("relaylens.compiler.cli.")
                     for m in imported_modules(p))]
    assert users == []


def test_the_onnx_frontend_does_not_load_the_cli():
    pytest.importorskip("onnx")
    code = ("import sys, relaylens.compiler.frontend.onnx as f; f.import_onnx; f.load_model_with_files; "
            "print(sorted(m for m in sys.modules if m.startswith('relaylens.compiler.cli')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
