"""The depthwise schedule (compiler/lower/schedule/depthwise.py): blocked depthwise
convolutions with a bias and clip (MobileNet's relu6) compiled against numpy, for
strides 1 and 2, asymmetric and no padding, dilation, widths the tile does not divide,
8 and 16 lanes; the padded copy of a blocked input inlined (the schedule record shows
it) and the copy of an NCHW input kept; the tile width; the input's lines prefetched
for a large stride-2 convolution only."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.schedule.depthwise import depthwise_cols
from relaylens.compiler.ops import get_op

PASSES = ["InferType", "FuseOps", "InferType"]

CASES = [  # (channels, lanes, size, kernel, stride, padding (t, l, b, r), dilation)
    (32, 8, 12, 3, 1, (1, 1, 1, 1), 1),
    (24, 8, 13, 3, 2, (1, 1, 1, 1), 1),
    (16, 16, 11, 3, 2, (0, 1, 1, 0), 1),
    (16, 8, 9, 3, 1, (0, 0, 0, 0), 1),
    (8, 8, 10, 5, 1, (2, 2, 2, 2), 1),
    (16, 8, 15, 3, 1, (2, 2, 2, 2), 2),
    (576, 8, 14, 3, 2, (1, 1, 1, 1), 1),  # MobileNet v2's smallest: forks (254,016 multiply-adds)
    (96, 8, 112, 3, 2, (1, 1, 1, 1), 1),  # MobileNet v2's features.2: an input of 4.8 MB, its lines prefetched
    (40, 8, 115, 3, 2, (1, 1, 1, 1), 1),  # prefetched, a width of 58 (the last tile overlapping) and a tail row
]


def _steps(fn) -> list[tuple[str, str]]:
    return [(s.primitive, s.args) for s in fn.schedule.record]


def _blocked(a: np.ndarray, src: str, dst: str) -> np.ndarray:
    return get_op("layout_transform").evaluate([a], {"src_layout": src, "dst_layout": dst})


@pytest.mark.parametrize("case", CASES, ids=[f"c{c[0]}x{c[1]}_n{c[2]}_k{c[3]}s{c[4]}p{''.join(map(str, c[5]))}d{c[6]}"
                                             for c in CASES])
def test_nchwc_depthwise_with_bias_and_clip_equals_numpy(case):
    c, b, n, k, s, pad, d = case
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {c // b}, {n}, {n}, {b}), float32], %w: Tensor[({c // b}, 1, {k}, {k}, 1, {b}), float32],
          %bias: Tensor[(1, {c // b}, 1, 1, {b}), float32]) {{
  %0 = nn.contrib_depthwise_conv2d_NCHWc(%x, %w, strides=[{s}, {s}], padding={list(pad)}, dilation=[{d}, {d}], groups={c}, channels={c}, kernel_size=[{k}, {k}], data_layout="NCHW{b}c", kernel_layout="OIHW1i{b}o", out_layout="NCHW{b}c");
  %1 = add(%0, %bias);
  clip(%1, a_min=0f, a_max=6f)
}}"""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, c, n, n)).astype("float32") * 3
    w = rng.standard_normal((c, 1, k, k)).astype("float32")
    bias = rng.standard_normal(c).astype("float32")
    result = compile(text, "dw.relay", passes=PASSES)
    assert result.ok, [dg.message for dg in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    inlined = [a for p, a in _steps(fn) if p == "compute_inline"]
    assert ("T_pad" in inlined) == any(pad)
    got = result.executable.run(_blocked(x, "NCHW", f"NCHW{b}c"), _blocked(w, "OIHW", f"OIHW1i{b}o"),
                                np.ascontiguousarray(bias.reshape(c // b, b)[None, :, None, None, :]))
    conv = get_op("nn.conv2d").evaluate([x, w], {"strides": (s, s), "padding": pad, "dilation": (d, d),
                                                 "groups": c})
    want = _blocked(np.clip(conv + bias[None, :, None, None], 0, 6), "NCHW", f"NCHW{b}c")
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_padded_copy_of_an_nchw_input_stays_a_copy():
    c, n = 32, 10
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {c}, {n}, {n}), float32], %w: Tensor[({c}, 1, 3, 3), float32]) {{
  nn.relu(nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], groups={c}, channels={c}, kernel_size=[3, 3]))
}}"""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((1, c, n, n)).astype("float32")
    w = rng.standard_normal((c, 1, 3, 3)).astype("float32")
    result = compile(text, "dw.relay", passes=PASSES)
    (fn,) = result.lowered.functions.values()
    steps = _steps(fn)
    assert any(p == "vectorize" and a.startswith("T_pad_NCHW16c:") for p, a in steps)
    assert ("compute_inline", "T_pad_NCHW16c") not in steps
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], {"strides": (2, 2), "padding": (1,) * 4, "groups": c}), 0)
    np.testing.assert_allclose(result.executable.run(x, w), want, rtol=1e-4, atol=1e-4)


def test_tile_columns_divide_the_width_when_they_can():
    assert depthwise_cols(112, 8) in (8, 10, 12, 14, 16)
    assert 112 % depthwise_cols(112, 8) == 0
    assert 7 % depthwise_cols(7, 8) == 0
    assert depthwise_cols(3, 8) == 3


@pytest.mark.parametrize("blocks, size, parallel", [(8, 7, False), (24, 7, False), (72, 7, True), (24, 14, True),
                                                    (48, 14, True), (18, 28, True)])
def test_a_depthwise_convolution_forks_only_for_the_work_a_fork_is_worth(blocks, size, parallel):
    """MobileNet v2's smallest depthwise 3x3 kernels, 576 channels at 7x7 and 192 at
    14x14 (254,016 and 338,688 multiply-adds), fork as its larger ones do (each thread
    reads the half of its input it wrote, conv_tile_end.py); 64 and 192 channels at 7x7
    (28,224 and 84,672), below conv_tile_end.TILE_FORK_MIN, run on the calling thread."""
    from relaylens.compiler.lower.schedule.conv_tile_end import TILE_FORK_MIN

    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {blocks}, {size}, {size}, 8), float32], %w: Tensor[({blocks}, 1, 3, 3, 1, 8), float32]) {{
  %0 = nn.contrib_depthwise_conv2d_NCHWc(%x, %w, padding=[1, 1, 1, 1], groups={blocks * 8}, channels={blocks * 8}, kernel_size=[3, 3], data_layout="NCHW8c", kernel_layout="OIHW1i8o", out_layout="NCHW8c");
  clip(%0, a_min=0f, a_max=6f)
}}"""
    result = compile(text, "dw.relay", passes=PASSES, stop_after="llvm")
    assert result.ok, [dg.message for dg in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    assert (blocks * 8 * size * size * 9 >= TILE_FORK_MIN) == parallel
    assert any(p == "parallel" for p, _ in _steps(fn)) == parallel


@pytest.mark.parametrize("blocks, size, stride, prefetched", [(12, 112, 2, True), (18, 56, 2, True),
                                                              (4, 112, 1, False), (18, 56, 1, False),
                                                              (24, 28, 2, False)])
def test_a_large_strided_input_has_its_lines_prefetched(blocks, size, stride, prefetched):
    """MobileNet v2's stride-2 depthwise kernels on inputs from INPUT_PREFETCH_BYTES ask
    for the input lines of the tiles ahead; stride 1 (where it was slower) and small
    inputs do not."""
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {blocks}, {size}, {size}, 8), float32], %w: Tensor[({blocks}, 1, 3, 3, 1, 8), float32]) {{
  %0 = nn.contrib_depthwise_conv2d_NCHWc(%x, %w, strides=[{stride}, {stride}], padding=[1, 1, 1, 1], groups={blocks * 8}, channels={blocks * 8}, kernel_size=[3, 3], data_layout="NCHW8c", kernel_layout="OIHW1i8o", out_layout="NCHW8c");
  clip(%0, a_min=0f, a_max=6f)
}}"""
    result = compile(text, "dw.relay", passes=PASSES, stop_after="llvm")
    assert result.ok, [dg.message for dg in result.diagnostics]
    (fn,) = result.lowered.functions.values()
    assert any(p == "prefetch" for p, _ in _steps(fn)) == prefetched
