"""Channel blocks of 24 on AVX-512 (transform/x86_channel_blocks.py): the blocks chosen
where TVM's would be 12 lanes (a vector of 8 and one of 4), the register tile a block of
24 lanes takes (conv.py `wide_block_tile`: 8 columns x 1 block, each a vector of 16 and one of
8, its step over an input block's channels a loop: conv_rolled.py), and an inverted residual built with them (MobileNet v2's projection 144 -> 24 with
its bias and residual add, an expansion reading 24c, a depthwise convolution of 72
channels in blocks of 24) against the interpreter on the original module."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.lower.schedule.conv import conv_tile
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform.x86_channel_blocks import channel_block
from relaylens.compiler.transform.x86_conv2d_layout import blocks, host_simd_lanes


def test_24_channels_take_one_block_of_24_on_avx512_and_the_input_its_producers_block():
    assert blocks(144, 24, 16) == (16, 24)  # TVM: (12, 12), a layout_transform 16c -> 12c before it
    assert blocks(96, 24, 16) == (16, 24)
    assert blocks(24, 144, 16) == (24, 16)  # reads the 24c the projection writes (TVM: 12)
    assert blocks(144, 24, 16, tvm=True) == (12, 12)
    assert blocks(24, 144, 8) == (8, 8)  # AVX2: TVM's rule
    assert blocks(3, 32, 16) == (3, 16)  # the stem keeps TVM's blocks
    assert [channel_block(c, 16) for c in (16, 32, 96, 160, 24, 72, 20, 12, 3)] == [16, 16, 16, 16, 24, 24, 20, 12, 3]


def test_a_block_of_24_lanes_takes_8_columns_of_a_vector_of_16_and_one_of_8():
    assert AVX512.registers_for(24) == 2
    assert conv_tile(56, 1, lanes=24, unit=AVX512) == (8, 1)  # 16 accumulators, 8 broadcasts, 2 weights
    assert conv_tile(28, 3, lanes=24, unit=AVX512) == (7, 1)  # 72 channels: 3 blocks of 24, 1 fits beside 7 columns
    assert conv_tile(14, 1, lanes=24, unit=AVX512) == (7, 1)
    assert conv_tile(56, 2, lanes=12, unit=AVX512) == (4, 2)  # TVM's blocks: 16 accumulators of 8 and 4 lanes
    assert AVX2.registers_for(24) == 3


INVERTED_RESIDUAL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 144, 56, 56), float32], %r: Tensor[(1, 24, 56, 56), float32],
          %w1: Tensor[(24, 144, 1, 1), float32], %b1: Tensor[(24, 1, 1), float32],
          %w2: Tensor[(72, 24, 1, 1), float32], %w3: Tensor[(72, 1, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[0, 0, 0, 0], channels=24, kernel_size=[1, 1]);
  %1 = add(%0, %b1);
  %2 = add(%r, %1);
  %3 = nn.conv2d(%2, %w2, padding=[0, 0, 0, 0], channels=72, kernel_size=[1, 1]);
  %4 = clip(%3, a_min=0f, a_max=6f);
  nn.conv2d(%4, %w3, strides=[2, 2], padding=[1, 1, 1, 1], groups=72, channels=72, kernel_size=[3, 3])
}"""


def test_an_inverted_residual_in_blocks_of_24_equals_the_interpreter():
    rng = np.random.default_rng(24)
    checked = compile(INVERTED_RESIDUAL, "case.relay", stop_after="check")
    params = {}
    for p in checked.checked.module["main"].params:
        shape = [int(d) for d in p.type_annotation.shape]
        scale = 1 / np.sqrt(np.prod(shape[1:])) if p.name.startswith("w") else 1
        params[p.name] = (rng.standard_normal(shape) * scale).astype("float32")
    weights = {k: v for k, v in params.items() if k.startswith(("w", "b"))}
    result = compile(INVERTED_RESIDUAL, "case.relay", params=weights)
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    if host_simd_lanes() >= 16:
        text = print_module(result.snapshots[-1].module)
        assert 'out_layout="NCHW24c"' in text and 'data_layout="NCHW24c"' in text
        assert 'dst_layout="NCHW12c"' not in text
    got = result.executable.run(params["x"], params["r"])
    want = Interpreter(checked.checked.module).call("main", list(params.values()))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("src, dst, width, piece", [("NCHW24c", "NCHW", 56, 8), ("NCHW", "NCHW24c", 56, 8),
                                                     ("NCHW24c", "NCHW", 28, 4), ("NCHW", "NCHW24c", 28, 4),
                                                     ("NCHW24c", "NCHW", 14, 14), ("NCHW12c", "NCHW", 56, 56)])
