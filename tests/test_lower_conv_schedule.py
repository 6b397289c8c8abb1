"""Channel-blocked conv2d and depthwise conv2d (topi/conv_blocked.py) and their default
schedules (schedules_conv.py): te_eval and compiled results against numpy on odd shapes,
strides, dilation, padding, 1x1, 5x5 and 7x7 kernels, channel counts that 16 does not
divide, float16; fused epilogues (bias, batch norm, residual add, relu) against the
interpreter; the convolutions that keep the canonical compute; the register tile, the
tile loop order and what the schedule record shows; the index simplification that reads
a blocked layout through split loops without divisions."""

from __future__ import annotations

import re

import numpy as np
import pytest
from loopnest_interp import run
from lower_cases import Arr, Case, assert_close
from test_lower_compiled import flat_inputs, primitive_function
from test_lower_compute_nn import lower_case

from relaylens.compiler.build import build_text
from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import Interpreter
from relaylens.compiler.ir.expr import Call, Function, Tuple, Var, op
from relaylens.compiler.ir.types import TensorType, TupleType
from relaylens.compiler.lower.pipeline import lower_build, lower_function
from relaylens.compiler.lower.runtime.executable import _KernelCall
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.schedule import conv as conv_schedule
from relaylens.compiler.lower.schedule.conv import conv_tile
from relaylens.compiler.lower.schedule.vector_unit import AVX2, AVX512, host_unit
from relaylens.compiler.lower.schedule.defaults import default_schedule
from relaylens.compiler.lower.schedule.primitives import Schedule
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te
from relaylens.compiler.lower.te.compose import compose
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops.registry import as_ir_attrs

