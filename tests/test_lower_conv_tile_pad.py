"""conv_tile_pad.py: a strided convolution on the square tile (AVX-512's 32 registers,
NCHW16c) whose row 4 divides takes the tile a row and makes the padded window each tile
reads inside that tile, instead of a padded copy of the whole input before it: which
convolutions take it, what the schedule and the loop nest show (a window of 3 x 9
vectors for a 3x3 at stride 2, no copy of the whole input), and the compiled kernels
against numpy on one thread and two.  The unit is AVX-512's whatever the host."""

from __future__ import annotations

import pytest
from test_lower_conv_square import assert_matches_numpy, bottleneck_end

from relaylens.compiler.lower.schedule import conv, conv_chunks
from relaylens.compiler.lower.schedule.conv_chunks import SQUARE, chunked_tile
from relaylens.compiler.lower.schedule.conv_tile_pad import column_stride, wants_tile_pad
from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512
from relaylens.compiler.lower.te.compose import compose


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(conv, "host_unit", lambda: AVX512)
    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX512)


def scheduled(ci: int, co: int, size: int, k: int = 3, stride: int = 2):
    composed = compose(bottleneck_end(ci, co, size, k, stride))
    sch = default_schedule(composed.outputs, composed.placeholders, "tvmgen_default_fused_conv")
    return sch, next(s for s in sch.stages if s.name.startswith("T_conv2d_NCHWc"))


def test_which_convolutions_make_their_padded_window_in_the_tile(avx512):
    def wants(ci, co, size, k=3, stride=2, unit=AVX512):
        return wants_tile_pad(scheduled(ci, co, size, k, stride)[1], unit, SQUARE)

    assert wants(128, 128, 56)  # ResNet-50's layer2.0 stride-2 3x3, to 28x28
    assert not wants(256, 256, 28)  # layer3.0's, to 14x14: 4 does not divide the row (flattened as before)
    assert not wants(512, 512, 14)  # layer4.0's, to 7x7
    assert not wants(128, 128, 28, stride=1)  # a 3x3 at stride 1: the whole padded copy as before
    assert not wants(128, 128, 56, unit=AVX2)  # 16 registers: MLAS's tiles a row as before
    assert not wants(64, 96, 56)  # 6 output blocks: conv.py's tile
    assert wants(64, 64, 36, stride=3)  # a stride of 3 too (its windows do not overlap)
    assert wants(64, 64, 32, k=5)  # a 5x5 at stride 2, to 16x16


def test_the_stride_read_from_the_shapes(avx512):
    assert column_stride(scheduled(64, 64, 56)[1]) == 2
    assert column_stride(scheduled(64, 64, 36, stride=3)[1]) == 3
    assert column_stride(scheduled(64, 64, 28, stride=1)[1]) == 1


def test_the_tile_a_row_with_its_window(avx512):
    sch, stage = scheduled(128, 128, 56)
    assert chunked_tile(stage, AVX512) == (4, 4, 4, 1, False)  # a tile a row (flattened before), 4 rows a buffer
    record = [(s.primitive, s.args) for s in sch.record]
    assert ("compute_at", "T_pad at T_conv2d_NCHWc.ax3_3.outer") in record, record  # at the columns' tile loop
    assert not any(p == "parallel" and a.startswith("T_pad") for p, a in record)  # no copy of its own
    text = sch.record_text()
    assert "T_pad = allocate(float32, [1, 1, 3, 9, 16])" in text  # 3 rows x 9 columns of one input block
    assert ("unroll", "T_pad: ax3_4") in record, record  # the window's columns: no loop between their vectors
    assert "for ax3_4 in unrolled(9):" in text


@pytest.mark.parametrize("ci, co, size, k, stride", [
    (128, 128, 56, 3, 2),  # ResNet-50's layer2.0 3x3: 7 tiles a row, 8 input blocks in chunks of one
    (32, 64, 24, 3, 2),  # to 12x12: 3 tiles a row, the first and last windows on the border
    (64, 64, 36, 3, 3),  # stride 3
    (32, 64, 32, 5, 2),  # 5x5, padding 2
])
def test_tiles_with_their_windows_match_numpy(avx512, ci, co, size, k, stride):
    assert wants_tile_pad(scheduled(ci, co, size, k, stride)[1], AVX512, SQUARE)
    assert_matches_numpy(bottleneck_end(ci, co, size, k, stride), ci, co, size, k, stride)


def test_tiles_with_their_windows_on_two_threads_match_numpy(avx512):
    assert_matches_numpy(bottleneck_end(128, 128, 56, 3, 2), 128, 128, 56, 3, 2, threads=2)
