"""The schedule a fused function gets when nobody wrote one, chosen by the stages present.

1. Injective stages that are not outputs are inlined into their readers, except
   * one that calls a costly math intrinsic (exp, tanh, ...) and is read at more than one
     place once inlined (softmax's exp, read by its sum and its division);
   * one read at one place that calls a costly intrinsic, or reads one nothing else reads
     (a softplus's last `where`, its log inside), when that place would compute it
     REPEATS_MIN times or more per element (repeats.py): an index map that is not one to
     one (a nearest resize's `y // 2`, a pooling window, a take) or one invariant in an
     outer loop only (a broadcast along rows).  Counting places alone inlined a softplus
     into the nearest resize x2 after it, four logs per value.  Repeats in the innermost
     loops, where the index does not change, are not counted: LLVM hoists them (a layer
     norm's rsqrt read along its row stays inlined).  Measured (1 thread, CPU time, the
     two schedules alternated in one process, load 4-7): bench/onnx_ops.py's `det`, the
     resize kernel 476 -> 246 us, an instance norm packed to NCHW4c (its rsqrt per channel
     was computed per 8 outputs) 88 -> 76 us, the model 0.86-0.89x (2 threads: the resize
     kernel 336 -> 181 us, the kernels 0.866x, the model 0.87-0.96x beside a busy core);
     `head` (a Mish read through a resize x2) 0.787x; `lstm` 0.694x (a tanh of 128 read
     down the 64 rows of a packed weight, 27 -> 14 us at each of its 64 calls).
     REPEATS_MIN: a chain of exp, add and log, or x * sigmoid(x), on 1x32x64x64 read
     through a nearest resize to 70, 78, 90, 128 (1.2, 1.5, 2, 4 per element), kept
     against inlined: 0.95, 0.81, 0.82, 0.89x and 1.08, 0.89, 0.95, 1.00x; kept when read
     once (a resize to 64) 1.38 and 1.71x;
   * one that a convolution/dense/matmul reads (its padding, a cast of its input): inlined,
     its select and index arithmetic sit in the innermost loop and keep it from being
     vectorised (measured: conv2d 1x64x56x56, 64 3x3 filters, bias and relu, 2 threads:
     about 3x slower inlined than reading a padded copy).
   Those are computed once into a buffer and scheduled as injective stages.
2. Each remaining stage, producers first:
   * a channel-blocked float32 conv2d (te/topi/conv_blocked.py: NCHW with at least 16
     channels, groups 1 or depthwise): conv.py (16-channel vectors, a 2 x 16
     channels by 10 columns register tile, the epilogue applied at write-back);
   * a packed dense (nn.contrib_dense_pack, te/topi/dense_pack.py): dense_pack.py (rows x
     blocks of the packed weight's lanes in registers, the epilogue applied at write-back);
   * a Winograd convolution (te/topi/winograd.py): winograd.py (its input transform, the
     product per position in a register tile, the output transform with the epilogue);
   * a batch_matmul that reads b along its rows (transpose_b false: attention's two
     products), N a multiple of the vector width: batch_matmul.py (6 rows x 16 lanes in
     registers, computed at the epilogue's column strips);
   * another convolution, dense or matmul (a sum tagged "nn.conv2d", "nn.dense", "nn.matmul",
     "nn.batch_matmul", "einsum", ...): a register tile.  With data axes d0..dn-1, the last one
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
     An einsum is one too (and takes the lane sums below when it reads its operands along
     its one summed label): attention written as einsums, 12 heads of 128 x 64, 1 thread,
     its values product from 57.7 to 1.6-2.0 ms, its scores from 6.5 to 1.8-2.2 (load 7;
     onnxruntime's Einsum nodes 0.9 and 2.0 ms unoptimised).
   * a product that reads every operand along its one reduction axis k (`nn.dense`'s
     `a[i, k] * w[j, k]`, `nn.batch_matmul` with `transpose_b`), k at least RFACTOR_MIN
     long and a multiple of the vector width: the tile above would read `w[j..j+15, k]`,
     16 rows K apart, a gather per step (with K a power of two, every row in the same L1
     set).  Before the schedule is made, it is rewritten as TVM's rfactor would (the
     record's first snapshot shows it):
       T.rf[i, j, kl] = sum over ko of a[i, ko*16 + kl] * w[j, ko*16 + kl]
       T[i, j]        = sum over kl of T.rf[i, j, kl]
     T, the lane total, takes the product's place; its readers (bias, relu) become
     injective stages of their own.  T is tiled 4 x 4 (RF_TILE), its tile loops fused
     (the columns' outside the rows', so a tile of w's rows stays in L1 while every row
     of a passes: 128x768 by 3072, 1 thread, 8.0-8.9 ms before, 7.7-8.0 after) and
     parallel when the work is large, and T.rf is computed at that loop: ko outside, the
     4 x 4 tile unrolled, kl vectorized, so each step loads 4 rows of a and 4 of w as
     whole vectors for 16 FMAs into 16 registers; then T adds each vector's 16 lanes
     (scalar adds, 15 per output).  Measured (1 thread, dense with bias, best of 15, the
     tile above against this, idle machine): 64x512 by 512 from 8-14 to 105-109 GFLOP/s,
     128x768 by 3072 from 11-14 to 48-51, 1x2048 by 1000 from 5-9 to 13 (memory-bound),
     128x64 by 128 (K = 64) from 12-14 to 24.  Before FMA contraction: 512x64 by 512 from
     7 to 17-19; at K = 32 it still gained a little (7 to 8-10), at K = 16 it lost (6-8 to
     5-6): RFACTOR_MIN is 64, which leaves K = 32 to the tile.
   * a pooling window (a reduction tagged "nn.*pool*") whose output rows have at least
     POOL_LANES_MIN elements: the last axis split by the vector width (or half of it,
     when that divides the row and the whole width does not: no guard in the vector
     loop).  A window of at most WINDOW_UNROLL_MAX positions is unrolled inside the
     vector, so each output vector is accumulated in registers and stored once, and up to
     POOL_COLUMNS output vectors (those of a row, else positions of the axis before) are
     unrolled side by side: independent chains of max or add, which the core overlaps.  A
     larger window loops outside the vector.  The other axes fused, parallel from
     conv_tile_end.FORK_MIN additions, as for global pooling below (MobileNet v2's global
     pool, 1x160x7x7x8, forked from 16,384: 8.6 us an inference on one thread, 25 on two,
     in the model, load 3).  A window strided along the data's last axis reads `T_phases` (the row cut
     into its stride's phases, te/topi/pooling.py), computed at the loop of the output
     rows for the input rows they read, with the phases of a position unrolled inside
     the vectorized positions (a wide load split by shuffles); the window then reads
     each phase at consecutive positions.  Measured (1 thread, best of 30 CPU times,
     onnxruntime's node beside in the same run, load 5-7 from other work): max_pool2d
     3x3 stride 2 on 1x64x112x112 from 1.35 ms (9 gathers per output vector) to 0.27
     (onnxruntime 0.19), the same on 1x4x112x112x16 (NCHW16c, ResNet-50's) from 0.24 to
     0.15 (0.20), avg_pool2d 3x3 stride 1 on 1x64x56x56 from 0.21 to 0.13 (0.09).
   * another reduction: its data axes fused into one loop (parallel when the work is
     large), the reduction loops inside; for a pool (global pooling, shorter rows) with
     WINDOW_SIDE outputs unrolled innermost, side by side (independent chains: 2048
     channels of 7x7, 1 thread, CPU time, from 0.045 ms to 0.035 with 8 side by side,
     0.028 with 4, 0.044-0.049 with 2; onnxruntime 0.025-0.027), parallel only from
     conv_tile_end.FORK_MIN additions (a few microseconds of work: a fork and join cost more).
   * a transpose (an injective stage reading an input far apart along its last axis and
     contiguously along the one before): transpose.py, blocks of input rows;
   * another injective stage: two loops, the inner one the trailing axes fused until it has at
     least 64 iterations, vectorized whole (LLVM's vectoriser handles the remainder), the
     outer one the other axes fused, parallel from 16384 elements (a single loop is split
     into chunks for that, by a divisor of its extent when there is one).  Flattening
     everything and splitting by the vector width instead puts a guard in the vectorized
     loop when the width does not divide, and a division by the row length in each
     broadcast read: measured 2-3x slower on (1000, 1001) + (1001,).

The vector width is 64 bytes' worth of the stage's dtype (16 lanes for 4-byte types),
never more than the extent; "large work" is 16384 elements (times the reduction size for
reductions; for global pools conv_tile_end.FORK_MIN, the work a fork and join is worth;
convolution tiles fork from conv_tile_end.TILE_FORK_MIN).  Every shape works: odd extents get guards, extents of 1 drop their loop, 0-d
stages are a single statement.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..te import expr as te
from ..te.topi.pooling import PHASES
from ..te.topi.transform import PACK, REBLOCK, UNPACK
from ..te.topi.winograd import INPUT_NAME as WINO_INPUT
from .batch_matmul import schedule_batch_matmul, schedules_batch_matmul
from .interleave import TAPS, interleave_stride, phase_rows, schedule_interleave
from .phase_pad import is_phase_pad, schedule_phase_pad
from .conv import schedule_blocked_convs
from .conv_tile_end import FORK_MIN
from .dense_pack import schedule_dense_packs
from .winograd import schedule_winograds
from .runs import run_length
from .row_reduce import schedule_row_group, schedule_rows, split_lanes, wants_lanes
from .transpose import is_transpose, schedule_transpose
from .primitives import Schedule, Stage
from .repeats import guard_of, repeats

VECTOR_BYTES = 64
UNROLL = 4
PARALLEL_MIN = 16384
INNER_MIN = 64
POOL_LANES_MIN = 8  # the shortest output row a pooling window is vectorized along
WINDOW_UNROLL_MAX = 16  # the largest pooling window unrolled inside its vector
POOL_ROW_MAX = 64  # the longest phased output row vectorized whole (codegen: powers of two)
REBLOCK_PERIOD_MAX = 8  # the most result blocks of a reblocking layout_transform unrolled
PACK_ROW = 8  # the vector of a row packed into blocks, when the row is a longer power of two
WIDE_PIECE_MIN = 4  # the shortest vector of a row packed into blocks wider than a vector (`_wide_block_piece`)
UNPACK_ROW = 16  # the vector of a row unpacked from blocks, when the whole row's would be costly (`_schedule_unpack`)
UNPACK_INSERTS_MAX = 256  # ... its lanes times the block's channels, from which it is
WHOLE_ROW_MAX = 64  # the longest row lanes.py makes whole vectors of (a power of two)
WINDOW_SIDE = 4  # outputs of a whole-window pool (global pooling) computed side by side
POOL_COLUMNS = 8  # output vectors of a pooling window computed side by side
REPEATS_MIN = 1.5  # computations per element, inlined, from which a costly stage read once is kept
ANCHOR_WORDS = ("conv", "dense", "matmul", "einsum")
COSTLY = ("exp", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "atan", "tanh",
          "erf", "sigmoid", "fast_exp", "fast_tanh", "fast_erf", "softmax_exp")


def default_schedule(outputs: Sequence[te.Tensor], inputs: Sequence[te.Tensor], name: str) -> Schedule:
    """A schedule for the computes between `inputs` and `outputs` (see the module doc)."""
    outputs, totals, rows = _rfactor_products(outputs)
    sch = Schedule(outputs, inputs, name)
    _inline_injective(sch)
    done = schedule_blocked_convs(sch)  # conv.py
    done |= schedule_dense_packs(sch)  # dense_pack.py
    done |= schedule_winograds(sch)  # winograd.py
    done |= _schedule_phased_pools(sch)
    if rows:
        done |= schedule_row_group(sch, rows, PARALLEL_MIN)  # row_reduce.py: softmax a row at a time
    for stage in list(sch.stages):
        if stage.inlined or id(stage) in done:
            continue
        if id(stage.tensor) in totals:
            total = sch[totals[id(stage.tensor)]]
            _schedule_rfactor(sch, stage, total)
            done.add(id(total))
        elif id(stage.tensor) in rows:  # row_reduce.py
            total = sch[rows[id(stage.tensor)]]
            schedule_rows(sch, stage, total, PARALLEL_MIN)
            done.add(id(total))
        elif _is_anchor(stage):
            epilogue = _epilogue(sch, stage, done)
            if sch.is_output(stage) and schedules_batch_matmul(stage, vector_width(stage.tensor.dtype)):
                schedule_batch_matmul(sch, stage, None, vector_width(stage.tensor.dtype))  # batch_matmul.py
                done.add(id(stage))
                continue
            if epilogue is None:
                epilogue, stage = stage, sch[sch.cache_write(stage.tensor)]
            if schedules_batch_matmul(stage, vector_width(stage.tensor.dtype)):
                schedule_batch_matmul(sch, stage, epilogue, vector_width(stage.tensor.dtype))  # batch_matmul.py
            else:
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
    read_by: dict[int, tuple[Stage, te.Load]] = {}  # stage id -> a stage reading it, and where
    chains = _costly_chains(sch)
    for stage in reversed(sch.stages):
        n, anchor = 0, False
        for reader in sch.stages:
            loads = [e for e in te.nodes(reader.body) if isinstance(e, te.Load) and e.tensor is stage.tensor]
            if loads:
                n += len(loads) * (sites[id(reader)] if reader.inlined else 1)
                anchor |= by_anchor[id(reader)] if reader.inlined else (
                    _is_anchor(reader) or reader.tensor.name.startswith(WINO_INPUT))
                read_by[id(stage)] = (reader, loads[0])
        sites[id(stage)], by_anchor[id(stage)] = n, anchor
        if stage.is_reduction or sch.is_output(stage):
            continue
        if (anchor and stage.axes) or (_calls_costly(te.nodes(stage.body)) and n > 1) or stage.tensor.op.tag == PHASES:
            continue
        if n == 1 and id(stage.tensor) in chains and _repeats(stage, read_by) >= REPEATS_MIN:
            continue
        sch.compute_inline(stage.tensor)


def _calls_costly(nodes: list[te.PrimExpr]) -> bool:
    return any(isinstance(e, te.Call) and e.name in COSTLY or isinstance(e, te.Binary) and e.op == "pow"
               for e in nodes)


def _costly_chains(sch: Schedule) -> set[int]:
    """The ids of the injective intermediates that call a COSTLY function, or read one
    that nothing else reads: what an inlined gather would compute again at each read."""
    loads: dict[int, int] = {}
    read: dict[int, list[int]] = {}  # stage id -> the tensors its body reads
    calls: set[int] = set()
    for stage in sch.stages:
        nodes = te.nodes(stage.body)
        read[id(stage)] = [id(e.tensor) for e in nodes if isinstance(e, te.Load)]
        for key in read[id(stage)]:
            loads[key] = loads.get(key, 0) + 1
        if _calls_costly(nodes):
            calls.add(id(stage))
    found: set[int] = set()
    for stage in sch.stages:  # producers first
        if stage.is_reduction or sch.is_output(stage):
            continue
        if id(stage) in calls or any(key in found and loads[key] == 1 for key in read[id(stage)]):
            found.add(id(stage.tensor))
    return found


def _repeats(stage: Stage, read_by: dict[int, tuple[Stage, te.Load]]) -> float:
    """repeats.py's count for `stage`, read at one place: its index and the selects
    around the read composed through the inlined stages between it and the kept stage
    that reads it, over that stage's loops."""
    reader, load = read_by[id(stage)]
    indices, guard = load.indices, guard_of(reader.body, load)
    while reader.inlined:
        reader, load = read_by[id(reader)][0], read_by[id(reader)][1]
        mapping = dict(zip(load.tensor.op.axes, load.indices))
        indices = tuple(te.substitute(i, mapping) for i in indices)
        outer = guard_of(reader.body, load)
        guard = outer if guard is None else te.substitute(guard, mapping) if outer is None else \
            te.logical_and(te.substitute(guard, mapping), outer)
    axes = list(reader.tensor.op.axes)
    if reader.is_reduction:
        inner = 1
        axes += list(reader.body.axes)
    else:
        inner = len(axes) - _inner_split(axes)
    return repeats(indices, axes, inner, stage.tensor.shape, guard)


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
    if t.op.tag == REBLOCK and len(axes) > 3:  # (n, C, ..., c): te/topi/transform.py
        _schedule_reblock(sch, stage)
        return
    if t.op.tag == PACK and len(axes) > 2:  # NCHW to NCHW3c: the row vectorized, its lanes inside
        lead, row = axes[:-2], axes[-2]
        piece = PACK_ROW if row.extent & (row.extent - 1) == 0 else _wide_block_piece(t, row.extent)
        if row.extent > piece:
            # lanes.py would make the whole row one vector a lane: <64 x float> shuffled
            # together 8 ways took O3 1.7 s (1x64x64x64 to 8c), split 0.1 s, as fast
            outer_row, row = sch.split(t, row, piece)
            lead = [*lead, outer_row]
        outer = sch.fuse(t, *lead) if len(lead) > 1 else lead[0]
        sch.vectorize(t, row)
        sch.unroll(t, axes[-1])
        if _size(t.shape) >= PARALLEL_MIN and outer.extent > 1:
            sch.parallel(t, outer)
        return
    if t.op.tag == UNPACK and _schedule_unpack(sch, stage):
        return
    if is_phase_pad(stage):  # phase_pad.py: a transposed convolution's input copy, in the input's order
        schedule_phase_pad(sch, stage, PARALLEL_MIN)
        return
    stride = interleave_stride(sch, stage)
    if stride is not None:  # interleave.py: a strided transposed convolution's phases
        schedule_interleave(sch, stage, stride, PARALLEL_MIN)
        return
    if is_transpose(sch, stage, vector_width(t.dtype)):  # transpose.py
        schedule_transpose(sch, stage, vector_width(t.dtype), PARALLEL_MIN)
        return
    split = _inner_split(axes)  # axes[split:] make the inner loop: long enough to vectorise
    inner = sch.fuse(t, *axes[split:]) if len(axes) - split > 1 else axes[split]
    parallel = _size(t.shape) >= PARALLEL_MIN
    run = run_length(sch, stage, split, vector_width(t.dtype)) if len(axes) - split == 1 else None
    if run is not None:  # runs.py: the inner loop a contiguous run of the input
        runs, inner = sch.split(t, inner, run)
        axes = [*axes[:split], runs]
        split += 1
    if split > 0:
        outer = sch.fuse(t, *axes[:split]) if split > 1 else axes[0]
    elif parallel:
        outer, inner = sch.split(t, inner, _chunk(inner.extent))
    else:
        outer = None
    sch.vectorize(t, inner)
    if parallel and outer is not None and outer.extent > 1:
        sch.parallel(t, outer)


