"""Default schedule of channel-blocked depthwise convolutions (one filter per channel).

The reduction `T_conv2d_NCHW16c` / `T_depthwise_conv2d_NCHWc` (N, B, OH, OW, lanes)
reads its input and its packed weight both at the output's lane: the lanes are
channels, so a step of the reduction is one vector load of the input (lanes
contiguous, whatever the stride) times one vector of weights, no gather and no
broadcast.  The register tile is `cols` output columns of one row of one channel
block, computed at the tile loop of its epilogue (the bias and clip/relu that read it
back):

    for n, b, y, x.outer      fused, parallel when the work is large: the static
                              split gives each thread a run of (block, row) pairs
      T_conv.local            the tile, for ry, rx (unrolled): x (cols, unrolled),
                                lane (vectorized): FMA
      x.inner (cols, unrolled), lane (vectorized): the epilogue

`cols` is the largest divisor of the width up to the accumulators the host keeps
(12 with AVX2's 16 registers: the 8-lane tile is 8 columns at 112 and 56, 7 at 28,
14 and 7); the weight vector of a step and the input loads take the others.

Padding.  When the input is blocked already (nn.contrib_depthwise_conv2d_NCHWc, as
AlterOpLayout leaves MobileNet's depthwise convolutions), its padded copy `T_pad` is a
pure spatial pad of the same layout, and it is inlined: the reduction reads the input
through a select on the window position, a branch per load that is the same for every
lane (codegen/lanes.py), taken the same way everywhere but at the borders.  The copy
was a pass over the whole input through memory before the convolution read it again:
for stride 2 the input is four times the output, and the copy cost more than the
arithmetic.  Measured (1 thread, CPU time, 8-lane blocks, bias and relu, load 3-4 from
other work): 1x96x112x112 stride 2 from 0.54-1.2 ms to 0.44-0.45, 1x144x56x56 stride 2
from 0.19-0.33 to 0.10-0.13.  When the padded copy also blocks an NCHW input
(`T_pad_NCHW16c`, nn.conv2d with groups) it stays a copy: inlined, each lane would
read another channel plane (a gather per step).  LLVM unswitches the tile: a tile that
touches no border runs 8 FMAs a tap with the input as their memory operand, no branch.

In MobileNet v2 (bench/run.py's, weights bound, each fused kernel timed alone, 1
thread, CPU time, the copy and the inlined pad alternated three times, load 6-9 from
other work): the 17 depthwise kernels from 5.6-6.5 ms an inference to 3.6-4.4; the
stride-2 1x96x112x112 from 1.7-2.0 to 1.0-1.2 ms (it reads 4.8 MB: memory-bound now),
the 14x14 ones 30-40% faster, 1x144x56x56 stride 1 unchanged (0.29-0.41 against
0.37-0.39 ms).

Prefetch.  What bounds features.2's stride-2 kernel is the input: in a sampled profile of
the model (perf, cpu-clock, 1 thread) 80% of its samples sat on the tile's loads of new
input lines (0x80(%r13), 0xc0(%r13), ...), the FMAs between them nearly free.  Each tile
of 8 output columns reads 16 new lines of two new input rows for 72 FMAs, about 25 bytes
a cycle, more than the hardware prefetcher brings from L3 for three row streams at once.
So, for a stride of 2 or more on an input of at least INPUT_PREFETCH_BYTES, the tile asks
at each filter row (the `ry` loop) for the lines of the input row one below it that the
tile INPUT_AHEAD tiles on reads (PREFETCHT1; past the row's end that is the next rows',
which the next output row reads; past the input's end it reads nothing).  Measured in the
model (1 thread; the two builds' inferences alternated 40 times in one process, each
kernel's least of 3 calls a round, median of the paired ratios; load 6.5 from other
work): features.2's 1x96x112x112 0.70x the time (349 against 533 µs), features.4's
1x144x56x56 stride 2 0.78x (84 against 106).  Tried: the same on stride 1 (AHEAD 2; 30
rounds, load 7): features.1's 1x32x112x112 1.13x and features.3's 1x144x56x56 1.19x the
time, which the hardware prefetcher serves (one new row a tile row): not taken.
INPUT_AHEAD 7 (one output row of features.2's 7 tiles) against 4, 5 and 12: features.2
0.96x, 0.94x and 0.93x (20 rounds each, load 6-7).
"""

from __future__ import annotations

from ..te import expr as te
from ..te.arith import divide_terms
from .conv_tile_end import parallel_tiles, planes_alias
from .primitives import Schedule, Stage
from .vector_unit import host_unit

LINE_BYTES = 64  # a cache line
INPUT_PREFETCH_BYTES = 1 << 20  # an input at least this large (twice this machine's L2) gets its lines asked for
INPUT_AHEAD = 7  # register tiles ahead whose input lines a tile asks for (features.2's row of tiles)


def schedule_depthwise(sch: Schedule, conv: Stage, epilogue: Stage, operands: list[Stage]) -> list[Stage]:
    """Schedule the depthwise reduction `conv` computed at its `epilogue` (see the module
    doc); `operands` are the computed tensors it reads at its lane (the padded input, a
    packed weight).  Returns those it left to be scheduled as copies (the inlined pad is
    not among them)."""
    kept = []
    for operand in operands:
        if _is_blocked_pad(operand, conv):
            sch.compute_inline(operand.tensor)
        else:
            kept.append(operand)
    _schedule_tile(sch, conv, epilogue)
    _prefetch_input(sch, conv)
    return kept


