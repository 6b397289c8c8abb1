"""Winograd convolution (ops/winograd.py, te/topi/winograd.py, schedule/winograd.py) and its
choice by the x86 AlterOpLayout (transform/x86_conv2d_layout.py): the exact matrices, the
ops' numpy references against nn.conv2d, their checks, the compiled kernel against numpy on
odd shapes, and the whole relay.build pipeline with the weight bound (transformed at build
time)."""

import re
from fractions import Fraction

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.lower.schedule.loopnest import Allocate, walk
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops.attrs import AttrError
from relaylens.compiler.ops.winograd import CONV_OP, WEIGHT_OP, winograd_matrices

LT = get_op("layout_transform")


@pytest.mark.parametrize("m", [2, 4, 6])
def test_the_matrices_compute_the_correlation_exactly(m):
    a, bt, g = winograd_matrices(m, 3)
    alpha = m + 2
    rng = np.random.default_rng(m)
    for _ in range(3):
        d = [Fraction(int(v)) for v in rng.integers(-9, 9, alpha)]
        w = [Fraction(int(v)) for v in rng.integers(-9, 9, 3)]
        gw = [sum(g[j][k] * w[k] for k in range(3)) for j in range(alpha)]
        bd = [sum(bt[j][k] * d[k] for k in range(alpha)) for j in range(alpha)]
        y = [sum(a[j][i] * gw[j] * bd[j] for j in range(alpha)) for i in range(m)]
        assert y == [sum(d[i + k] * w[k] for k in range(3)) for i in range(m)]


def test_f2_has_only_zeros_and_ones_in_a_and_b():
    a, bt, _ = winograd_matrices(2, 3)
    assert {abs(v) for row in a + bt for v in row} == {0, 1}


def _winograd(x, w, m, pad, **attrs):
    u = get_op(WEIGHT_OP).evaluate([w], {"tile_size": m})
    assert u.shape == (m + 2, m + 2) + w.shape[:2]
    return get_op(CONV_OP).evaluate([x, u], {"tile_size": m, "padding": pad, "channels": w.shape[0],
                                             "kernel_size": (3, 3), **attrs})


@pytest.mark.parametrize("m,dtype,rtol,o,i", [(2, "float32", 1e-6, 5, 3), (4, "float32", 1e-6, 5, 3),
                                               (4, "float64", 1e-13, 5, 3), (4, "float32", 1e-6, 37, 29)])
def test_the_weight_transform_is_g_w_gt_of_every_filter(m, dtype, rtol, o, i):
    """U[a, b, o, i] = (G w[o, i] G^T)[a, b], from the exact matrices, in the weight's dtype;
    37 x 29 filters take three products of SERIAL_PRODUCT multiply-adds, the last short."""
    _, _, g = winograd_matrices(m, 3)
    gf = np.array([[float(v) for v in row] for row in g])
    w = np.random.default_rng(3).standard_normal((o, i, 3, 3)).astype(dtype)
    u = get_op(WEIGHT_OP).evaluate([w], {"tile_size": m})
    want = np.einsum("ak,oikl,bl->aboi", gf, w.astype(np.float64), gf)
    assert u.dtype == np.dtype(dtype) and u.shape == (m + 2, m + 2, o, i)
    np.testing.assert_allclose(u, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize("m,pad,shape", [(2, (1, 1), (2, 5, 9, 7)), (4, (0, 0), (2, 5, 9, 7)),
                                         (4, (1, 0, 2, 1), (1, 3, 6, 11)), (2, (0, 0), (1, 4, 3, 4))])
def test_the_reference_equals_conv2d(m, pad, shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype("float32")
    w = rng.standard_normal((6, shape[1], 3, 3)).astype("float32")
    want = get_op("nn.conv2d").evaluate([x, w], {"padding": pad})
    got = _winograd(x, w, m, pad)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_reference_reads_blocked_data_and_a_packed_weight():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 16, 7, 7)).astype("float32")
    w = rng.standard_normal((16, 16, 3, 3)).astype("float32")
    u = get_op(WEIGHT_OP).evaluate([w], {"tile_size": 2})
    packed = u.reshape(4, 4, 2, 8, 16).transpose(0, 1, 2, 4, 3)
    xb = LT.evaluate([x], {"src_layout": "NCHW", "dst_layout": "NCHW8c"})
    got = get_op(CONV_OP).evaluate([xb, packed], {"tile_size": 2, "padding": (1, 1), "channels": 16,
                                                  "kernel_size": (3, 3), "data_layout": "NCHW8c"})
    want = LT.evaluate([get_op("nn.conv2d").evaluate([x, w], {"padding": (1, 1)})],
                       {"src_layout": "NCHW", "dst_layout": "NCHW8c"})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs,message", [
    ({"strides": (2, 2)}, "strides must be 1"),
    ({"groups": 2}, "groups must be 1"),
    ({"tile_size": 9}, "tile_size=9 is not supported"),
    ({"channels": None}, "channels is required"),
])
def test_unsupported_attributes_are_attribute_errors(attrs, message):
    base = {"tile_size": 2, "padding": (1, 1), "channels": 4, "kernel_size": (3, 3)}
    x, u = np.zeros((1, 2, 5, 5), "float32"), np.zeros((4, 4, 4, 2), "float32")
    with pytest.raises(AttrError, match=message):
        get_op(CONV_OP).evaluate([x, u], {**base, **attrs})