def _inner_split(axes: Sequence) -> int:
    """Where an injective stage's inner loop starts: the trailing axes fused until the
    loop has at least INNER_MIN iterations."""
    split = len(axes) - 1
    while split > 0 and _size(a.extent for a in axes[split:]) < INNER_MIN:
        split -= 1
    return split


def _schedule_reblock(sch: Schedule, stage: Stage) -> None:
    """A layout_transform between two blockings of an axis (NCHW16c to NCHW12c): the
    lanes of a result block alone in the vector loop (read as consecutive lanes of one or
    two source blocks); the result blocks of one period (4 blocks of 12 cover 3 of 16)
    unrolled, so where each block starts in the source is a constant and so is the
    split of its lanes; the rows of (n, period) fused outside, parallel when large.
    Measured (1 thread): 1x144x56x56 16c to 12c from 0.57 ms (a gather per lane) to
    0.21 (vector loads, blocks not unrolled) and 0.088."""
    t, axes = stage.tensor, list(stage.axes)
    lanes = t.shape[-1]
    source = next(n.tensor for n in te.nodes(stage.body) if isinstance(n, te.Load))
    period = math.lcm(source.shape[-1], lanes) // lanes
    blocks, row = axes[1], axes[2]
    if 1 < period <= REBLOCK_PERIOD_MAX and blocks.extent % period == 0:
        blocks, within = sch.split(t, blocks, period)
        sch.reorder(t, axes[0], blocks, row, within)
        sch.unroll(t, within)
    outer = sch.fuse(t, axes[0], blocks, row)
    sch.vectorize(t, axes[-1])
    if _size(t.shape) >= PARALLEL_MIN and outer.extent > 1:
        sch.parallel(t, outer)


