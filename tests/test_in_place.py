"""A kernel's output written over one of its inputs (schedule/in_place.py's claim,
runtime/plan.py's use of it): the claimed kernels run with the output on the residual's
own buffer against numpy, for every bottleneck end of ResNet-50 and MobileNet v2; the
overlapping tiles claim nothing; the planner gives the output the residual's memory
only where nothing reads it after (not an input of @main, not a view, not read again)."""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest
from test_lower_conv_chunks import (LANES, block_weight, jit, nchwc, relu_bias_function,  # noqa: F401 (fixtures)
                                    unblock, with_residual)

from relaylens.compiler.driver import compile
from relaylens.compiler.ir.expr import Call, Function, Var, op
from relaylens.compiler.lower.disk_cache import DiskCache
from relaylens.compiler.lower.parallel import ENV
from relaylens.compiler.lower import pipeline
from relaylens.compiler.lower.pipeline import lower_function
from relaylens.compiler.lower.runtime.executable import _KernelCall
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.runtime.plan import Buffer, Ref, Step, _assign_offsets
from relaylens.compiler.lower.schedule.in_place import may_claim
from relaylens.compiler.lower.te.compose import compose
from relaylens.compiler.ops import get_op
from relaylens.compiler.ops.registry import as_ir_attrs
from relaylens.compiler.support import aligned_copy

HEAD = '#[version = "0.0.5"]\n'


def residual_3x3(ci: int, co: int, size: int) -> Function:
    """relu(conv 3x3 + bias + residual)."""
    f = relu_bias_function(nchwc(ci, co, size, 3)[0])
    out = f.body.ty
    residual = Var("p3", out, ty=out)
    added = Call(op("add"), (f.body.args[0], residual), as_ir_attrs({}), ty=out)
    return Function((*f.params, residual), Call(op("nn.relu"), (added,), as_ir_attrs({}), ty=out), attrs=f.attrs)