def test_a_weight_that_does_not_fit_is_a_diagnostic():
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 6, 6), float32], %u: Tensor[(6, 6, 4, 8), float32]) {{
  {CONV_OP}(%x, %u, tile_size=2, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])
}}"""
    result = compile(text, "bad.relay", stop_after="check")
    assert not result.ok
    assert any("does not fit F(2, 3)" in d.message for d in result.diagnostics)


def _compiled_case(n, ci, co, h, w, m, pad, lanes):
    layout = f"NCHW{lanes}c" if lanes > 1 else "NCHW"
    dshape = (n, ci // lanes, h, w, lanes) if lanes > 1 else (n, ci, h, w)
    ushape = (m + 2, m + 2, co // lanes, ci, lanes) if lanes > 1 else (m + 2, m + 2, co, ci)
    bshape = (1, co // lanes, 1, 1, lanes) if lanes > 1 else (1, co, 1, 1)
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[{dshape}, float32], %u: Tensor[{ushape}, float32], %b: Tensor[{bshape}, float32]) {{
  %0 = {CONV_OP}(%x, %u, tile_size={m}, padding={list(pad)}, channels={co}, kernel_size=[3, 3], data_layout="{layout}", out_layout="{layout}");
  %1 = add(%0, %b);
  nn.relu(%1)
}}"""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, ci, h, w)).astype("float32")
    wt = rng.standard_normal((co, ci, 3, 3)).astype("float32")
    b = rng.standard_normal(bshape).astype("float32")
    u = get_op(WEIGHT_OP).evaluate([wt], {"tile_size": m})
    if lanes > 1:
        u = np.ascontiguousarray(u.reshape(m + 2, m + 2, co // lanes, lanes, ci).transpose(0, 1, 2, 4, 3))
    to = (lambda a: LT.evaluate([a], {"src_layout": "NCHW", "dst_layout": layout})) if lanes > 1 else (lambda a: a)
    want = np.maximum(to(get_op("nn.conv2d").evaluate([x, wt], {"padding": pad})) + b, 0)
    return text, (to(x), u, b), want


@pytest.mark.parametrize("case", [
    (2, 16, 16, 9, 7, 2, (1, 1, 1, 1), 8),  # batch 2, width not a multiple of m
    (1, 8, 16, 10, 11, 4, (0, 0, 0, 0), 8),  # no padding, 8x9 outputs in 4x4 tiles
    (1, 16, 24, 14, 14, 4, (1, 1, 1, 1), 8),  # 16 tiles: the product's 6-tile rows and a remainder
    (1, 5, 3, 6, 7, 2, (1, 1, 1, 1), 1),  # channels not multiples of 8, NCHW, an unpacked weight
], ids=["F2-batch2-odd", "F4-nopad", "F4-14x14", "F2-NCHW-5to3"])
def test_the_compiled_kernel_equals_conv2d(case):
    text, args, want = _compiled_case(*case)
    result = compile(text, "w.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    assert list(result.fused_names.values()) == [
        "tvmgen_default_fused_nn_contrib_conv2d_winograd_without_weight_transform_add_nn_relu"]
    np.testing.assert_allclose(result.executable.run(*args), want, rtol=1e-4, atol=1e-4)


def test_the_schedule_tiles_the_product_and_unrolls_the_transforms():
    text, _, _ = _compiled_case(1, 16, 16, 8, 8, 4, (1, 1, 1, 1), 8)
    result = compile(text, "w.relay", passes=["InferType", "FuseOps", "InferType"], stop_after="llvm",
                     schedule_texts=True)
    assert result.ok, [d.message for d in result.diagnostics]
    record = "\n".join(f.schedule_text for f in result.lowered.functions.values())
    assert "cache_accumulator(T_wino_gemm_m4 at rc)" in record
    assert "unroll(T_wino_input: ax0" in record  # the positions of a tile
    assert "compute_inline(T_wino_output)" in record  # the output transform is the epilogue's


def test_the_product_is_blocked_over_tile_rows_only_where_that_saves_memory_traffic():
    from relaylens.compiler.lower.schedule.winograd import block_rows

    # ResNet-50's four Winograd convolutions: (alpha^2, tiles, C), (alpha^2, tiles, K/8, 8), tile rows x columns
    assert block_rows((36, 196, 64), (36, 196, 8, 8), 14, 14) == 1  # 14 tiles: 252 KiB of input and product
    assert block_rows((36, 49, 128), (36, 49, 16, 8), 7, 7) is None  # its transformed weight (2.4 MB) outgrows its input
    assert block_rows((16, 49, 256), (16, 49, 32, 8), 7, 7) is None
    assert block_rows((16, 16, 512), (16, 16, 64, 8), 4, 4) is None
    assert block_rows((36, 196, 64), (36, 196, 8, 8), 14, 14, cache_bytes=4 << 20) is None  # the input fits
    assert block_rows((36, 196, 64), (36, 196, 8, 8), 14, 14, cache_bytes=16 << 10) is None  # no row fits


def test_a_blocked_kernel_computes_input_and_product_per_block_of_tile_rows(monkeypatch):
    from relaylens.compiler.lower.schedule import vector_unit, winograd

    monkeypatch.setattr(winograd, "host_unit", lambda: vector_unit.AVX2)  # its tile rows, on any host
    text, args, want = _compiled_case(2, 64, 64, 56, 56, 4, (1, 1, 1, 1), 8)  # batch 2: blocks of both images
    result = compile(text, "w.relay", passes=["InferType", "FuseOps", "InferType"], schedule_texts=True)
    assert result.ok, [d.message for d in result.diagnostics]
    record = "\n".join(f.schedule_text for f in result.lowered.functions.values())
    assert "compute_at(T_wino_gemm_m4 at T_relu.ax0.ax2.outer.outer.fused)" in record
    assert "compute_at(T_wino_input at T_wino_gemm_m4." in record
    assert "split(T_wino_gemm_m4: ax1_3 by 6 with a tail" in record  # 14 tiles a block: 2 x 6 and 2
    # each block's product prefetches the next block group's weight over the block's tile rows
    assert _product_prefetches(result) == [("rc", "p1"), ("rc_1", "p1")]
    # the block's transformed input is computed once for its whole tiles and its remainder
    (fn,) = result.lowered.functions.values()
    made = [s.buffer.name for s in walk(fn.prim.body) if isinstance(s, Allocate)]
    assert made.count("T_wino_input") == 1 and not any(n.startswith("T_wino_input_") for n in made), made
    got = result.executable.run(*args)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * float(np.abs(want).max()))


def _product_prefetches(result) -> list[tuple[str, str]]:
    """(the loop variable, the buffer) of every prefetch in the compiled kernels' loop nests."""
    from test_dense_pack import loop_prefetches

    return [found for fn in result.lowered.functions.values() for found in loop_prefetches(fn.prim.body)]


def test_the_products_steps_prefetch_the_next_block_groups_weight():
    # F(2x2) 64 -> 64 at 7x7 (ResNet-50's 7x7 kernel in small): 16 tiles in tile rows of 6,
    # 4 groups of 2 blocks; each step over the input channels (p1: U) prefetches a piece
    # of the next group's panel (schedule/winograd.py), which changes no value
    text, args, want = _compiled_case(1, 64, 64, 7, 7, 2, (1, 1, 1, 1), 8)
    result = compile(text, "w.relay", passes=["InferType", "FuseOps", "InferType"])
    assert result.ok, [d.message for d in result.diagnostics]
    # the whole tile rows' nest and the remainder row's (16 = 2 x 6 + 4) both prefetch
    assert _product_prefetches(result) == [("rc", "p1"), ("rc_1", "p1")]
    np.testing.assert_allclose(result.executable.run(*args), want, rtol=1e-4, atol=1e-4)


def test_x86_chooses_winograd_for_3x3_stride_1_convolutions():
    from relaylens.compiler.ops import get_op as op_def
    from relaylens.compiler.transform.x86_conv2d_layout import winograd_tile

    def tile(c, k, size, **attrs):
        a = op_def("nn.conv2d").normalize_attrs({"padding": (1, 1), **attrs})
        return winograd_tile(a, (1, c, size, size), (k, c) + attrs.pop("kernel", (3, 3)), 8)

    assert tile(64, 64, 56) == 4 and tile(128, 128, 28) == 4  # 196 and 49 tiles of 4x4
    assert tile(256, 256, 14) == 2 and tile(512, 512, 7) == 2
    assert tile(32, 32, 56) is None  # too few channels
    assert tile(64, 64, 56, strides=(2, 2)) is None and tile(64, 64, 56, dilation=(2, 2)) is None
    a = op_def("nn.conv2d").normalize_attrs({})
    assert winograd_tile(a, (1, 64, 56, 56), (64, 64, 1, 1), 8) is None


def test_a_bound_conv2d_builds_as_winograd_and_equals_the_interpreter():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 64, 15, 15), float32], %w: Tensor[(64, 64, 3, 3), float32], %b: Tensor[(64), float32], %w2: Tensor[(64, 64, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, %w2, padding=[0, 0, 0, 0], channels=64, kernel_size=[3, 3]);
  nn.relu(%3)
}"""
    rng = np.random.default_rng(4)
    checked = compile(text, "c.relay", stop_after="check")
    params = {p.name: (rng.standard_normal([int(d) for d in p.type_annotation.shape]) * 0.1).astype("float32")
              for p in checked.checked.module["main"].params}
    result = compile(text, "c.relay", params={k: params[k] for k in ("w", "b", "w2")})
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    names = list(result.fused_names.values())
    assert sum("winograd_without_weight_transform" in n for n in names) == 2
    assert not any("weight_transform_" in n.replace("without_weight_transform", "") for n in names), names
    got = result.executable.run(params["x"])
    want = Interpreter(checked.checked.module).call("main", list(params.values()))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)


def test_the_rewritten_calls_keep_the_conv_span():
    from relaylens.compiler.transform.infra import PassContext
    from relaylens.compiler.transform.passes.alter_op_layout import AlterOpLayout

    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 64, 14, 14), float32], %w: Tensor[(64, 64, 3, 3), float32]) {
  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])
}"""
    w = np.zeros((64, 64, 3, 3), "float32")
    built = compile(text, "s.relay", stop_after="passes", passes=["InferType"], params={"w": w})
    conv = built.module["main"].body
    out = AlterOpLayout(simd_lanes=8)(built.module, PassContext(opt_level=3))
    calls = []

    def walk(e):
        if hasattr(e, "op") and hasattr(e, "args"):
            calls.append(e)
            for a in e.args:
                walk(a)

    walk(out["main"].body)
    names = {c.op.name: c for c in calls}
    for name in (CONV_OP, WEIGHT_OP, "reshape", "transpose"):
        assert names[name].span == conv.span, name
    assert names[CONV_OP].attrs["tile_size"].value == 2
    assert names[CONV_OP].attrs["data_layout"] == "NCHW8c"