def depthwise_cols(width: int, lanes: int) -> int:
    """Output columns of the register tile for a row `width` wide in blocks of `lanes`
    channels on the host (see the module doc): the largest divisor of the width whose
    accumulators fit; without a divisor from 4, as many as fit (the last tile then
    overlaps the one before)."""
    unit = host_unit()
    budget = max(1, unit.accumulators // unit.registers_for(lanes))
    cols = max(d for d in range(1, min(width, budget) + 1) if width % d == 0)
    return cols if cols >= 4 else min(width, budget)


def _is_blocked_pad(operand: Stage, conv: Stage) -> bool:
    """Whether `operand` is the padded input of a depthwise reduction whose input is
    blocked already: 5 axes, reading one tensor of 5 dimensions at its own lane."""
    t = operand.tensor
    if t.ndim != 5 or t.shape[4] != conv.tensor.shape[4]:
        return False
    lane = t.op.axes[-1]
    loads = [n for n in te.nodes(operand.body) if isinstance(n, te.Load)]
    return bool(loads) and all(ld.tensor.ndim == 5 and _is_lane(ld.indices[-1], lane) for ld in loads)


def _is_lane(index: te.PrimExpr, lane: te.IterVar) -> bool:
    """Whether `index` is `lane`, or `(C*L + lane) % L` (L its extent: a layout's index
    map reads the block's channel so)."""
    if index is lane:
        return True
    if not (isinstance(index, te.Binary) and index.op == "floormod" and isinstance(index.b, te.Const)
            and index.b.value == lane.extent):
        return False
    _, rest = divide_terms(index.a, lane.extent)
    return rest is lane


def _schedule_tile(sch: Schedule, conv: Stage, epilogue: Stage) -> None:
    t, e = conv.tensor, epilogue.tensor
    lanes = t.shape[4]
    cols = depthwise_cols(t.shape[3], lanes)
    n, b, y, x, lane = conv.axes
    sch.reorder(t, n, b, y, *conv.reduce_axes, x, lane)
    if conv.reduce_axes:
        sch.unroll(t, conv.reduce_axes[-1])
    sch.unroll(t, x)
    sch.vectorize(t, lane)
    if e.ndim == 5:  # blocked like the reduction (NCHWc, or a cache_write copy)
        en, eb, ey, ex, inner_lane = epilogue.axes
        xo, xi = sch.split(e, ex, cols)
        sch.reorder(e, en, eb, ey, xo, xi, inner_lane)
        tiles = (en, eb, ey, xo)
    else:  # NCHW: the block's channels split off the channel axis
        en, ec, ey, ex = epilogue.axes
        eb, inner_lane = sch.split(e, ec, lanes)
        xo, xi = sch.split(e, ex, cols)
        sch.reorder(e, en, eb, ey, xo, xi, inner_lane)
        tiles = (en, eb, ey, xo)
    if e.ndim == 4 and planes_alias(e):  # a vector of columns per channel (see conv.py)
        sch.reorder(e, *tiles, inner_lane, xi)
        sch.unroll(e, inner_lane)
        sch.vectorize(e, xi)
    else:  # a channel per lane
        sch.unroll(e, xi)
        sch.vectorize(e, inner_lane)
    parallel_tiles(sch, conv, epilogue, sch.fuse(e, *tiles))



def _prefetch_input(sch: Schedule, conv: Stage) -> None:
    """At each filter row of a tile, ask for the lines of the input row below it that the
    tile INPUT_AHEAD tiles on will read (see the module doc), when the blocked input is at
    least INPUT_PREFETCH_BYTES."""
    data = _blocked_input(sch, conv)
    if data is None or not conv.reduce_axes:
        return
    _, blocks, height, width, lanes = data.shape
    size = blocks * height * width * lanes * max(1, te.bits(data.dtype) // 8)
    if size < INPUT_PREFETCH_BYTES:
        return
    n, b, y, x, _ = conv.tensor.op.axes
    ry = conv.body.axes[0]
    stride = height // conv.tensor.shape[2]
    if stride < 2:
        return
    cols = depthwise_cols(conv.tensor.shape[3], lanes)
    per_line = max(1, LINE_BYTES // (lanes * max(1, te.bits(data.dtype) // 8)))
    row = y * stride + ry  # one row below the tile's (the pad's row above is the last tile row's)
    for k in range(-(-(cols * stride) // per_line)):
        col = (x + INPUT_AHEAD * cols) * stride + k * per_line
        index = (((n * blocks + b) * height + row) * width + col) * lanes
        sch.prefetch(conv.tensor, conv.reduce_axes[0], data, index)


def _blocked_input(sch: Schedule, conv: Stage) -> te.Tensor | None:
    """The blocked input (N, B, H, W, lanes) of the schedule that `conv` reads (through its
    inlined pad), or None."""
    for ld in te.nodes(sch.effective_body(conv)):
        if (isinstance(ld, te.Load) and ld.tensor.ndim == 5 and ld.tensor.shape[1] == conv.tensor.shape[1]
                and ld.tensor.shape[4] == conv.tensor.shape[4] and any(ld.tensor is i for i in sch.inputs)):
            return ld.tensor
    return None