def blocked(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    return aligned_copy(a.reshape(n, c // LANES, LANES, h, w).transpose(0, 1, 3, 4, 2))


@pytest.mark.parametrize("ci,co,size,k", [
    (64, 256, 56, 1), (128, 512, 28, 1), (256, 1024, 14, 1), (512, 2048, 7, 1),  # ResNet-50's bottleneck ends
    (144, 24, 56, 1), (192, 32, 28, 1), (384, 64, 14, 1), (576, 96, 14, 1), (960, 160, 7, 1),  # MobileNet v2's
    (16, 16, 13, 1),  # 13 columns: conv_chunks.py's flattened tile with a tail
    (8, 8, 14, 3),  # conv.py's tile, 7 columns dividing the row
    (16, 16, 9, 3),  # 3x3 chunked, 9 columns: a tail
])
def test_a_claimed_kernel_written_over_its_residual_matches_numpy(avx2, jit, ci, co, size, k):
    func = with_residual(ci, co, size) if k == 1 else residual_3x3(ci, co, size)
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    assert lowered.writes_over == 3  # the residual, p3
    rng = np.random.default_rng(ci + co + size)
    x = rng.standard_normal((1, ci, size, size)).astype("float32")
    w = (rng.standard_normal((co, ci, k, k)) / np.sqrt(ci * k * k)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    r = rng.standard_normal((1, co, size, size)).astype("float32")
    args = [blocked(x), aligned_copy(block_weight(w)), aligned_copy(b.reshape(1, co // LANES, 1, 1, LANES))]
    apart = _KernelCall(lowered)(*args, blocked(r))
    shared = blocked(r)  # the output on the residual's memory, as the plan places it
    kernel = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)(lowered.address)
    kernel(*[a.ctypes.data for a in args], shared.ctypes.data, shared.ctypes.data)
    pad = k // 2
    want = np.maximum(get_op("nn.conv2d").evaluate([x, w], {"strides": (1, 1), "padding": (pad,) * 4})
                      + b[None, :, None, None] + r, 0)
    np.testing.assert_allclose(unblock(shared), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(shared, apart)  # the same sums, in the same order


@pytest.mark.parametrize("ci,co,size,k", [
    (64, 256, 13, 1),  # conv.py's 1x1 tile: 3 columns of 13, the last tile overlapping the one before
    (8, 8, 13, 3),  # conv.py's 3x3 tile alike
])
def test_overlapping_tiles_claim_nothing(avx2, jit, ci, co, size, k):
    func = with_residual(ci, co, size) if k == 1 else residual_3x3(ci, co, size)
    assert lower_function(func, "tvmgen_default_fused_conv", "<case>", jit).writes_over is None


@pytest.mark.parametrize("func,could", [
    (with_residual(64, 256, 8), True),
    (relu_bias_function(nchwc(64, 64, 8, 1)[0]), False),  # the input has the output's type, read at other positions
    (residual_3x3(8, 8, 14), True),
])
def test_may_claim_passes_the_kernels_that_claim(func, could):
    composed = compose(func)
    assert may_claim(composed.outputs, composed.placeholders) == could


# --- the planner ------------------------------------------------------------------------


def _steps(*calls):
    """Steps of fake kernels: (kernel, argument buffers, output buffer)."""
    return [Step(name, name, list(args), [out]) for name, args, out in calls]


def _temp(n: int = 64) -> Buffer:
    return Buffer((n,), "float32", Ref("temp", -1))


def test_the_output_takes_its_residual_when_the_kernel_reads_it_last():
    x, a, b, c, d = Buffer((64,), "float32", Ref("input", 0)), _temp(), _temp(), _temp(), _temp()
    steps = _steps(("f", [x], a), ("g", [a], b), ("end", [b, a], c), ("h", [c], d))
    _assign_offsets(steps, [d], (), {"end": 1})
    assert c.ref == a.ref and b.ref != a.ref and d.ref != c.ref  # c on a; d beside c, live then


@pytest.mark.parametrize("case", ["read later", "an input", "twice", "a view", "a view read later", "size",
                                  "an output", "no claim"])
def test_the_output_keeps_its_own_memory(case):
    x = Buffer((64,), "float32", Ref("input", 0))
    a, b, c, d, v = _temp(), _temp(), _temp(), _temp(), _temp()
    residual, views, claim = a, [], {"end": 1}
    later = [("h", [c], d)]
    outputs = [d]
    if case == "read later":
        later = [("h", [c, a], d)]
    elif case == "an input":
        residual = x
    elif case == "twice":
        claim = {"end": 2}
    elif case in ("a view", "a view read later"):
        views = [(v, a)]
        residual = v if case == "a view" else a
        if case == "a view read later":
            later = [("h", [c, v], d)]
    elif case == "size":
        c = _temp(32)
        later = [("h", [c], d)]
    elif case == "an output":
        later, outputs = [], [c]
        c.ref = Ref("output", 0)
    elif case == "no claim":
        claim = {}
    third = {"twice": residual, "a view": b, "a view read later": b}.get(case, a)  # a: live while c is placed
    args = [b, residual, third]
    steps = _steps(("f", [x], a), ("g", [a], b), ("end", args, c), *later)
    _assign_offsets(steps, outputs, views, claim)
    assert c.ref != residual.ref and c.ref != a.ref


# --- a model -----------------------------------------------------------------------------


def _conv(name: str, arg: str, w: str, relu: bool = True) -> str:
    call = f"nn.conv2d({arg}, {w}, padding=[0, 0, 0, 0], channels=64, kernel_size=[1, 1])"
    return f"  {name} = nn.relu({call});\n" if relu else f"  {name} = {call};\n"


def _model(residual: str, later: str = "") -> str:
    """Four 1x1 convolutions of 64 channels at 28x28, the third's result added to
    `residual` before its relu; `later` reads something after it."""
    params = ", ".join(f"%w{k}: Tensor[(64, 64, 1, 1), float32]" for k in range(4))
    return (f"def @main(%x: Tensor[(1, 64, 28, 28), float32], {params}) {{\n"
            + _conv("%0", "%x", "%w0") + _conv("%1", "%0", "%w1")
            + _conv("%2", "%1", "%w2", relu=False)
            + f"  %3 = nn.relu(add(%2, {residual}));\n"
            + _conv("%4", "%3", "%w3", relu=False)
            + f"  {later or '%4'}\n}}\n")


def _numpy(x: np.ndarray, ws: list[np.ndarray], residual: str, later: str) -> np.ndarray:
    def conv(a, w):
        return np.einsum("oi,nihw->nohw", w[:, :, 0, 0], a)
    v = {"%x": x}
    v["%0"] = np.maximum(conv(x, ws[0]), 0)
    v["%1"] = np.maximum(conv(v["%0"], ws[1]), 0)
    v["%3"] = np.maximum(conv(v["%1"], ws[2]) + v[residual], 0)
    v["%4"] = conv(v["%3"], ws[3])
    return v["%4"] + v["%0"] if later else v["%4"]


@pytest.mark.parametrize("residual,later,aliased", [
    ("%0", "", True),  # %0 read last by the kernel of %3: its output takes %0's memory
    ("%0", "add(%4, %0)", False),  # %0 read again after it (by %4's kernel, which claims it too)
    ("%x", "", True),  # @main's input, but the kernel reads its NCHW8c copy, a temporary
])
def test_a_model_writes_the_residual_add_over_its_residual(residual, later, aliased):
    params = {}
    rng = np.random.default_rng(7)
    ws = [(rng.standard_normal((64, 64, 1, 1)) / 8).astype("float32") for _ in range(4)]
    result = compile(HEAD + _model(residual, later), "in_place.relay", params={f"w{k}": w for k, w in enumerate(ws)},
                     jit=JIT(num_threads=1))
    assert result.executable is not None, [d.render() for d in result.diagnostics]
    exe = result.lowered.executable
    plan = exe.plan
    end = next(s for s in plan.steps if exe.writes_over.get(s.kernel) is not None)  # %3's kernel claims it
    over = end.args[exe.writes_over[end.kernel]]
    assert (end.outs[0].ref == over.ref) == aliased
    graph = json.loads(plan.graph_json())
    storage, rows = graph["attrs"]["storage_id"][1], graph["node_row_ptr"]
    at = next(k for k, n in enumerate(graph["nodes"]) if n["name"] == end.kernel)
    producer = graph["nodes"][at]["inputs"][exe.writes_over[end.kernel]]
    assert (storage[rows[at]] == storage[rows[producer[0]] + producer[1]]) == aliased
    x = rng.standard_normal((1, 64, 28, 28)).astype("float32")
    np.testing.assert_allclose(exe.run(x), _numpy(x, ws, residual, later), rtol=1e-4, atol=1e-4)


def test_the_claim_reaches_the_plan_from_forked_workers_and_from_the_disk_cache(tmp_path, monkeypatch):
    """Lowered in two forked workers while a thread plans (the claims foreseen there), then
    every kernel from the disk cache (the claims its entries kept): the same aliased plan."""
    monkeypatch.setenv(ENV, "2")
    early = []
    made_early = pipeline._early_executable
    monkeypatch.setattr(pipeline, "_early_executable", lambda *args: early.append(1) or made_early(*args))
    rng = np.random.default_rng(8)
    ws = [(rng.standard_normal((64, 64, 1, 1)) / 8).astype("float32") for _ in range(4)]
    x = rng.standard_normal((1, 64, 28, 28)).astype("float32")
    runs = []
    for _ in range(2):
        disk = DiskCache(tmp_path)
        result = compile(HEAD + _model("%0"), "in_place.relay", params={f"w{k}": w for k, w in enumerate(ws)},
                         jit=JIT(num_threads=1), disk_cache=disk)
        exe = result.lowered.executable
        assert exe.writes_over == {n: f.writes_over for n, f in result.lowered.functions.items()}
        end = next(s for s in exe.plan.steps if exe.writes_over.get(s.kernel) is not None)
        assert end.outs[0].ref == end.args[exe.writes_over[end.kernel]].ref
        runs.append((disk.hits, exe.run(x)))
    assert runs[0][0] == 0 and runs[1][0] == len(result.lowered.functions)
    assert early == [1]  # the first build planned while its workers lowered
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    np.testing.assert_allclose(runs[1][1], _numpy(x, ws, "%0", ""), rtol=1e-4, atol=1e-4)


def _softmax_function(shape: tuple[int, ...]) -> Function:
    from relaylens.compiler.ir.types import TensorType

    ty = TensorType(shape, "float32")
    x = Var("p0", ty, ty=ty)
    body = Call(op("nn.softmax"), (x,), get_op("nn.softmax").normalize_attrs({"axis": -1}), ty=ty)
    return Function((x,), body, attrs=as_ir_attrs({"Primitive": 1}))


@pytest.mark.parametrize("shape", [(1, 12, 128, 128), (6, 32), (3, 5)])
def test_a_softmax_row_group_is_written_over_its_input(jit, shape):
    """A row group reads its input only at the rows its iteration stores, before it
    stores them (in_place.py `claim_rows_over`): the output over the input gives the
    same values, -inf masks and a row with NaN among them; a softmax too short for lanes
    (no row group) claims nothing."""
    func = _softmax_function(shape)
    composed = compose(func)
    grouped = shape[-1] >= 32
    assert may_claim(composed.outputs, composed.placeholders)
    lowered = lower_function(func, "tvmgen_default_fused_nn_softmax", "<case>", jit)
    assert lowered.writes_over == (0 if grouped else None)
    if not grouped:
        return
    x = np.random.default_rng(3).standard_normal(shape).astype("float32") * 4
    rows = x.reshape(-1, shape[-1])
    rows[1, 5:] = -np.inf
    rows[2, 7] = np.nan
    want = np.exp(x - x.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    apart = _KernelCall(lowered)(aligned_copy(x))
    shared = aligned_copy(x)
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(lowered.address)
    kernel(shared.ctypes.data, shared.ctypes.data)
    np.testing.assert_array_equal(np.isnan(shared), np.isnan(want))
    np.testing.assert_allclose(shared, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(shared, apart)
