"""Default schedules of channel-blocked 2-D convolutions (te/topi/conv_blocked.py).

The blocked reduction `T_conv2d_NCHW16c` (N, B, OH, OW, 16), B blocks of 16 output
channels, gets a register tile of `vectors` blocks x `cols` output columns of one output
row.  Per step of the reduction (rc, ry, rx) the tile loads `vectors` 16-channel vectors
of the packed weight, broadcasts `cols` input scalars (scalars: any stride will do) and
does vectors*cols FMAs into accumulators that LLVM keeps in registers.  The tile is
computed at the tile loop of its epilogue, the injective stage that alone reads the
result back in NCHW (`T_conv2d` inlined into bias, batch norm, relu, residual add...),
which writes the tile's outputs 16 channels at a time:

    for n, c.outer, y, x.outer   fused, parallel when the work is large; c.outer
                                 innermost instead when the input is the larger operand
                                 and does not fit in half of CACHE_BYTES (the weight is
                                 then read again per position, not the input per block;
                                 with half of this machine's 512 KiB L2 instead, ResNet-50's
                                 1x1 64 -> 256 at 56x56 took 1.56x the time, 1 thread);
                                 the innermost of the four (x.outer, or c.outer) a serial
                                 loop of its own inside the others fused, from
                                 NESTED_TILES_MIN of them (below); a large 1x1
                                 convolution takes ROW_PARTS parts of y first
                                 (conv_tile_end.py: which core holds what)
      T_conv2d_NCHW16c.local     the tile, for rc, ry, rx:
                                   ob (vectors, unrolled), x (cols, unrolled),
                                   lane (16, vectorized): FMA
      x.inner (cols, unrolled), c.inner.outer (vectors, unrolled),
      c.inner.inner (16, vectorized): the epilogue (a strided store)

When the output's channel planes lie a multiple of 4 KiB apart (128x128, 64x64, ...),
the 16 lanes of that store hit one L1 set and evict each other; the epilogue then
stores a vector of columns per channel instead (c.inner.inner unrolled, x.inner
vectorized).  Measured (1 thread, depthwise 3x3 with bias and relu): 1x304x128x128
from 31 to 20-22 ms, 1x64x128x128 from 4.3 to 1.9 ms; other widths stay as they were
(the columns' vector is shorter than 16 there, and 1x128x28x28 1x1 lost 15% with it).

The accumulators are the host's (schedule/vector_unit.py: 20 with AVX-512's 32 vector
registers, 12 with AVX2's 16).  With 32 registers, `cols` is the largest divisor of the
output width up to half of them (all of them for depthwise or a single block; when no
divisor from 4 exists, that bound, the last tile overlapping the one before), `vectors`
the largest divisor of B that fits beside it (1 for depthwise, whose lanes read the
blocked input: nothing to share).  With 16 registers (`_modelled_tile`) so few
accumulators leave no room for that rule: 14 columns gave 2 x 6 with the last tile
overlapping (18 columns computed for 14), 7 gave 6 for 7.  There every (cols, vectors)
that fits (`VectorUnit.tile_fits`: the accumulators, and beside them a step's broadcasts
and one block of weights) is costed by a model of one reduction step (FMAs over two
ports, loads over two, at least an FMA's latency: fewer than 8 chains wait on it) times
the tiles: 14 columns of 32 blocks take 3 x 4 (MLAS's AVX2 kernel's 3 outputs x 4 filter
blocks), 56 columns of 18 blocks 2 x 6.  A tile whose broadcasts do not fit beside its
accumulators (4 x 3, 6 x 2: 17 and 19 registers of 16) ran at half speed, LLVM moving
accumulators through the stack in the reduction loop: MobileNet v2's 1x1 expansions at
112x112, 56x56 and 28x28 (AVX2, NCHW8c) 0.90, 0.50, 0.23 ms with 4 x 3 against 0.53,
0.26, 0.11 with 2 x 6, and the whole model at 1 thread 0.88x the time (CPU time, the two
builds alternated in one run, load 3).  Blocks of 12
lanes (NCHW12c) take two registers each, so the tile holds half as many: MobileNet v2's
1x1 projection 144 to 24 channels at 56x56 (1 thread) from 0.37-0.39 to 0.29 ms.  More
accumulators spill: measured 4 x 7 (28) 1.5-2.7x slower than 2 x 7 for 3x3 filters at
7x7 and 14x14.  Without such an epilogue (the blocked result is read elsewhere too) `cache_write`
makes one, a copy in the blocked layout.

On a 32-register unit a convolution whose blocks are a register each (16 lanes) takes
the square tile, SQUARE columns x SQUARE blocks (`square_tile`), where 4 divides the
width and the blocks; conv_chunks.py lays it over the rows of a 1x1 whose width 4 does
not divide (14x14, 7x7).  A 1x1 of blocks 3 divides and 4 does not (6, MobileNet v2's
projections to 96 channels) takes 7 x 3 on a row of 7 or 14 (`three_block_tile`), one
of 10 blocks conv_chunks.py's 4 x 5 flattened.  The 7 x 2 (or 8 x 2) tile the rule above gives loads 9 values
for 14 FMAs a step; 4 x 4 loads 8 for 16, and each group of 4 blocks reads the input once
where 2 blocks read it twice.  In a sampled profile (perf, cpu-clock, in the model, 1
thread) ResNet-50's 128 -> 512 + residual at 28x28 with 7 x 2 on an AVX-512 Zen 5 spent
41% of its samples on two input broadcasts of the step, and LLVM kept 16 of a block's
broadcasts on the stack (30 stores and as many loads a block's step); with 4 x 4 (16
accumulators, 4 broadcasts, 4 weights: 24 registers) none.  Measured in the model (1
thread, the two builds in two processes, inferences alternated 16 rounds, each kernel's
time around its call, median of the paired ratios; load 6-10 from other work): ResNet-50's
1x1s at 56x56 0.59-0.82, at 28x28 0.72-0.80 (its bottleneck ends 0.72-0.78), flattened at
14x14 0.72-0.76 (its ends) and 0.89-0.92, at 7x7 0.90-0.96, the stride-2 3x3 to 28x28
0.69, the stem 1.01; MobileNet v2 (30 rounds) its 1x1s at 28x28 to 7x7 0.67-0.91, those
whose blocks 4 does not divide unchanged.  Tried before it: an input prefetch a tile
ahead in the 7 x 2 tile (ResNet-50's ends at 28x28 0.94-0.96, at 14x14 and 7x7 1.05-1.10),
the channel blocks innermost for the 28x28 end (1.03), 2 x 8 at 14x14 (1.05-1.27), and
conv_chunks.py's AVX2 tiles on AVX-512 (at 14x14 1.5-1.7).

With every tile loop fused into one, each tile divided its row, column and block back
out of the fused index (multiplications by reciprocals, then the addresses of 12 loads
and 12 stores from them: about 150 instructions a tile of MobileNet v2's 24 -> 144
expansion against 24 reduction steps of 20; in a sampled profile 23% of the kernel
outside the reduction).  The columns' tile loop kept apart (the others, at least
NESTED_TILES_MIN tiles, still fused and parallel), its addresses step.  Measured with
te/arith.py's flattened positions (`undivide`) in the same build, against the build
before both (1 thread, CPU time, each kernel alone, alternated 21 times, load 8-9): 24 ->
144 at 56x56 0.87x, 64 -> 256 0.94x; the chunked tiles (conv_chunks.py), whose buffer
index `undivide` alone changes, 0.94-1.01x (within that load's noise).

On a 16-register unit, a convolution (not depthwise; its epilogue storing a channel per
lane) whose filters for one tile's blocks outgrow a quarter of L1 (WEIGHT_BYTES) is
summed a chunk of input channels at a time instead (conv_chunks.py): its tile reads them from L2 here, per `cols` columns.
So is a 1x1 whose tile over the rows flattened beats a row's (one chunk: no column
computed twice where the tile here would overlap the one before).

The packs, the padded input and `T_strided`, computed on every call, are copies: the
last axis vectorised (the lanes of a pack), the axis before it serial for a blocked
stage, the others fused into one loop, parallel from COPY_PARALLEL_BYTES.  A blocked
padded or strided copy (N, B, H, W, lanes) keeps its rows and columns serial too
(`_copy_inner`; the rows join the fused loop when N x B is one block, the stem's): fused
with them, each vector divided its row and column out of the loop's index (about 50
instructions a vector of ResNet-50's padded 128 x 58 x 58).  In a sampled profile in the
model (perf, cpu-clock, 1 thread) the stride-2 3x3 of 128 channels at 56x56 spent 9.3% of
its samples in that copy, 7.8% after.  Measured in the model (1 thread; the two builds in
two processes, their inferences alternated 40-60 rounds, each kernel's CPU time around
its call, median of the paired ratios; three runs at load 6-7 from other work): the
stem 0.98, 0.96, 0.985, the stride-2 1x1s (their `T_strided`) 0.94-1.03 (about 0.97),
the stride-2 3x3s 0.96-1.02 (128 channels), 0.99-1.01, 1.00-1.02; MobileNet v2 (80
rounds, twice) its stem 0.90 and 0.89, its depthwise kernels 0.92-1.07, the whole 1.00x
CPU time both.  A copy reads
what the kernel before wrote on both cores (conv_tile_end.py's TILE_FORK_MIN): serial,
it pulls half its input from the other core; forked, each thread copies half (its
channel blocks, the fused loop's outermost axis: what it wrote where the kernel before
split its channel blocks alike) on its own core.  The bound was 1 MiB; from 128 KiB
ResNet-50's serial copies fork: the padded inputs of its stride-2 3x3 convolutions and
the stem (921, 512 and 634 KB) and the `T_strided` of its stride-2 1x1 ones (800, 400,
200 KB).  Measured in the model at 2 threads (bench/steps.py's timed entry; the old and
new builds in one process, inferences alternated, 80 each, twice; real-time priority and
a spin of 2,000 as on an idle machine, load 4-6 from other work), those kernels in us:
the 800 KB `T_strided` 2004, 1998 -> 1818, 1821; the 921 KB pad 2109, 2151 -> 1976,
2037; 512 KB 2251, 2275 -> 2150, 2155; the stem 2026, 2037 -> 1972, 1942; 400 KB 1825,
1861 -> 1758, 1756.  With Winograd's output transforms forked too (winograd.py), the sum
of the kernels 64.1, 63.5 -> 62.9, 62.7 ms; onnxruntime's paired ratio (bench/run.py, 20
pairs, builds in alternate processes, same priority) 1.03x, 0.98x -> 0.94x, 0.97x.
Under load (two busy loops beside, the passive wait) 169, 211 -> 158, 207 ms; 1 thread
the same (114.8, 116.1 -> 114.7, 116.3 ms); MobileNet v2 at 2 threads the same (8.21,
8.27 -> 8.31, 8.19 ms; its stem 350 -> 281-287 us).
"""

