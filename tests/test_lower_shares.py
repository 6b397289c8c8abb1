"""How a parallel loop's iterations are shared among the team (codegen/shares.py): every
iteration runs exactly once, whatever the extent and the team, its own share first, and
a thread takes over what another has not begun."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from relaylens.compiler.lower.codegen.llvm import NUM_THREADS_GLOBAL, generate
from relaylens.compiler.lower.codegen.shares import MAX_TEAM
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.support import aligned_empty
from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.te import expr as te

EXTENTS = (1, 2, 3, 7, 23, 64, 129)


def counting(extent: int) -> ln.PrimFunc:
    """`count[i] += 1` for i in a parallel loop of `extent`, then an inner serial loop
    adding 0, 1, ..., extent - 1 to `total[i]` (some work per iteration)."""
    count = te.Buffer("count", (extent,), "int32")
    total = te.Buffer("total", (extent,), "int64")
    i, j = te.Var("i"), te.Var("j")
    bump = ln.Store(count, i, te.BufferLoad(count, i, "int32") + te.const(1, "int32"))
    inner = ln.For(j, extent, ln.Store(total, i, te.BufferLoad(total, i, "int64") + te.cast(j, "int64")))
    return ln.PrimFunc(f"count_{extent}", (count, total), ln.For(i, extent, ln.seq(bump, inner), "parallel"))


def fresh(n: int) -> tuple[np.ndarray, np.ndarray]:
    count, total = aligned_empty((n,), np.int32), aligned_empty((n,), np.int64)
    count[...] = 0
    total[...] = 0
    return count, total


def _call(kernel, *arrays: np.ndarray) -> None:
    """Call a kernel whose every parameter is an array it updates in place."""
    kernel._cfunc(*[a.ctypes.data for a in arrays])


@pytest.mark.parametrize("threads", [1, 2, 3, 5, MAX_TEAM + 3])
def test_every_iteration_runs_once(threads):
    funcs = [counting(n) for n in EXTENTS]
    jit = JIT(num_threads=threads)
    kernels = jit.compile(funcs, "t.relay")
    for n in EXTENTS:
        for _ in range(3):  # the counters are zeroed for every region
            count, total = fresh(n)
            _call(kernels[f"count_{n}"], count, total)
            np.testing.assert_array_equal(count, np.ones(n, np.int32), err_msg=f"extent {n}, {threads} threads")
            np.testing.assert_array_equal(total, np.full(n, n * (n - 1) // 2, np.int64))


def test_the_default_team_when_the_global_is_zero():
    """`relaylens_num_threads` 0 (a module the JIT did not load) means the OpenMP default
    team (omp_get_max_threads), at most MAX_TEAM."""
    jit = JIT(num_threads=2)
    kernel = jit.compile([counting(129)], "t.relay")["count_129"]
    for engine, _, _ in jit._engines:
        address = engine.get_global_value_address(NUM_THREADS_GLOBAL)
        if address:
            ctypes.c_int32.from_address(address).value = 0
    count, total = fresh(129)
    _call(kernel, count, total)
    np.testing.assert_array_equal(count, np.ones(129, np.int32))


def test_the_trampoline_takes_pieces_from_counters():
    """The region's iterations are handed out by atomic counters, one per thread's share,
    zeroed before GOMP_parallel; the team is clamped to MAX_TEAM."""
    text = str(generate([counting(64)], "t.relay"))
    assert text.count("atomicrmw add") == 1
    assert "llvm.memset" in text and '@"omp_get_max_threads"' in text
    assert f"i32 {min(64, MAX_TEAM)}" in text


def _share_function(extent: int):
    """`void shares(ptr counters, i64 tid, i64 team, ptr log)`: thread `tid`'s part of a
    region over `[0, extent)`, each piece it takes written as log[begin] = its length."""
    import llvmlite.binding as llvm
    import llvmlite.ir as ir

    from relaylens.compiler.lower.codegen.scalar import I64, PTR, VOID
    from relaylens.compiler.lower.codegen.shares import share_loop

    module = ir.Module("shares")
    module.triple = llvm.get_process_triple()
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64, PTR]), f"shares_{extent}")
    counters, tid, team, log = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def record(begin, end):
        b.store(b.sub(end, begin), b.gep(log, [begin], inbounds=True, source_etype=I64))

    share_loop(b, fn, counters, tid, team, extent, record)
    b.ret_void()
    return module


@pytest.mark.parametrize("extent, team", [(1, 2), (7, 2), (23, 2), (64, 3), (129, 5), (16, 16)])
def test_a_thread_takes_the_pieces_the_others_left(extent, team):
    """Thread 0 alone (the others never scheduled) runs every iteration, its own share in
    order first; a thread arriving after it finds nothing left."""
    from relaylens.compiler.lower.codegen.shares import COUNTER_STRIDE, PIECES

    jit = JIT(num_threads=1)
    jit.load(str(_share_function(extent)))
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(
        jit.address(f"shares_{extent}"))
    counters = np.zeros(MAX_TEAM * COUNTER_STRIDE, np.int64)
    log = np.zeros(extent, np.int64)
    call(counters.ctypes.data, 0, team, log.ctypes.data)
    starts = [k for k in range(extent) if log[k]]
    assert sum(log) == extent and all(a + log[a] <= b for a, b in zip(starts, starts[1:] + [extent]))
    chunk = -(-extent // team)
    assert log[0] == min(-(-chunk // PIECES), extent)  # its own first piece
    late = np.zeros(extent, np.int64)
    call(counters.ctypes.data, team - 1, team, late.ctypes.data)
    assert not late.any()

