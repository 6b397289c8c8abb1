"""`pip install .` and `pip install -e .` both work in a fresh virtual environment.

Each test builds a plain venv (no system site-packages) in a temporary directory, installs
a copy of this checkout (dependencies come from the package index), and then, from a directory
outside the checkout, runs the console script, imports both packages and finds the grammar
as package data.  Slow (it downloads and installs lark and numpy); CI runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "mnist.relay"

pytestmark = pytest.mark.slow

# Left out of the copy: local state that a build must not see or pollute.
IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
    ".hypothesis", "node_modules", "out",
)

CHECK_IMPORTS = """
import importlib.resources, sys
import relaylens.compiler, relaylens.server
grammar = importlib.resources.files("relaylens.grammar").joinpath("relay.lark")
assert grammar.is_file(), grammar
print(relaylens.compiler.__file__)
"""


def clean_env() -> dict[str, str]:
    """The environment without any trace of the venv that runs the tests."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def sh(*cmd: str | Path, cwd: Path, stdin: bytes | None = None) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=clean_env(), input=stdin,
                          capture_output=True, timeout=900)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
        f"{proc.stdout.decode(errors='replace')}\n{proc.stderr.decode(errors='replace')}"
    )
    return proc.stdout.decode()


def install(tmp_path: Path, *pip_args: str) -> tuple[Path, Path]:
    """A fresh venv with a copy of the checkout installed; returns (bin dir, copy)."""
    copy = tmp_path / "src" / "relaylens"
    shutil.copytree(REPO, copy, ignore=IGNORE)
    venv = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    bindir = venv / "bin"
    sh(bindir / "python", "-m", "pip", "install", "--quiet", *pip_args, copy, cwd=tmp_path)
    return bindir, copy


def check_installed(bindir: Path, cwd: Path) -> str:
    out = sh(bindir / "relaylens", "--help", cwd=cwd)
    assert "usage: relaylens" in out
    sh(bindir / "relaylens", "check", "-", cwd=cwd, stdin=EXAMPLE.read_bytes())
    return sh(bindir / "python", "-c", CHECK_IMPORTS, cwd=cwd).strip()


def test_pip_install(tmp_path):
    bindir, copy = install(tmp_path)
    where = Path(check_installed(bindir, cwd=tmp_path))
    assert "site-packages" in where.parts, where  # a real install, not the source tree


def test_pip_install_editable(tmp_path):
    bindir, copy = install(tmp_path, "-e")
    where = Path(check_installed(bindir, cwd=tmp_path))
    assert where.resolve() == (copy / "compiler" / "__init__.py").resolve()  # imports come from the source tree
