"""A row total of vector lanes (codegen/lane_total.py): combined by halves, not as a chain."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.lower.codegen.lane_total import tree_plan
from relaylens.compiler.lower.codegen.llvm import generate
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.te import expr as te

ROWS, LANES = 5, 16


@pytest.fixture(scope="module")
def jit():
    return JIT(num_threads=1)


def _total(name: str, op: str, identity: float, lanes: int = LANES, kind: str = "unrolled"):
    """`out[r] = identity; for k in <kind>(lanes): out[r] = out[r] op part[r * lanes + k]`."""
    part, out = te.Buffer("part", (ROWS * lanes,), "float32"), te.Buffer("out", (ROWS,), "float32")
    r, k = te.Var("r"), te.Var("k")
    acc = te.BufferLoad(out, r, "float32")
    value = te.BufferLoad(part, r * lanes + k, "float32")
    combined = acc + value if op == "add" else te.Binary(op, acc, value, "float32")
    inner = ln.For(k, lanes, ln.Store(out, r, combined), kind)
    body = ln.For(r, ROWS, ln.Seq((ln.Store(out, r, te.const(identity, "float32")), inner)))
    return ln.PrimFunc(name, (part, out), body), inner


def test_only_an_unrolled_total_of_consecutive_lanes_is_a_tree():
    assert tree_plan(_total("t", "add", 0.0)[1]) is not None
    assert tree_plan(_total("t", "max", -np.inf)[1]) is not None
    assert tree_plan(_total("t", "add", 0.0, lanes=12)[1]) is None  # not a power of two
    assert tree_plan(_total("t", "add", 0.0, lanes=2)[1]) is None  # too few to gain
    out, part = te.Buffer("o", (4,), "float32"), te.Buffer("p", (64,), "float32")
    k = te.Var("k")
    strided = ln.For(k, 16, ln.Store(out, te.const(0, "int64"), te.BufferLoad(out, te.const(0, "int64"), "float32")
                                     + te.BufferLoad(part, k * 4, "float32")), "unrolled")
    assert tree_plan(strided) is None
    product = ln.For(k, 16, ln.Store(out, te.const(0, "int64"), te.BufferLoad(out, te.const(0, "int64"), "float32")
                                     + te.BufferLoad(part, k, "float32") * 2.0), "unrolled")
    assert tree_plan(product) is None  # a multiply-add chain (a convolution's) keeps its order and FMAs


def test_a_sum_adds_by_halves(jit):
    """Lanes 0 and 8 cancel (2^24 and -2^24), the other fourteen are 1: by halves the total
    is exactly 14; a chain would lose the ones added to 2^24 and give 7."""
    func, _ = _total("sum_lanes", "add", 0.0)
    lanes = np.ones((ROWS, LANES), np.float32)
    lanes[:, 0], lanes[:, 8] = 2.0 ** 24, -(2.0 ** 24)
    got = jit.compile([func], "t.relay")["sum_lanes"](lanes.ravel())
    np.testing.assert_array_equal(got, np.full(ROWS, 14.0, np.float32))


def test_a_max_total_is_the_max_and_propagates_nan(jit):
    func, _ = _total("max_lanes", "max", -np.inf)
    rng = np.random.default_rng(4)
    lanes = rng.standard_normal((ROWS, LANES)).astype(np.float32)
    lanes[1, 13] = np.nan
    lanes[2, :] = -np.inf
    got = jit.compile([func], "t.relay")["max_lanes"](lanes.ravel())
    np.testing.assert_array_equal(got, lanes.max(axis=1))


def test_a_max_nnan_total_is_a_tree_of_single_maxps(jit):
    """Softmax's row maximum (te.max_nnan): by halves too, each step one `maxps`, no NaN
    test."""
    func, inner = _total("max_nnan_lanes", "max_nnan", -np.inf)
    assert tree_plan(inner) is not None
    text = jit.optimize(generate([func], "t.relay"))
    assert "fcmp uno" not in text
    lanes = np.random.default_rng(5).standard_normal((ROWS, LANES)).astype(np.float32)
    lanes[2, :] = -np.inf
    got = jit.compile([func], "t.relay")["max_nnan_lanes"](lanes.ravel())
    np.testing.assert_array_equal(got, lanes.max(axis=1))
