"""A large 1x1 convolution's parallel loop over ROW_PARTS parts of its rows first
(schedule/conv_tile_end.py, conv.py `_rows_first`): where the schedule record shows it
and where not, and the compiled kernels, conv.py's tile and conv_chunks.py's buffer of
rows, on two threads against nn.conv2d's numpy reference.  The unit is AVX2's whatever
the host (conv_chunks.py's schedule is AVX2's)."""

from __future__ import annotations

import pytest
from test_lower_conv_chunks import assert_1x1_matches_numpy, nchwc, relu_bias_function, steps, with_residual

from relaylens.compiler.ir.expr import Function
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import conv_chunks
from relaylens.compiler.lower.schedule.conv_tile_end import ROW_PARTS
from relaylens.compiler.lower.schedule.vector_unit import AVX2


@pytest.fixture
def avx2(monkeypatch):
    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX2)


def parallel_loop(func: Function) -> str:
    return next(a for p, a in steps(func) if p == "fuse" and a.startswith("T_relu:"))


def test_large_1x1_takes_parts_of_its_rows_first(avx2):
    assert ROW_PARTS == 2
    # conv.py's tile (the filters fit, 2 x 6 divides the row): 16 -> 96 at 112x112, its 0.8
    # MB input beyond L2; the single chunk of a flattened tile (conv_chunks.py): 64 -> 256
    # at 56x56
    assert parallel_loop(relu_bias_function(nchwc(16, 96, 112, 1)[0])).startswith(
        "T_relu: ax0, ax2.outer, ax1.outer, ax2.inner ->")
    assert parallel_loop(with_residual(64, 256, 56)).startswith(
        "T_relu: ax0, ax2.outer.outer, ax1.outer, ax2.outer.inner ->")
    # conv_chunks.py's: 256 -> 64 at 56x56, 28 buffers of 2 rows in 2 parts of 14
    chunked = steps(relu_bias_function(nchwc(256, 64, 56, 1)[0]))
    assert ("split", "T_relu: ax2.outer by 14 -> ax2.outer.outer, ax2.outer.inner") in chunked
    assert any(p == "fuse" and a.startswith("T_relu: ax0, ax2.outer.outer, ax1.outer, ax2.outer.inner ->")
               for p, a in chunked)
    # not: an input within L2 (64 channels at 28x28), a weight beyond half of it (1024 ->
    # 256 at 14x14), a 3x3 filter: the block groups first
    assert parallel_loop(relu_bias_function(nchwc(64, 64, 28, 1)[0])).startswith("T_relu: ax0, ax1.outer, ax2.outer ->")
    assert parallel_loop(relu_bias_function(nchwc(1024, 256, 14, 1)[0])).startswith(
        "T_relu: ax0, ax1.outer, ax2.outer ->")
    assert parallel_loop(relu_bias_function(nchwc(128, 64, 56, 3)[0])).startswith(
        "T_relu: ax0, ax1.outer, ax2.outer ->")


@pytest.mark.parametrize("ci,co,residual", [(64, 256, True), (256, 64, False), (256, 128, False)])
def test_row_parts_on_two_threads_match_numpy(avx2, ci, co, residual):
    size = 56
    func = with_residual(ci, co, size) if residual else relu_bias_function(nchwc(ci, co, size, 1)[0])
    assert_1x1_matches_numpy(func, JIT(num_threads=2), ci, co, size, residual, seed=8)
