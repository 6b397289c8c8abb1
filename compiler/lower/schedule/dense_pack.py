"""Default schedule of `nn.contrib_dense_pack` (te/topi/dense_pack.py; TVM:
topi/x86/dense.py `schedule_dense_pack`).

The blocked reduction `T_dense_pack_NC{x}n` (M, B, x), B blocks of x output features,
gets a register tile of `rows` rows of data x `blocks` blocks x the x lanes.  Per step
of k the tile broadcasts `rows` data scalars, loads `blocks` x-wide vectors of the
packed weight (contiguous: x features of one k) and does rows*blocks FMAs into
accumulators that LLVM keeps in registers.  The tile is computed at the tile loop of its
epilogue, the injective stage that alone reads it back at its own (i, j) (the unpack
`T_dense_pack` inlined into bias, relu, cast...), which writes the tile x lanes at a time:

    for j.outer, i.outer          fused, parallel when the work is large; the columns
                                  outside the rows, so a tile of the weight stays in
                                  cache while every row of the data passes
      T_dense_pack_NC{x}n.local   the tile, for k.outer: k.inner (UNROLL_STEPS, unrolled),
                                  i (rows, unrolled), b (blocks, unrolled), lane (x,
                                  vectorized): FMA
      i.inner (rows, unrolled), b (blocks, unrolled), lane (x, vectorized): the epilogue

`rows` is the largest divisor of M up to ROWS, `blocks` the largest divisor of B that
keeps rows * blocks * (registers of x lanes) accumulators within the host's budget
(vector_unit.py: 20 of AVX-512's 32 registers, 12 of AVX2's 16; at least 1), so no loop
needs a guard.  The rows come first: the weight's tile is read from L2 (16 features of
768 are 48 KiB), once per `rows` FMAs.  On AVX2 (x = 16: two registers), 128 x 768 by
3072, 1 thread, CPU time: 4 rows x 1 block 13.8 ms, 2 rows x 3 blocks (12 accumulators,
more loads of the weight) 29 ms; the tile sized for 32 registers (4 x 4 blocks, 32
accumulators, spilled) 23.9 ms.

With whole vectors and K a multiple of UNROLL_STEPS, the loop body makes that many steps
of k: with one step a body, the loop's counter, its branch and the prefetch's address
arithmetic (about 7 instructions beside 12 FMAs and 7 loads) came every step.  Measured
(AVX2, 4 rows x 3 blocks of 8, 1 thread, CPU time, builds alternated in one run, 9
rounds, load 3.6-4.4): ÷ the one-step body, 128x768 by 3072 0.91 (4 steps) and 0.90 (8),
128x3072 by 768 0.92 and 0.93, 128x768 by 768 0.85 and 0.82.

When x is not a power of two (TVM packs 1000 units NC25n: the largest divisor up to 32)
LLVM's loop vectoriser does not take the lane loop whole: it vectorised 8 lanes at a
time with the accumulators left in memory, 1.3-2.2x slower than the unpacked dense's
schedule on 1x2048 by 1000.  There the tile's lanes are unrolled instead (LLVM's SLP
vectoriser packs them, in registers) and the tile kept to rows * blocks <=
ODD_LANES_BLOCKS: measured 0.88-0.91x of the unpacked dense (blocks of 10: 1.28x).
With more rows that tile lost 2-4x (128x768 by 1000: 3.8x), so for M a multiple of
ROW_LANES the compute keeps the rows in the vectors (te/topi/dense_pack.py
`rows_in_vectors`): the product (units/x, x, M) gets a tile of 16 rows (vectorized) x one
block's x lanes (unrolled: x accumulators, each step one vector of transposed data times
x weight scalars), computed at the epilogue's tile loop as above; the transposed data
`T_dense_pack_data_t` is copied in 16 x 16 tiles (read along k, unrolled along the rows).
Measured (1 thread): 128x768 by 1000 0.86x of the unpacked dense; by 10 (one block of
10, the transpose as costly as the product) still 1.9x.  Without such an epilogue (the result is read elsewhere at other
positions) `cache_write` makes one, a copy in the blocked layout.

The weight panel of a column block (blocks x K x x) is read from L2 by every row tile of
the block but first comes from memory: a model's weights (27 MiB for a GPT-2 block) do not
stay in the caches between calls, and the first tile of each block read its panel at the
memory's pace (72 KiB for 768 x 3 blocks of 8; the kernel ran at 92% of the FMA peak
against 98% for a weight that stays in L3).  So each step k of each tile prefetches
(`prefetch`, PREFETCHT1) a piece of the next block's panel: tile t of T at step k its
element (t*K + k) * blocks*x / T, so that every line of it has been asked for once the
block's tiles are done (one prefetch a loop body, of UNROLL_STEPS steps when they are
unrolled), provided a body moves on at most a cache line (T large enough,
as with 128 rows; the last block prefetches past the weight, which reads nothing).
Measured on the AMD EPYC (AVX2, 4 rows x 3 blocks of 8, A/B alternated in one run, load
2.3-3.3): 1 thread, CPU time, 128x768 by 3072 6.57 -> 6.23-6.26 ms (92 -> 97% of the FMA
peak), 128x3072 by 768 6.48 -> 6.30-6.36, 128x768 by 768 (its 2.4 MiB weight stays in L3
when called alone) 1.538 -> 1.531-1.535; the GPT-2 block (its 4 denses) 21.78 -> 20.76 ms
median; at 2 threads (run with `chrt -f`, the two cores ours) 13.03 -> 12.25 ms.
"""

