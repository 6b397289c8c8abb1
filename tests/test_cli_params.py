"""Weights bound as relay.build(mod, params) binds them, on the command line: `--params`,
FILE's `<stem>.npz` picked up beside it, `--no-params`, the errors of weights that do not
fit; `--config KEY=JSON` reaching the PassContext; progress on a terminal."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.cli import main
from relaylens.compiler.random_data import RULE
from relaylens.compiler.transform.passes import fuse_ops

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32]) {
  %0 = nn.dense(%x, %w, units=4);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}
"""
W_AT = (2, 40)  # where %w is declared

rng = np.random.default_rng(7)
X = rng.standard_normal((2, 8)).astype("float32")
W = rng.standard_normal((4, 8)).astype("float32")
B = rng.standard_normal(4).astype("float32")


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "net.relay"
    path.write_text(MODEL)
    return path


@pytest.fixture
def x(tmp_path: Path) -> Path:
    np.save(tmp_path / "x.npy", X)
    return tmp_path / "x.npy"


def weights(tmp_path: Path, name: str = "weights.npz", **arrays) -> Path:
    np.savez(tmp_path / name, **(arrays or {"w": W, "b": B}))
    return tmp_path / name


def signature(printed: str) -> list[str]:
    """The parameters of @main in printed text."""
    line = next(ln for ln in printed.splitlines() if ln.startswith("def @main("))
    return re.findall(r"(%\w+)(?: \{[^}]*\})?:", line)  # PlanDevices writes `%x {virtual_device=...}:`


def outputs(path: Path) -> np.ndarray:
    with np.load(path) as data:
        return data["output"]


# --- bound weights -------------------------------------------------------------------------


def test_bound_weights_leave_only_the_inputs_and_give_the_unbound_result(capsys, tmp_path, model, x):
    params = weights(tmp_path)
    bound, unbound = tmp_path / "bound.npz", tmp_path / "unbound.npz"
    status, _, err = relaylens(capsys, "run", model, "--params", params, "--input", f"x={x}", "-o", bound)
    assert (status, err) == (0, "")  # --input x alone is enough: w and b are constants now
    np.save(tmp_path / "w.npy", W)
    np.save(tmp_path / "b.npy", B)
    status, _, err = relaylens(capsys, "run", model, "--input", f"x={x}", "--input", f"w={tmp_path / 'w.npy'}",
                               "--input", f"b={tmp_path / 'b.npy'}", "-o", unbound)
    assert (status, err) == (0, "")
    np.testing.assert_allclose(outputs(bound), outputs(unbound), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs(bound), np.maximum(X @ W.T + B, 0), rtol=1e-5, atol=1e-5)

    status, _, _ = relaylens(capsys, "build", model, "--params", params, "-o", tmp_path / "out")
    graph = json.loads((tmp_path / "out" / "graph.json").read_text())
    assert status == 0  # the weights are the plan's constants p0, p1 (as TVM's graph executor has them)
    assert [graph["nodes"][i]["name"] for i in graph["arg_nodes"]] == ["x", "p0", "p1"]
    with np.load(tmp_path / "out" / "params.npz") as constants:
        assert sorted(constants.files) == ["p0", "p1"]
    status, out, _ = relaylens(capsys, "build", model, "--params", params)
    assert status == 0 and signature(out) == ["%x"]


def test_check_compares_the_bound_build_with_the_interpreter_on_the_same_weights(capsys, tmp_path, model, x):
    status, _, err = relaylens(capsys, "run", model, "--params", weights(tmp_path), "--input", f"x={x}", "--check")
    assert status == 0
    line = next(ln for ln in err.splitlines() if ln.startswith("check output:"))
    assert float(line.split("max abs error ")[1].split(",")[0]) < 1e-5
    status, out, _ = relaylens(capsys, "run", model, "--params", weights(tmp_path), "--input", f"x={x}", "--interp")
    assert status == 0 and out.startswith("output: Tensor[(2, 4), float32]")


