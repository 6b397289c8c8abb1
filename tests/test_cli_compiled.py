"""`relaylens run` on compiled code (with `--check`), `relaylens build --emit llvm / -o DIR`, and
`relaylens explain` down to the LLVM function."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.cli import main

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2])
}
"""

DYNAMIC = """#[version = "0.0.5"]
def @main(%x: Tensor[(?, 4), float32]) {
  nn.relu(%x)
}
"""


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.relay"
    path.write_text(MODEL)
    return path


def test_compiled_run_writes_what_the_interpreter_writes(capsys, model, tmp_path):
    compiled, interpreted = tmp_path / "c.npz", tmp_path / "i.npz"
    assert relaylens(capsys, "run", model, "--seed", "3", "-o", compiled)[0] == 0
    assert relaylens(capsys, "run", model, "--seed", "3", "--interp", "-o", interpreted)[0] == 0
    with np.load(compiled) as c, np.load(interpreted) as i:
        assert c.files == i.files == ["output"]
        assert c["output"].shape == (1, 4, 4, 4)
        np.testing.assert_allclose(c["output"], i["output"], rtol=1e-5, atol=1e-6)


def test_check_reports_the_largest_error_per_output(capsys, model):
    status, _, err = relaylens(capsys, "run", model, "--check")
    assert status == 0
    line = next(ln for ln in err.splitlines() if ln.startswith("check output:"))
    abs_err = float(line.split("max abs error ")[1].split(",")[0])
    assert abs_err < 1e-5 and "DIFFERS" not in line


def test_interp_and_check_exclude_each_other(capsys, model):
    status, _, err = relaylens(capsys, "run", model, "--interp", "--check")
    assert status == 2 and "exclude each other" in err


def test_what_cannot_be_lowered_is_an_error_at_its_span(capsys, tmp_path):
    path = tmp_path / "dyn.relay"
    path.write_text(DYNAMIC)
    # built alone (`run --input` builds for the input's shape: test_cli_run.py)
    status, out, err = relaylens(capsys, "build", path, "--emit", "llvm")
    assert (status, out) == (1, "")
    assert f"{path}:2:11: error: tvmgen_default_fused_nn_relu: parameter p0:" in err and "unknown (?) dimensions" in err and "Traceback" not in err


def test_emit_llvm_prints_the_kernels_and_the_entry(capsys, model):
    status, out, _ = relaylens(capsys, "build", model, "--emit", "llvm")
    assert status == 0
    assert "define void @tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu(" in out
    assert "define void @tvmgen_default___tvm_main__(" in out
    assert "!DICompileUnit" in out and 'filename: "model.relay"' in out
    status, out, _ = relaylens(capsys, "build", model, "--emit", "schedule")
    assert status == 0 and "# step 0: create_schedule(tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu" in out


def test_build_output_directory_has_every_artefact(capsys, model, tmp_path):
    out = tmp_path / "out"
    status, stdout, err = relaylens(capsys, "build", model, "-o", out)
    assert status == 0 and stdout == ""
    names = sorted(p.name for p in out.iterdir())
    assert names == [".relaylens-build.json", "graph.json", "map.json", "module.ll", "module.opt.ll",
                     "module.relay", "params.npz", "schedules.txt"]
    graph = json.loads((out / "graph.json").read_text())
    assert [n["name"] for n in graph["nodes"] if n["op"] == "tvm_op"] == [  # AlterOpLayout's NCHW4c
        "tvmgen_default_fused_layout_transform", "tvmgen_default_fused_layout_transform_1",
        "tvmgen_default_fused_expand_dims_expand_dims_layout_transform",
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu", "tvmgen_default_fused_nn_max_pool2d",
        "tvmgen_default_fused_layout_transform_2"]
    assert [graph["nodes"][i]["name"] for i in graph["arg_nodes"]] == ["x", "w", "b"]
    mapping = json.loads((out / "map.json").read_text())
    conv = next(f for f in mapping["functions"] if "conv2d" in f["name"])
    assert conv["name"] == "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu"
    assert conv["relay"][0]["line"] == 3 and conv["relay"][0]["end_line"] == 5
    ll = (out / "module.ll").read_text().splitlines()
    first, last = conv["llvm"]["first_line"], conv["llvm"]["last_line"]
    assert ll[first - 1].startswith("define void @tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu(")
    relay_lines = {tuple(v)[0] for v in conv["llvm"]["lines"].values()}
    assert relay_lines == {3, 4, 5}  # conv2d, bias_add and relu each own some instructions
    assert all(first <= int(n) <= last for n in conv["llvm"]["lines"])


