"""MobileNet v2's projections to 96 channels on a 32-register unit (conv.py
`three_block_tile`): a 1x1 convolution of 6 blocks of 16 lanes at 14x14 takes 7 columns x
3 blocks (21 accumulators, 7 broadcasts, 3 weight vectors), not the rule's 7 x 2; what
the schedule record shows, and the compiled kernel with bias, a residual add and relu
against numpy.  The unit is AVX-512's whatever the host."""

from __future__ import annotations

import pytest
from test_lower_conv_square import assert_matches_numpy, bottleneck_end, recorded

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


def test_a_projection_to_96_channels_at_14x14_matches_numpy(avx512):
    func = bottleneck_end(64, 96, 14)
    record = recorded(func)
    assert any(p == "split" and a.endswith("by 7 -> ax3.outer, ax3.inner") for p, a in record), record
    assert any(p == "split" and a.endswith("by 3 -> ax1.outer, ax1.inner") for p, a in record), record
    assert_matches_numpy(func, 64, 96, 14)