def test_parameters_not_given_get_random_values_and_an_input_wins_over_a_weight(capsys, tmp_path, model, x):
    status, _, err = relaylens(capsys, "run", model, "--params", weights(tmp_path), "--seed", "1")
    assert status == 0
    assert err == f"relaylens: note: no inputs given; using random inputs (seed 1):\n  {RULE}\n  %x: Tensor[(2, 8), float32]\n"
    zeros = tmp_path / "zeros.npy"
    np.save(zeros, np.zeros((4, 8), "float32"))
    out = tmp_path / "out.npz"
    status, _, _ = relaylens(capsys, "run", model, "--params", weights(tmp_path), "--input", f"x={x}",
                             "--input", f"w={zeros}", "-o", out)
    assert status == 0
    np.testing.assert_allclose(outputs(out), np.maximum(np.broadcast_to(B, (2, 4)), 0), rtol=1e-6)


# --- <stem>.npz beside FILE, and --no-params --------------------------------------------------


@pytest.mark.parametrize("command", ["build", "run", "explain"])
def test_the_archive_beside_the_file_is_bound_and_said_once(capsys, tmp_path, model, x, command):
    beside = weights(tmp_path, "net.npz")
    args = {"build": ["build", model], "run": ["run", model, "--input", f"x={x}"],
            "explain": ["explain", f"{model}:3:8"]}[command]
    status, out, err = relaylens(capsys, *args)
    assert status == 0
    assert err == f"relaylens: binding 2 parameters from {beside}\n"
    status, out_without, err = relaylens(capsys, *args, "--no-params")
    if command == "run":  # %w and %b are inputs again, and missing
        assert status == 2 and "missing inputs for @main:\n  %w: Tensor[(4, 8), float32]\n  %b:" in err
    else:
        assert (status, err) == (0, "")
        assert out_without != out
    if command == "build":
        assert signature(out) == ["%x"] and signature(out_without) == ["%x", "%w", "%b"]


def test_the_archive_beside_the_file_gives_the_result_of_passing_it(capsys, tmp_path, model, x):
    weights(tmp_path, "net.npz")
    found, named = tmp_path / "found.npz", tmp_path / "named.npz"
    assert relaylens(capsys, "run", model, "--input", f"x={x}", "-o", found)[0] == 0
    assert relaylens(capsys, "run", model, "--params", tmp_path / "net.npz", "--input", f"x={x}", "-o", named)[0] == 0
    np.testing.assert_array_equal(outputs(found), outputs(named))


def test_params_and_no_params_exclude_each_other(capsys, tmp_path, model):
    status, _, err = relaylens(capsys, "build", model, "--params", weights(tmp_path), "--no-params")
    assert (status, err) == (2, "relaylens: --params and --no-params exclude each other\n")


def test_an_archive_beside_the_file_that_cannot_be_read_says_how_to_skip_it(capsys, tmp_path, model):
    (tmp_path / "net.npz").write_bytes(b"not an archive")
    status, _, err = relaylens(capsys, "build", model)
    assert status == 2 and err.startswith(f"relaylens: cannot read {tmp_path / 'net.npz'} (found beside the input; "
                                          f"--no-params ignores it)")
    assert relaylens(capsys, "build", model, "--no-params")[0] == 0


# --- weights that do not fit: diagnostics, exit 1 ---------------------------------------------


@pytest.mark.parametrize("command", ["build", "run", "run --interp", "explain"])
def test_a_weight_of_the_wrong_shape_names_parameter_shapes_and_file(capsys, tmp_path, model, command):
    params = weights(tmp_path, w=W.T.copy(), b=B)
    where = f"{model}:3:8" if command == "explain" else model
    status, out, err = relaylens(capsys, *command.split(), where, "--params", params)
    assert (status, out) == (1, "")
    assert err.startswith(f"{model}:{W_AT[0]}:{W_AT[1]}: error: parameter %w is Tensor[(4, 8), float32] "
                          f"but {params} gives Tensor[(8, 4), float32]\n")
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["build", "run"])
def test_a_weight_of_the_wrong_dtype_or_name_is_an_error(capsys, tmp_path, model, command):
    params = weights(tmp_path, w=W, b=B.astype("float64"))
    status, _, err = relaylens(capsys, command, model, "--params", params)
    assert status == 1 and f"parameter %b is Tensor[(4), float32] but {params} gives Tensor[(4), float64]" in err
    params = weights(tmp_path, "other.npz", w=W, bias=B)
    status, _, err = relaylens(capsys, command, model, "--params", params)
    assert status == 1
    assert f"{params}: 'bias' is not a parameter of @main (its parameters: %x, %w, %b)" in err


