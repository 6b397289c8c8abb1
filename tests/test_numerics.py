"""Numerics of `relaylens run`: random data by role, NaN traced to the expression that made
it (interpreter and compiled kernels), `--check`'s comparison, and the bisection that names
the first miscompiled kernel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numerics_models import BATCH_NORM_TEXT, lstm_text, miscompiled_tanh  # noqa: F401 -- a fixture

from relaylens.compiler.check import check_text
from relaylens.compiler.cli import main
from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.numerics import bisect_kernels, compare, find_nonfinite_compiled, find_nonfinite_interpreted
from relaylens.compiler.random_data import DATA, Role, draw, find_roles


def relaylens(capsys, *args: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def bn_model(tmp_path: Path) -> Path:
    path = tmp_path / "bn.relay"
    path.write_text(BATCH_NORM_TEXT)
    return path


@pytest.fixture
def negative_variance(tmp_path: Path) -> Path:
    path = tmp_path / "neg.npz"
    np.savez(path, var=np.array([1.0, -1.0, 0.5, 2.0], "float32"))
    return path


# --- random data by role ---------------------------------------------------------------------


def test_roles_come_from_the_op_registrys_argument_names():
    module = check_text(BATCH_NORM_TEXT, "bn.relay").module
    roles = {var.name: role for var, role in find_roles(module).items()}
    assert roles["var"].name == "scale" and roles["gamma"].name == "scale"
    assert roles["mean"].name == "small" and roles["beta"].name == "small"
    assert roles["w"].name == "weight" and roles["w"].fan_in == 4
    assert "x" not in roles


def test_take_indices_stay_below_the_axis_size():
    text = ('#[version = "0.0.5"]\n'
            'def @main(%data: Tensor[(3, 5), float32], %i: Tensor[(40), int32]) { take(%data, %i, axis=1) }\n')
    module = check_text(text, "take.relay").module
    (role,) = find_roles(module).values()
    assert (role.name, role.bound) == ("index", 5)
    values = draw(np.random.default_rng(0), TensorType((1000,), "int32"), role)
    assert values.min() == 0 and values.max() == 4


def test_draws_by_role():
    rng = np.random.default_rng(0)
    ty = TensorType((4000,), "float32")
    assert draw(rng, ty, Role("scale")).min() >= 0.5
    assert abs(float(draw(rng, ty, Role("small")).std()) - 0.1) < 0.01
    assert abs(float(draw(rng, ty, Role("weight", fan_in=100)).std()) - 0.1) < 0.01
    assert abs(float(draw(rng, ty, DATA).std()) - 1.0) < 0.05
    assert draw(rng, TensorType((8,), "bool"), Role("scale")).dtype == np.bool_


def test_random_batch_norm_model_is_finite_and_the_rule_is_printed_once(capsys, bn_model):
    status, out, err = relaylens(capsys, "run", bn_model, "--interp", "-o", bn_model.with_suffix(".npz"))
    assert status == 0
    assert err.count("parameters by role") == 1
    assert "%var: Tensor[(4), float32]  scale (nn.batch_norm moving_var): uniform(0.5, 1.5)" in err
    assert "NaN" not in err
    with np.load(bn_model.with_suffix(".npz")) as data:
        assert np.isfinite(data["output"]).all()


# --- NaN traced to its source ----------------------------------------------------------------


def test_a_negative_variance_is_traced_to_its_batch_norm_line_by_the_interpreter(capsys, bn_model, negative_variance):
    status, _, err = relaylens(capsys, "run", bn_model, "--interp", "--params", negative_variance)
    assert status == 0
    assert "warning: the output holds 9 NaN though the inputs and weights are finite" in err
    assert f"{bn_model}:5:8: warning: the first non-finite value comes from nn.batch_norm here: 9 NaN" in err
    assert "  %var: " not in err  # given, not drawn


def test_a_negative_variance_is_traced_in_compiled_code(capsys, bn_model, negative_variance):
    status, _, err = relaylens(capsys, "run", bn_model, "--params", negative_variance)
    assert status == 0
    # the passes folded sqrt(var + eps) into a constant: its span is the batch_norm's
    assert f"{bn_model}:5:8: warning: the first non-finite value is a constant's" in err
    assert "in the compiled code: kernel tvmgen_default_fused_" in err and '"batch_norm' in err


def test_traced_inside_a_kernel_when_the_value_is_computed_at_run_time():
    text = BATCH_NORM_TEXT
    x = np.random.default_rng(0).standard_normal((1, 4, 3, 3)).astype("float32")
    weights = {"w": np.eye(4, dtype="float32").reshape(4, 4, 1, 1), "gamma": np.ones(4, "float32"),
               "beta": np.zeros(4, "float32"), "mean": np.zeros(4, "float32")}
    var = np.array([1.0, -1.0, 0.5, 2.0], "float32")  # an input: nothing folds it
    built = compile(text, "bn.relay", params=weights)
    origin = find_nonfinite_compiled(built, [x, var])
    # SimplifyInference wrote batch_norm as arithmetic: the rsqrt it made keeps the batch_norm's span
    assert origin.text() == "rsqrt at bn.relay:5:8"
    assert not origin.kernel_wrong and origin.kernel.display == "batch_norm" and origin.kernel.lines == "5-6"
    module = check_text(text, "bn.relay").module
    interp = find_nonfinite_interpreted(module, [x, weights["w"], weights["gamma"], weights["beta"],
                                                 weights["mean"], var])
    assert interp.text() == "nn.batch_norm at bn.relay:5:8"


def test_no_trace_when_the_inputs_hold_nan(capsys, bn_model, tmp_path):
    path = tmp_path / "x.npy"
    x = np.zeros((1, 4, 3, 3), "float32")
    x[0, 0, 0, 0] = np.nan
    np.save(path, x)
    args = [f"{name}={tmp_path / name}.npy" for name in ("w", "gamma", "beta", "mean", "var")]
    for name, value in (("w", np.ones((4, 4, 1, 1))), ("gamma", np.ones(4)), ("beta", np.zeros(4)),
                        ("mean", np.zeros(4)), ("var", np.ones(4))):
        np.save(tmp_path / f"{name}.npy", value.astype("float32"))
    status, _, err = relaylens(capsys, "run", bn_model, "--interp", "--input", f"x={path}",
                               *[a for arg in args for a in ("--input", arg)])
    assert status == 0
    assert "the inputs or weights already hold NaN" in err and "first non-finite" not in err


# --- comparing like a numerical engineer ----------------------------------------------------


def test_nan_equals_nan_at_the_same_position():
    a = np.array([1.0, np.nan, np.inf], "float32")
    assert compare(a, a.copy()).ok
    b = np.array([1.0, 2.0, np.inf], "float32")
    c = compare(a, b)
    assert not c.ok and c.worst == (1,) and np.isnan(c.got) and c.want == 2.0


def test_tolerance_per_dtype_and_the_worst_element():
    ref = np.linspace(1, 2, 10).astype("float32")
    got = ref.copy()
    got[7] += 5e-4
    c = compare(got, ref)
    assert not c.ok and c.worst == (7,) and (c.rtol, c.atol) == (1e-4, 1e-5)
    assert "worst at [7]" in c.text() and "float32 tolerance 1e-05 + 1e-04 * max|reference|" in c.text()
    assert compare(got.astype("float16"), ref.astype("float16")).ok  # 5e-4 is within float16's 1e-2
    assert not compare(np.array([1, 2], "int32"), np.array([1, 3], "int32")).ok


def test_check_of_a_function_result_says_it_is_not_compared(capsys, tmp_path):
    path = tmp_path / "f.relay"
    path.write_text('#[version = "0.0.5"]\ndef @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }\n'
                    'def @main() -> fn(Tensor[(), int32]) -> Tensor[(), int32] { @aux }\n')
    status, _, err = relaylens(capsys, "run", path, "--check")
    assert status == 0 and "check output: a function: not compared (only tensors are)" in err


def test_check_passes_when_both_sides_are_nan_at_the_same_places(capsys, bn_model, negative_variance):
    status, _, err = relaylens(capsys, "run", bn_model, "--check", "--params", negative_variance)
    assert status == 0
    assert "check output: max abs error" in err and "DIFFERS" not in err


# --- the bisection ----------------------------------------------------------------------------


def test_bisection_names_the_miscompiled_kernel(capsys, tmp_path, miscompiled_tanh):
    path = tmp_path / "lstm.relay"
    text = lstm_text(steps=3, hidden=8, features=4)
    path.write_text(text)
    status, _, err = relaylens(capsys, "run", path, "--check")
    assert status == 1
    assert "DIFFERS" in err
    line = next(ln for ln in err.splitlines() if "bisection: kernel #" in ln)
    assert "is the first whose outputs differ from the reference interpreter's on the same inputs" in line
    first_tanh = next(i + 1 for i, ln in enumerate(text.splitlines()) if "tanh(" in ln)
    assert "tanh" in line.split('"')[1]  # the display name
    relay_lines = next(ln for ln in err.splitlines() if "its Relay lines:" in ln)
    assert str(first_tanh) in relay_lines.replace("-", " ").replace(",", " ").split()


def test_bisection_api_stops_at_the_first_bad_kernel(miscompiled_tanh):
    text = lstm_text(steps=2, hidden=8, features=4)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 1, 4)).astype("float32")
    weights = {"w_ih": rng.standard_normal((32, 4)), "w_hh": rng.standard_normal((32, 8)),
               "bias": rng.standard_normal(32), "h0": np.zeros((1, 8)), "c0": np.zeros((1, 8))}
    built = compile(text, "lstm.relay", params={k: v.astype("float32") for k, v in weights.items()})
    checks = bisect_kernels(built, [x])
    assert checks and not checks[-1].ok and all(c.ok for c in checks[:-1])
    assert "tanh" in checks[-1].place.display


def test_every_kernel_of_a_correct_build_matches():
    text = lstm_text(steps=4, hidden=8, features=4)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 1, 4)).astype("float32")
    weights = {"w_ih": rng.standard_normal((32, 4)), "w_hh": rng.standard_normal((32, 8)),
               "bias": rng.standard_normal(32), "h0": np.zeros((1, 8)), "c0": np.zeros((1, 8))}
    built = compile(text, "lstm.relay", params={k: v.astype("float32") for k, v in weights.items()})
    checks = bisect_kernels(built, [x], every=True)
    assert len(checks) > 4 and all(c.ok for c in checks)
    reference = Interpreter(built.module).call("main", [x])
    assert compare(built.executable.run(x), reference).ok


def test_the_35_step_lstm_agrees_with_the_interpreter_on_random_data(capsys, tmp_path):
    """Issue 22's unrolled LSTM (35 steps, dense + sigmoid/tanh) on the random data `run`
    draws (weights scaled by fan-in): compiled code within float32 rounding of the
    interpreter, no growth over the steps (docs/cli.md, bench/numerics.py lstm)."""
    path = tmp_path / "lstm35.relay"
    path.write_text(lstm_text(steps=35, hidden=32, features=16))
    status, _, err = relaylens(capsys, "run", path, "--check")
    assert status == 0, err
    line = next(ln for ln in err.splitlines() if ln.startswith("check output:"))
    assert float(line.split("max abs error ")[1].split(",")[0]) < 1e-6


# --- the corpus -------------------------------------------------------------------------------


def _corpus():
    from conftest import corpus_names
    return corpus_names()


@pytest.mark.slow
@pytest.mark.parametrize("name", _corpus())
def test_corpus_runs_to_finite_outputs_or_names_the_source(capsys, name):
    """`run --check` on role-based random data: compiled code agrees with the interpreter,
    and the outputs are finite or a warning names where the first non-finite value came
    from.  A file that cannot run (errors in it, no @main, sizes known only at run time:
    status 1 or 2, with the error at its place) is skipped with its first error; a crash
    (status 3) fails."""
    from conftest import CORPUS

    status, out, err = relaylens(capsys, "run", CORPUS / name, "--check")
    assert status != 3, err
    if status != 0 and "DIFFERS" not in err:
        lines = err.splitlines()
        first = next((ln for ln in lines if "error:" in ln), None) or next(
            (ln for ln in lines if ln.startswith("relaylens: ") and "note:" not in ln), err)
        pytest.skip(f"{name} does not run (status {status}): {first.strip()[:160]}")
    assert "DIFFERS" not in err, err
    assert "check output" in err or "check: @main returns no tensors" in err
    nonfinite = any(word in out.replace(",", " ").replace("[", " ").replace("]", " ").split()
                    for word in ("nan", "inf", "-inf"))
    if not nonfinite:
        assert "the output holds" not in err
    else:
        assert "the output holds" in err
        assert ("the first non-finite value" in err or "already hold NaN" in err
                or "the compiled kernel gives" in err), err


def test_when_every_kernel_agrees_the_run_says_so(capsys, tmp_path, monkeypatch):
    """The output comparison is made to fail (a stand-in for rounding amplified by a
    recurrence); the bisection then finds no kernel to blame and says what is left."""
    from relaylens.compiler.numerics import check
    from relaylens.compiler.numerics.compare import Comparison

    monkeypatch.setattr(check, "compare", lambda got, want: Comparison(False, "float32", 1e-4, 1e-5, 1.0, 1.0))
    path = tmp_path / "lstm.relay"
    path.write_text(lstm_text(steps=2, hidden=8, features=4))
    status, _, err = relaylens(capsys, "run", path, "--check")
    assert status == 1 and "DIFFERS" in err
    assert "bisection: each of the" in err and "kernel calls matches the reference interpreter on its own inputs" in err
    assert "the module after the passes, interpreted, against the module as written: max abs error" in err
