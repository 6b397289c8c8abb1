"""The schedule a fused function gets when nobody wrote one, chosen by the stages present.

1. Injective stages that are not outputs are inlined into their readers, except
   * one that calls a costly math intrinsic (exp, tanh, ...) and is read at more than one
     place once inlined (softmax's exp, read by its sum and its division);
   * one that a convolution/dense/matmul reads (its padding, a cast of its input): inlined,
     its select and index arithmetic sit in the innermost loop and keep it from being
     vectorised (measured: conv2d 1x64x56x56, 64 3x3 filters, bias and relu, 2 threads:
     about 3x slower inlined than reading a padded copy).
   Those are computed once into a buffer and scheduled as injective stages.
2. Each remaining stage, producers first:
   * a convolution, dense or matmul (a sum tagged "nn.conv2d", "nn.dense", "nn.matmul",
     "nn.batch_matmul", ...): a register tile.  With data axes d0..dn-1, the last one
     (the output's contiguous axis) is split by the vector width and its inner part
     vectorized, the one before it split by 4 and its inner part unrolled; the loops are
       d0..dn-3, d(n-2).outer, d(n-1).outer   fused into one loop, parallel if the work is large
       reduction axes
       d(n-2).inner (unrolled), d(n-1).inner (vectorized)
     and the reduction is computed at the fused loop of its epilogue, the injective stage
     that alone reads it at its own position (bias, relu, cast, residual add), tiled the
     same way: each reduction step updates a 4 x 16 block of a tile-sized local buffer,
     which LLVM keeps in registers, and the epilogue reads the block back.  Without such
     an epilogue (the result is an output, or read elsewhere) `cache_write` makes one, a
     copy.  Measured (2 threads, conv2d 3x3 NCHW, bias, relu): 1x64x56x56 64 filters
     2.8 ms, 1x128x28x28 128 filters 2.5-2.7 ms (85 GFLOP/s); accumulating in the output
     buffer instead (no cache) was 4-6x slower; unrolling 2 or 8 rows, or 8 lanes, slower.
   * another reduction: its data axes fused into one loop (parallel when the work is
     large), the reduction loops inside.
   * an injective stage: two loops, the inner one the trailing axes fused until it has at
     least 64 iterations, vectorized whole (LLVM's vectoriser handles the remainder), the
     outer one the other axes fused, parallel from 16384 elements (a single loop is split
     into chunks for that, by a divisor of its extent when there is one).  Flattening
     everything and splitting by the vector width instead puts a guard in the vectorized
     loop when the width does not divide, and a division by the row length in each
     broadcast read: measured 2-3x slower on (1000, 1001) + (1001,).

The vector width is 64 bytes' worth of the stage's dtype (16 lanes for 4-byte types),
never more than the extent; "large work" is 16384 elements (times the reduction size for
reductions).  Every shape works: odd extents get guards, extents of 1 drop their loop, 0-d
stages are a single statement.
"""

from __future__ import annotations

from typing import Sequence

from . import te
from .schedule import Schedule, Stage

VECTOR_BYTES = 64
UNROLL = 4
PARALLEL_MIN = 16384
INNER_MIN = 64
ANCHOR_WORDS = ("conv", "dense", "matmul")
COSTLY = ("exp", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "atan", "tanh",
          "erf", "sigmoid")


def default_schedule(outputs: Sequence[te.Tensor], inputs: Sequence[te.Tensor], name: str) -> Schedule:
    """A schedule for the computes between `inputs` and `outputs` (see the module doc)."""
    sch = Schedule(outputs, inputs, name)
    _inline_injective(sch)
    done: set[int] = set()
    for stage in list(sch.stages):
        if stage.inlined or id(stage) in done:
            continue
        if _is_anchor(stage):
            epilogue = _epilogue(sch, stage)
            if epilogue is None:
                epilogue, stage = stage, sch[sch.cache_write(stage.tensor)]
            _schedule_anchor(sch, stage, epilogue)
            done.add(id(epilogue))
        elif stage.is_reduction:
            _schedule_reduction(sch, stage)
        else:
            _schedule_injective(sch, stage)
    return sch


