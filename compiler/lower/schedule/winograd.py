"""Default schedule of the Winograd convolution (te/topi/winograd.py): its three stages,
each whole, one after the other.

* `T_wino_input` (alpha^2, P, C): for each tile p and block of a vector's channels
  (fused, parallel when large), the alpha^2 positions unrolled, the channels vectorized:
  every position is its own sum of the tile's inputs (the selects on the position fold
  away), the inputs loaded once (LLVM merges the loads of the unrolled positions).
* `T_wino_gemm_m{m}` (alpha^2, P, K/v, v), one product per position: a register tile
  of `rows` tiles x `blocks` blocks of v output channels (v lanes vectorized), summed
  over the input channels in registers (`cache_accumulator`); loops position, channel
  blocks, tiles (the last rows a remainder tile of their own), so one position's weights
  for the blocks stay in L1 while every tile passes.  Per input channel the tile
  broadcasts `rows` inputs and loads `blocks` weight vectors for rows * blocks FMAs
  (6 x 2 on AVX2's 16 registers, as MLAS's sgemm kernel: 12 accumulators).  Measured
  (perf, 1 thread): the product is 55-75% of F(4x4) at 56x56 and 28x28, 90% of F(2x2)
  at 14x14 (about 37 GMAC/s there, near the FMA peak at this clock); at 7x7 (512
  channels) its transformed weights (16.8 MB, each used by 16 tiles) come from memory
  and bound it.  Weight blocks of 16 (one contiguous stream per step) were no faster, a
  remainder-aware choice of rows no different.  Tried: its parallel loop over the
  blocks of output channels first, the positions inside (as the output transform splits
  them, so each thread would read back the products it wrote): ResNet-50 at 2 threads
  (builds alternated in one process, real-time priority, load 5) 14x14 1.01x, 28x28
  1.15x, 7x7 1.05x the time.  Each step of a register tile prefetches (`prefetch`,
  as dense_pack.py does) a piece of the next block group's weights (the panel right
  after its own in U's layout), so that its lines have all been asked for once the
  group's tile rows are done: at 7x7 the 16.8 MB of U came at the memory's pace, each
  group's panel read by its first tile row as it arrived.  Measured in ResNet-50
  (bench/steps.py's timed entry, the two builds in one process, inferences alternated,
  real-time priority, load 7-9 from other work), paired: 1 thread (30 each) 7x7
  0.84-0.87x the time, 14x14 0.87-0.91x, 28x28 0.98-1.00x, the inference 0.969x; 2
  threads (60 each, a spin of 2,000) 7x7 0.84-0.89x, 14x14 0.88-0.93x, the inference
  0.986x.  Two groups ahead instead of one: the same (1.00x).  Where the stages run a
  block of tile rows at a time (below), each block reads the whole U (590 KiB at 56x56)
  and prefetches it the same way over its own tile rows: the 56x56 kernels 0.96x the
  time at 1 thread (40 each), 0.90-0.92x at 2 (60 each), the inference 0.984x and
  0.990x.  Tried and dropped: the transformed input
  and the products tile-major ((P, alpha^2, ...)): at 14x14 the rows of a register tile
  then lie 16 KiB apart (one L1 set), and ResNet-50's five such kernels took 1.2-1.3x
  the time of a 1x1 reference kernel instead of 0.9x; the padded input computed per
  tile row (in L1) instead of whole: no difference measurable here.
* the output transform, the stage that reads the product (with the epilogue inlined into
  it: bias, relu, a residual add), in NCHW[v]c: rows and columns split by m, the m x m
  outputs of a tile unrolled (each its own sum of the alpha^2 products), the v lanes
  vectorized; the loops outside fused, parallel when the product it reads has
  COPY_PARALLEL elements (its output, a quarter of that for F(2x2), left ResNet-50's
  14x14 and 7x7 transforms serial, reading a product both cores wrote).  Measured in the
  model at 2 threads (as conv.py's copies: builds alternated in one process, real-time
  priority, a spin of 2,000, load 4-7): the 14x14 kernel's five calls 5.57 -> 5.41 and
  6.26 -> 6.20 ms, the 7x7 one's two 3.35 -> 3.31 and 3.73 -> 3.68 ms.

Where the transformed input outgrows a core's L2 (L2_BYTES), the three stages run a
block of tile rows at a time instead (`block_rows`; NNPACK's and TVM's tiled Winograd):
the output transform's loop over blocks outermost (parallel), the product computed at
it for the block's tiles (all positions, all output channels; its tiles' loop split with
a tail, not parallel), the transformed input computed at the product's outermost loop
(one iteration): the block's input and product stay in L2 between the stages instead of
a round trip through L3 or memory.  That loop is outside the product's split tiles, so
the whole tile rows and the remainder share it, with the transformed input computed
there once for all the block's tiles (builder.py `_computed_once`), and share the loop
over positions and channel blocks too, a panel's remainder row right after its whole
ones.  Until stop 36 each of the two nests computed the input for its own tiles: 570 of
the 56x56 kernel's 2,415 lines of IR.  Each block reads the whole transformed weight once,
so only where that weight is smaller than the transformed input: ResNet-50's F(4x4)
64 -> 64 at 56x56 (1.8 MB of transformed input, 0.6 MB of weight), not its 28x28, 14x14
and 7x7 ones (weights of 2.4-16.8 MB against 0.5-0.9 MB of input).  A block is the
fewest tile rows giving the product BLOCK_TILES tiles (one row of 14 at 56x56: 14 blocks
share two threads evenly).  Measured (that kernel alone after a 16 MB pass over other
data, builds alternated in one run, 100 rounds, load 6): 1 thread (CPU time) blocks of 1
and 2 tile rows 3.43 and 3.45 ms, whole stages 5.06; 2 threads (wall) 7.7, 8.3 and 9.9
ms.  ResNet-50 at 1 thread (CPU time, paired, 21-25 rounds, load 7), against the whole
stages: blocks of 1 row 0.980x the time, of 2 rows 0.973x; its 28x28 kernels blocked too
1.000x, its 14x14 ones too (4 MB of weight reread by 7 blocks) 1.072x.  The sums are the
same, in the same order: the outputs are bit-identical.

The padded input is left to the default injective schedule (kept, not inlined: see
defaults.py).  Tried (h-2t2; ResNet-50 at 2 threads, the two builds in one process,
inferences alternated, real-time priority, load 7-10, per-kernel paired ratios within
about 5% of 1 on unchanged kernels): the padded input's parallel loop over 2 parts of
its rows first (as the 1x1 convolutions before it write them, conv_tile_end.py): the
blocked 56x56 kernels 0.92-0.97x in one run, 0.985-0.99x in another, 1.02-1.03x at 1
thread; for every kernel, the 7x7 ones 1.09-1.17x (their small pad then serial); with
the output transform's loop over 2 parts of its tile rows first too, the 28x28 kernels
0.97-0.98x, 1.02-1.07x at 1 thread, the inference 0.991x at 2 threads and 1.024x at 1.
"""