def _schedule_unpack(sch: Schedule, stage: Stage) -> bool:
    """A layout_transform that unblocks an axis (NCHW8c to NCHW: out[n, C, h, w] =
    x[n, C // 8, h, w, C % 8]), when the block divides the axis: the axis split by its
    block, the rows (n, C // 8, h) fused outside, w vectorized and the block's 8 channels
    unrolled inside it.  A row of x is then read whole once for its 8 output rows, an
    interleaved group that LLVM makes wide loads and shuffles; the default (a vector loop
    per output row) gathers every 8th float for each channel and comes back to x's lines
    a plane later, after they have left L2.  Measured (1 thread, CPU time, the two
    alternating in one process, load 7): corpus model 084's output, 1x256x128x128 from
    8c, 9.3 -> 7.0 ms (numpy's transposing copy 6.4); 1x512x28x28 from 8c 0.70x,
    1x64x112x112 from 16c 0.63x, 1x256x56x56 from 16c 0.91x.  Tried: the channels
    inside the rows, each row a vector loop of its own (no interleaved group), 0.87-1.17x."""
    t, axes = stage.tensor, list(stage.axes)
    source = next(n.tensor for n in te.nodes(stage.body) if isinstance(n, te.Load))
    block = source.shape[-1]
    found = [k for k, (a, b) in enumerate(zip(t.shape, source.shape)) if a != b]
    if len(found) != 1 or found[0] >= len(axes) - 1 or t.shape[found[0]] != source.shape[found[0]] * block:
        return False
    k = found[0]
    outer, lane = sch.split(t, axes[k], block)
    row = axes[-1]
    lead = [*axes[:k], outer, *axes[k + 1:-1]]
    if UNPACK_ROW < row.extent <= WHOLE_ROW_MAX and row.extent & (row.extent - 1) == 0 \
            and row.extent * block > UNPACK_INSERTS_MAX:
        outer_row, row = sch.split(t, row, UNPACK_ROW)
        lead.append(outer_row)
    elif _wide_block_piece(source, row.extent) < row.extent:
        outer_row, row = sch.split(t, row, _wide_block_piece(source, row.extent))
        lead.append(outer_row)
    sch.reorder(t, *lead, row, lane)
    rows = sch.fuse(t, *lead)
    sch.vectorize(t, row)
    sch.unroll(t, lane)
    if _size(t.shape) >= PARALLEL_MIN and rows.extent > 1:
        sch.parallel(t, rows)
    return True