def vector_width(dtype: str) -> int:
    return max(1, VECTOR_BYTES // max(1, te.bits(dtype) // 8))


# ---------------------------------------------------------------------- inlining


def _inline_injective(sch: Schedule) -> None:
    """Inline injective intermediates, readers first (so what reads what is final)."""
    sites: dict[int, int] = {}  # stage id -> reads of it once inlined into the kept stages
    by_anchor: dict[int, bool] = {}  # stage id -> read by an anchor once inlined
    for stage in reversed(sch.stages):
        n, anchor = 0, False
        for reader in sch.stages:
            count = sum(1 for e in _nodes(reader.body)
                        if isinstance(e, te.Load) and e.tensor is stage.tensor)
            if count:
                n += count * (sites[id(reader)] if reader.inlined else 1)
                anchor |= by_anchor[id(reader)] if reader.inlined else _is_anchor(reader)
        sites[id(stage)], by_anchor[id(stage)] = n, anchor
        if stage.is_reduction or sch.is_output(stage):
            continue
        costly = any(isinstance(e, te.Call) and e.name in COSTLY or isinstance(e, te.Binary) and e.op == "pow"
                     for e in _nodes(stage.body))
        if (anchor and stage.axes) or (costly and n > 1):
            continue
        sch.compute_inline(stage.tensor)


def _nodes(e: te.PrimExpr) -> list[te.PrimExpr]:
    seen: dict[int, te.PrimExpr] = {}
    stack = [e]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen[id(n)] = n
            stack.extend(te.children(n))
    return list(seen.values())


# ---------------------------------------------------------------------- per kind


def _size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _schedule_injective(sch: Schedule, stage: Stage) -> None:
    t = stage.tensor
    axes = list(stage.axes)
    if _size(t.shape) <= 1:
        return
    split = len(axes) - 1  # axes[split:] make the inner loop: long enough to vectorise
    while split > 0 and _size(a.extent for a in axes[split:]) < INNER_MIN:
        split -= 1
    inner = sch.fuse(t, *axes[split:]) if len(axes) - split > 1 else axes[split]
    parallel = _size(t.shape) >= PARALLEL_MIN
    if split > 0:
        outer = sch.fuse(t, *axes[:split]) if split > 1 else axes[0]
    elif parallel:
        outer, inner = sch.split(t, inner, _chunk(inner.extent))
    else:
        outer = None
    sch.vectorize(t, inner)
    if parallel and outer is not None and outer.extent > 1:
        sch.parallel(t, outer)


def _chunk(extent: int) -> int:
    """A factor cutting one long loop into parallel chunks: a divisor of the extent from
    64 to 8192 iterations when there is one (no guard), else 4096."""
    for d in range(min(8192, extent // 2), INNER_MIN - 1, -1):
        if extent % d == 0:
            return d
    return 4096


def _schedule_reduction(sch: Schedule, stage: Stage) -> None:
    t = stage.tensor
    if not stage.axes:
        return
    axis = sch.fuse(t, *stage.axes) if len(stage.axes) > 1 else stage.axes[0]
    work = _size(t.shape) * _size(a.extent for a in stage.reduce_axes)
    if axis.extent > 1 and work >= PARALLEL_MIN:
        sch.parallel(t, axis)


def _is_anchor(stage: Stage) -> bool:
    body = stage.body
    return (isinstance(body, te.Reduce) and body.combiner == "sum" and bool(stage.axes)
            and any(w in stage.tensor.op.tag for w in ANCHOR_WORDS))


def _epilogue(sch: Schedule, anchor: Stage) -> Stage | None:
    """The injective stage that alone reads `anchor`, at its own position, if any."""
    if sch.is_output(anchor):
        return None
    t = anchor.tensor
    readers = [s for s in sch.stages if not s.inlined and any(
        isinstance(e, te.Load) and e.tensor is t for e in _nodes(sch.effective_body(s)))]
    if len(readers) != 1:
        return None
    reader = readers[0]
    if reader.is_reduction or reader.tensor.shape != t.shape:
        return None
    axes = reader.tensor.op.axes
    for e in _nodes(sch.effective_body(reader)):
        if isinstance(e, te.Load) and e.tensor is t and not all(i is a for i, a in zip(e.indices, axes)):
            return None
    return reader


def _tile(sch: Schedule, stage: Stage, vw: int) -> tuple[list, list]:
    """Split the last data axis by `vw` and the one before by UNROLL: (outer loops,
    [inner loops]) with the inner ones annotated."""
    t, axes = stage.tensor, list(stage.axes)
    outer, inner = axes[:-2], []
    for axis, factor, kind in ((axes[-2] if len(axes) > 1 else None, UNROLL, "unroll"),
                               (axes[-1], vw, "vectorize")):
        if axis is None:
            continue
        if axis.extent <= 1:
            outer.append(axis)
            continue
        o, i = sch.split(t, axis, factor)
        outer.append(o)
        inner.append((i, kind))
    return outer, inner


def _schedule_anchor(sch: Schedule, stage: Stage, epilogue: Stage | None) -> None:
    t = stage.tensor
    vw = vector_width(t.dtype)
    outer, inner = _tile(sch, stage, vw)
    sch.reorder(t, *outer, *stage.reduce_axes, *(i for i, _ in inner))
    for axis, kind in inner:
        getattr(sch, kind)(t, axis)
    work = _size(t.shape) * _size(a.extent for a in stage.reduce_axes)
    if epilogue is None:
        loop = sch.fuse(t, *outer) if len(outer) > 1 else outer[0]
        if loop.extent > 1 and work >= PARALLEL_MIN:
            sch.parallel(t, loop)
        return
    e = epilogue.tensor
    e_outer, e_inner = _tile(sch, epilogue, vw)
    sch.reorder(e, *e_outer, *(i for i, _ in e_inner))
    for axis, kind in e_inner:
        getattr(sch, kind)(e, axis)
    loop = sch.fuse(e, *e_outer) if len(e_outer) > 1 else e_outer[0]
    if loop.extent > 1 and work >= PARALLEL_MIN:
        sch.parallel(e, loop)
    sch.compute_at(t, e, loop)
