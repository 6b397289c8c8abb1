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
  remainder-aware choice of rows no different.  Tried and dropped: the transformed input
  and the products tile-major ((P, alpha^2, ...)): at 14x14 the rows of a register tile
  then lie 16 KiB apart (one L1 set), and ResNet-50's five such kernels took 1.2-1.3x
  the time of a 1x1 reference kernel instead of 0.9x; the padded input computed per
  tile row (in L1) instead of whole: no difference measurable here.
* the output transform, the stage that reads the product (with the epilogue inlined into
  it: bias, relu, a residual add), in NCHW[v]c: rows and columns split by m, the m x m
  outputs of a tile unrolled (each its own sum of the alpha^2 products), the v lanes
  vectorized; the loops outside fused, parallel when large.

The padded input is left to the default injective schedule (kept, not inlined: see
defaults.py).
"""

from __future__ import annotations

from ..te import expr as te
from ..te.topi.winograd import GEMM_TAG, INPUT_NAME, tile_side
from .conv_tile_end import FORK_MIN
from .primitives import Schedule, Stage
from .vector_unit import host_unit

WEIGHT_VECTORS = 2  # weight vectors of one step of the product's register tile (MLAS's 6 x 16 on AVX2)
COPY_PARALLEL = 1 << 16  # elements of a transform worth a parallel loop


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
        _schedule_input(sch, sch[source])
        _schedule_gemm(sch, stage)
        _schedule_output(sch, output, stage)
        done.update((id(sch[source]), id(stage), id(output)))
    return done


def gemm_tile(tiles: int, blocks: int, lanes: int) -> tuple[int, int]:
    """(rows, blocks) of the product's register tile (see the module doc): blocks of v
    lanes up to WEIGHT_VECTORS vectors, as many rows as the accumulators left allow."""
    unit = host_unit()
    per_block = unit.registers_for(lanes)
    b = max((d for d in range(1, blocks + 1) if blocks % d == 0 and d * per_block <= WEIGHT_VECTORS), default=1)
    return max(1, min(tiles, unit.accumulators // (b * per_block))), b


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


def _schedule_input(sch: Schedule, stage: Stage) -> None:
    t = stage.tensor
    pos, p, c = stage.axes
    lanes = min(host_unit().lanes, c.extent)
    co, ci = sch.split(t, c, lanes)
    sch.reorder(t, p, co, pos, ci)
    sch.unroll(t, pos)
    sch.vectorize(t, ci)
    loop = sch.fuse(t, p, co)
    if loop.extent > 1 and _size(t) >= COPY_PARALLEL:
        sch.parallel(t, loop)


def _schedule_gemm(sch: Schedule, stage: Stage) -> None:
    t = stage.tensor
    pos, p, kb, kl = stage.axes
    (rc,) = stage.reduce_axes
    rows, blocks = gemm_tile(p.extent, kb.extent, kl.extent)
    bo, bi = sch.split(t, kb, blocks)
    po, pi = sch.split(t, p, rows, tail=p.extent % rows != 0)
    sch.reorder(t, pos, bo, po, rc, pi, bi, kl)
    sch.unroll(t, pi)
    sch.unroll(t, bi)
    sch.vectorize(t, kl)
    sch.cache_accumulator(t, rc)
    loop = sch.fuse(t, pos, bo)
    work = _size(t) * rc.extent
    if loop.extent > 1 and work >= FORK_MIN:
        sch.parallel(t, loop)


def _schedule_output(sch: Schedule, stage: Stage, gemm: Stage) -> None:
    t = stage.tensor
    m = tile_side(gemm.tensor)
    if len(stage.axes) == 5:
        n, cb, y, x, lane = stage.axes
    else:
        (n, cb, y, x), lane = stage.axes, None
    yo, yi = sch.split(t, y, m)
    xo, xi = sch.split(t, x, m)
    inner = (yi, xi) + ((lane,) if lane is not None else ())
    sch.reorder(t, n, cb, yo, xo, *inner)
    sch.unroll(t, yi)
    sch.unroll(t, xi)
    if lane is not None:
        sch.vectorize(t, lane)
    loop = sch.fuse(t, n, cb, yo, xo)
    if loop.extent > 1 and _size(t) >= COPY_PARALLEL:
        sch.parallel(t, loop)


def _size(t: te.Tensor) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n