def _wide_block_piece(blocked: te.Tensor, row: int) -> int:
    """The vector of a row packed into or unpacked from the blocks of `blocked` (its last
    axis) when a block is wider than a vector (24 lanes on AVX-512,
    transform/x86_channel_blocks.py): the largest power of two up to PACK_ROW that
    divides the row, if at least WIDE_PIECE_MIN; else the whole row.  Whole, a row's
    interleaved group (56 x 24 floats) took O3 4.0 s to unpack and 9.4 s to pack on the
    AVX-512 host (28 x 24: 0.6 and 2.2 s); in vectors of 8 (4), 0.1-0.2 s."""
    if blocked.shape[-1] <= vector_width(blocked.dtype):
        return row
    piece = next(p for p in (PACK_ROW, PACK_ROW // 2, PACK_ROW // 4, PACK_ROW // 8, 1) if row % p == 0)
    return piece if piece >= WIDE_PIECE_MIN else row


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
    if "pool" in t.op.tag and stage.axes[-1].extent >= POOL_LANES_MIN:
        return _schedule_pool(sch, stage)
    axis = sch.fuse(t, *stage.axes) if len(stage.axes) > 1 else stage.axes[0]
    work = _size(t.shape) * _size(a.extent for a in stage.reduce_axes)
    whole = "pool" in t.op.tag and bool(stage.reduce_axes)  # whole windows (global pooling)
    if whole:  # outputs side by side
        u = max(d for d in range(1, min(axis.extent, WINDOW_SIDE) + 1) if axis.extent % d == 0)
        if u > 1:
            axis, side = sch.split(t, axis, u)
            sch.reorder(t, axis, *stage.reduce_axes, side)
            sch.unroll(t, side)
    if axis.extent > 1 and work >= (FORK_MIN if whole else PARALLEL_MIN):
        sch.parallel(t, axis)


def _schedule_pool(sch: Schedule, stage: Stage, phased: Stage | None = None) -> None:
    """A pooling window (see the module doc): the output's last axis split by the vector
    width; the window loops unrolled inside the vector when the window has at most
    WINDOW_UNROLL_MAX positions (each output vector accumulated in registers, stored
    once), and then POOL_COLUMNS vectors side by side, unrolled (independent chains of
    updates: the vectors of a row, else positions of the axis before); else the window
    loops outside the vector (each window step updates a vector of outputs).  The data
    axes outside fused, parallel when the work is large.  With `phased` (T_phases, which
    the window reads) the loop over the vectors of a row stays serial inside the fused
    loop of the rows, and the phases of the rows read are computed at that loop; a row of
    at most POOL_ROW_MAX outputs is then one vector loop (the code generator emits 56 lanes
    as whole vectors of 32, 16 and 8)."""
    t = stage.tensor
    *lead, last = stage.axes
    whole = phased is not None and last.extent <= POOL_ROW_MAX  # a phased row: one vector loop
    jo, ji = sch.split(t, last, last.extent if whole else _pool_lanes(t.dtype, last.extent))
    window = stage.reduce_axes
    inside = _size(a.extent for a in window) <= WINDOW_UNROLL_MAX
    rows, columns = lead, [jo]  # loops outside the vector: the rows fused, then the row's vectors
    unrolled = None
    if inside:
        across = jo if jo.extent > 1 or phased is not None or not lead else lead[-1]
        u = max(d for d in range(1, min(across.extent, POOL_COLUMNS) + 1) if across.extent % d == 0)
        if u > 1:
            outer, unrolled = sch.split(t, across, u)
            if across is jo:
                columns = [outer]
            else:
                rows = [*lead[:-1], outer]
                columns = [jo]
    outside = [*rows, *columns] + ([unrolled] if unrolled is not None else [])
    if inside:
        sch.reorder(t, *outside, ji, *window)
        for axis in window:
            sch.unroll(t, axis)
    else:
        sch.reorder(t, *outside, *window, ji)
    if unrolled is not None:
        sch.unroll(t, unrolled)
    sch.vectorize(t, ji)
    fused = rows if phased is not None else [*rows, *columns]
    loop = sch.fuse(t, *fused) if len(fused) > 1 else fused[0]
    if loop.extent > 1 and _size(t.shape) * _size(a.extent for a in window) >= FORK_MIN:
        sch.parallel(t, loop)
    if phased is not None:
        _schedule_phases(sch, phased)
        sch.compute_at(phased.tensor, t, loop)


def _schedule_phases(sch: Schedule, phased: Stage) -> None:
    """T_phases (..., phase, position): the positions vectorized, the phases of one
    position unrolled inside them, so that each vector step loads `stride` consecutive
    elements and splits them into phases (shuffles, not gathers)."""
    p = phased.tensor
    *lead, phase, position = phased.axes
    sch.reorder(p, *lead, position, phase)
    sch.vectorize(p, position)
    sch.unroll(p, phase)


def _phases_read(sch: Schedule, stage: Stage) -> Stage | None:
    """The T_phases stage a pooling window reads, if it reads one."""
    found = {id(ld.tensor): ld.tensor for ld in te.nodes(sch.effective_body(stage))
             if isinstance(ld, te.Load) and ld.tensor.op is not None and ld.tensor.op.tag == PHASES}
    return sch[next(iter(found.values()))] if len(found) == 1 else None


def _schedule_phased_pools(sch: Schedule) -> set[int]:
    """Schedule every pooling window that reads T_phases, with its phases, before the
    stages are scheduled in order (T_phases comes first but is computed at the window's
    loop); the ids of the stages scheduled.  Windows with output rows shorter than
    POOL_LANES_MIN are left to the loop (their phases become an injective stage)."""
    done: set[int] = set()
    for stage in list(sch.stages):
        if stage.inlined or not stage.is_reduction or "pool" not in stage.tensor.op.tag \
                or len(stage.axes) < 2 or stage.axes[-1].extent < POOL_LANES_MIN:
            continue
        phased = _phases_read(sch, stage)
        if phased is not None:
            _schedule_pool(sch, stage, phased)
            done.update((id(stage), id(phased)))
    return done


def _pool_lanes(dtype: str, extent: int) -> int:
    """The vector of a pooling row: the width, or half of it when that divides the row
    and the whole width does not (no guard in the vector loop)."""
    vw = vector_width(dtype)
    return next((d for d in (vw, vw // 2) if extent % d == 0), vw)


def _is_anchor(stage: Stage) -> bool:
    body = stage.body
    return (isinstance(body, te.Reduce) and body.combiner == "sum" and bool(stage.axes)
            and any(w in stage.tensor.op.tag for w in ANCHOR_WORDS))


def _epilogue(sch: Schedule, anchor: Stage, done: set[int]) -> Stage | None:
    """The injective stage that alone reads `anchor`, at its own position, if any.  A
    stage another anchor's schedule took (in `done`) is nobody's epilogue: in a primitive
    function with two anchors (conv -> batch_norm -> conv, as BYOC's partitioning leaves
    one), the batch norm the second convolution's schedule computes as its input."""
    if sch.is_output(anchor):
        return None
    t = anchor.tensor
    readers = [s for s in sch.stages if not s.inlined and any(
        isinstance(e, te.Load) and e.tensor is t for e in te.nodes(sch.effective_body(s)))]
    if len(readers) != 1:
        return None
    reader = readers[0]
    if reader.is_reduction or reader.tensor.shape != t.shape or id(reader) in done:
        return None
    axes = reader.tensor.op.axes
    for e in te.nodes(sch.effective_body(reader)):
        if isinstance(e, te.Load) and e.tensor is t and not all(i is a for i, a in zip(e.indices, axes)):
            return None
    return reader


def _tile(sch: Schedule, stage: Stage, vw: int, rows: int = UNROLL) -> tuple[list, list]:
    """Split the last data axis by `vw` and the one before by `rows`: (outer loops,
    [inner loops]) with the inner ones annotated."""
    t, axes = stage.tensor, list(stage.axes)
    outer, inner = axes[:-2], []
    for axis, factor, kind in ((axes[-2] if len(axes) > 1 else None, rows, "unroll"),
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
    rows = phase_rows(stage.axes[-2].extent, vw) if TAPS in t.name and len(stage.axes) > 1 else UNROLL
    outer, inner = _tile(sch, stage, vw, rows)
    sch.reorder(t, *outer, *stage.reduce_axes, *(i for i, _ in inner))
    for axis, kind in inner:
        getattr(sch, kind)(t, axis)
    if TAPS in t.name:  # interleave.py: a transposed convolution's phases, its taps unrolled
        for axis in stage.reduce_axes[1:]:
            sch.unroll(t, axis)
    work = _size(t.shape) * _size(a.extent for a in stage.reduce_axes)
    if epilogue is None:
        loop = sch.fuse(t, *outer) if len(outer) > 1 else outer[0]
        if loop.extent > 1 and work >= PARALLEL_MIN:
            sch.parallel(t, loop)
        return
    e = epilogue.tensor
    e_outer, e_inner = _tile(sch, epilogue, vw, rows)
    sch.reorder(e, *e_outer, *(i for i, _ in e_inner))
    for axis, kind in e_inner:
        getattr(sch, kind)(e, axis)
    loop = sch.fuse(e, *e_outer) if len(e_outer) > 1 else e_outer[0]
    if loop.extent > 1 and work >= PARALLEL_MIN:
        sch.parallel(e, loop)
    sch.compute_at(t, e, loop)


# ---------------------------------------------------------------------- products along K

RFACTOR_MIN = 64  # the shortest reduction split across vector lanes (see the module doc)
RF_TILE = (4, 4)  # rows x columns of lane vectors kept in registers


def _rfactor_products(outputs: Sequence[te.Tensor]) \
        -> tuple[list[te.Tensor], dict[int, te.Tensor], dict[int, te.Tensor]]:
    """The outputs with every product that reads its operands along its reduction
    (`_wants_rfactor`) rewritten as lane sums `T.rf` and their total `T` (which replaces
    the product in every reader), and every row reduction likewise (row_reduce.py); and
    {id(T.rf): T} of each kind."""
    replaced: dict[int, te.Tensor] = {}
    totals: dict[int, te.Tensor] = {}
    rows: dict[int, te.Tensor] = {}
    for t in te.post_order(outputs):
        if t.op is None:
            continue
        body = te.transform(t.op.body, lambda n: _reread(n, replaced))
        if _wants_rfactor(t, body):
            lanes, replaced[id(t)] = _rfactor(t, body)
            totals[id(lanes)] = replaced[id(t)]
        elif wants_lanes(t, body, vector_width(t.dtype)):
            lanes, replaced[id(t)] = split_lanes(t, body, vector_width(t.dtype))
            rows[id(lanes)] = replaced[id(t)]
        elif body is not t.op.body:
            replaced[id(t)] = te.Tensor(t.name, t.shape, t.dtype, te.ComputeOp(t.op.axes, body, t.op.tag, t.op.span))
    return [replaced.get(id(t), t) for t in outputs], totals, rows


def _reread(n: te.PrimExpr, replaced: dict[int, te.Tensor]) -> te.PrimExpr | None:
    if isinstance(n, te.Load) and id(n.tensor) in replaced:
        return te.Load(replaced[id(n.tensor)], n.indices, n.dtype, loc=n.loc)
    return None


def _wants_rfactor(t: te.Tensor, body: te.PrimExpr) -> bool:
    """A sum over one axis k of a convolution/dense/matmul, k long enough and a multiple
    of the vector width, every tensor read at [..., k] with k nowhere else."""
    if not (isinstance(body, te.Reduce) and body.combiner == "sum" and len(body.axes) == 1 and t.shape
            and any(w in t.op.tag for w in ANCHOR_WORDS)):
        return False
    k = body.axes[0]
    if k.extent < RFACTOR_MIN or k.extent % vector_width(t.dtype):
        return False
    loads = [e for e in te.nodes(body.source) if isinstance(e, te.Load)]
    return bool(loads) and all(e.indices[-1] is k and not any(n is k for i in e.indices[:-1] for n in te.nodes(i))
                               for e in loads)


def _rfactor(t: te.Tensor, body: te.Reduce) -> tuple[te.Tensor, te.Tensor]:
    """(`T.rf[..., kl] = sum_ko source(k = ko * vw + kl)`, `T[...] = sum_kl T.rf[..., kl]`),
    both carrying `t`'s span and the total named as `t`."""
    k, vw, span = body.axes[0], vector_width(t.dtype), t.op.span
    ko, kl = te.reduce_axis(k.extent // vw, f"{k.name}.outer"), te.reduce_axis(vw, f"{k.name}.lane")

    def lane_sum(*axes: te.IterVar) -> te.PrimExpr:
        mapping: dict = dict(zip(t.op.axes, axes[:-1]))
        mapping[k] = ko * vw + axes[-1]
        return te.sum(te.with_loc(te.substitute(body.source, mapping), span), axis=[ko])

    lanes = te.compute((*t.shape, vw), lane_sum, f"{t.name}.rf", tag=t.op.tag)
    total = te.compute(t.shape, lambda *axes: te.with_loc(te.sum(lanes[(*axes, kl)], axis=[kl]), span), t.name)
    lanes.op.span = total.op.span = span
    return lanes, total


def _split_tile(sch: Schedule, tensor: te.Tensor, axes: Sequence, rows: int, cols: int) -> tuple[list, list]:
    """Split the last two of `axes` by rows and cols (the last alone for one axis):
    (the other axes and the outer parts, the inner parts)."""
    outer, inner = list(axes[:-2]) if len(axes) > 1 else [], []
    for axis, factor in ((axes[-2], rows), (axes[-1], cols)) if len(axes) > 1 else ((axes[-1], cols),):
        o, i = sch.split(tensor, axis, factor)
        outer.append(o)
        inner.append(i)
    return outer, inner


def _schedule_rfactor(sch: Schedule, lanes: Stage, total: Stage) -> None:
    """The total tiled RF_TILE, its tile loop fused (parallel when large); the lane sums
    computed at that loop: reduction outside, the tile's vectors unrolled, lanes vectorized."""
    t, s = total.tensor, lanes.tensor
    axes = list(total.axes)
    rows = min(RF_TILE[0], axes[-2].extent) if len(axes) > 1 else 1
    cols = min(RF_TILE[1], axes[-1].extent)
    outer, inner = _split_tile(sch, t, axes, rows, cols)
    if len(outer) > 1:  # columns outside rows: a tile of weight rows stays in L1 across all rows
        outer[-2], outer[-1] = outer[-1], outer[-2]
    sch.reorder(t, *outer, *inner, *total.reduce_axes)
    loop = sch.fuse(t, *outer) if len(outer) > 1 else outer[0]
    for axis in inner:
        sch.unroll(t, axis)
    if loop.extent > 1 and _size(s.shape) * _size(a.extent for a in lanes.reduce_axes) >= PARALLEL_MIN:
        sch.parallel(t, loop)
    l_outer, l_inner = _split_tile(sch, s, lanes.axes[:-1], rows, cols)
    sch.reorder(s, *l_outer, *lanes.reduce_axes, *l_inner, lanes.axes[-1])
    for axis in l_inner:
        sch.unroll(s, axis)
    sch.vectorize(s, lanes.axes[-1])
    sch.compute_at(s, t, loop)
