"""`relaylens explain module.ll:LINE`: from a line of the LLVM IR that `build -o` wrote back
to the Relay expression its `!dbg` location names, then what became of that expression."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from relaylens.compiler.cli import main
from relaylens.compiler.lower.codegen.llvm_map import function_ranges, line_locations

ROOT = Path(__file__).resolve().parents[1]
MNIST = ROOT / "examples" / "mnist.relay"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("explain-ir")
    shutil.copy(MNIST, folder / "mnist.relay")
    assert main(["build", str(folder / "mnist.relay"), "-o", str(folder / "out"), "--no-params"]) == 0
    return folder


def explain(capsys, where: str) -> tuple[int, str, str]:
    code = main(["explain", where, "--no-params"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_located_line_leads_to_its_relay_expression(capsys, built):
    ir = (built / "out" / "module.ll").read_text()
    fused = next(name for name in function_ranges(ir) if name.startswith("tvmgen_default_fused_nn_contrib_conv2d_NCHWc"))
    first, last = function_ranges(ir)[fused]
    at = next(n for n in range(first, last + 1) if n in line_locations(ir))
    line, col = line_locations(ir)[at]
    code, out, err = explain(capsys, f"{built / 'out' / 'module.ll'}:{at}")
    assert code == 0, err
    head, rest = out.split("\n", 1)
    assert head == f"{built / 'out' / 'module.ll'}:{at} in @{fused} -> {built / 'mnist.relay'}:{line}:{col}"
    assert rest.startswith(f"{built / 'mnist.relay'}:{line}:{col}: ") and f"fused into: {fused}" in rest


def test_an_unlocated_line_uses_the_nearest_located_line_above(capsys, built):
    ir = (built / "out" / "module.ll").read_text()
    located = line_locations(ir)
    name, (first, last) = next((n, r) for n, r in function_ranges(ir).items() if n.startswith("tvmgen_default_fused"))
    bare = next(n for n in range(first + 1, last + 1) if n not in located and any(m in located for m in range(first, n)))
    code, out, _ = explain(capsys, f"{built / 'out' / 'module.ll'}:{bare}")
    above = max(m for m in located if first <= m < bare)
    assert code == 0 and f"(line {above}, the nearest above with a location)" in out.splitlines()[0]


def test_a_build_directory_moved_elsewhere_finds_the_relay_file_beside_it(capsys, tmp_path, monkeypatch):
    shutil.copy(MNIST, tmp_path / "mnist.relay")
    assert main(["build", str(tmp_path / "mnist.relay"), "-o", str(tmp_path / "out"), "--no-params"]) == 0
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "out", moved / "out")
    shutil.move(tmp_path / "mnist.relay", moved / "out" / "mnist.relay")  # the path in the IR is gone
    monkeypatch.chdir(tmp_path)
    ir = (moved / "out" / "module.ll").read_text()
    at = min(line_locations(ir))
    code, out, _ = explain(capsys, f"{moved / 'out' / 'module.ll'}:{at}")
    assert code == 0 and f"-> {moved / 'out' / 'mnist.relay'}:" in out.splitlines()[0]


@pytest.mark.parametrize("line, says", [(1, "is not inside a function"), (10**6, "is not inside a function")])
def test_lines_with_nothing_to_explain_are_usage_errors(capsys, built, line, says):
    code, out, err = explain(capsys, f"{built / 'out' / 'module.ll'}:{line}")
    assert code == 2 and out == "" and says in err
