"""The square register tile of NCHW16c convolutions on a 32-register unit (AVX-512):
conv.py `square_tile` (4 columns x 4 blocks a row where 4 divides the width and the
blocks) and conv_chunks.py `_flat_square` (the same tile over a 1x1's rows flattened
where 4 does not divide the width: 14x14, 7x7), which tiles are taken, what the schedule
record shows, and the compiled kernels with bias, a residual add and relu against numpy
(on one thread and on two).  The unit is AVX-512's whatever the host."""

from __future__ import annotations

import numpy as np
import pytest
from lower_cases import Arr, Case
from test_lower_compiled import primitive_function

from relaylens.compiler.ir.expr import Call, Function, Var, op
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.lower.pipeline import lower_function
from relaylens.compiler.lower.runtime.executable import _KernelCall
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import conv, conv_chunks
from relaylens.compiler.lower.schedule.conv import conv_tile
from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512
from relaylens.compiler.lower.te.compose import compose
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops.registry import as_ir_attrs

LANES = 16


@pytest.fixture
def avx512(monkeypatch):
    monkeypatch.setattr(conv, "host_unit", lambda: AVX512)
    monkeypatch.setattr(conv_chunks, "host_unit", lambda: AVX512)


def bottleneck_end(ci: int, co: int, size: int, k: int = 1, stride: int = 1,
                   lanes_in: int = LANES, lanes_out: int = LANES) -> Function:
    """relu(conv + bias + residual), the input in NCHW{lanes_in}c and the output in
    NCHW{lanes_out}c (NCHW16c both: as ResNet-50's bottleneck ends are fused)."""
    pad = k // 2
    attrs = {"strides": (stride, stride), "padding": (pad,) * 4, "channels": co, "kernel_size": (k, k),
             "data_layout": f"NCHW{lanes_in}c", "kernel_layout": f"OIHW{lanes_in}i{lanes_out}o",
             "out_layout": f"NCHW{lanes_out}c"}
    case = Case("nn.contrib_conv2d_NCHWc", [Arr((1, ci // lanes_in, size, size, lanes_in)),
                                            Arr((co // lanes_out, ci // lanes_in, k, k, lanes_in, lanes_out))],
                attrs, "end")
    conv_func = primitive_function(case)
    out = case.out_type()
    bias_ty = TensorType((1, co // lanes_out, 1, 1, lanes_out), "float32")
    bias = Var("p2", bias_ty, ty=bias_ty)
    residual = Var("p3", out, ty=out)
    added = Call(op("add"), (Call(op("add"), (conv_func.body, bias), as_ir_attrs({}), ty=out), residual),
                 as_ir_attrs({}), ty=out)
    body = Call(op("nn.relu"), (added,), as_ir_attrs({}), ty=out)
    return Function((*conv_func.params, bias, residual), body, attrs=conv_func.attrs)


def recorded(func: Function) -> list[tuple[str, str]]:
    composed = compose(func)
    sch = default_schedule(composed.outputs, composed.placeholders, "tvmgen_default_fused_conv")
    return [(s.primitive, s.args) for s in sch.record]


def assert_matches_numpy(func: Function, ci: int, co: int, size: int, k: int = 1, stride: int = 1,
                         threads: int = 1) -> None:
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", JIT(num_threads=threads))
    rng = np.random.default_rng(ci + co + size)
    out = (size + 2 * (k // 2) - k) // stride + 1
    x = rng.standard_normal((1, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci, k, k)) / np.sqrt(ci * k * k)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    r = rng.standard_normal((1, co, out, out)).astype("float32")

    def blocked(a):
        n, c, h, wd = a.shape
        return np.ascontiguousarray(a.reshape(n, c // LANES, LANES, h, wd).transpose(0, 1, 3, 4, 2))

    packed = np.ascontiguousarray(w.reshape(co // LANES, LANES, ci // LANES, LANES, k, k).transpose(0, 2, 4, 5, 3, 1))
    got = _KernelCall(lowered)(blocked(x), packed, np.ascontiguousarray(b.reshape(1, co // LANES, 1, 1, LANES)),
                               blocked(r))
    attrs = {"strides": (stride, stride), "padding": (k // 2,) * 4}
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], attrs) + b[None, :, None, None] + r, 0)
    n, cb, h, wd, lanes = got.shape
    np.testing.assert_allclose(got.transpose(0, 1, 4, 2, 3).reshape(n, cb * lanes, h, wd), want,
                               rtol=1e-4, atol=1e-4)


def test_the_square_tile_where_4_divides_the_row_and_the_blocks():
    assert conv_tile(28, 32, unit=AVX512) == (4, 4)  # ResNet-50's 1x1s at 28x28 (7 x 2 before)
    assert conv_tile(56, 4, unit=AVX512) == (4, 4)  # and at 56x56 (8 x 2 before)
    assert conv_tile(56, 6, unit=AVX512) == (8, 2)  # blocks 4 does not divide: as before
    assert conv_tile(14, 32, unit=AVX512) == (7, 2)  # a width 4 does not divide: as before (flattened below)
    assert conv_tile(56, 4, lanes=8, unit=AVX512) == (8, 2)  # blocks of half a register: as before
    assert conv_tile(28, 4, depthwise=True, unit=AVX512) == (14, 1)
    assert conv_tile(28, 32, lanes=8, unit=AVX2) == (3, 4)  # AVX2's tile is costed (conv.py `_modelled_tile`)


def test_the_square_tile_over_a_1x1s_rows_flattened(avx512):
    def tile(ci, co, size, k=1):
        composed = compose(bottleneck_end(ci, co, size, k))
        sch = default_schedule(composed.outputs, composed.placeholders, "f")
        stage = next(s for s in sch.stages if s.name.startswith("T_conv2d_NCHWc"))
        return conv_chunks.chunked_tile(stage, AVX512)

    # (cols, vectors, rows, chunk, flat).  A 1x1 at 14x14 (the plane's sums, 49 KiB,
    # beyond SQUARE_ACC_BYTES): every input block in one chunk over the whole plane
    assert tile(256, 1024, 14) == (4, 4, 14, 16, True)  # ResNet-50's layer3 end
    assert tile(384, 64, 14) == (4, 4, 7, 24, True)  # a single group of blocks: half the rows, two loop trips
    # at 7x7 (12 KiB of sums): 4 input blocks a chunk (16 KiB of filters), 12 tiles and a tail
    assert tile(2048, 512, 7) == (4, 4, 7, 4, True)  # layer4's 1x1
    # a 3x3: one input block a chunk (36 KiB of filters), the rows whose sums fit 32 KiB
    assert tile(256, 256, 14, k=3) == (4, 4, 7, 1, True)
    assert tile(512, 512, 7, k=3) == (4, 4, 7, 1, True)
    assert tile(128, 128, 28, k=3) == (4, 4, 4, 1, True)  # 4 divides the row: chunked all the same, 4 rows a buffer
    assert tile(128, 512, 28) is None  # 4 divides the row: conv.py's square tile
    assert tile(960, 96, 7) is None  # 6 blocks: conv.py's tile


@pytest.mark.parametrize("ci, co, size, k, stride", [
    (128, 128, 28, 1, 1),  # a row of 28: 7 tiles of 4 x 4
    (64, 64, 56, 1, 1),  # 14 a row
    (64, 64, 56, 3, 2),  # a stride-2 3x3 to 28x28: a tile a row, its padded window made in it (conv_tile_pad.py)
    (128, 256, 14, 1, 1),  # flattened: 49 tiles over the plane
    (256, 64, 7, 1, 1),  # flattened: 12 tiles and a 1-position tail, a single group, 4 input blocks a chunk
    (64, 64, 14, 1, 1),  # a single group: two buffers of 7 rows
    (64, 128, 28, 3, 2),  # a stride-2 3x3 to 14x14, flattened: one input block a chunk, 7 rows a buffer
    (64, 64, 14, 3, 2),  # to 7x7
    (32, 64, 7, 3, 1),  # a 3x3 at stride 1
])
def test_square_tiles_match_numpy(avx512, ci, co, size, k, stride):
    func = bottleneck_end(ci, co, size, k, stride)
    record = recorded(func)
    flat = any(p == "fuse" and a.startswith("T_conv2d_NCHWc: ax2") for p, a in record)
    by_tile = k > 1 and stride > 1 and ((size + 2 * (k // 2) - k) // stride + 1) % 4 == 0  # conv_tile_pad.py
    assert flat == (k > 1 and not by_tile or size % 4 != 0), record
    if not flat:
        assert any(p == "split" and a.endswith("by 4 -> ax3.outer, ax3.inner") for p, a in record), record
    assert_matches_numpy(func, ci, co, size, k, stride)


@pytest.mark.parametrize("ci, co, size, k, stride", [(128, 128, 28, 1, 1), (128, 256, 14, 1, 1), (128, 64, 7, 1, 1),
                                                      (64, 128, 28, 3, 2)])
def test_square_tiles_on_two_threads_match_numpy(avx512, ci, co, size, k, stride):
    assert_matches_numpy(bottleneck_end(ci, co, size, k, stride), ci, co, size, k, stride, threads=2)
