"""FastMath (compiler/transform/passes/fast_math.py) in relay.build's pipeline, from the
CLI, and the fast ops it introduces, compiled and interpreted, against numpy.

Ported from TVM's tests/python/relay/test_pass_fast_math.py: the rewrites themselves are
golden cases (tests/passes/fast_math/); here is the part that runs relay.build
(`PassContext(opt_level=3, required_pass=["FastMath"])`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaylens.compiler.build import (NOT_IMPLEMENTED, RELAY_BUILD_PIPELINE, build_text, make_pipeline,
                                      relay_build_passes)
from relaylens.compiler.check import check_text
from relaylens.compiler.cli import main
from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext

HEADER = '#[version = "0.0.5"]\n'


def _unary(op: str, shape: str = "(1, 16, 16, 16)") -> str:
    return HEADER + f"def @main(%x: Tensor[{shape}, float32]) {{\n  {op}(%x)\n}}\n"


CASES = [("exp", "fast_exp"), ("tanh", "fast_tanh"), ("erf", "fast_erf")]


def test_fast_math_is_in_the_pipeline_where_tvm_runs_it():
    """GetPassPrefix: ... SimplifyExprPostAlterOp, FastMath, FoldConstant."""
    at = RELAY_BUILD_PIPELINE.index("FastMath")
    assert RELAY_BUILD_PIPELINE[at + 1] == "FoldConstant"
    assert "SimplifyExprPostAlterOp" in RELAY_BUILD_PIPELINE[:at]
    assert "FastMath" not in NOT_IMPLEMENTED
    assert "FastMath" not in relay_build_passes(3) and "FastMath" in relay_build_passes(4)


@pytest.mark.parametrize("op, fast", CASES)
def test_relay_build_with_fast_math_required(op, fast):
    """test_exp / test_tanh / test_erf: relay.optimize with required_pass=["FastMath"]."""
    mod = check_text(_unary(op), "m.relay").module
    with PassContext(opt_level=3, required_pass=("FastMath",)):
        out = make_pipeline()(mod)
    assert f"{fast}(" in print_module(out)


def test_relay_build_softmax_with_fast_math_required():
    mod = check_text(_unary("nn.softmax", "(1, 16)"), "m.relay").module
    with PassContext(opt_level=3, required_pass=("FastMath",)):
        out = make_pipeline()(mod)
    assert "nn.fast_softmax(" in print_module(out)


@pytest.mark.parametrize("opt_level, fast", [(3, False), (4, True)])
def test_only_opt_level_4_builds_run_it(opt_level, fast):
    result = build_text(_unary("exp"), "m.relay", opt_level=opt_level)
    assert result.ok
    assert ("FastMath" in [s.pass_name for s in result.snapshots]) is fast
    assert ("fast_exp(" in print_module(result.module)) is fast


def test_cli_build_passes_fast_math(tmp_path, capsys):
    path = tmp_path / "m.relay"
    path.write_text(_unary("tanh"))
    status = main(["build", str(path), "--passes", "FastMath"])
    out = capsys.readouterr().out
    assert status == 0
    assert "fast_tanh(%x)" in out and "tanh(%x)" not in out.replace("fast_tanh", "")


def test_cli_build_at_opt_level_4_runs_it(tmp_path, capsys):
    path = tmp_path / "m.relay"
    path.write_text(_unary("erf"))
    assert main(["build", str(path), "--opt-level", "4"]) == 0
    assert "fast_erf(" in capsys.readouterr().out


# --------------------------------------------------------------------------- the fast ops, run

_erf = np.vectorize(math.erf, otypes=[np.float64])
CHAIN = HEADER + """def @main(%x: Tensor[(4, 256), float32]) {
  %0 = exp(%x);
  %1 = tanh(%x);
  %2 = erf(%x);
  %3 = nn.softmax(%x, axis=1);
  (%0, %1, %2, %3)
}
"""


def _exact(x: np.ndarray) -> list[np.ndarray]:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return [np.exp(x), np.tanh(x), _erf(x), e / e.sum(axis=1, keepdims=True)]


@pytest.fixture(scope="module")
def built():
    result = compile(CHAIN, "chain.relay", opt_level=4)
    assert result.ok, [d.message for d in result.diagnostics]
    text = print_module(result.module)
    for fast in ("fast_exp(", "fast_tanh(", "fast_erf(", "nn.fast_softmax("):
        assert fast in text
    return result


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.uniform(-10, 10, (4, 256)).astype(np.float32)
    x[0, :8] = [0.0, -0.0, 1e-30, -1e-30, 80.0, -80.0, 4.5, -9.5]
    return x


def test_fast_ops_compiled_within_their_bounds(built):
    x = _inputs()
    got = built.executable.run(x)
    for name, g, want, rtol in zip(("exp", "tanh", "erf", "softmax"), got, _exact(x), (5e-6, 4e-7, 4e-7, 2e-5)):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-37, err_msg=name)
    assert np.signbit(got[1][0, 1]) and np.signbit(got[2][0, 1])  # tanh(-0) and erf(-0) are -0


def test_fast_ops_interpreted_are_the_exact_functions(built):
    x = _inputs()
    got = Interpreter(built.module).call("main", [x])
    with np.errstate(over="ignore"):
        for g, want in zip(got, _exact(x)):
            np.testing.assert_allclose(np.asarray(g), want.astype(np.float32), rtol=1e-5, atol=1e-37)  # float32 steps


@pytest.mark.parametrize("dtype, rtol", [("float16", 1e-3), ("float64", 1e-13)])
def test_fast_ops_on_other_floats(dtype, rtol):
    """float16 is computed in float32; on float64 the fast ops are the exact functions,
    but for erf, which x86's Legalize computes in float32 first (as TVM does), so it is
    fast_erf's float32 approximation (4e-7 relative) there."""
    text = HEADER + f"""def @main(%x: Tensor[(64), {dtype}]) {{
  (exp(%x), tanh(%x), erf(%x), nn.softmax(%x))
}}
"""
    result = compile(text, "m.relay", opt_level=4)
    assert result.ok, [d.message for d in result.diagnostics]
    assert "fast_exp(" in print_module(result.module)
    x = np.linspace(-5, 5, 64).astype(dtype)
    wide = x.astype(np.float64)
    softmax = np.exp(wide - wide.max()) / np.exp(wide - wide.max()).sum()
    for name, got, want in zip(("exp", "tanh", "erf", "softmax"), result.executable.run(x),
                               [np.exp(wide), np.tanh(wide), _erf(wide), softmax]):
        assert got.dtype == dtype
        tolerance = 1e-6 if (name, dtype) == ("erf", "float64") else rtol
        np.testing.assert_allclose(got, want.astype(dtype), rtol=tolerance, atol=1e-300, err_msg=name)
