"""A flattened 1x1 whose packed filters are one chunk read by one group of output blocks
asks for no filter lines (conv_prefetch.py `single_piece`): `prefetch_weights` asks for
the group's next chunk or the next group's first, and there is neither, so the lines it
computed lay past the filters' end.  MobileNet v2's 384 -> 64 + residual at 14x14 (4
blocks of 16, 24 input blocks in one chunk: conv_chunks.py `_flat_square`) asked for 64
such lines a tile; ResNet-50's 1024 -> 256 at 14x14 (4 groups) still asks.  The kernels
against numpy on one thread and two.  The unit is AVX-512's whatever the host."""

from __future__ import annotations

import pytest
from test_lower_conv_square import assert_matches_numpy, bottleneck_end, recorded

from relaylens.compiler.lower.schedule import conv, conv_chunks
from relaylens.compiler.lower.schedule.vector_unit import AVX512


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(conv, "host_unit", lambda: AVX512)
    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX512)


def filter_prefetches(ci: int, co: int, size: int) -> int:
    return sum(1 for p, a in recorded(bottleneck_end(ci, co, size)) if p == "prefetch" and a.startswith("p1 "))


def test_one_chunk_of_one_group_asks_for_no_filter_lines(avx512):
    assert filter_prefetches(384, 64, 14) == 0  # MobileNet v2's features.8-10 projections
    assert filter_prefetches(192, 64, 14) == 0  # features.7's
    assert filter_prefetches(1024, 256, 14) == 84  # 4 groups: the next group's filters
    assert filter_prefetches(576, 160, 7) == 20  # chunks of 3 input blocks: the next chunk's


@pytest.mark.parametrize("threads", [1, 2])
def test_a_projection_to_64_channels_at_14x14_matches_numpy(avx512, threads):
    assert_matches_numpy(bottleneck_end(384, 64, 14), 384, 64, 14, threads=threads)
