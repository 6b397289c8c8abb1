"""nn.contrib_conv2d_NCHWc (and the depthwise one) as AlterOpLayout makes it: the compiled kernel (conv_blocked.py's
compute, conv.py's schedule over the packed weight) against the interpreter and against
nn.conv2d's numpy reference on the unblocked tensors."""

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.ops import get_op

CASES = [  # (in channels, out channels, ic_bn, oc_bn, kernel, stride, padding, size)
    (3, 16, 3, 16, 3, 1, 1, 9),
    (32, 24, 8, 12, 1, 1, 0, 7),
    (16, 32, 16, 16, 3, 2, 1, 10),
    # AVX2 (conv.py's model, VectorUnit.tile_fits): 2 columns x 6 blocks; 3 x 3, the last tile overlapping
    (16, 96, 8, 8, 1, 1, 0, 16),
    (48, 24, 8, 8, 1, 1, 0, 13),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}to{c[1]}_{c[2]}c_{c[3]}o_k{c[4]}s{c[5]}" for c in CASES])
def test_nchwc_conv_compiled_equals_interpreter_and_numpy(case):
    ci, co, ib, ob, k, s, p, n = case
    out = (n + 2 * p - k) // s + 1
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {ci // ib}, {n}, {n}, {ib}), float32], %w: Tensor[({co // ob}, {ci // ib}, {k}, {k}, {ib}, {ob}), float32]) {{
  %0 = nn.contrib_conv2d_NCHWc(%x, %w, strides=[{s}, {s}], padding=[{p}, {p}, {p}, {p}], channels={co}, kernel_size=[{k}, {k}], data_layout="NCHW{ib}c", kernel_layout="OIHW{ib}i{ob}o", out_layout="NCHW{ob}c");
  nn.relu(%0)
}}"""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, ci, n, n)).astype("float32")
    w = rng.standard_normal((co, ci, k, k)).astype("float32")
    lt = get_op("layout_transform")
    xb = lt.evaluate([x], {"src_layout": "NCHW", "dst_layout": f"NCHW{ib}c"})
    wb = lt.evaluate([w], {"src_layout": "OIHW", "dst_layout": f"OIHW{ib}i{ob}o"})
    result = compile(text, "nchwc.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    assert "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_nn_relu" in result.fused_names.values()
    got = result.executable.run(xb, wb)
    interpreted = np.asarray(Interpreter(result.checked.module).call("main", [xb, wb]))
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], {"strides": (s, s), "padding": (p,) * 4}), 0)
    want = lt.evaluate([want], {"src_layout": "NCHW", "dst_layout": f"NCHW{ob}c"})
    assert got.shape == want.shape == (1, co // ob, out, out, ob)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(interpreted, want, rtol=1e-4, atol=1e-4)


def test_nchwc_depthwise_conv_compiled_equals_numpy():
    c, b, n = 32, 16, 9
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {c // b}, {n}, {n}, {b}), float32], %w: Tensor[({c // b}, 1, 3, 3, 1, {b}), float32]) {{
  nn.contrib_depthwise_conv2d_NCHWc(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], groups={c}, channels={c}, kernel_size=[3, 3], data_layout="NCHW{b}c", kernel_layout="OIHW1i{b}o", out_layout="NCHW{b}c")
}}"""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, c, n, n)).astype("float32")
    w = rng.standard_normal((c, 1, 3, 3)).astype("float32")
    lt = get_op("layout_transform")
    xb = lt.evaluate([x], {"src_layout": "NCHW", "dst_layout": f"NCHW{b}c"})
    wb = lt.evaluate([w], {"src_layout": "OIHW", "dst_layout": f"OIHW1i{b}o"})
    result = compile(text, "dw.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    got = result.executable.run(xb, wb)
    want = get_op("nn.conv2d").evaluate([x, w], {"strides": (2, 2), "padding": (1,) * 4, "groups": c})
    want = lt.evaluate([want], {"src_layout": "NCHW", "dst_layout": f"NCHW{b}c"})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