def test_errors_of_an_archive_found_beside_the_file_follow_its_announcement(capsys, tmp_path, model):
    beside = weights(tmp_path, "net.npz", w=W, bias=B)
    status, _, err = relaylens(capsys, "build", model)
    assert status == 1
    assert err.splitlines()[:2] == [f"relaylens: binding 2 parameters from {beside}",
                                    f"{model}: error: {beside}: 'bias' is not a parameter of @main "
                                    f"(its parameters: %x, %w, %b)"]


# --- --config -----------------------------------------------------------------------------------


@pytest.fixture
def seen_config(monkeypatch) -> list[dict]:
    """The PassContext config FuseOps runs under, each time it runs."""
    seen: list[dict] = []
    original = fuse_ops.FuseOps.transform_function

    def spy(self, func, mod, ctx):
        seen.append(dict(ctx.config))
        return original(self, func, mod, ctx)

    monkeypatch.setattr(fuse_ops.FuseOps, "transform_function", spy)
    return seen


@pytest.mark.parametrize("command", ["build", "run", "explain"])
def test_config_reaches_the_pass_context(capsys, tmp_path, model, seen_config, command):
    where = f"{model}:3:8" if command == "explain" else model
    layouts = '{"nn.conv2d": ["NCHW", "default"]}'
    status, _, _ = relaylens(capsys, command, where, "--no-params", "--config", "relay.FuseOps.max_depth=1",
                             "--config", f"relay.ConvertLayout.desired_layouts={layouts}")
    assert status == 0
    assert seen_config and all(c == {"relay.FuseOps.max_depth": 1,
                                     "relay.ConvertLayout.desired_layouts": {"nn.conv2d": ["NCHW", "default"]}}
                                for c in seen_config)


def test_config_changes_what_a_pass_does(capsys, model):
    status, fused, _ = relaylens(capsys, "build", model, "--no-params")
    # dense (x86: nn.contrib_dense_pack), bias_add and relu in one function; the unbound
    # weight's pack (AlterOpLayout's layout_transform) in another
    assert status == 0 and fused.count("Primitive=1") == 2
    status, alone, _ = relaylens(capsys, "build", model, "--no-params", "--config", "relay.FuseOps.max_depth=1")
    assert status == 0 and alone.count("Primitive=1") == 5  # and the bias's expand_dims, the add, relu


@pytest.mark.parametrize("spec, message", [
    ("relay.FuseOps.max_depth=one", "--config relay.FuseOps.max_depth: 'one' is not JSON"),
    ("relay.FoldConstant.max_bytes=", "--config relay.FoldConstant.max_bytes: '' is not JSON"),
    ("max_depth", "--config expects KEY=JSON, got 'max_depth'"),
    ("=3", "--config expects KEY=JSON, got '=3'"),
])
@pytest.mark.parametrize("command", ["build", "run", "explain"])
def test_bad_config_is_a_usage_error_naming_the_key(capsys, model, spec, message, command):
    where = f"{model}:3:8" if command == "explain" else model
    status, out, err = relaylens(capsys, command, where, "--config", spec)
    assert (status, out) == (2, "")
    assert err.startswith(f"relaylens: {message}") and err.count("\n") == 1


# --- progress on a terminal ----------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_shows_passes_and_kernels_then_clears(monkeypatch, model):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["build", str(model), "--no-params", "--emit", "llvm", "--config", "relay.FuseOps.max_depth=1"]) == 0
    shown = terminal.getvalue()
    assert "\r\033[Kpass FuseOps" in shown
    assert "\r\033[Klowering 0/5" in shown and "\r\033[Klowering 5/5 tvmgen_default_fused_" in shown
    assert "tvmgen_default_fused_nn_contrib_dense_pack" in shown
    assert shown.endswith("\r\033[K")