def test_the_flop_count_is_the_direct_convolutions():
    from relaylens.compiler.profile.cost import call_flops

    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 64, 14, 14), float32], %w: Tensor[(128, 64, 3, 3), float32]) {
  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=128, kernel_size=[3, 3])
}"""
    w = {"w": np.zeros((128, 64, 3, 3), "float32")}
    plain = compile(text, "f.relay", stop_after="passes", passes=["InferType"], params=w).module["main"].body
    built = compile(text, "f.relay", stop_after="passes", passes=["InferType", "AlterOpLayout", "InferType"],
                    params=w)
    assert built.ok, [d.message for d in built.diagnostics]
    call = built.module["main"].body
    while call.op.name != CONV_OP:
        call = call.args[0]
    assert call_flops(call) == call_flops(plain) == 2 * 128 * 14 * 14 * 64 * 9


def test_a_weight_given_at_run_time_keeps_the_nchwc_convolution():
    """Its transform would run on every call (and be compiled): only bound weights go Winograd."""
    from relaylens.compiler.transform.infra import PassContext
    from relaylens.compiler.transform.passes.alter_op_layout import AlterOpLayout

    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 64, 14, 14), float32], %w: Tensor[(64, 64, 3, 3), float32]) {
  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])
}"""
    built = compile(text, "p.relay", stop_after="passes", passes=["InferType"])
    out = AlterOpLayout(simd_lanes=8)(built.module, PassContext(opt_level=3))
    body = out["main"].body
    names = []
    while hasattr(body, "args"):
        names.append(body.op.name)
        body = body.args[0]
    assert "nn.contrib_conv2d_NCHWc" in names and CONV_OP not in names


def test_the_output_transform_of_resnet50s_14x14_kernel_forks_and_computes_the_same_on_two_threads():
    # F(2x2) 256 -> 256 at 14x14: 50,176 outputs, a product of 200,704 (winograd.py COPY_PARALLEL)
    from relaylens.compiler.lower.runtime.jit import JIT

    text, args, want = _compiled_case(1, 256, 256, 14, 14, 2, (1, 1, 1, 1), 8)
    one = compile(text, "w.relay", passes=["InferType", "FuseOps", "InferType"], jit=JIT(num_threads=1))
    two = compile(text, "w.relay", passes=["InferType", "FuseOps", "InferType"], jit=JIT(num_threads=2),
                  schedule_texts=True)
    assert two.ok, [d.message for d in two.diagnostics]
    record = "\n".join(f.schedule_text for f in two.lowered.functions.values())
    assert re.search(r"parallel\(T_relu: ax0\.ax1\.ax2\.outer\.ax3\.outer\.fused\)", record)
    got = two.executable.run(*args)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, one.executable.run(*args))