from __future__ import annotations

from ..te import expr as te
from ..te.topi.winograd import GEMM_TAG, INPUT_NAME, tile_side
from .conv_tile_end import FORK_MIN
from .primitives import Schedule, Stage
from .stage import Axis
from .vector_unit import host_unit

WEIGHT_VECTORS = 2  # weight vectors of one step of the product's register tile (MLAS's 6 x 16 on AVX2)
COPY_PARALLEL = 1 << 16  # elements of a transform worth a parallel loop
L2_BYTES = 512 << 10  # per core (Zen 3)
BLOCK_TILES = 12  # the fewest tiles of a block: two rows of the product's 6 x 2 register tiles
LINE_BYTES = 64  # a cache line: the most of the next panel one step of a tile may move on


def schedule_winograds(sch: Schedule) -> set[int]:
    """Schedule every Winograd product of `sch` with its input and output transforms;
    the ids of the stages scheduled."""
    done: set[int] = set()
    for stage in list(sch.stages):
        if stage.inlined or not isinstance(stage.body, te.Reduce) or stage.tensor.op.tag != GEMM_TAG:
            continue
        source = next((ld.tensor for ld in _loads(stage.body.source) if ld.tensor.name.startswith(INPUT_NAME)), None)
        output = _reader(sch, stage)
        if source is None or sch[source].inlined or output is None:
            continue
        m = tile_side(stage.tensor)
        tile_rows, tile_cols = (-(-output.axes[k].extent // m) for k in (2, 3))
        rows = block_rows(sch[source].tensor.shape, stage.tensor.shape, tile_rows, tile_cols)
        loop = _schedule_output(sch, output, m, rows, parallel=_size(stage.tensor) >= COPY_PARALLEL)
        _schedule_input(sch, sch[source], parallel=rows is None)
        whole = _schedule_gemm(sch, stage, None if rows is None else rows * tile_cols)
        if rows is not None:  # input and product per block of tile rows, at the output's loop
            sch.compute_at(stage.tensor, output.tensor, loop)
            sch.compute_at(source, stage.tensor, whole)
        done.update((id(sch[source]), id(stage), id(output)))
    return done


def gemm_tile(tiles: int, blocks: int, lanes: int) -> tuple[int, int]:
    """(rows, blocks) of the product's register tile (see the module doc): blocks of v
    lanes up to WEIGHT_VECTORS vectors, as many rows as the accumulators left allow."""
    unit = host_unit()
    per_block = unit.registers_for(lanes)
    b = max((d for d in range(1, blocks + 1) if blocks % d == 0 and d * per_block <= WEIGHT_VECTORS), default=1)
    return max(1, min(tiles, unit.accumulators // (b * per_block))), b


def block_rows(input_shape: tuple[int, ...], gemm_shape: tuple[int, ...], tile_rows: int,
               tile_cols: int, cache_bytes: int = L2_BYTES) -> int | None:
    """The tile rows of a block (see the module doc), or None for the three stages whole:
    when the whole transformed input outgrows `cache_bytes` and the transformed weight
    (alpha^2 x C x K, reread once a block) is smaller than it, the fewest rows dividing
    `tile_rows` that give the product at least BLOCK_TILES tiles, their transformed
    input and product (alpha^2 x tiles x (C + K), float32) fitting `cache_bytes`."""
    alpha2, tiles, channels = input_shape
    outputs = gemm_shape[2] * gemm_shape[3]
    whole_input = 4 * alpha2 * tiles * channels
    if whole_input <= cache_bytes or 4 * alpha2 * channels * outputs >= whole_input:
        return None
    per_tile = 4 * alpha2 * (channels + outputs)
    return next((d for d in range(1, tile_rows) if tile_rows % d == 0 and d * tile_cols >= BLOCK_TILES
                 and d * tile_cols * per_tile <= cache_bytes), None)


def _loads(e: te.PrimExpr) -> list[te.Load]:
    return [n for n in te.nodes(e) if isinstance(n, te.Load)]


def _reader(sch: Schedule, gemm: Stage) -> Stage | None:
    """The one stored stage that reads the product (the output transform, its epilogue
    inlined), unless the product is itself an output."""
    if sch.is_output(gemm):
        return None
    readers = [s for s in sch.stages if not s.inlined and s is not gemm and any(
        ld.tensor is gemm.tensor for ld in _loads(sch.effective_body(s)))]
    if len(readers) != 1 or readers[0].is_reduction or len(readers[0].axes) not in (4, 5):
        return None
    return readers[0]


def _schedule_input(sch: Schedule, stage: Stage, parallel: bool) -> None:
    t = stage.tensor
    pos, p, c = stage.axes
    lanes = min(host_unit().lanes, c.extent)
    co, ci = sch.split(t, c, lanes)
    sch.reorder(t, p, co, pos, ci)
    sch.unroll(t, pos)
    sch.vectorize(t, ci)
    loop = sch.fuse(t, p, co)
    if parallel and loop.extent > 1 and _size(t) >= COPY_PARALLEL:
        sch.parallel(t, loop)


def _schedule_gemm(sch: Schedule, stage: Stage, block_tiles: int | None) -> Axis | None:
    """The product's loops (see the module doc); with `block_tiles`: computed per block of
    that many tiles (its tiles' loop split with a tail, the block's tiles dividing or
    not), not parallel, under a loop of one iteration that the transformed input is
    computed at (returned)."""
    t = stage.tensor
    blocked = block_tiles is not None
    pos, p, kb, kl = stage.axes
    (rc,) = stage.reduce_axes
    rows, blocks = gemm_tile(p.extent, kb.extent, kl.extent)
    bo, bi = sch.split(t, kb, blocks)
    po, pi = sch.split(t, p, rows, tail=blocked or p.extent % rows != 0)
    whole = None
    if blocked:
        whole, pos = sch.split(t, pos, pos.extent)
        sch.reorder(t, whole, pos, bo, po, rc, pi, bi, kl)
    else:
        sch.reorder(t, pos, bo, po, rc, pi, bi, kl)
    sch.unroll(t, pi)
    sch.unroll(t, bi)
    sch.vectorize(t, kl)
    sch.cache_accumulator(t, rc)
    _prefetch_next_panel(sch, stage, rows, blocks, rc, block_tiles or p.extent)
    loop = sch.fuse(t, pos, bo)
    work = _size(t) * rc.extent
    if not blocked and loop.extent > 1 and work >= FORK_MIN:
        sch.parallel(t, loop)
    return whole


def _prefetch_next_panel(sch: Schedule, stage: Stage, rows: int, blocks: int, at: Axis, tiles: int) -> None:
    """At each step `at` (the reduction over input channels) of a register tile of `rows`
    tiles x `blocks` blocks, prefetch a piece of the next block group's weights (see the
    module doc): U (alpha, alpha, K/v, C, v) holds a group's `blocks` x C x v panel whole,
    the next group's (or the next position's first) right after it.  Of the `tiles` the
    product computes at a time (all, or a block's), tile row g of G at step c asks for
    element (g*C + c) * panel / (G*C) of that panel, so every line of it has been asked
    for once the group's G tile rows are done, provided a step moves on at most a cache
    line; else (few tile rows) nothing.  The last group prefetches past U, which reads
    nothing."""
    t = stage.tensor
    weight = next((ld.tensor for ld in _loads(stage.body.source)
                   if ld.tensor.ndim == 5 and any(ld.tensor is x for x in sch.inputs)), None)
    if weight is None:  # U computed in the kernel, or unpacked (v = 1)
        return
    kblocks, lanes = t.shape[2:]
    position, p, kb, _ = t.op.axes
    (rc,) = stage.body.axes
    channels = rc.extent
    groups = -(-tiles // rows)  # tile rows of the register tile, a remainder one among them
    panel = blocks * channels * lanes
    if panel * max(1, te.bits(weight.dtype) // 8) > LINE_BYTES * groups * channels:
        return
    start = (position * kblocks + kb + blocks) * (channels * lanes)  # the next group, at its first block
    row = (p % tiles) // rows if tiles < p.extent else p // rows  # the tile row, in a block
    step = (row * channels + rc) * panel // (groups * channels)
    sch.prefetch(t, at, weight, start + step)


def _schedule_output(sch: Schedule, stage: Stage, m: int, rows: int | None, parallel: bool) -> Axis:
    """The output transform's loops (see the module doc); with `rows`, the tiles' loop
    outermost a block of `rows` tile rows at a time (returned, parallel if `parallel`)."""
    t = stage.tensor
    if len(stage.axes) == 5:
        n, cb, y, x, lane = stage.axes
    else:
        (n, cb, y, x), lane = stage.axes, None
    yo, yi = sch.split(t, y, m)
    xo, xi = sch.split(t, x, m)
    inner = (yi, xi) + ((lane,) if lane is not None else ())
    if rows is None:
        sch.reorder(t, n, cb, yo, xo, *inner)
        outer = (n, cb, yo, xo)
    else:
        yoo, yoi = sch.split(t, yo, rows)
        sch.reorder(t, n, yoo, cb, yoi, xo, *inner)
        outer = (n, yoo)
    sch.unroll(t, yi)
    sch.unroll(t, xi)
    if lane is not None:
        sch.vectorize(t, lane)
    loop = sch.fuse(t, *outer)
    if parallel and loop.extent > 1:
        sch.parallel(t, loop)
    return loop


def _size(t: te.Tensor) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n
