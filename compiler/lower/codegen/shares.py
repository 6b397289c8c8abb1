"""How the OpenMP team shares a parallel loop's iterations (llvm.py's trampoline).

Each of the `team` threads owns a contiguous share of `[0, extent)`, `chunk =
ceil(extent / team)` iterations from `tid * chunk` (the split a static schedule makes,
so a thread keeps reading what it wrote in the kernel before: the consecutive kernels of
a model split their channel blocks and rows alike), cut into pieces of `grain =
ceil(chunk / PIECES)` iterations.  A thread takes the pieces of its own share first, then
those still untaken of the others' shares, one piece at a time from each share's
counter (the number of pieces taken from it, an atomic add):

    for victim in tid, tid + 1, ..., tid - 1 (mod team):
        while (k = counters[victim] += 1, old value) * grain < the share's length:
            body(share start + k * grain, min(.. + grain, share end))

With libgomp's threads woken from a passive wait (runtime/jit.py), the calling thread
starts at once and the others some microseconds later (tens under load, a descheduled
thread a whole time slice): with a static split the region took its slowest thread's
late start plus its share, here the threads that run take the late one's pieces.  What
the region still waits for is every thread's arrival at libgomp's closing barrier (on the
inference's team, team.py, only the threads that joined the loop).  `team` is the size
the caller asked for, not the number of threads that came: a thread that never comes
(libgomp gave fewer, or one of the inference's team joined a later loop) leaves its whole
share to the others, and a thread whose id is `team` or more never joins.

The counters are `MAX_TEAM` i64s each on a cache line of its own (`COUNTER_STRIDE`), in
the caller's frame, zeroed before each region; the team is at most MAX_TEAM threads.
"""

from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir

from .scalar import I1, I64, I8, PTR

PIECES = 4  # pieces of a thread's share: the unit another thread may take over
MAX_TEAM = 64  # threads a parallel region runs on, at most
COUNTER_STRIDE = 8  # i64s between two counters: one 64-byte line each


def zero_counters(b: ir.IRBuilder, module: ir.Module, counters: ir.Value, team: ir.Value) -> None:
    """Zero the counters of a `team` (i32) about to run a region (llvm.memset)."""
    memset = module.declare_intrinsic("llvm.memset", [PTR, I64])
    size = b.mul(b.zext(team, I64), ir.Constant(I64, COUNTER_STRIDE * 8))
    b.call(memset, [counters, ir.Constant(I8, 0), size, ir.Constant(I1, 0)])


def share_loop(b: ir.IRBuilder, fn: ir.Function, counters: ir.Value, tid: ir.Value, team: ir.Value, extent: int,
               body: Callable[[ir.Value, ir.Value], None]) -> None:
    """Emit, at `b` in `fn`, thread `tid`'s part of a region of `team` threads (i64 values)
    over `[0, extent)`: `body(begin, end)` once per piece it takes (see the module doc);
    `b` is left at the end of it."""
    one = ir.Constant(I64, 1)
    total = ir.Constant(I64, extent)
    chunk = b.udiv(b.add(total, b.sub(team, one)), team, name="chunk")
    grain = b.udiv(b.add(chunk, ir.Constant(I64, PIECES - 1)), ir.Constant(I64, PIECES), name="grain")
    before = b.block
    share = fn.append_basic_block("share")
    piece = fn.append_basic_block("piece")
    run = fn.append_basic_block("piece.run")
    following = fn.append_basic_block("share.next")
    done = fn.append_basic_block("shares.done")
    b.branch(share)

    b.position_at_end(share)
    step = b.phi(I64, name="victim.step")
    victim = b.add(tid, step)
    victim = b.select(b.icmp_unsigned(">=", victim, team), b.sub(victim, team), victim, name="victim")
    start = _umin(b, b.mul(victim, chunk), total)
    stop = _umin(b, b.add(start, chunk), total)
    counter = b.gep(counters, [b.mul(victim, ir.Constant(I64, COUNTER_STRIDE))], inbounds=True, source_etype=I64)
    b.branch(piece)

    b.position_at_end(piece)
    taken = b.atomic_rmw("add", counter, one, "monotonic", name="taken")
    begin = b.add(start, b.mul(taken, grain), name="piece.begin")
    b.cbranch(b.icmp_unsigned("<", begin, stop), run, following)

    b.position_at_end(run)
    body(begin, _umin(b, b.add(begin, grain), stop))
    b.branch(piece)

    b.position_at_end(following)
    nxt = b.add(step, one)
    b.cbranch(b.icmp_unsigned("<", nxt, team), share, done)
    step.add_incoming(ir.Constant(I64, 0), before)
    step.add_incoming(nxt, following)
    b.position_at_end(done)


def _umin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_unsigned("<", x, y), x, y)
