"""A layout whose sub-axis repeats (OHWI16i64o2i: I split by 16, then by 2), which TVM
v0.16's Layout accepts (src/tir/ir/data_layout.cc): the index rule, the factor, the
layouts still refused, and the compiled layout_transform and conv2d against the
interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ops import AttrError, get_op
from relaylens.compiler.ops.conv_geometry import parse_layout
from relaylens.compiler.ops.transform_geometry import Layout
from relaylens.compiler.transform.layouts import LayoutError, parse


def test_the_index_rule_is_tvms_outer_block_first():
    shape = (128, 64, 3, 3)
    i_index = np.broadcast_to(np.arange(64).reshape(1, 64, 1, 1), shape).astype(np.float32)
    o_index = np.broadcast_to(np.arange(128).reshape(128, 1, 1, 1), shape).astype(np.float32)
    lt = get_op("layout_transform")
    attrs = {"src_layout": "OIHW", "dst_layout": "OHWI16i64o2i"}
    y, z = lt.evaluate([i_index], attrs), lt.evaluate([o_index], attrs)
    assert y.shape == (2, 3, 3, 2, 16, 64, 2)
    outer_o, _, _, outer_i, i1, o, i2 = np.indices(y.shape)
    np.testing.assert_array_equal(y, (outer_i * 16 + i1) * 2 + i2)  # TVM's GetStoreRule
    np.testing.assert_array_equal(z, outer_o * 64 + o)
    back = lt.evaluate([y], {"src_layout": "OHWI16i64o2i", "dst_layout": "OIHW"})
    np.testing.assert_array_equal(back, i_index)


def test_the_factor_is_the_product_and_a_primal_axis_twice_is_still_no_layout():
    assert parse("OHWI16i64o2i").factor_of("I") == 32 and parse("OHWI16i64o2i").factor_of("O") == 64
    assert parse_layout("OHWI16i64o2i", "OIHW").factor("I") == 32
    with pytest.raises(LayoutError):
        parse("NCHWN")
    with pytest.raises(AttrError, match="each upper-case axis once"):
        Layout("layout_transform", "NCHWC", "dst_layout")

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 64, 5, 5), float32], %weight: Tensor[(128, 64, 3, 3), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
  %1 = layout_transform(%weight, src_layout="OIHW", dst_layout="OHWI16i64o2i");
  %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], channels=128, kernel_size=[3, 3], data_layout="NCHW16c",
                 kernel_layout="OHWI16i64o2i");
  (layout_transform(%2, src_layout="NCHW16c", dst_layout="NCHW"), %1)
}
"""


def test_compiled_layout_transform_and_conv2d_match_the_interpreter_and_plain_conv2d():
    built = compile(MODEL, "m.relay", passes=["InferType"], strict=True)
    assert built.ok, [d.render() for d in built.diagnostics]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 5, 5)).astype(np.float32)
    w = rng.standard_normal((128, 64, 3, 3)).astype(np.float32)
    got = built.executable.run(x, w)
    want = interpret(built.checked.module, x, w)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    plain = get_op("nn.conv2d").evaluate([x, w], {"padding": (1, 1, 1, 1)})
    np.testing.assert_allclose(want[0], plain, rtol=1e-4, atol=1e-4)
