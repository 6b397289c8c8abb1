"""A register tile's unrolled reduction step is emitted once, as a loop LLVM unrolls
(codegen/unrolled_by_llvm.py), and the kernel still computes its convolution."""

from __future__ import annotations

import re

import pytest
from test_lower_conv_chunks import _agrees_with_numpy, nchwc, relu_bias_function, steps

from relaylens.compiler.lower.codegen.lanes import lane_plan
from relaylens.compiler.lower.codegen.unrolled_by_llvm import MAX_TRIPS, llvm_unrolls
from relaylens.compiler.lower.pipeline import lower_function
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.schedule.loopnest import For, Store
from relaylens.compiler.lower.te import expr as te

LANES = 8


@pytest.fixture(scope="module")
def jit():
    return JIT()


@pytest.mark.parametrize("ci,co,size,k", [
    (256, 32, 14, 1),  # the chunked tile (conv_chunks.py)
    (64, 256, 12, 1),  # conv.py's tile
    (64, 32, 7, 3),  # a 3x3 filter: the channels inside the window's taps
])
def test_the_channels_of_an_input_block_are_one_loop_that_llvm_unrolls(avx2, jit, ci, co, size, k):
    """The schedule unrolls `rci` (the 8 channels of an input block); the unoptimised IR has
    its step once in a loop marked `llvm.loop.unroll.full`, the optimised IR 8 times as many
    multiplies (unrolled by LLVM), and the kernel equals numpy's convolution."""
    case, attrs = nchwc(ci, co, size, k)
    func = relu_bias_function(case)
    assert ("unroll", "T_conv2d_NCHWc: rci") in steps(func)
    lowered = lower_function(func, "tvmgen_default_fused_conv", "<case>", jit)
    text, optimized = lowered.llvm_ir, lowered.optimized_ir
    assert '!"llvm.loop.unroll.full"' in text
    multiplies = len(re.findall(r"= fmul contract <", text))
    fused = len(re.findall(r"@llvm\.fma\.v|fmul contract <", optimized))
    assert multiplies > 0 and fused >= LANES * multiplies, (multiplies, fused)
    assert "llvm.loop.unroll.full" not in optimized  # no loop of it is left
    _agrees_with_numpy(lowered, attrs, ci, co, size, k, seed=5)


def _tile(extent: int, index_reads_var: bool = False, select: bool = False, scope: str = "local") -> For:
    """for r in unrolled(extent): for j in vectorized(8): acc[j (+ r)] = acc[j] + x[r] * w[r * 8 + j]"""
    r, j = te.Var("r"), te.Var("j")
    acc = te.Buffer("acc", (8 if not index_reads_var else 8 * extent,), "float32", scope)
    x = te.Buffer("x", (extent,), "float32", "param")
    w = te.Buffer("w", (extent * 8,), "float32", "param")
    index = te.binary("add", j, te.binary("mul", r, 8)) if index_reads_var else j
    read = te.BufferLoad(x, r, "float32")
    if select:
        read = te.select(te.lt(r, 2), read, te.const(0.0, "float32"))
    value = te.binary("add", te.BufferLoad(acc, index, "float32"),
                      te.binary("mul", read, te.BufferLoad(w, te.binary("add", te.binary("mul", r, 8), j), "float32")))
    return For(r, extent, For(j, 8, Store(acc, index, value), "vectorized"), "unrolled")


def test_which_unrolled_loops_llvm_unrolls():
    """A reduction step into local accumulators, its variable read only in load indices:
    yes; a tile's loop (its variable in the stored index), a select on the variable, a
    store to a parameter, a vectorized loop that would be a loop of its own, a serial
    loop, or more than MAX_TRIPS iterations: unrolled here."""
    assert llvm_unrolls(_tile(8), lane_plan)
    assert llvm_unrolls(_tile(MAX_TRIPS), lane_plan)
    assert not llvm_unrolls(_tile(MAX_TRIPS + 1), lane_plan)
    assert not llvm_unrolls(_tile(1), lane_plan)
    assert not llvm_unrolls(_tile(8, index_reads_var=True), lane_plan)
    assert not llvm_unrolls(_tile(8, select=True), lane_plan)
    assert not llvm_unrolls(_tile(8, scope="param"), lane_plan)
    assert not llvm_unrolls(_tile(8), lambda loop: None)
    serial = _tile(8)
    assert not llvm_unrolls(For(serial.var, serial.extent, serial.body, "serial"), lane_plan)
