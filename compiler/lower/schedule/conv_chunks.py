"""Blocked convolutions summed a chunk of input channels at a time (the loop order of
MLAS's and oneDNN's NCHWc kernels), for the non-depthwise convolutions of conv.py on a
vector unit of 16 registers (AVX2), whose epilogue stores a channel per lane.

conv.py's tile sums the whole reduction (input channels x filter window) in registers
before it moves on, so every tile of `cols` output columns reads the filters of its
`vectors` output blocks whole: 128 KiB for 1024 input channels and 4 blocks of 8, from
L2, per 3 columns.  Here the epilogue's tile loop runs over (n, block group, row block),
parallel, and the convolution is computed there into a buffer of the group's rows (at
most ACC_BYTES):

    for rc.outer                    a chunk of input channels, whose filters (at most
                                    WEIGHT_BYTES) stay in L1 across the rows
      for y, x.outer                every register tile of the rows
        acc = buffer[tile]          cache_accumulator (primitives.py): the tile in registers
        for rc.inner, ry, rx (, rci):  vectors x cols FMAs a step
        buffer[tile] = acc
    the epilogue over the rows, reading the buffer

The buffer is zeroed first; each sum adds the same terms in the same order as before.
The reduction visits every tile once per chunk, so tiles must not overlap: `cols`
divides the width (conv.py's tiles may overlap the one before) and `vectors` the blocks.
Among those, `chunked_tile` takes the cheapest by conv.py's model of a step with the
weights read from L1 (costing as much as a broadcast); ties go to fewer loads, then to
more blocks (each group reads the whole input once).

Used when the filters of one group (all input channels) outgrow WEIGHT_BYTES: when they
fit, the chunk is the whole reduction and conv.py's tile, which needs no buffer, is
faster (1x1, 64 -> 256 channels at 56x56, 1 thread: 1.36 against 1.62 ms).  Measured
(1 thread, CPU time, NCHW8c, against onnxruntime's Conv in the same run): 1x1 1024 ->
256 at 14x14 2.46 -> 1.51 ms (onnxruntime 1.62), 1x1 256 -> 64 at 56x56 4.5 -> 2.5 ms
(2.5), 1x1 512 -> 128 at 28x28 4.1 -> 2.0 ms (1.85); nn.conv2d in NCHW (blocks of 16
lanes, two registers each; no AlterOpLayout), 3x3 with bias and relu, bench/run.py's
kernels: 1x64x56x56 7.1 -> 3.5 ms, 1x256x14x14 7.1 -> 3.3 ms.  The machine was shared
(load 4-7): single runs of these moved by 20-30%.
"""

from __future__ import annotations

from .primitives import Schedule, Stage
from .vector_unit import VectorUnit, host_unit

WEIGHT_BYTES = 16 << 10  # filters of one chunk: half of L1
ACC_BYTES = 16 << 10  # the buffer of a group's rows
FMA_LATENCY, FMA_PORTS, LOAD_PORTS = 5, 2, 2  # as conv.py's model


def chunked_tile(conv: Stage, unit: VectorUnit | None = None) -> tuple[int, int, int, int] | None:
    """(cols, vectors, rows, chunk) for the blocked convolution `conv` (N, B, OH, OW,
    lanes), or None when conv.py's tile is the better one (see the module doc): the
    register tile, the rows of the buffer and the input channels (the first reduction
    axis) of a chunk."""
    unit = unit or host_unit()
    _, blocks, oh, ow, lanes = conv.tensor.shape
    if unit.registers >= 32 or not conv.reduce_axes:
        return None
    per_block = unit.registers_for(lanes)
    channels, *window = conv.reduce_axes
    per_channel = 1
    for axis in window:
        per_channel *= axis.extent
    tile = _tile(ow, blocks, unit.accumulators, per_block)
    if tile is None:
        return None
    cols, vectors = tile
    group_bytes = vectors * lanes * 4
    chunk = max(d for d in _divisors(channels.extent) if d == 1 or d * per_channel * group_bytes <= WEIGHT_BYTES)
    if chunk == channels.extent:  # the filters fit: one chunk, conv.py's tile
        return None
    rows = max(d for d in _divisors(oh) if d == 1 or d * ow * group_bytes <= ACC_BYTES)
    return cols, vectors, rows, chunk


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _tile(width: int, blocks: int, accumulators: int, per_block: int) -> tuple[int, int] | None:
    """(cols, vectors) dividing (width, blocks), cols * vectors * per_block within
    `accumulators`: the cheapest step per FMA (see the module doc); None when nothing
    but a single accumulator fits."""
    best = None
    for cols in _divisors(width):
        for vectors in _divisors(blocks):
            fmas = cols * vectors * per_block
            if fmas > accumulators:
                continue
            loads = cols + vectors * per_block
            step = max(fmas / FMA_PORTS, FMA_LATENCY, loads / LOAD_PORTS)
            key = (step / fmas, loads / fmas, -vectors)
            if best is None or key < best[0]:
                best = (key, cols, vectors)
    if best is None or best[1] * best[2] * per_block < 2:
        return None
    return best[1], best[2]


def schedule_chunked(sch: Schedule, conv: Stage, epilogue: Stage, cols: int, vectors: int, rows: int,
                     chunk: int) -> None:
    """Schedule `conv` at its `epilogue`, as the module doc draws it: the blocked 5-D
    stage that reads it in place (the NCHWc result, or cache_write's copy), or the NCHW
    one that reads it back a channel per lane (conv.py `_epilogue`)."""
    t, e = conv.tensor, epilogue.tensor
    if e.ndim == 5:
        en, eb, ey, ex, lane = epilogue.axes
        bo, bi = sch.split(e, eb, vectors)
    else:
        en, ec, ey, ex = epilogue.axes
        bo, channels = sch.split(e, ec, vectors * t.shape[4])
        bi, lane = sch.split(e, channels, t.shape[4])
    yo, yi = sch.split(e, ey, rows)
    xo, xi = sch.split(e, ex, cols)
    sch.reorder(e, en, bo, yo, yi, xo, xi, bi, lane)
    sch.unroll(e, xi)
    sch.unroll(e, bi)
    sch.vectorize(e, lane)
    loop = sch.fuse(e, en, bo, yo)
    sch.parallel(e, loop)
    sch.compute_at(t, e, loop)
    n, ob, y, x, lane = conv.axes
    channels, *window = conv.reduce_axes
    co, ci = sch.split(t, channels, chunk)
    xo, xi = sch.split(t, x, cols)
    sch.reorder(t, n, co, y, xo, ci, *window, ob, xi, lane)
    sch.cache_accumulator(t, ci)
    sch.unroll(t, ob)
    sch.unroll(t, xi)
    sch.vectorize(t, lane)