from __future__ import annotations

from ..te import expr as te
from .conv_chunks import SQUARE, chunked_tile, filter_taps, schedule_chunked
from .conv_rolled import PAIR_COLS, pair_tile, rolls_block_channels
from .conv_tile_end import ROW_PARTS, parallel_tiles, planes_alias, unroll_block_channels
from .depthwise import schedule_depthwise
from .in_place import claim_output_over
from .primitives import Schedule, Stage
from .vector_unit import VectorUnit, host_unit

CACHE_BYTES = 2 << 20  # per core (L2)
L2_BYTES = 512 << 10  # this machine's L2 per core (Zen 3), for `_rows_first`
NESTED_TILES_MIN = 16  # outer tiles from which the innermost tile loop stays a loop of its own (module doc)
COPY_PARALLEL_BYTES = 1 << 17  # a copy's bytes worth a parallel loop (see the module doc)


def schedule_blocked_convs(sch: Schedule) -> set[int]:
    """Schedule every blocked convolution of `sch` with its epilogue and the copies it
    reads; the ids of the stages scheduled."""
    done: set[int] = set()
    for stage in list(sch.stages):
        blocked = _lane_operands(sch, stage)
        if blocked is None:
            continue
        data = [ld.tensor for ld in _loads(stage.body.source) if all(ld.tensor is not t for t in blocked)]
        others = _copies(sch, data)
        packs = [sch[t] for t in blocked if t.op is not None]
        epilogue = _epilogue(sch, stage)
        if epilogue is None:
            epilogue, stage = stage, sch[sch.cache_write(stage.tensor)]
        per_lane = epilogue.tensor.ndim == 5 or not planes_alias(epilogue.tensor)
        chunked = chunked_tile(stage) if data and per_lane else None
        if chunked is not None:  # the reduction a chunk of input channels at a time
            schedule_chunked(sch, stage, epilogue, *chunked, rows_first=_rows_first(stage, blocked, data))
            claim_output_over(sch, epilogue, tiles_overlap=False)  # its tiles never overlap
        elif data:
            overlap = _schedule_tile(sch, stage, epilogue, depthwise=False,
                                     channels_inside=_channels_inside(blocked, data),
                                     rows_first=_rows_first(stage, blocked, data))
            claim_output_over(sch, epilogue, tiles_overlap=overlap)
        else:  # depthwise: both operands read at the lane
            packs = schedule_depthwise(sch, stage, epilogue, packs)
        done.update((id(stage), id(epilogue)))
        for operands, inner in ((packs, 2), (others, 1)):
            for operand in operands:
                if id(operand) not in done:
                    if operand.attach is None:  # else made in the tile that reads it (conv_tile_pad.py)
                        _schedule_copy(sch, operand, _copy_inner(operand) if operands is others else inner)
                    done.add(id(operand))
    return done


