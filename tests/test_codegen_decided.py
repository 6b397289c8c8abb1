"""Guards the loops' bounds decide are answered at code generation (codegen/decided.py):
a padded max pool's loads need a branch only where the window may reach the padding, and
its values are the same as the reference's."""

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.codegen.decided import decided
from relaylens.compiler.lower.te import expr as te

POOL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 32, 32, 16), float32]) {
  nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], layout="NCHW16c")
}"""


def test_a_padded_max_pool_branches_only_where_the_window_may_reach_the_padding():
    result = compile(POOL, "pool.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    guarded = sum(line.startswith("select.then") for line in fn.llvm_ir.splitlines())
    # a tile of 8 output columns x 3 x 3 window positions, 72 guarded loads: a branch is
    # left only where the index bounds allow the padding (the window's top row, the first
    # column's left edge), none where they rule it out
    assert guarded == 30, guarded
    x = np.random.default_rng(1).standard_normal((1, 2, 32, 32, 16)).astype("float32")
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    want = np.max([padded[:, :, i:i + 31:2, j:j + 31:2] for i in range(3) for j in range(3)], axis=0)
    np.testing.assert_array_equal(result.executable.run(x), want)


class _Bounds:
    """A stand-in emitter: each variable's range, constants exact (llvm.py `affine`)."""

    def __init__(self, ranges):
        self.ranges = ranges

    def affine(self, e):
        if isinstance(e, te.Const):
            return None, int(e.value), 0, 0
        low, high = self.ranges[e.name]
        return object(), 0, low, high


@pytest.mark.parametrize("op, want", [("lt", True), ("le", True), ("gt", False), ("ge", False),
                                      ("eq", False), ("ne", True)])
def test_a_comparison_of_disjoint_ranges_is_decided(op, want):
    em = _Bounds({"i": (0, 6)})
    assert decided(em, te.binary(op, te.Var("i"), te.const(7, te.INDEX))) is want
    assert decided(em, te.binary(op, te.Var("i"), te.const(3, te.INDEX))) is None