from __future__ import annotations

from ..te import expr as te
from ..te.topi.dense_pack import BLOCKED_TAG, ROW_LANES, ROWS_TAG
from .primitives import Schedule, Stage
from .stage import Axis
from .vector_unit import VectorUnit, host_unit

ROWS = 4
ODD_LANES_BLOCKS = 4  # rows x blocks of a tile whose lanes are unrolled (see the module doc)
PARALLEL_MIN = 16384  # elements times reduction length, as defaults.py
UNROLL_STEPS = 4  # reduction steps a tile's loop body makes
LINE_BYTES = 64  # a cache line: the most of the next panel one loop body of a tile may move on


def schedule_dense_packs(sch: Schedule) -> set[int]:
    """Schedule every packed dense of `sch` with its epilogue; the ids of the stages
    scheduled."""
    done: set[int] = set()
    for stage in list(sch.stages):
        if not _is_blocked(stage):
            continue
        epilogue = _epilogue(sch, stage)
        if epilogue is None:
            epilogue, stage = stage, sch[sch.cache_write(stage.tensor)]
        if _rows(stage):
            transposed = _schedule_transpose(sch, stage)
            if transposed is not None:
                done.add(id(transposed))
        _schedule_tile(sch, stage, epilogue)
        done.update((id(stage), id(epilogue)))
    return done


