"""Unrolled loops left to LLVM to unroll: a register tile's step over a reduction axis.

A convolution's register tile (schedule/conv_tile_end.py `unroll_block_channels`) unrolls
its reduction over the channels of one input block, `rci`, around the unrolled tile of
accumulators:

    for rci in unrolled(16):
      for ax1_2 in unrolled(4):
        for ax3_2 in unrolled(4):
          for ax4_2 in vectorized(16):
            acc[(ax1_2 * 4 + ax3_2) * 16 + ax4_2] = acc[...] + p0[... + rci] * p1[... + rci * 16 + ax4_2]

Emitted iteration by iteration, that is 16 copies of the tile's step: ResNet-50's 1x1
convolutions were 70-77% of their unoptimised IR such copies.  LLVM unrolls the same
loop itself when it carries `llvm.loop.unroll.full` (O3's full unroller, before the
passes that shape the code: every iteration's addresses become constant offsets from
one base as the emitter makes them), so the generator emits a loop, once, and the
Python that wrote each copy, the printing and LLVM's parse of it go.  `llvm_unrolls`
says which loops: an unrolled loop of at most MAX_TRIPS iterations whose body is only
unrolled or vectorized loops and stores into local buffers (an accumulator tile), where
the loop's variable is no part of any store's index (each iteration updates the same
elements: a reduction) and is read only in load indices (no select or comparison on it,
which the emitter folds per iteration and LLVM could fold otherwise).

Measured on ResNet-50's 29 kernels (h-build13): its unoptimised IR 53,820 -> 25,500
lines, the Python of LLVM IR 0.78 -> 0.35 CPU s; the machine code instruction for
instruction the same in 26 kernels; in 3 (1x1 convolutions of 2 inputs' blocks) the
set-up of the weights' address outside the reduction loop differs by a register or an
instruction, the loop itself the same.
"""

from __future__ import annotations

from typing import Any, Callable

from ..schedule.loopnest import For, Seq, Stmt, Store
from ..te import expr as te

MAX_TRIPS = 16  # iterations: the copies stay far below LLVM's bound for a forced full unroll (16K instructions)


def llvm_unrolls(s: For, lanes: Callable[[For], Any]) -> bool:
    """Whether the unrolled loop `s` is emitted as a loop that LLVM unrolls (module doc).
    `lanes(v)`: the plan of a vectorized loop `v` as straight-line vector code (llvm.py's
    `_Plans.lanes`), None when it would be a loop of its own, which keeps `s` unrolled
    here (a loop inside: not the tile step this is for)."""
    if s.kind != "unrolled" or not 1 < s.extent <= MAX_TRIPS:
        return False
    stores: list[Store] = []
    if not _tile_of_stores(s.body, stores, lanes) or not stores:
        return False
    var = s.var
    return all(not _reads(st.index, var) and _only_in_load_indices(st.value, var, False) for st in stores)


def _tile_of_stores(stmt: Stmt, stores: list[Store], lanes: Callable[[For], Any]) -> bool:
    """Whether `stmt` is unrolled loops, vectorized loops emitted as vector code, and
    stores into local buffers only (collected into `stores`)."""
    if isinstance(stmt, Store):
        stores.append(stmt)
        return stmt.buffer.scope == "local"
    if isinstance(stmt, For):
        if stmt.kind == "vectorized" and lanes(stmt) is None:
            return False
        return stmt.kind in ("unrolled", "vectorized") and _tile_of_stores(stmt.body, stores, lanes)
    if isinstance(stmt, Seq):
        return all(_tile_of_stores(x, stores, lanes) for x in stmt.stmts)
    return False


def _reads(e: te.PrimExpr, var: te.Var) -> bool:
    return any(n is var for n in te.nodes(e))


def _only_in_load_indices(e: te.PrimExpr, var: te.Var, in_index: bool) -> bool:
    """Whether `var` appears in `e` only under the index of a buffer load (`in_index`: `e`
    is part of one), and in no select or call (which the emitter folds per iteration)."""
    if e is var:
        return in_index
    if isinstance(e, (te.Select, te.Call)):
        return not _reads(e, var)
    if isinstance(e, te.BufferLoad):
        return _only_in_load_indices(e.index, var, True)
    return all(_only_in_load_indices(k, var, in_index) for k in te.children(e))
