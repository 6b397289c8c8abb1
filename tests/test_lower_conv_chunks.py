"""Blocked convolutions summed a chunk of input channels at a time (schedule/conv_chunks.py):
when the chunked loop order is taken (a 16-register unit, filters of a group beyond
WEIGHT_BYTES) and when not, what the schedule record shows (the accumulator tile inside
the chunk, the tile dividing the width), and the compiled NCHWc kernels, with bias and
relu fused, against nn.conv2d's numpy reference.  The unit is AVX2's whatever the host
(its code runs on AVX-512 hosts too)."""

from __future__ import annotations

import numpy as np
import pytest
from lower_cases import Arr, Case
from test_lower_compiled import primitive_function

from relaylens.compiler.ir.expr import Call, Function, Tuple, Var, op
from relaylens.compiler.ir.types import TensorType, TupleType
from relaylens.compiler.lower.pipeline import lower_function
from relaylens.compiler.lower.runtime.executable import _KernelCall
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import conv_chunks, conv_prefetch
from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512
from relaylens.compiler.lower.te.compose import compose
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops.registry import as_ir_attrs

LANES = 8


@pytest.fixture(scope="module")
def jit():
    return JIT()


def nchwc(ci: int, co: int, size: int, k: int, stride: int = 1, batch: int = 1,
          pad: int | None = None) -> tuple[Case, dict]:
    pad = k // 2 if pad is None else pad
    attrs = {"strides": (stride, stride), "padding": (pad,) * 4, "channels": co, "kernel_size": (k, k),
             "data_layout": f"NCHW{LANES}c", "kernel_layout": f"OIHW{LANES}i{LANES}o",
             "out_layout": f"NCHW{LANES}c"}
    case = Case("nn.contrib_conv2d_NCHWc", [Arr((batch, ci // LANES, size, size, LANES)),
                                            Arr((co // LANES, ci // LANES, k, k, LANES, LANES))], attrs,
                f"{ci}to{co}_{size}_k{k}s{stride}_n{batch}")
    return case, {"strides": (stride, stride), "padding": (pad,) * 4}


def relu_bias_function(case: Case) -> Function:
    """nn.relu(add(conv, bias)) as FuseOps makes it: the epilogue reads the blocked result in place."""
    conv_func = primitive_function(case)
    out = case.out_type()
    bias_ty = TensorType((1, out.shape[1], 1, 1, LANES), "float32")
    bias = Var("p2", bias_ty, ty=bias_ty)
    added = Call(op("add"), (conv_func.body, bias), as_ir_attrs({}), ty=out)
    body = Call(op("nn.relu"), (added,), as_ir_attrs({}), ty=out)
    return Function((*conv_func.params, bias), body, attrs=conv_func.attrs)


def steps(func: Function) -> list[tuple[str, str]]:
    composed = compose(func)
    sch = default_schedule(composed.outputs, composed.placeholders, "tvmgen_default_fused_conv")
    return [(s.primitive, s.args) for s in sch.record]


def unblock(a: np.ndarray) -> np.ndarray:
    n, cb, h, w, b = a.shape
    return a.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def block_weight(w: np.ndarray) -> np.ndarray:
    o, i, kh, kw = w.shape
    return w.reshape(o // LANES, LANES, i // LANES, LANES, kh, kw).transpose(0, 2, 4, 5, 3, 1).copy()


@pytest.mark.parametrize("ci,co,size,k,stride,batch", [
    (256, 32, 6, 1, 1, 1),  # 1x1: 3 positions x 4 blocks over 6 rows flattened, 256 channels in chunks of 128
    (64, 32, 7, 3, 1, 1),  # 3x3 at 7x7: 3 x 4 over the 49 positions, a 1-position tail, chunks of 8 channels
    (64, 32, 14, 3, 2, 1),  # 3x3 stride 2 to 7x7: flattened alike
    (64, 16, 14, 3, 1, 1),  # 3x3 at 14x14: 5 columns x 2 blocks, a 4-column tail
    (64, 16, 10, 3, 2, 1),  # 3x3 stride 2 to 5x5: 5 columns x 2 blocks, chunks of 16 channels
    (64, 32, 28, 3, 2, 1),  # 3x3 stride 2 to 14x14: 3 x 4 and a 2-column tail, 2 of the 14 rows a buffer
    (256, 32, 6, 1, 1, 2),  # a batch of 2: the batch in the parallel loop
    (256, 64, 7, 1, 1, 1),  # 1x1 at 7x7: 3 x 4 over the 49 positions, a 1-position tail
    (512, 64, 1, 1, 1, 1),  # one pixel (a squeeze-excitation's 1x1): 1 column x 8 blocks
    # 1x1 at 14x14: 3 positions x 4 blocks over 7 rows flattened (98 = 32 x 3 + 2)
    (256, 32, 14, 1, 1, 1),
    (256, 32, 14, 1, 1, 2),  # a batch of 2, flattened
    (1024, 24, 14, 1, 1, 1),  # 3 blocks: 7 x 1 divides the row; 3 x 3 over the 98 positions flattened
    (144, 24, 56, 1, 1, 1),  # MobileNet v2's projection: 3 x 3 over two rows flattened, 72 channels a chunk
    (1024, 40, 14, 1, 1, 1),  # 5 blocks: 2 x 5, and no wider tile of 5 blocks fits: not flattened
    (512, 32, 28, 1, 2, 1),  # stride 2 to 14x14, flattened
    (256, 32, 13, 1, 1, 1),  # 13 columns, a row at a time: 3 x 4 and a 1-column tail, not flattened
    (2048, 8, 14, 1, 1, 1),  # one block: 7 x 1 divides the row, not flattened
    (320, 160, 7, 1, 1, 1),  # 20 blocks at 7x7: 1 x 10 a row; 2 x 5 over the 49 positions
    (384, 96, 14, 1, 1, 1),  # MobileNet v2's projection at 14x14: 2 x 6 a row, 64 channels a chunk
    (96, 576, 14, 1, 1, 1),  # its expansion: 2 x 6 a row, 48 channels a chunk
])
def test_chunked_conv_with_bias_and_relu_matches_numpy(avx2, jit, ci, co, size, k, stride, batch):
    case, attrs = nchwc(ci, co, size, k, stride, batch)
    func = relu_bias_function(case)
    recorded = steps(func)
    assert any(p == "cache_accumulator" and a.startswith("T_conv2d_NCHWc at ") for p, a in recorded)
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((batch, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci, k, k)) / np.sqrt(ci * k * k)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    xb = np.ascontiguousarray(x.reshape(batch, ci // LANES, LANES, size, size).transpose(0, 1, 3, 4, 2))
    bb = np.ascontiguousarray(b.reshape(1, co // LANES, 1, 1, LANES))
    got = _KernelCall(lowered)(xb, block_weight(w), bb)
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], attrs) + b[None, :, None, None], 0)
    np.testing.assert_allclose(unblock(got), want, rtol=1e-4, atol=1e-4)


def with_residual(ci: int, co: int, size: int) -> Function:
    """relu(conv 1x1 + bias + residual), ResNet-50's bottleneck end."""
    conv_func = relu_bias_function(nchwc(ci, co, size, 1)[0])
    out = conv_func.body.ty
    residual = Var("p3", out, ty=out)
    body = Call(op("nn.relu"), (Call(op("add"), (conv_func.body.args[0], residual), as_ir_attrs({}), ty=out),),
                as_ir_attrs({}), ty=out)
    return Function((*conv_func.params, residual), body, attrs=conv_func.attrs)


def assert_1x1_matches_numpy(func: Function, jit, ci: int, co: int, size: int, residual: bool, seed: int) -> None:
    """`func` (relu_bias_function's 1x1, or with_residual's) lowered and run on random
    NCHW8c inputs, against numpy's convolution."""
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci, 1, 1)) / np.sqrt(ci)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    r = rng.standard_normal((1, co, size, size)).astype("float32")

    def blocked(a):
        return np.ascontiguousarray(a.reshape(1, a.shape[1] // LANES, LANES, size, size).transpose(0, 1, 3, 4, 2))

    args = [blocked(x), block_weight(w), np.ascontiguousarray(b.reshape(1, co // LANES, 1, 1, LANES))]
    got = _KernelCall(lowered)(*args, *([blocked(r)] if residual else []))
    attrs = {"strides": (1, 1), "padding": (0, 0, 0, 0)}
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], attrs) + b[None, :, None, None] + (r if residual else 0), 0)
    np.testing.assert_allclose(unblock(got), want, rtol=1e-4, atol=1e-4)


def test_flattened_chunked_conv_with_a_residual_add_matches_numpy(avx2, jit):
    """ResNet-50's bottleneck end at 14x14 (smaller): relu(conv + bias + residual), the
    tile over the flattened rows (chunked_tile's `flat`)."""
    ci, co, size = 512, 32, 14
    func = with_residual(ci, co, size)
    assert any(p == "fuse" and a.startswith("T_conv2d_NCHWc: ax2") for p, a in steps(func))
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=True, seed=6)


def test_single_chunk_1x1_with_a_residual_add_matches_numpy(avx2, jit):
    """ResNet-50's layer2 end (fewer filters): 128 -> 64 at 28x28 + residual, its 16 KiB
    of filters a group in one chunk (no buffer between chunks), the tile ending in the
    epilogue; the sums numpy's."""
    ci, co, size = 128, 64, 28
    func = with_residual(ci, co, size)
    recorded = steps(func)
    assert ("split", "T_conv2d_NCHWc: rcb by 16 -> rcb.outer, rcb.inner") in recorded, recorded
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=True, seed=8)


def test_taller_flattened_chunked_conv_with_a_residual_add_matches_numpy(avx2, jit):
    """MobileNet v2's 576 -> 96 at 14x14 with its residual add: 3 x 4 over 7 rows
    flattened (32 tiles and a 2-position tail), 64 input channels a chunk, 9 chunks, its
    filters' lines asked for a chunk ahead."""
    ci, co, size = 576, 96, 14
    func = with_residual(ci, co, size)
    recorded = steps(func)
    assert ("split", "T_conv2d_NCHWc: rcb by 8 -> rcb.outer, rcb.inner") in recorded, recorded
    assert any(p == "fuse" and a.startswith("T_conv2d_NCHWc: ax2") for p, a in recorded), recorded
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=True, seed=7)


@pytest.mark.parametrize("ci, co, size", [(256, 64, 13), (576, 96, 14)])
def test_row_tile_chunked_conv_with_a_residual_add_matches_numpy(avx2, jit, monkeypatch, ci, co, size):
    """A chunked 1x1 whose tile stays a row (3 x 4 a row of 13, one row a buffer; 576 ->
    96 at 14x14 with FLAT_SLACK none: 2 x 6, 64 input channels a chunk, ROW_WEIGHT_BYTES)
    with a residual add."""
    monkeypatch.setattr(conv_chunks, "FLAT_SLACK", -1.0)
    func = with_residual(ci, co, size)
    recorded = steps(func)
    assert ("split", "T_conv2d_NCHWc: rcb by 8 -> rcb.outer, rcb.inner") in recorded, recorded
    assert not any(p == "fuse" and a.startswith("T_conv2d_NCHWc: ax2") for p, a in recorded), recorded
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=True, seed=7)


@pytest.mark.parametrize("size, asked", [(56, 16), (28, 16), (14, 0)])
def test_a_1x1_from_28x28_asks_for_its_input_lines_ahead(avx2, jit, size, asked):
    """ResNet-50's layer1 bottleneck end, 64 -> 256 + residual: at 56x56 and 28x28 each
    tile of the flattened tile loop asks for two lines of each of the chunk's 8 input
    blocks (conv_prefetch.py `prefetch_input`), at 14x14 for none; the result still numpy's."""
    ci, co = 64, 256
    func = with_residual(ci, co, size)
    recorded = [a for p, a in steps(func) if p == "prefetch" and a.startswith("p0 ")]
    assert len(recorded) == asked
    assert all(a.endswith(".fused.outer") for a in recorded)  # the tile loop, outside the reduction
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=True, seed=11)


@pytest.mark.parametrize("ci,co,size,buffer", [
    (256, 64, 14, True),  # four chunks of 64 channels: the buffer between them
    (64, 256, 8, False),  # the filters fit, a flattened tile: one chunk, no buffer
])
def test_chunked_tile_ends_in_the_epilogue(avx2, jit, ci, co, size, buffer):
    """relu(conv + bias + residual): the first chunk's tile starts at zero, the last's goes
    through the epilogue straight into T_relu (cache_accumulator's `into`), which has no
    loop of its own over the buffer; a single chunk needs no buffer at all."""
    func = with_residual(ci, co, size)
    assert ("cache_accumulator", "T_conv2d_NCHWc at rcb.inner into T_relu") in steps(func)
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    text = lowered.schedule_text.split("# step ")[-1]  # the loop nest as scheduled
    assert ("T_conv2d_NCHWc = allocate(" in text) == buffer
    assert ("if rcb.outer == 0:" in text) == buffer
    assert not any(line.strip().startswith("T_relu[") and "T_conv2d_NCHWc[" in line for line in text.splitlines())
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=True, seed=10)


def test_chunked_conv_that_is_an_output_too_ends_in_its_copy(avx2, jit):
    """(conv, relu(conv + bias)): cache_write's blocked copy is the epilogue the tile ends
    in (cache_accumulator's `into`), relu reads the copy; both outputs what numpy makes them."""
    ci, co, size = 256, 32, 14
    case, attrs = nchwc(ci, co, size, 1)
    f = relu_bias_function(case)
    conv = f.body.args[0].args[0]
    func = Function(f.params, Tuple((conv, f.body), ty=TupleType((conv.ty, f.body.ty))), attrs=f.attrs)
    assert ("cache_accumulator", "T_conv2d_NCHWc.local at rcb.inner into T_conv2d_NCHWc") in steps(func)
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci, 1, 1)) / np.sqrt(ci)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    xb = np.ascontiguousarray(x.reshape(1, ci // LANES, LANES, size, size).transpose(0, 1, 3, 4, 2))
    got = _KernelCall(lowered)(xb, block_weight(w), np.ascontiguousarray(b.reshape(1, co // LANES, 1, 1, LANES)))
    want = get_op("nn.conv2d").evaluate([x, w], attrs)
    np.testing.assert_allclose(unblock(got[0]), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(unblock(got[1]), np.maximum(want + b[None, :, None, None], 0), rtol=1e-4, atol=1e-4)


def test_chunked_nchw_conv_reads_the_blocks_back_in_its_epilogue(avx2, jit):
    """nn.conv2d in NCHW (no AlterOpLayout): the blocked compute of 16 lanes (two AVX2
    registers a block), the epilogue reading the result back a channel per lane."""
    case = Case("nn.conv2d", [Arr((1, 64, 7, 7)), Arr((48, 64, 3, 3))], {"padding": (1, 1)}, "nchw")
    conv_func = primitive_function(case)
    body = Call(op("nn.relu"), (conv_func.body,), as_ir_attrs({}), ty=case.out_type())
    func = Function(conv_func.params, body, attrs=conv_func.attrs)
    recorded = steps(func)
    assert ("cache_accumulator", "T_conv2d_NCHW16c at rc.inner") in recorded
    lowered = lower_function(func, "tvmgen_default_fused_nn_conv2d_nn_relu", "<case>", jit)
    x, w = case.inputs(seed=4)
    want = np.maximum(case.reference([x, w])[0], 0)
    np.testing.assert_allclose(_KernelCall(lowered)(x, w), want, rtol=1e-4, atol=1e-4)


def test_chunked_tile_choice(avx2, monkeypatch):
    def tile(ci, co, size, k, unit=AVX2, stride=1):
        composed = compose(primitive_function(nchwc(ci, co, size, k, stride)[0]))
        sch = default_schedule(composed.outputs, composed.placeholders, "f")
        conv = next(s for s in sch.stages if s.name.startswith("T_conv2d_NCHWc"))
        return conv_chunks.chunked_tile(conv, unit)

    # (cols, vectors, rows, chunk, flat): the tile divides the blocks, and the width for a
    # 1x1 filter; a chunk's filters (chunk x window x 8 input channels x vectors x 8
    # lanes) within 8 KiB (WEIGHT_BYTES)
    # ResNet-50's layer3 1x1: 128 input blocks, 8 a chunk; 2 x 4 divided the row, 3 x 4
    # over the 7 rows' 98 positions flattened (32 tiles and a 2-position tail)
    assert tile(1024, 256, 14, 1) == (3, 4, 7, 8, True)
    # layer4's 1x1: 3 x 4 and a 1-column tail a row; flattened, 16 tiles and one tail for 7 rows
    assert tile(2048, 512, 7, 1) == (3, 4, 7, 8, True)
    # a 3x3 filter: 3 columns x 4 blocks (MLAS's tile), the rest of the row a tile of its own
    # layer4's 3x3: 3 + 3 + 1 columns a row; flattened, 16 tiles and a tail of 1 for the plane
    assert tile(512, 512, 7, 3) == (3, 4, 7, 1, True)
    assert tile(512, 512, 14, 3, stride=2) == (3, 4, 7, 1, True)  # its stride-2 3x3 alike
    assert tile(256, 256, 14, 3) == (3, 4, 2, 1, False)  # layer3's: 4 x 3 + 2, 2 rows (half of ACC_BYTES)
    # a filter wider than 1x1 keeps half of ACC_BYTES for the sums (its input rows beside
    # them in L1): the stride-2 3x3 of 128 channels at 56x56, 2 rows of 28x28 (4 before),
    # flattened (18 tiles and a 2-position tail against 9 and a 1-column tail a row)
    assert tile(128, 128, 56, 3, stride=2) == (3, 4, 2, 1, True)
    # a 1x1 whose group's filters fit in 16 KiB over an input within L2: a single chunk
    # (ResNet-50's layer2 ends, 128 -> 512 at 28x28: 16 blocks, not 8); 512 -> 128 keeps 8
    assert tile(128, 512, 28, 1) == (3, 4, 4, 16, True)
    assert tile(512, 128, 28, 1) == (3, 4, 4, 8, True)
    assert tile(144, 24, 56, 1) == (3, 3, 2, 9, True)  # an input beyond L2: 72 channels a chunk
    # blocks of 16 lanes, two registers each: 3 x 2 would need 12 + 3 broadcasts + 2 weights
    assert conv_chunks._tile(14, 16, AVX2, 2, tail=True) == (2, 2)
    recorded = steps(relu_bias_function(nchwc(64, 32, 14, 3)[0]))
    assert ("split", "T_conv2d_NCHWc: ax3_2 by 3 with a tail -> ax3_2.outer, ax3_2.inner") in recorded
    assert tile(256, 64, 56, 1) == (3, 4, 2, 8, True)  # two rows of 56 columns x 32 channels: 14 KiB of sums
    assert tile(2048, 8, 14, 1) == (7, 1, 14, 32, False)  # one block, 7 x 1 a row: flattened, no fewer cycles
    assert tile(256, 64, 13, 1) == (3, 4, 1, 8, False)  # a row at a time: nothing to flatten
    # MobileNet v2's 960 -> 160 at 7x7: 1 x 10 a row (a single column), so the flattened
    # tile takes its own blocks, 2 x 5 over the 49 positions
    assert tile(960, 160, 7, 1) == (2, 5, 7, 6, True)
    # its projections to 24 channels (3 blocks) at 56x56: 7 x 1 divides the row, its
    # filters fit (one block), but 3 x 3 over two rows flattened costs fewer cycles and
    # its filters do not: chunked, 72 or 48 input channels a chunk
    assert tile(144, 24, 56, 1) == (3, 3, 2, 9, True)
    assert tile(96, 24, 56, 1) == (3, 3, 2, 6, True)
    # its chunked 1x1s at 14x14 whose tile a row is 2 x 6 (two rows of 14 columns in the
    # buffer) take 3 x 4 over 7 rows flattened instead (_taller_flat: 0.5% more modelled
    # cycles, the group's filters read twice instead of 7 times), 8 KiB of filters a chunk;
    # 64 -> 384's 12 KiB a group in one chunk (ROW_WEIGHT_BYTES): conv.py's tile
    assert tile(576, 96, 14, 1) == (3, 4, 7, 8, True)
    assert tile(384, 96, 14, 1) == (3, 4, 7, 8, True)
    assert tile(96, 576, 14, 1) == (3, 4, 7, 6, True)
    assert tile(64, 384, 14, 1) is None
    # with FLAT_SLACK none: 2 x 6 a row, 64 input channels a chunk (12 KiB), 48 for 96 -> 576
    slack = conv_chunks.FLAT_SLACK
    monkeypatch.setattr(conv_chunks, "FLAT_SLACK", -1.0)
    assert tile(576, 96, 14, 1) == (2, 6, 2, 8, False)
    assert tile(96, 576, 14, 1) == (2, 6, 2, 6, False)
    monkeypatch.setattr(conv_chunks, "FLAT_SLACK", slack)
    recorded = steps(relu_bias_function(nchwc(1024, 256, 14, 1)[0]))
    assert any(p == "fuse" and a.startswith("T_conv2d_NCHWc: ax2") for p, a in recorded), recorded
    # all the filters of a group in 8 KiB: one chunk, when its tile is flattened (conv.py's
    # 3 x 4 overlaps a row of 56), else conv.py's tile (2 x 6 divides 56, 3 x 4 divides 12)
    assert tile(64, 256, 56, 1) == (3, 4, 2, 8, True)
    assert tile(24, 144, 56, 1) is None
    assert tile(64, 256, 12, 1) is None
    # 16 KiB of filters a group over an input beyond L2: chunked (L1 holds the buffer beside them)
    assert tile(128, 512, 56, 1)[3] == 8
    assert tile(8, 64, 28, 7) is None  # a stem: one block of input channels, a single chunk
    assert tile(1024, 256, 14, 1, unit=AVX512) is None  # 32 registers, 8-lane blocks: conv.py's tile


def test_plain_tile_when_the_filters_fit(avx2):
    case, _ = nchwc(64, 256, 12, 1)
    recorded = steps(relu_bias_function(case))
    assert not any(p == "cache_accumulator" for p, _ in recorded)


@pytest.mark.parametrize("ci,co,size", [
    (512, 32, 28),  # chunked (filters of a group past WEIGHT_BYTES), 14x14 out
    (32, 16, 13),  # conv.py's tile (the filters fit), 13 -> 7x7: the last row and column read
])
def test_strided_1x1_nchwc_gathers_its_pixels_first(avx2, jit, ci, co, size):
    """A strided 1x1 NCHWc convolution reads its pixels from `T_strided` (a copy of the
    quarter of the input it uses, vectorized over the lanes), not from the input at twice
    the output's positions once per group of filter blocks."""
    case, attrs = nchwc(ci, co, size, 1, stride=2)
    func = relu_bias_function(case)
    recorded = steps(func)
    assert any(p == "vectorize" and a.startswith("T_strided: ax4") for p, a in recorded), recorded
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    assert any(s.name == "T_strided" and not s.inlined for s in lowered.schedule.stages)
    _agrees_with_numpy(lowered, attrs, ci, co, size, 1, seed=7)


@pytest.mark.parametrize("ci,co,size,k,fused", [
    (64, 32, 15, 3, "ax0_3, ax1_3 ->"),  # stride-2 3x3 at an odd width: the rows and columns loops of their own
    (8, 16, 30, 7, "ax0_3, ax1_3, ax2_3 ->"),  # one input block (the stem's 7x7): the rows join the fused loop
])
def test_padded_copy_keeps_its_rows_and_columns_loops(avx2, jit, ci, co, size, k, fused):
    """A blocked padded copy fuses only its batch and blocks (conv.py `_copy_inner`: no
    division to recover a row and column per vector), its rows too when there is a single
    block (a parallel loop of more than one iteration), and the convolution reading it is
    still numpy's."""
    case, attrs = nchwc(ci, co, size, k, stride=2)
    func = relu_bias_function(case)
    recorded = [a for p, a in steps(func) if p == "fuse" and a.startswith("T_pad:")]
    assert len(recorded) == 1 and recorded[0].startswith(f"T_pad: {fused}"), recorded
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    _agrees_with_numpy(lowered, attrs, ci, co, size, k, seed=12)


@pytest.mark.parametrize("ci,co,size,k,chunked", [
    (256, 32, 14, 1, True),  # the chunked tile (conv_chunks.py)
    (64, 256, 12, 1, False),  # conv.py's tile: the filters of a group fit, 3 x 4 divides the row
    (64, 256, 8, 1, True),  # the filters fit, but the tile is flattened: one chunk
    (64, 32, 7, 3, True),  # a 3x3 filter: the channels inside the window's taps
])
def test_nchwc_tiles_unroll_the_channels_of_an_input_block(avx2, jit, ci, co, size, k, chunked):
    """Both tiles unroll `rci`, the 8 channels of one input block (conv_tile_end.py
    `unroll_block_channels`), and still compute the convolution."""
    case, attrs = nchwc(ci, co, size, k)
    func = relu_bias_function(case)
    recorded = steps(func)
    assert any(p == "cache_accumulator" for p, _ in recorded) == chunked
    assert ("unroll", "T_conv2d_NCHWc: rci") in recorded, recorded
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    _agrees_with_numpy(lowered, attrs, ci, co, size, k, seed=8)


@pytest.mark.parametrize("ci,co,size,nested", [
    (64, 256, 12, True),  # 8 groups of blocks x 12 rows: the columns' tiles a loop inside the parallel one
    (24, 144, 56, True),  # MobileNet v2's expansion (smaller reduction than its tile's epilogue)
    (64, 8, 7, False),  # one block, 7 rows: fewer than NESTED_TILES_MIN, all the tiles one loop
])
def test_plain_tile_keeps_its_column_tiles_a_loop_of_their_own(avx2, jit, ci, co, size, nested):
    """conv.py's tile: from NESTED_TILES_MIN outer tiles the columns' tile loop stays inside
    the parallel loop (the tile's addresses step instead of being divided out of one
    fused index every tile), and the kernel still matches numpy."""
    case, attrs = nchwc(ci, co, size, 1)
    func = relu_bias_function(case)
    recorded = steps(func)
    assert not any(p == "cache_accumulator" for p, _ in recorded)
    assert ("compute_at", "T_conv2d_NCHWc at T_relu.ax3.outer") in recorded if nested else \
        ("fuse", "T_relu: ax0, ax1.outer, ax2, ax3.outer -> ax0.ax1.outer.ax2.ax3.outer.fused") in recorded, recorded
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci, 1, 1)) / np.sqrt(ci)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    xb = np.ascontiguousarray(x.reshape(1, ci // LANES, LANES, size, size).transpose(0, 1, 3, 4, 2))
    got = _KernelCall(lowered)(xb, block_weight(w), np.ascontiguousarray(b.reshape(1, co // LANES, 1, 1, LANES)))
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], attrs) + b[None, :, None, None], 0)
    np.testing.assert_allclose(unblock(got), want, rtol=1e-4, atol=1e-4)


def _agrees_with_numpy(lowered, attrs, ci: int, co: int, size: int, k: int, seed: int) -> None:
    """The lowered conv2d + bias + relu on NCHW8c data equals numpy's on random values."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci, k, k)) / np.sqrt(ci * k * k)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    xb = np.ascontiguousarray(x.reshape(1, ci // LANES, LANES, size, size).transpose(0, 1, 3, 4, 2))
    got = _KernelCall(lowered)(xb, block_weight(w), np.ascontiguousarray(b.reshape(1, co // LANES, 1, 1, LANES)))
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], attrs) + b[None, :, None, None], 0)
    np.testing.assert_allclose(unblock(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ci,co,size,stride,pad,asked", [
    (128, 32, 56, 2, 1, 3),  # ResNet-50's layer2.0 3x3 (fewer filters): 3 x 4 over 2 rows of 28 flattened
    (64, 32, 28, 2, 1, 3),  # to 14x14: 3 x 4 a row and a 2-column tail
    (64, 32, 15, 2, 1, 3),  # an odd input, to 8x8
    (64, 32, 16, 2, 0, 3),  # no padding: the input itself, to 7x7
    (64, 32, 15, 2, 0, 3),  # no padding, odd, to 7x7
    (64, 16, 10, 2, 1, 5),  # 5 columns x 2 blocks: 5 lines a filter row
    (64, 32, 14, 1, 1, 0),  # stride 1: none
])
def test_a_strided_3x3_asks_for_its_input_lines_ahead(avx2, jit, monkeypatch, ci, co, size, stride, pad, asked):
    """A chunked 3x3 at stride 2 asks, at each filter row of a tile, for the lines of that
    input row the tile 4 tiles on reads (conv_prefetch.py `prefetch_window`), from its
    padded copy or its input; at stride 1 for none; the sums numpy's.  (Small inputs
    here: the bound on the input's bytes lowered to 0.)"""
    monkeypatch.setattr(conv_prefetch, "WINDOW_PREFETCH_BYTES", 0)
    case, attrs = nchwc(ci, co, size, 3, stride, pad=pad)
    func = relu_bias_function(case)
    recorded = [a for p, a in steps(func) if p == "prefetch"]
    assert len(recorded) == asked, recorded
    assert all(a.endswith("at T_conv2d_NCHWc.ry") for a in recorded), recorded
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    _agrees_with_numpy(lowered, attrs, ci, co, size, 3, seed=13)


def test_a_strided_3x3_over_an_input_within_l2_asks_for_none(avx2):
    """ResNet-50's layer4.0 3x3 (512 channels, 14x14 to 7x7; a padded input of 512 KiB):
    no lines asked for; layer3.0's (256 channels, 28x28, 900 KiB) asks."""
    def asked(ci, size):
        return [a for p, a in steps(relu_bias_function(nchwc(ci, 32, size, 3, 2)[0])) if p == "prefetch"]
    assert asked(512, 14) == []
    assert len(asked(256, 28)) == 3


def test_a_large_output_has_its_lines_asked_for_while_the_tiles_compute(avx2, jit):
    """128 -> 512 at 28x28 (ResNet-50's; 1.6 MB of output, 128 input channels): each
    chunk step prefetches for writing a line of the next tile's output (conv_prefetch.py),
    PREFETCHW in the code, and the sums are what numpy makes them; with 256 input channels
    (a longer reduction) there is no such prefetch (only the input's, prefetch_input's)."""
    ci, co, size = 128, 512, 28
    func = relu_bias_function(nchwc(ci, co, size, 1)[0])
    assert ("prefetch", "T_relu for writing at T_conv2d_NCHWc.rcb.inner") in steps(func)
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    assert "prefetch_write(T_relu[" in lowered.schedule_text
    assert "i32 1, i32 2, i32 1)" in lowered.optimized_ir  # llvm.prefetch's rw = 1
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=False, seed=8)
    longer = relu_bias_function(nchwc(256, co, size, 1)[0])
    assert not any(p == "prefetch" and "for writing" in a for p, a in steps(longer))


def test_a_residual_of_the_outputs_shape_has_its_lines_asked_for_too(avx2, jit):
    """relu(conv + bias + residual) at 128 -> 512, 28x28 (ResNet-50's bottleneck end): the
    residual's lines prefetched for reading beside the output's for writing (and the
    input's, prefetch_input's, at the tile loop), the sums what numpy makes them."""
    ci, co, size = 128, 512, 28
    func = with_residual(ci, co, size)
    prefetches = [a for p, a in steps(func) if p == "prefetch" and not a.startswith("p0 ")]
    assert prefetches == ["T_relu for writing at T_conv2d_NCHWc.rcb.inner", "p3 at T_conv2d_NCHWc.rcb.inner"]
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=True, seed=9)


@pytest.mark.parametrize("ci, co, size, residual, asked", [
    (960, 160, 7, True, 5),  # MobileNet v2's block 15/16 projection: 2 x 5, a line of each block a tile
    (960, 320, 7, False, 5),  # block 17's: 8 groups of 5 blocks, the last chunk asks for the next group's
    (2048, 512, 7, True, 8),  # ResNet-50's layer4 end: 3 x 4, 32 lines a piece over 16 tiles, 2 a tile
    (64, 32, 7, True, 0),  # 8 KiB of filters: none
    (128, 512, 28, True, 0),  # 28x28 (WEIGHT_PREFETCH_POSITIONS): none
])
def test_a_flattened_1x1_asks_for_its_next_chunks_filters(avx2, jit, ci, co, size, residual, asked):
    """A flattened 1x1 tile of at most 14x14 whose packed filters are at least
    WEIGHT_PREFETCH_BYTES asks, at each tile of a chunk, for its share of the lines the
    group's next chunk reads (conv_prefetch.py `prefetch_weights`), in the tile loop
    outside the reduction; the sums what numpy makes them (odd plane: the 1-position
    tail tile asks for nothing)."""
    func = with_residual(ci, co, size) if residual else relu_bias_function(nchwc(ci, co, size, 1)[0])
    recorded = [a for p, a in steps(func) if p == "prefetch" and a.startswith("p1 ")]
    assert len(recorded) == asked
    assert all(a.endswith(".fused.outer") for a in recorded)
    assert_1x1_matches_numpy(func, jit, ci, co, size, residual=residual, seed=12)