def dense_tile(m: int, blocks: int, lanes: int, unit: VectorUnit | None = None) -> tuple[int, int]:
    """(rows, blocks) of the register tile on `unit` (default the host's; see the module doc)."""
    unit = unit or host_unit()
    rows = max(d for d in range(1, min(m, ROWS) + 1) if m % d == 0)
    vectors = unit.registers_for(lanes) if _whole_vectors(lanes) else -(-lanes // unit.lanes)
    limit = unit.accumulators if _whole_vectors(lanes) else ODD_LANES_BLOCKS * vectors
    fit = [d for d in range(1, blocks + 1) if blocks % d == 0 and rows * d * vectors <= limit]
    return rows, max(fit, default=1)


def _prefetch_next_panel(sch: Schedule, blocked: Stage, rows: int, blocks: int, at: Axis, steps: int) -> None:
    """Spread the prefetch of the next column block's weights (its `blocks` x K x lanes
    panel) over the steps of this block's row tiles (see the module doc): one at each
    iteration of `at`, the loop over k whose body makes `steps` steps."""
    t = blocked.tensor
    m, nb, lanes = t.shape
    weight = next((ld.tensor for ld in _loads(blocked.body.source) if len(ld.tensor.shape) == 3
                   and any(ld.tensor is x for x in sch.inputs)), None)
    tiles = m // rows
    if weight is None or len(blocked.reduce_axes) != 1:
        return
    if steps * blocks * lanes * max(1, te.bits(weight.dtype) // 8) > LINE_BYTES * tiles:
        return  # too few row tiles: a loop body would skip lines of the next panel
    i, b, _ = t.op.axes
    (k,) = blocked.body.axes
    depth = k.extent
    start = (b + blocks) * (depth * lanes)  # the next panel, at the tile's first block
    step = ((i // rows) * depth + k) * (blocks * lanes) // tiles  # this tile's share of it, one step a k
    sch.prefetch(t, at, weight, start + step)


def _whole_vectors(lanes: int) -> bool:
    """Whether LLVM's vectoriser takes a loop of `lanes` whole (a power of two)."""
    return lanes & (lanes - 1) == 0


def _is_blocked(stage: Stage) -> bool:
    body = stage.body
    return (not stage.inlined and isinstance(body, te.Reduce) and body.combiner == "sum"
            and stage.tensor.op.tag in (BLOCKED_TAG, ROWS_TAG) and len(stage.axes) == 3)


def _rows(stage: Stage) -> bool:
    """Whether the product keeps rows in its vectors: (units/x, x, M), tagged ROWS_TAG."""
    return stage.tensor.op.tag == ROWS_TAG


def _loads(e: te.PrimExpr) -> list[te.Load]:
    return [n for n in te.nodes(e) if isinstance(n, te.Load)]


def _epilogue(sch: Schedule, blocked: Stage) -> Stage | None:
    """The injective stage that alone reads `blocked` (M, B, x), each time at its own
    (i, j): blocked[i, j // x, j % x] (i may read as 0 when M is 1)."""
    if sch.is_output(blocked):
        return None
    t = blocked.tensor
    readers = [s for s in sch.stages if not s.inlined and any(
        ld.tensor is t for ld in _loads(sch.effective_body(s)))]
    if len(readers) != 1 or readers[0].is_reduction or len(readers[0].axes) != 2:
        return None
    reader = readers[0]
    rows = _rows(blocked)
    m, lanes = (t.shape[2], t.shape[1]) if rows else (t.shape[0], t.shape[2])
    if tuple(reader.tensor.shape) != (m, t.shape[0 if rows else 1] * lanes):
        return None
    i, j = reader.tensor.op.axes
    for ld in _loads(sch.effective_body(reader)):
        if ld.tensor is not t:
            continue
        row_index, block, lane = (ld.indices[2], ld.indices[0], ld.indices[1]) if rows else ld.indices
        row = row_index is i or (isinstance(row_index, te.Const) and row_index.value == 0 and i.extent == 1)
        if not (row and _is_op(block, "floordiv", j, lanes) and _is_op(lane, "floormod", j, lanes)):
            return None
    return reader


def _is_op(e: te.PrimExpr, op: str, axis: te.IterVar, c: int) -> bool:
    return (isinstance(e, te.Binary) and e.op == op and e.a is axis
            and isinstance(e.b, te.Const) and e.b.value == c)


def _schedule_transpose(sch: Schedule, product: Stage) -> Stage | None:
    """The data transposed for the rows-in-vectors product, in 16 x 16 tiles: each tile
    read along k (whole rows of data) and written along the rows, both unrolled."""
    data_t = next((ld.tensor for ld in _loads(product.body.source)
                   if ld.tensor.op is not None and len(ld.tensor.shape) == 2), None)
    if data_t is None or sch[data_t].inlined or sch[data_t].is_reduction:
        return None
    stage = sch[data_t]
    kk, i = stage.axes
    tile = ROW_LANES
    ko, ki = sch.split(data_t, kk, tile)
    io, ii = sch.split(data_t, i, tile)
    sch.reorder(data_t, ko, io, ii, ki)
    sch.unroll(data_t, ii)
    sch.vectorize(data_t, ki)
    return stage


def _schedule_rows(sch: Schedule, product: Stage, epilogue: Stage) -> None:
    """The rows-in-vectors product (see the module doc): a tile of ROW_LANES rows x one
    block's x lanes, the rows vectorized, the lanes unrolled (x accumulators)."""
    t, e = product.tensor, epilogue.tensor
    nb, lanes, m = t.shape
    b, lane, i = product.axes
    sch.reorder(t, *product.reduce_axes, b, lane, i)
    sch.unroll(t, b)
    sch.unroll(t, lane)
    sch.vectorize(t, i)
    if e.ndim == 3:  # a copy in the product's layout (cache_write)
        eb, el, ei = epilogue.axes
        io, ii = sch.split(e, ei, ROW_LANES)
        sch.reorder(e, eb, io, el, ii)
        sch.vectorize(e, ii)
        outer = (eb, io)
    else:
        ei, ej = epilogue.axes
        bo, inner_lane = sch.split(e, ej, lanes)
        io, ii = sch.split(e, ei, ROW_LANES)
        sch.reorder(e, bo, io, ii, inner_lane)
        sch.vectorize(e, inner_lane)
        outer = (bo, io)
    loop = sch.fuse(e, *outer)
    work = m * nb * lanes
    for axis in product.reduce_axes:
        work *= axis.extent
    if loop.extent > 1 and work >= PARALLEL_MIN:
        sch.parallel(e, loop)
    sch.compute_at(t, e, loop)


def _schedule_tile(sch: Schedule, blocked: Stage, epilogue: Stage) -> None:
    if _rows(blocked):
        return _schedule_rows(sch, blocked, epilogue)
    t, e = blocked.tensor, epilogue.tensor
    m, nb, lanes = t.shape
    rows, blocks = dense_tile(m, nb, lanes)
    i, b, lane = blocked.axes
    steps = _unrolled_steps(blocked, lanes)
    if steps:
        ko, ki = sch.split(t, blocked.reduce_axes[0], steps)
        sch.reorder(t, ko, ki, i, b, lane)
        sch.unroll(t, ki)
    else:
        sch.reorder(t, *blocked.reduce_axes, i, b, lane)
    sch.unroll(t, i)
    sch.unroll(t, b)
    if _whole_vectors(lanes):
        sch.vectorize(t, lane)
    else:
        sch.unroll(t, lane)
    if e.ndim == 3:  # a blocked copy (cache_write)
        ei, eb, inner_lane = epilogue.axes
        bo, bi = sch.split(e, eb, blocks)
    else:
        ei, ej = epilogue.axes
        bo, features = sch.split(e, ej, blocks * lanes)
        bi, inner_lane = sch.split(e, features, lanes)
    io, ii = sch.split(e, ei, rows)
    sch.reorder(e, bo, io, ii, bi, inner_lane)
    sch.unroll(e, ii)
    sch.unroll(e, bi)
    sch.vectorize(e, inner_lane)
    loop = sch.fuse(e, bo, io)
    work = m * nb * lanes
    for axis in blocked.reduce_axes:
        work *= axis.extent
    if loop.extent > 1 and work >= PARALLEL_MIN:
        sch.parallel(e, loop)
    sch.compute_at(t, e, loop)
    if _whole_vectors(lanes):
        _prefetch_next_panel(sch, blocked, rows, blocks, ko if steps else blocked.reduce_axes[0], steps or 1)


def _unrolled_steps(blocked: Stage, lanes: int) -> int:
    """UNROLL_STEPS when the reduction is one loop it divides, of whole vectors; else 0."""
    if len(blocked.reduce_axes) != 1 or not _whole_vectors(lanes):
        return 0
    return UNROLL_STEPS if blocked.reduce_axes[0].extent % UNROLL_STEPS == 0 else 0