def test_build_bad_emit_is_a_usage_error(capsys, model):
    status, _, err = relaylens(capsys, "build", model, "--emit", "asm")
    assert status == 2 and "expected one of relay, llvm, llvm-opt, schedule" in err


LAYERED = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* span=/conv1/Conv:0:0 */;
  %1 = nn.bias_add(%0, %b) /* span=/conv1/Conv:0:0 */;
  %2 = nn.relu(%1) /* span=/relu1/Relu:0:0 */;
  nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]) /* span=/pool1/MaxPool:0:0 */
}
"""


def test_explain_follows_an_expression_to_its_llvm_function_and_layers(capsys, tmp_path):
    from relaylens.compiler.lower.codegen.llvm_map import line_locations

    path = tmp_path / "layered.relay"
    path.write_text(LAYERED)
    assert relaylens(capsys, "build", path, "-o", tmp_path / "out")[0] == 0
    module_ll = (tmp_path / "out" / "module.ll").read_text()
    conv = json.loads((tmp_path / "out" / "map.json").read_text())["functions"]
    conv = next(f for f in conv if "conv2d" in f["name"])
    first, last = conv["llvm"]["first_line"], conv["llvm"]["last_line"]

    status, out, _ = relaylens(capsys, "explain", f"{path}:5:8")  # the relu
    assert status == 0
    lines = out.splitlines()
    name = "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu"
    at = lines.index(f"  fused into: {name} (conv2d + bias_add + relu · /conv1/Conv)")
    assert lines[at + 1].startswith("  why: ")  # the rule FuseOps applied
    at += 1
    assert lines[at + 1] == f"  LLVM function: @{name}, module.ll lines {first}-{last}"  # as build -o wrote it
    assert module_ll.splitlines()[first - 1].startswith(f"define void @{name}(")
    count, first_own = re.fullmatch(r"    (\d+) instruction lines? compute this expression \(the first at line (\d+)\)",
                                    lines[at + 2]).groups()
    own = [n for n, loc in line_locations(module_ll).items() if loc == (5, 8)]
    assert int(count) == len(own) > 0 and int(first_own) == min(own) and first <= min(own) <= last
    assert lines[at + 3] == "    frontend layers compiled into it: /conv1/Conv, /relu1/Relu"

    dynamic = tmp_path / "dyn.relay"
    dynamic.write_text(DYNAMIC)
    status, out, _ = relaylens(capsys, "explain", f"{dynamic}:3:3")
    assert status == 0 and "  fused into: tvmgen_default_fused_nn_relu (relu)\n" in out and "\n  not lowered: " in out
    assert "unknown (?) dimensions" in out and "LLVM function" not in out


def test_explain_on_a_statements_binding_or_indentation_explains_its_value(capsys, model):
    """`explain model.relay:4:3`, on the `%1` of `%1 = nn.bias_add(...)` (or on the
    indentation, or on ` = `), explained the whole of @main: only the function holds that
    position.  It means the statement, so it explains the bound value; a position inside
    an expression still explains the innermost one, and the def line the function."""
    status, out, err = relaylens(capsys, "explain", f"{model}:4:8")
    assert status == 0, err
    value = out.splitlines()[0]
    assert value == f"{model}:4:8: nn.bias_add(%0, %b)"
    for col in (1, 3, 6):
        status, out, err = relaylens(capsys, "explain", f"{model}:4:{col}")
        assert status == 0, err
        assert out.splitlines()[0] == value
    status, out, err = relaylens(capsys, "explain", f"{model}:2:1")
    assert status == 0, err
    assert out.splitlines()[0].startswith(f"{model}:2:1: def @main(")
