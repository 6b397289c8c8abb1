"""Register tiles whose step over an input block's channels stays a loop on a 32-register
unit (conv_rolled.py): a 1x1 of one 24-lane block (MobileNet v2's projections to 24
channels at 56x56) takes 8 columns (16 accumulators, conv.py `wide_block_tile`), one of 2
blocks of 16 at 28x28 (its projections to 32 channels) 7 columns x 2 blocks (`pair_tile`),
and neither unrolls the input block's channels (`rci`); what the schedule record shows,
and the compiled kernels with bias, a residual add and relu against numpy on one thread
and two.  The unit is AVX-512's whatever the host."""

from __future__ import annotations

import numpy as np
import pytest
from lower_cases import Arr, Case
from test_lower_compiled import primitive_function
from test_lower_conv_square import bottleneck_end, recorded

from relaylens.compiler.ir.expr import Call, Function, Var, op
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.lower.pipeline import lower_function
from relaylens.compiler.lower.runtime.executable import _KernelCall
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import conv, conv_chunks
from relaylens.compiler.lower.schedule.conv import conv_tile
from relaylens.compiler.lower.schedule.conv_rolled import rolls_block_channels
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops.registry import as_ir_attrs


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(conv, "host_unit", lambda: AVX512)
    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX512)


def test_the_tiles_and_which_stay_a_loop():
    assert conv_tile(56, 1, lanes=24, unit=AVX512, pointwise=True) == (8, 1)  # 144 -> 24, 96 -> 24
    assert conv_tile(28, 2, unit=AVX512, pointwise=True) == (7, 2)  # 192 -> 32, 144 -> 32
    assert conv_tile(32, 2, unit=AVX512, pointwise=True) == (4, 2)  # 7 does not divide the row: two_block_tile
    assert conv_tile(7, 2, unit=AVX512, pointwise=True) == (7, 2)  # the rule's tile, unrolled
    assert rolls_block_channels(56, 1, 24, AVX512, pointwise=True)
    assert rolls_block_channels(28, 2, 16, AVX512, pointwise=True)
    assert not rolls_block_channels(28, 2, 16, AVX512, pointwise=False)  # a 3x3 of 2 blocks
    assert not rolls_block_channels(7, 2, 16, AVX512, pointwise=True)
    assert not rolls_block_channels(28, 4, 16, AVX512, pointwise=True)  # the square tile
    assert not rolls_block_channels(56, 2, 16, AVX2, pointwise=True)  # 16 lanes on AVX2: two registers a block
    assert not rolls_block_channels(28, 2, 8, AVX2, pointwise=True)


def projection_end(ci: int, co: int, size: int, lanes_in: int, lanes_out: int) -> Function:
    """relu(conv 1x1 + bias + residual), the input in NCHW{lanes_in}c, the output in
    NCHW{lanes_out}c, as MobileNet v2's projections are fused (relu: any epilogue)."""
    return bottleneck_end(ci, co, size, lanes_in=lanes_in, lanes_out=lanes_out)


def assert_projection_matches_numpy(ci: int, co: int, size: int, lanes_in: int, lanes_out: int, threads: int):
    func = projection_end(ci, co, size, lanes_in, lanes_out)
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", JIT(num_threads=threads))
    rng = np.random.default_rng(ci + co + size)
    x = rng.standard_normal((1, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci)) / np.sqrt(ci)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    r = rng.standard_normal((1, co, size, size)).astype("float32")

    def blocked(a, lanes):
        n, c, h, wd = a.shape
        return np.ascontiguousarray(a.reshape(n, c // lanes, lanes, h, wd).transpose(0, 1, 3, 4, 2))

    packed = np.ascontiguousarray(w.reshape(co // lanes_out, lanes_out, ci // lanes_in, lanes_in, 1, 1)
                                  .transpose(0, 2, 4, 5, 3, 1))
    got = _KernelCall(lowered)(blocked(x, lanes_in), packed,
                               np.ascontiguousarray(b.reshape(1, co // lanes_out, 1, 1, lanes_out)),
                               blocked(r, lanes_out))
    want = np.maximum(np.einsum("oc,nchw->nohw", w.astype("float64"), x.astype("float64"))
                      + b[None, :, None, None] + r, 0)
    n, cb, h, wd, lanes = got.shape
    np.testing.assert_allclose(got.transpose(0, 1, 4, 2, 3).reshape(n, cb * lanes, h, wd), want,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_projection_to_24_channels_at_56x56_matches_numpy(avx512, threads):
    record = recorded(projection_end(144, 24, 56, 16, 24))
    assert any(p == "split" and a.endswith("by 8 -> ax3.outer, ax3.inner") for p, a in record), record
    assert not any(p == "unroll" and a.endswith(": rci") for p, a in record), record  # the block's channels a loop
    assert_projection_matches_numpy(144, 24, 56, 16, 24, threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_projection_to_32_channels_at_28x28_matches_numpy(avx512, threads):
    record = recorded(projection_end(192, 32, 28, 16, 16))
    assert any(p == "split" and a.endswith("by 7 -> ax3.outer, ax3.inner") for p, a in record), record
    assert not any(p == "unroll" and a.endswith(": rci") for p, a in record), record
    assert_projection_matches_numpy(192, 32, 28, 16, 16, threads)


def test_the_square_tile_still_unrolls_the_block_channels(avx512):
    record = recorded(projection_end(64, 64, 28, 16, 16))
    assert any(p == "unroll" and a.endswith(": rci") for p, a in record), record