def test_a_row_packed_into_or_unpacked_from_blocks_of_24_is_vectorized_by_eights(src, dst, width, piece):
    """A block wider than a vector (24 lanes on AVX-512): the whole row of 56 as one vector
    a channel took O3 4.0 s to unpack and 9.4 s to pack on the AVX-512 host; by vectors of
    8 lanes 0.1-0.2 s (defaults.py `_wide_block_piece`).  A row of 14 (no piece of 4) and
    blocks of 12 stay whole."""
    from test_lower_schedule import _default, _op_compute, lines

    blocked, plain = (1, 1, 3, width, int(src[4:-1]) if src != "NCHW" else int(dst[4:-1])), None
    plain = (1, blocked[1] * blocked[4], 3, width)
    shapes = (blocked, plain) if src != "NCHW" else (plain, blocked)
    ins, out = _op_compute("layout_transform", [shapes[0]], {"src_layout": src, "dst_layout": dst}, shapes[1])
    sch, _ = _default(ins, [out])
    found = [line for line in lines(sch) if "vectorized(" in line]
    assert found and found[-1].endswith(f"vectorized({piece}):"), found


def test_a_1x1_of_two_16_lane_blocks_takes_7_columns_rolled_on_avx512():
    """MobileNet v2's projections to 32 channels at 28x28 (conv_rolled.py `pair_tile`): 7 x 2
    with its step over an input block's channels a loop, 4 x 2 (conv.py `two_block_tile`)
    where 7 does not divide the row; the stem (3x3) and 2 blocks on AVX2 keep the rule's tile."""
    assert conv_tile(28, 2, lanes=16, unit=AVX512, pointwise=True) == (7, 2)
    assert conv_tile(56, 2, lanes=16, unit=AVX512, pointwise=True) == (7, 2)
    assert conv_tile(32, 2, lanes=16, unit=AVX512, pointwise=True) == (4, 2)
    assert conv_tile(28, 2, lanes=16, unit=AVX512) == (7, 2)  # a wider filter
    assert conv_tile(14, 6, lanes=16, unit=AVX512, pointwise=True) == (7, 3)  # conv.py `three_block_tile`
    assert conv_tile(7, 2, lanes=16, unit=AVX512, pointwise=True) == (7, 2)  # 4 does not divide 7
    assert conv_tile(28, 2, lanes=8, unit=AVX2, pointwise=True) == conv_tile(28, 2, lanes=8, unit=AVX2)


PROJECTION_TO_32 = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 144, 28, 28), float32], %r: Tensor[(1, 32, 28, 28), float32],
          %w: Tensor[(32, 144, 1, 1), float32], %b: Tensor[(32, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0], channels=32, kernel_size=[1, 1]);
  %1 = add(%0, %b);
  add(%r, %1)
}"""


def test_a_projection_to_32_channels_equals_numpy():
    rng = np.random.default_rng(32)
    x = rng.standard_normal((1, 144, 28, 28)).astype("float32")
    r = rng.standard_normal((1, 32, 28, 28)).astype("float32")
    w = (rng.standard_normal((32, 144, 1, 1)) / 12).astype("float32")
    b = rng.standard_normal((32, 1, 1)).astype("float32")
    result = compile(PROJECTION_TO_32, "case.relay", params={"w": w, "b": b})
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    got = np.asarray(result.executable.run(x, r))
    want = np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype("float64"), x.astype("float64")) + b + r
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
