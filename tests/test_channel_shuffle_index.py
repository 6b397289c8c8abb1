"""ShuffleNet's channel shuffle (concatenate + reshape + transpose + reshape) read from
blocked data: the composed index of the fused kernel tidied to the shuffle itself
(te/arith.py `scale_once`, builder.py's tidied `<` condition of a concatenate's select),
and the kernel against numpy.

Before, the index kept a division by 784 and 1568 of a fused loop's offset written
`f * 28 * 28` (divide_terms saw the factor 28, not 784), and the concatenate's side was
chosen per element by a condition of five divisions; LLVM's vector loop then divided
64-bit vectors element by element (0.58 ms for six calls of stage3's shuffle in the model,
3-4 GB/s)."""

from __future__ import annotations

import numpy as np

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.pipeline import schedule_text
from relaylens.compiler.lower.schedule.loopnest import print_expr
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.lower.te.arith import tidy

SHUFFLE = """#[version = "0.0.5"]
def @main(%a: Tensor[(1, 1, 28, 28, 24), float32], %b: Tensor[(1, 1, 28, 28, 24), float32]) {
  %0 = (%a, %b);
  %1 = concatenate(%0, axis=1);
  %2 = layout_transform(%1, src_layout="NCHW24c", dst_layout="NCHW");
  %3 = reshape(%2, newshape=[1, 2, 24, 28, 28]);
  %4 = transpose(%3, axes=[0, 2, 1, 3, 4]);
  reshape(%4, newshape=[1, 48, 28, 28])
}"""


def test_a_fused_offset_scaled_twice_divides_as_one_factor():
    c, f = te.Var("c"), te.Var("f")
    extents = {id(c): 48, id(f): 784}
    flat = c * 28 * 28 + f
    assert print_expr(tidy(flat // 784 % 2, extents)) == "c % 2"
    assert print_expr(tidy(flat // 1568, extents)) == "c // 2"
    block = ((flat // 784 % 2 * 24 + flat // 1568) * 28 * 28 + f) // 784 // 24
    assert print_expr(tidy(block, extents)) == "c % 2"


def test_the_shuffle_of_two_blocks_of_24_reads_lane_c_half_of_block_c_mod_2():
    result = compile(SHUFFLE, "shuffle.relay")
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    name = "tvmgen_default_fused_concatenate_layout_transform_reshape_transpose_reshape"
    body = schedule_text(result.snapshots[-1].module, name).split("# step ")[-1]
    assert "select(ax0.ax1.fused % 2 < 1, p0[(ax0.ax1.fused % 2 * 784 + ax2.ax3.fused) * 24 + ax0.ax1.fused // 2]" \
        in body, body
    assert "// 784" not in body and "// 1568" not in body
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((1, 1, 28, 28, 24)).astype("float32") for _ in range(2))
    plain = np.concatenate([a, b], axis=1).transpose(0, 1, 4, 2, 3).reshape(1, 48, 28, 28)
    want = plain.reshape(1, 2, 24, 28, 28).transpose(0, 2, 1, 3, 4).reshape(1, 48, 28, 28)
    np.testing.assert_array_equal(np.asarray(result.executable.run(a, b)), want)


CONCAT = """#[version = "0.0.5"]
def @main(%a: Tensor[(1, 32, 64, 64), float32], %b: Tensor[(1, 16, 64, 64), float32]) {
  %0 = exp(%a);
  %1 = (%0, %b);
  %2 = concatenate(%1, axis=1);
  layout_transform(%2, src_layout="NCHW", dst_layout="NCHW16c")
}"""


def test_a_concatenate_condition_whose_tidy_only_drops_a_modulo_keeps_its_form():
    # bench/onnx_ops.py's det: tidied to `... // 64 * 16 + ax4 < 32`, LLVM scalarised the
    # kernel's selects (205 -> 1,423 lines of optimised IR, the kernel 1.68x slower)
    result = compile(CONCAT, "concat.relay")
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    name = "tvmgen_default_fused_exp_concatenate_layout_transform"
    body = schedule_text(result.snapshots[-1].module, name).split("# step ")[-1]
    assert "// 64 % 3 * 16 + ax4 < 32" in body, body
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((1, 32, 64, 64)).astype("float32"), rng.standard_normal((1, 16, 64, 64)).astype("float32")
    want = np.concatenate([np.exp(a), b], axis=1).reshape(1, 3, 16, 64, 64).transpose(0, 1, 3, 4, 2)
    np.testing.assert_allclose(np.asarray(result.executable.run(a, b)), want, rtol=1e-6)
