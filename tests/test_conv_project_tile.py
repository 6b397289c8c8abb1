"""MobileNet v2's projections to 96 and 160 channels on a 32-register unit: a 1x1
convolution of 6 blocks of 16 lanes at 14x14 takes 7 columns x 3 blocks (conv.py
`three_block_tile`: 21 accumulators, 7 broadcasts, 3 weight vectors), one of 10 blocks at
7x7 4 positions x 5 blocks over the plane flattened (conv_chunks.py `_flat_five_blocks`),
not the rule's 7 x 2 a row; what the schedule record shows, and the compiled kernels with
bias, a residual add and relu against numpy (one thread and two).  The unit is AVX-512's
whatever the host."""

from __future__ import annotations

import pytest
from test_lower_conv_square import assert_matches_numpy, bottleneck_end, recorded

from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.te.compose import compose

from relaylens.compiler.lower.schedule import conv, conv_chunks
from relaylens.compiler.lower.schedule.conv import conv_tile
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(conv, "host_unit", lambda: AVX512)
    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX512)


def test_six_blocks_at_14x14_take_7_columns_x_3_blocks():
    assert conv_tile(14, 6, unit=AVX512, pointwise=True) == (7, 3)  # 576 -> 96, 384 -> 96
    assert conv_tile(7, 6, unit=AVX512, pointwise=True) == (7, 3)
    assert conv_tile(14, 6, unit=AVX512) == (7, 2)  # a wider filter keeps the rule's tile
    assert conv_tile(112, 6, unit=AVX512, pointwise=True) == (8, 2)  # a wider row (16 -> 96 at 112x112)
    assert conv_tile(7, 10, unit=AVX512, pointwise=True) == (7, 2)  # 3 does not divide 10 blocks
    assert conv_tile(14, 12, unit=AVX512, pointwise=True) == (7, 2)  # 4 divides the blocks: conv_chunks.py flattens 4 x 4
    assert conv_tile(14, 6, lanes=8, unit=AVX2, pointwise=True) == conv_tile(14, 6, lanes=8, unit=AVX2)
    assert conv_tile(14, 3, lanes=24, unit=AVX512, pointwise=True) == conv_tile(14, 3, lanes=24, unit=AVX512)  # 24 lanes


@pytest.mark.parametrize("threads", [1, 2])
def test_a_projection_to_96_channels_at_14x14_matches_numpy(avx512, threads):
    func = bottleneck_end(64, 96, 14)
    record = recorded(func)
    assert any(p == "split" and a.endswith("by 7 -> ax3.outer, ax3.inner") for p, a in record), record
    assert any(p == "split" and a.endswith("by 3 -> ax1.outer, ax1.inner") for p, a in record), record
    assert_matches_numpy(func, 64, 96, 14, threads=threads)


def flat_tile(ci: int, co: int, size: int):
    composed = compose(bottleneck_end(ci, co, size))
    sch = default_schedule(composed.outputs, composed.placeholders, "f")
    stage = next(s for s in sch.stages if s.name.startswith("T_conv2d_NCHWc"))
    return conv_chunks.chunked_tile(stage, AVX512)


def test_ten_blocks_at_7x7_take_4_positions_x_5_blocks_flattened(avx512):
    # (cols, vectors, rows, chunk in input blocks, flat): 3 input blocks (15 KiB of filters) a chunk
    assert flat_tile(576, 160, 7) == (4, 5, 7, 3, True)
    assert flat_tile(960, 160, 7) == (4, 5, 7, 3, True)
    assert flat_tile(960, 96, 7) is None  # 6 blocks: conv.py's tile (7 x 3)
    assert flat_tile(960, 320, 7) == (4, 4, 7, 4, True)  # 4 divides 20 blocks: the square tile


@pytest.mark.parametrize("threads", [1, 2])
def test_a_projection_to_160_channels_at_7x7_matches_numpy(avx512, threads):
    func = bottleneck_end(96, 160, 7)
    record = recorded(func)
    assert any(p == "fuse" and a.startswith("T_conv2d_NCHWc: ax2") for p, a in record), record
    assert_matches_numpy(func, 96, 160, 7, threads=threads)