ATOL = dict(atol=1e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def jit():
    return JIT()


def conv(data, weight, name, dtype="float32", **attrs) -> Case:
    tol = dict(rtol=1e-3, atol=1e-3) if dtype == "float16" else ATOL
    return Case("nn.conv2d", [Arr(data, dtype), Arr(weight, dtype)], attrs, name, **tol)


BLOCKED = [
    conv((1, 3, 11, 13), (20, 3, 3, 3), "20-filters-odd-width", padding=(1, 1)),
    conv((1, 5, 12, 17), (32, 5, 3, 3), "strides-dilation-asym-pad", strides=(2, 3), dilation=(2, 1),
         padding=(0, 1, 2, 1)),
    conv((2, 8, 9, 9), (48, 8, 1, 1), "1x1-stride2-batch2", strides=(2, 2)),
    conv((1, 3, 30, 30), (16, 3, 7, 7), "7x7-stride2-pad3", strides=(2, 2), padding=(3, 3)),
    conv((1, 64, 14, 14), (64, 64, 3, 3), "64x14x14", padding=(1, 1)),
    conv((1, 32, 1, 1), (64, 32, 1, 1), "1x1-spatial"),
    conv((1, 4, 8, 8), (16, 4, 3, 3), "float16", dtype="float16", padding=(1, 1)),
    conv((1, 32, 8, 8), (32, 1, 3, 3), "depthwise", padding=(1, 1), groups=32),
    conv((2, 20, 9, 11), (20, 1, 3, 3), "depthwise-20-stride2", padding=(1, 1), strides=(2, 2), groups=20),
    conv((1, 16, 10, 9), (16, 1, 5, 5), "depthwise-5x5-dilation-asym-pad", padding=(2, 0, 1, 3),
         dilation=(2, 1), groups=16),
]
CANONICAL = [
    conv((1, 8, 6, 6), (32, 4, 3, 3), "groups2", padding=(1, 1), groups=2),
    conv((1, 16, 6, 6), (16, 2, 3, 3), "depthwise-multiplier", padding=(1, 1), groups=16, channels=32,
         kernel_size=(3, 3)),
    conv((1, 8, 8, 4), (3, 3, 4, 32), "NHWC", padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO"),
    Case("nn.conv2d", [Arr((1, 4, 6, 6), "int8"), Arr((32, 4, 3, 3), "int8")], {"out_dtype": "int32"}, "int8"),
    conv((1, 4, 6, 6), (8, 4, 3, 3), "8-filters", padding=(1, 1)),
]


def stage_names(lowered) -> set[str]:
    return {s.name for s in lowered.schedule.stages}


@pytest.mark.parametrize("case", BLOCKED + CANONICAL, ids=[c.id for c in BLOCKED + CANONICAL])
def test_compiled_conv_matches_numpy(case, jit):
    lowered = lower_function(primitive_function(case), "tvmgen_default_fused_conv", "<case>", jit)
    blocked = case in BLOCKED
    assert ("T_weight_pack" in stage_names(lowered)) == blocked
    assert_close(case, [_KernelCall(lowered)(*flat_inputs(case))], case.reference(case.inputs()))


@pytest.mark.parametrize("case", BLOCKED, ids=[c.id for c in BLOCKED])
def test_blocked_compute_matches_numpy_in_te_eval(case):
    outputs, pairs = lower_case(case)
    assert_close(case, te_eval.evaluate(outputs, pairs), case.reference(case.inputs()))


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_register_tile_fits_and_divides(unit):
    budget = unit.accumulators
    for lanes in (unit.lanes, 12, 16):
        per_block = unit.registers_for(lanes)
        for width in (1, 5, 7, 13, 14, 17, 28, 56, 112, 224):
            for blocks in (1, 2, 3, 4, 32, 128):
                cols, vectors = conv_tile(width, blocks, lanes=lanes, unit=unit)
                assert 1 <= cols <= width and cols * vectors * per_block <= budget
                assert unit.tile_fits(cols, vectors, per_block) or unit.registers >= 32
                assert blocks % vectors == 0


def test_register_tiles_of_avx512_and_avx2():
    assert conv_tile(7, 32, unit=AVX512) == (7, 2)
    assert conv_tile(56, 6, unit=AVX512) == (8, 2)  # 4 x 4 where 4 divides the blocks (test_lower_conv_square.py)
    assert conv_tile(56, 2, lanes=12, unit=AVX512) == (4, 2)  # 12 lanes: a vector of 8 and one of 4, two registers
    # AVX2: 16 registers, 12 accumulators of 8 lanes; a block of 16 lanes takes two
    assert AVX2.registers_for(8) == 1 and AVX2.registers_for(16) == 2 and AVX2.registers_for(12) == 2
    # there the tile is costed (conv.py `_modelled_tile`): 3 columns x 4 blocks (12 chains of
    # FMAs, MLAS's AVX2 kernel's shape) where the blocks allow it, the last tile overlapping
    assert conv_tile(14, 32, lanes=8, unit=AVX2) == (3, 4)
    assert conv_tile(56, 8, lanes=8, unit=AVX2) == (3, 4)
    assert conv_tile(7, 64, lanes=8, unit=AVX2) == (7, 1)  # a 7-wide row whole: the weight read once per row
    assert conv_tile(7, 32, lanes=16, unit=AVX2) == (2, 2)  # 16 lanes: two registers a block
    # a step's broadcasts and a block of weights fit beside the accumulators (not 4 x 3, 6 x 2)
    assert conv_tile(56, 18, lanes=8, unit=AVX2) == (2, 6)
    assert conv_tile(112, 12, lanes=8, unit=AVX2) == (2, 6)
    assert conv_tile(56, 3, lanes=8, unit=AVX2) == (3, 3)
    assert not AVX2.tile_fits(4, 3, 1) and not AVX2.tile_fits(6, 2, 1) and AVX2.tile_fits(3, 4, 1)


@pytest.fixture
def plain_tile(monkeypatch):
    """conv.py's own tile whatever the host: no chunked reduction (conv_chunks.py, which
    tests/test_lower_conv_chunks.py covers) on AVX2, nor a flattened square tile
    (test_lower_conv_square.py) on AVX-512."""
    monkeypatch.setattr(conv_schedule, "chunked_tile", lambda *args, **kwargs: None)


def test_schedule_record_shows_the_tile_inside_the_epilogue(jit, plain_tile):
    case = conv((1, 64, 7, 7), (64, 64, 3, 3), "tile", padding=(1, 1))
    conv_func = primitive_function(case)
    body = Call(op("nn.relu"), (conv_func.body,), as_ir_attrs({}), ty=case.out_type())
    func = Function(conv_func.params, body, attrs=as_ir_attrs({"Primitive": 1}))
    lowered = lower_function(func, "tvmgen_default_fused_nn_conv2d_nn_relu", "<case>", jit)
    steps = [(s.primitive, s.args) for s in lowered.schedule.record]
    compute_at = [a for p, a in steps if p == "compute_at"]
    assert len(compute_at) == 1 and compute_at[0].startswith("T_conv2d_NCHW16c at T_relu.")
    assert any(p == "parallel" and a.startswith("T_relu:") for p, a in steps)
    assert any(p == "vectorize" and a.startswith("T_weight_pack:") for p, a in steps)
    text = ln.print_func(lowered.prim)
    # one tile: 2 blocks of 16 channels x 7 columns with AVX-512 (2 x 2 with AVX2),
    # accumulated in registers
    cols, vectors = conv_tile(7, 4)
    assert (cols, vectors) == ((7, 2) if host_unit().registers >= 32 else (2, 2))
    assert f"T_conv2d_NCHW16c = allocate(float32, [1, {vectors}, 1, {cols}, 16])" in text
    assert "T_conv2d =" not in text and "T_conv2d[" not in text  # read back inside the epilogue
    tile_reads = re.findall(r"T_conv2d_NCHW16c\[([^\]]*)\]", text)
    assert tile_reads
    if 7 % cols == 0:  # AVX2's 2 columns: the last tile overlaps the one before, a min() in its reads
        assert not any("//" in i or "%" in i for i in tile_reads)
    x, w = (np.random.default_rng(1).standard_normal(s).astype("float32") for s in ((1, 64, 7, 7), (64, 64, 3, 3)))
    got = _KernelCall(lowered)(x, w)
    want = np.maximum(case.reference([x, w])[0], 0)
    np.testing.assert_allclose(got, want, **ATOL)


def schedule_steps(case) -> list[tuple[str, str]]:
    """The default schedule's record for the case's primitive function (no LLVM)."""
    composed = compose(primitive_function(case))
    sch = default_schedule(composed.outputs, composed.placeholders, "tvmgen_default_fused_conv")
    return [(s.primitive, s.args) for s in sch.record]


def test_tile_loop_puts_channel_blocks_inside_when_the_input_is_the_larger(plain_tile):
    big_input = schedule_steps(conv((1, 256, 56, 56), (64, 256, 1, 1), "big-input"))
    big_weight = schedule_steps(conv((1, 512, 7, 7), (512, 512, 3, 3), "big-weight", padding=(1, 1)))
    # the innermost tile loop apart inside the others fused (conv.py NESTED_TILES_MIN)
    assert ("fuse", "T_conv2d: ax0, ax2, ax3.outer -> ax0.ax2.ax3.outer.fused") in big_input
    assert ("compute_at", "T_conv2d_NCHW16c at T_conv2d.ax1.outer") in big_input
    assert ("fuse", "T_conv2d: ax0, ax1.outer, ax2 -> ax0.ax1.outer.ax2.fused") in big_weight
    assert ("compute_at", "T_conv2d_NCHW16c at T_conv2d.ax3.outer") in big_weight


def test_depthwise_and_strided_1x1_stages():
    depthwise = schedule_steps(conv((1, 64, 28, 28), (64, 1, 3, 3), "dw", padding=(1, 1), groups=64))
    assert ("split", "T_conv2d: ax1 by 16 -> ax1.outer, ax1.inner") in depthwise  # one block per tile
    assert any(p == "vectorize" and a.startswith("T_pad_NCHW16c:") for p, a in depthwise)
    strided = schedule_steps(conv((1, 32, 14, 14), (64, 32, 1, 1), "s2", strides=(2, 2)))
    assert any(p == "vectorize" and a.startswith("T_strided:") for p, a in strided)
    assert conv_tile(28, 4, depthwise=True, unit=AVX512) == (14, 1)
    assert conv_tile(28, 4, depthwise=True, lanes=8, unit=AVX2) == (7, 1)


def test_copies_of_resnet50_size_fork_and_compute_the_same_on_two_threads():
    # ResNet-50's last stride-2 1x1 convolution: its T_strided (1x256x14x14, 200 KB) forks
    # (conv.py COPY_PARALLEL_BYTES); a small one stays serial
    case = conv((1, 256, 28, 28), (128, 256, 1, 1), "s2-resnet", strides=(2, 2))
    assert any(p == "parallel" and a.startswith("T_strided:") for p, a in schedule_steps(case))
    small = conv((1, 32, 14, 14), (64, 32, 1, 1), "s2", strides=(2, 2))
    assert not any(p == "parallel" and a.startswith("T_strided:") for p, a in schedule_steps(small))
    lowered = lower_function(primitive_function(case), "tvmgen_default_fused_conv", "<case>", JIT(num_threads=2))
    assert_close(case, [_KernelCall(lowered)(*flat_inputs(case))], case.reference(case.inputs()))


def _call(name: str, args, **attrs):
    types = [a.ty for a in args]
    return Call(op(name), tuple(args), as_ir_attrs(attrs), ty=get_op(name).infer(types, attrs))


def test_blocked_result_read_twice_gets_a_copy_epilogue(jit):
    x = Var("p0", TensorType((1, 8, 6, 6), "float32"), ty=TensorType((1, 8, 6, 6), "float32"))
    w = Var("p1", TensorType((32, 8, 3, 3), "float32"), ty=TensorType((32, 8, 3, 3), "float32"))
    c = _call("nn.conv2d", [x, w], padding=(1, 1))
    body = Tuple((_call("nn.relu", [c]), _call("negative", [c])), ty=TupleType((c.ty, c.ty)))
    func = Function((x, w), body, attrs=as_ir_attrs({"Primitive": 1}))
    lowered = lower_function(func, "tvmgen_default_fused_two_readers", "<case>", jit)
    assert "T_conv2d_NCHW16c.local" in stage_names(lowered)
    xs = np.random.default_rng(2).standard_normal((1, 8, 6, 6)).astype("float32")
    ws = np.random.default_rng(3).standard_normal((32, 8, 3, 3)).astype("float32")
    relu, neg = _KernelCall(lowered)(xs, ws)
    want = get_op("nn.conv2d").evaluate([xs, ws], {"padding": (1, 1)})
    np.testing.assert_allclose(relu, np.maximum(want, 0), **ATOL)
    np.testing.assert_allclose(neg, -want, **ATOL)


RESNET_BLOCK = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 9, 9), float32], %w1: Tensor[(32, 16, 3, 3), float32], %b1: Tensor[(32), float32],
          %w2: Tensor[(32, 32, 1, 1), float32], %g: Tensor[(32), float32], %beta: Tensor[(32), float32],
          %mean: Tensor[(32), float32], %var: Tensor[(32), float32], %short: Tensor[(1, 32, 5, 5), float32]) {
  %0 = nn.conv2d(%x, %w1, strides=[2, 2], padding=[1, 1, 1, 1], channels=32, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, %w2, padding=[0, 0, 0, 0], channels=32, kernel_size=[1, 1]);
  %4 = nn.batch_norm(%3, %g, %beta, %mean, %var);
  %5 = add(%4.0, %short);
  nn.relu(%5)
}
"""


def test_fused_epilogues_match_the_interpreter(jit):
    rng = np.random.default_rng(4)
    checked = check_text(RESNET_BLOCK, "block")
    main = checked.module["main"]
    args = [rng.standard_normal([int(d) for d in p.ty.shape]).astype("float32") for p in main.params]
    args[7] = np.abs(args[7]) + 0.5  # variance
    want = Interpreter(checked.module).call("main", args)
    lowered = lower_build(build_text(RESNET_BLOCK, "block"), jit=jit)
    assert lowered.executable.mode == "aot"
    convs = [f for name, f in lowered.functions.items() if "conv2d" in name]
    # AlterOpLayout made them NCHWc convolutions of packed weights, epilogues in blocks
    assert len(convs) == 2 and all("T_conv2d_NCHWc" in stage_names(f) for f in convs)
    np.testing.assert_allclose(lowered.executable.run(*args), np.asarray(want), **ATOL)


def test_blocked_channels_read_back_through_a_split_loop_exactly():
    """(c0*32 + c1*16 + lane) // 16 and % 16, with c1 and lane inner loops: the region of
    the blocked tensor is 2 blocks x 16 lanes, and its reads have no division left."""
    x = te.placeholder((4, 16), "float32", "x")
    blocked = te.compute((4, 16), lambda b, lane: x[b, lane] * 2.0, "T_blocked")
    flat = te.compute((64,), lambda c: blocked[c // 16, c % 16] + 1.0, "T_flat")
    sch = Schedule([flat], [x], "readback")
    outer, inner = sch.split(flat, sch[flat].axes[0], 32)
    mid, lane = sch.split(flat, inner, 16)
    sch.compute_at(blocked, flat, outer)
    text = ln.print_func(sch.lower())
    assert "T_blocked = allocate(float32, [2, 16])" in text
    reads = re.findall(r"T_blocked\[([^\]]*)\]", text)
    assert reads and not any("//" in i or "%" in i for i in reads)
    xs = np.arange(64, dtype="float32").reshape(4, 16)
    (got,) = run(sch.lower(), [xs])
    np.testing.assert_array_equal(got, xs.reshape(64) * 2 + 1)