def conv_tile(width: int, blocks: int, depthwise: bool = False, lanes: int = 16,
              unit: VectorUnit | None = None, pointwise: bool = False) -> tuple[int, int]:
    """(cols, vectors) of the register tile for an output `width` and `blocks` of `lanes`
    channels on `unit` (default the host's; see the module doc), of a 1x1 filter when
    `pointwise`.  A block wider than a
    register, or of lanes that are not a power of two, takes more than one register
    (`VectorUnit.registers_for`: 12 lanes are a vector of 8 and one of 4), so fewer fit."""
    unit = unit or host_unit()
    per_block = unit.registers_for(lanes)
    budget = max(1, unit.accumulators // per_block)
    if unit.registers < 32 and not depthwise:
        return _modelled_tile(width, blocks, unit, per_block)
    if not depthwise and square_tile(width, blocks, lanes, unit):
        return SQUARE, SQUARE
    if not depthwise and lanes > unit.lanes:
        return wide_block_tile(width, blocks, unit, per_block)
    if pointwise and not depthwise and pair_tile(width, blocks, lanes, unit):
        return PAIR_COLS, 2  # rolled (conv_rolled.py)
    if pointwise and not depthwise and two_block_tile(width, blocks, lanes, unit):
        return SQUARE, 2
    if pointwise and not depthwise and three_block_tile(width, blocks, lanes, unit):
        return PROJECT_COLS, 3
    limit = budget // 2 if blocks > 1 and not depthwise else budget
    cols = max(d for d in range(1, min(width, limit) + 1) if width % d == 0)
    if cols < 4:
        cols = min(width, limit)
    if depthwise:
        return cols, 1
    return cols, max(d for d in range(1, blocks + 1) if blocks % d == 0 and d * cols <= budget)


def square_tile(width: int, blocks: int, lanes: int, unit: VectorUnit) -> bool:
    """Whether a tile of SQUARE columns x SQUARE blocks fits a row of `width` and the
    `blocks` on a 32-register unit, a block of the unit's lanes (see the module doc);
    conv_chunks.py flattens it over the rows of a 1x1 whose width SQUARE does not divide."""
    return unit.registers >= 32 and lanes == unit.lanes and blocks % SQUARE == 0 and width % SQUARE == 0


WIDE_BLOCK_COLS = 8  # columns of a register tile of blocks wider than a register (`wide_block_tile`)


def wide_block_tile(width: int, blocks: int, unit: VectorUnit, per_block: int) -> tuple[int, int]:
    """(cols, vectors) for blocks wider than one of the unit's registers (24 lanes on
    AVX-512: a vector of 16 and one of 8, transform/x86_channel_blocks.py): the largest
    divisor of the width up to WIDE_BLOCK_COLS, and the most blocks whose accumulators
    fit beside them; the tile's step over an input block's channels stays a loop
    (conv_rolled.py).  Unrolled, with 8 columns (16 accumulators) LLVM did a step's
    16-lane FMAs for the 16 unrolled input channels of a block, then their 8-lane ones,
    keeping the broadcasts between the two on the stack (93 stack accesses in the loop):
    MobileNet v2's 144 -> 24 + residual at 56x56 in the model (1 thread, load 5-9,
    alternated runs) 143-145 µs with 8 columns, 130-147 with 7, 124-130 with 4; 96 -> 24
    88-89, 86-99 and 83-86.  Rolled, 8 columns have no stack access and took 111 µs
    (conv_rolled.py's figures)."""
    cols = max(d for d in range(1, min(width, WIDE_BLOCK_COLS) + 1) if width % d == 0)
    fits = [d for d in range(1, blocks + 1) if blocks % d == 0 and d * cols * per_block <= unit.accumulators]
    return cols, max(fits, default=1)


def two_block_tile(width: int, blocks: int, lanes: int, unit: VectorUnit) -> bool:
    """Whether a 1x1 convolution of 2 blocks of the unit's lanes (32 output channels on
    AVX-512) whose width SQUARE divides takes SQUARE columns x 2 blocks on a 32-register
    unit, not the rule's 7 x 2 (at 28x28), where conv_rolled.py's `pair_tile` does not take
    PAIR_COLS x 2 rolled (as at 28x28 now: the figures below are the unrolled tiles').  MobileNet v2's projections 144 -> 32 and 192
    -> 32 + residual at 28x28 in the model (1 thread, alternated runs, load 9-15): 36.0-40.9
    -> 33.0-33.9 µs and 47.5-54.5 -> 43.4-45.4 µs (14 x 1 as fast, 7 x 1 34.7-46, 4 x 1
    51-70).  Not the stem (3x3, 3 -> 32 at 112x112: 4 x 2 112-115 -> 123-125 µs), nor 6 or
    10 blocks at 14x14 and 7x7 (2 x 6 and 1 x 10 slower than 7 x 2, 7 x 1 no faster)."""
    return unit.registers >= 32 and lanes == unit.lanes and blocks == 2 and width % SQUARE == 0


PROJECT_COLS = 7  # columns of `three_block_tile`
PROJECT_WIDTH = 14  # the widest output row `three_block_tile` takes


def three_block_tile(width: int, blocks: int, lanes: int, unit: VectorUnit) -> bool:
    """Whether a 1x1 convolution of blocks of the unit's lanes that 3 divides and
    SQUARE does not (MobileNet v2's projections to 96 channels, 6 blocks), on a row of
    at most PROJECT_WIDTH that PROJECT_COLS divides, takes PROJECT_COLS columns x 3
    blocks on a 32-register unit, not the rule's 7 x 2: 21 accumulators, 7 broadcasts
    and 3 weight vectors, 31 registers.  With 7 x 2 (23 registers) LLVM hoisted a step's
    broadcasts ahead of their FMAs and kept them on the stack, about 60 stores and 60
    loads in the loop of 16 input channels (224 FMAs); with 7 x 3 about 10 (336 FMAs).
    576 -> 96 + residual at 14x14 alone (1 thread, the variants' calls alternated 150
    times, load 11-15): 7 x 2 107-109 µs, 7 x 3 83-85 µs (their inputs just read;
    134-141 and 107-108 after a 16 MiB sweep), 14 x 1 88 / 118, 3 x 6, 4 x 3, 6 x 3 or
    4 x 6 over the plane flattened 89-92 / 157-182.  A row wider than PROJECT_WIDTH
    (the expansion 16 -> 96 at 112x112) keeps the rule's tile: not measured."""
    return (unit.registers >= 32 and lanes == unit.lanes and blocks % 3 == 0 and blocks % SQUARE != 0
            and width % PROJECT_COLS == 0 and width <= PROJECT_WIDTH)


FMA_LATENCY = 5  # cycles before an accumulator's next FMA may start, in effect
FMA_PORTS = 2  # FMAs a cycle
LOAD_PORTS = 2  # vector loads (and broadcasts) a cycle
WEIGHT_LOAD_COST = 2  # a weight vector comes from L2 (a block's filters outgrow L1), a broadcast from L1
OVERLAP_COST = 1.15  # a last tile overlapping the one before: index arithmetic, stores twice


def _modelled_tile(width: int, blocks: int, unit: VectorUnit, per_block: int) -> tuple[int, int]:
    """(cols, vectors) fitting the unit's registers (`VectorUnit.tile_fits`), by a
    model of one reduction step of the tile on a 16-register unit
    (see the module doc): max(FMAs / FMA_PORTS, FMA_LATENCY, loads / LOAD_PORTS) cycles,
    times the tiles a row of `blocks` blocks takes (a last tile overlapping the one
    before counts whole); the cheapest, then the one whose columns divide the width."""
    best: tuple | None = None
    for cols in range(1, min(width, unit.accumulators // per_block) + 1):
        for vectors in (d for d in range(1, blocks + 1) if blocks % d == 0 and unit.tile_fits(cols, d, per_block)):
            fmas = cols * vectors * per_block
            loads = cols + WEIGHT_LOAD_COST * vectors * per_block
            step = max(fmas / FMA_PORTS, FMA_LATENCY, loads / LOAD_PORTS)
            cost = -(-width // cols) * (blocks // vectors) * step * (1 if width % cols == 0 else OVERLAP_COST)
            key = (cost, width % cols != 0, -fmas)
            if best is None or key < best[0]:
                best = (key, cols, vectors)
    assert best is not None
    return best[1], best[2]


# ---------------------------------------------------------------------- recognising


def _loads(e: te.PrimExpr) -> list[te.Load]:
    return [n for n in te.nodes(e) if isinstance(n, te.Load)]


def _lane_operands(sch: Schedule, stage: Stage) -> list[te.Tensor] | None:
    """The blocked operands when `stage` is a blocked convolution: a sum tagged conv
    with 5 data axes whose last (the lane) is only ever the last index of computed
    operands (the packed weight; for depthwise the blocked input too), or, for
    nn.contrib_conv2d_NCHWc, of the packed weight it is given."""
    body = stage.body
    if (stage.inlined or not isinstance(body, te.Reduce) or body.combiner != "sum"
            or "conv" not in stage.tensor.op.tag or len(stage.axes) != 5):
        return None
    lane = stage.tensor.op.axes[-1]
    found: list[te.Tensor] = []
    for ld in _loads(body.source):
        uses = [k for k, i in enumerate(ld.indices) if any(n is lane for n in te.nodes(i))]
        if not uses:
            continue
        if uses != [len(ld.indices) - 1] or ld.indices[-1] is not lane:
            return None
        if ld.tensor.op is None and "NCHWc" not in stage.tensor.op.tag:
            return None  # only the NCHWc convolution reads a packed weight it was given
        if ld.tensor.op is not None:
            operand = sch[ld.tensor]
            if operand.inlined or operand.is_reduction:
                return None
        if all(ld.tensor is not t for t in found):
            found.append(ld.tensor)
    return found or None


def _copies(sch: Schedule, data: list[te.Tensor]) -> list[Stage]:
    """The stages computing the tensors of `data` that are stored (not inlined, not
    reductions): the padded or strided input; none for a 1x1 convolution of an input."""
    stages = [sch[t] for t in dict.fromkeys(data) if t.op is not None]
    return [s for s in stages if not s.inlined and not s.is_reduction]


def _epilogue(sch: Schedule, conv: Stage) -> Stage | None:
    """The injective stage that alone reads `conv` (N, B, OH, OW, 16), each time at its
    own NCHW position: conv[n, c // 16, y, x, c % 16] with (n, c, y, x) its axes (n may
    read as 0 when the batch is 1); or, for an NCHWc convolution, the blocked stage that
    reads it at its own (n, b, y, x, lane)."""
    if sch.is_output(conv):
        return None
    t = conv.tensor
    readers = [s for s in sch.stages if not s.inlined and any(
        ld.tensor is t for ld in _loads(sch.effective_body(s)))]
    if len(readers) != 1 or readers[0].is_reduction or len(readers[0].axes) not in (4, 5):
        return None
    reader = readers[0]
    if len(reader.axes) == 5:
        return reader if _reads_in_place(sch, reader, t) else None
    if reader.tensor.shape[1] > t.shape[1] * t.shape[4] or reader.tensor.shape[2:] != t.shape[2:4]:
        return None
    n, c, y, x = reader.tensor.op.axes
    for ld in _loads(sch.effective_body(reader)):
        if ld.tensor is not t:
            continue
        i0, i1, i2, i3, i4 = ld.indices
        batch = i0 is n or (isinstance(i0, te.Const) and i0.value == 0 and n.extent == 1)
        if not (batch and i2 is y and i3 is x and _is_op(i1, "floordiv", c, t.shape[4])
                and _is_op(i4, "floormod", c, t.shape[4])):
            return None
    return reader


def _reads_in_place(sch: Schedule, reader: Stage, t: te.Tensor) -> bool:
    """Whether the blocked `reader` (an NCHWc convolution's bias, relu...) has t's shape and
    reads t only at its own position."""
    if tuple(reader.tensor.shape) != tuple(t.shape):
        return False
    axes = reader.tensor.op.axes
    return all(all(i is a or (isinstance(i, te.Const) and i.value == 0 and a.extent == 1)
                   for i, a in zip(ld.indices, axes))
               for ld in _loads(sch.effective_body(reader)) if ld.tensor is t)


def _is_op(e: te.PrimExpr, op: str, axis: te.IterVar, c: int) -> bool:
    return (isinstance(e, te.Binary) and e.op == op and e.a is axis
            and isinstance(e.b, te.Const) and e.b.value == c)


def _bytes(t: te.Tensor) -> int:
    n = max(1, te.bits(t.dtype) // 8)
    for d in t.shape:
        n *= d
    return n


def _rows_first(conv: Stage, blocked: list[te.Tensor], data: list[te.Tensor]) -> bool:
    """Whether the parallel tile loop takes ROW_PARTS parts of the rows first (see
    conv_tile_end.py): a 1x1 convolution whose input outgrows a core's L2 (L2_BYTES) and
    whose weight fits in half of it."""
    weight = sum(_bytes(t) for t in blocked)
    size = max((_bytes(t) for t in data), default=0)
    return filter_taps(conv) == 1 and size > L2_BYTES and weight <= L2_BYTES // 2


def _channels_inside(blocked: list[te.Tensor], data: list[te.Tensor]) -> bool:
    """Whether the tile loop runs over the channel blocks innermost (see the module doc)."""
    weight = sum(_bytes(t) for t in blocked)
    size = max((_bytes(t) for t in data), default=0)
    return size > weight and size > CACHE_BYTES // 2


# ---------------------------------------------------------------------- scheduling


def _schedule_tile(sch: Schedule, conv: Stage, epilogue: Stage, depthwise: bool,
                   channels_inside: bool, rows_first: bool = False) -> bool:
    """Whether the last tile of a row overlaps the one before (cols not dividing the
    width: in_place.py's claim is then not made)."""
    t, e = conv.tensor, epilogue.tensor
    lanes = t.shape[4]
    cols, vectors = conv_tile(t.shape[3], t.shape[1], depthwise, lanes, pointwise=filter_taps(conv) == 1)
    n, ob, y, x, lane = conv.axes
    sch.reorder(t, n, y, *conv.reduce_axes, ob, x, lane)
    if not rolls_block_channels(t.shape[3], t.shape[1], lanes, host_unit(), filter_taps(conv) == 1):
        unroll_block_channels(sch, conv)  # else a loop of a step a channel (conv_rolled.py)
    sch.unroll(t, ob)
    sch.unroll(t, x)
    sch.vectorize(t, lane)
    if e.ndim == 5:  # a blocked copy (cache_write)
        en, eb, ey, ex, inner_lane = epilogue.axes
        bo, bi = sch.split(e, eb, vectors)
    else:
        en, ec, ey, ex = epilogue.axes
        bo, channels = sch.split(e, ec, vectors * lanes)
        bi, inner_lane = sch.split(e, channels, lanes)
    xo, xi = sch.split(e, ex, cols)
    if channels_inside:
        tiles = (en, ey, xo, bo)
    elif rows_first and ey.extent % ROW_PARTS == 0:
        part, ey = sch.split(e, ey, ey.extent // ROW_PARTS)
        tiles = (en, part, bo, ey, xo)
    else:
        tiles = (en, bo, ey, xo)
    if e.ndim == 5 or not planes_alias(e):  # a channel per lane
        sch.reorder(e, *tiles, xi, bi, inner_lane)
        sch.unroll(e, xi)
        sch.vectorize(e, inner_lane)
    else:  # a vector of columns per channel (see the module doc)
        sch.reorder(e, *tiles, bi, inner_lane, xi)
        sch.unroll(e, inner_lane)
        sch.vectorize(e, xi)
    sch.unroll(e, bi)
    outer, inner = tiles[:-1], tiles[-1]
    extent = 1
    for axis in outer:
        extent *= axis.extent
    if extent >= NESTED_TILES_MIN:  # the innermost tile loop serial inside the parallel one
        parallel_tiles(sch, conv, epilogue, sch.fuse(e, *outer), at=inner)
    else:
        parallel_tiles(sch, conv, epilogue, sch.fuse(e, *tiles))
    return t.shape[3] % cols != 0



def _copy_inner(stage: Stage) -> int:
    """The axes a padded or strided blocked copy (N, B, H, W, lanes) keeps out of its fused
    loop: the rows and columns (no division to recover them), unless N x B is a single
    block (the stem), whose rows then join the fused loop to keep it parallel."""
    shape = stage.tensor.shape
    if stage.tensor.ndim != 5:
        return 1
    return 3 if shape[0] * shape[1] > 1 else 2


def _schedule_copy(sch: Schedule, stage: Stage, inner: int) -> None:
    """A pack or pad stage (see the module doc): the last axis vectorised, the
    `inner` - 1 axes before it serial, the others fused into one loop."""
    t, axes = stage.tensor, list(stage.axes)
    if not axes:
        return
    sch.vectorize(t, axes[-1])
    outer = axes[:-inner]
    if not outer:
        return
    loop = sch.fuse(t, *outer) if len(outer) > 1 else outer[0]
    if loop.extent > 1 and _bytes(t) >= COPY_PARALLEL_BYTES:
        sch.parallel(t, loop)
