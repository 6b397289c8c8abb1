"""The output lines a chunked convolution's epilogue will write (and a residual's it will
read), and the input and filter lines its next tiles will read (a strided 3x3's from its
padded copy), asked for while its tiles compute (conv_chunks.py).

conv_chunks.py's epilogue reads a buffer of the group's rows back and writes the output
a burst at a time (448 stores for ResNet-50's 128 -> 512 at 28x28, a buffer of 4 rows of
4 blocks).  The output's lines are in no cache near: each store waits for its line (a
read for ownership), and a burst of them fills the store queue.  In a sampled profile
(perf, cpu-clock; the kernel called in a loop, so its input and weights hot) that
epilogue held 11.6% of the kernel's samples; with the tiles asking for those lines ahead
(PREFETCHW: the line brought in owned and writable), a few at each step of a chunk, 2.6%,
and the kernel took 0.915-0.99x the time (1 thread, CPU time, the two builds' kernels
alternated 40-300 times, input just read and L2 evicted as the kernel table pairs it,
load 7-10 from other work; five runs 0.915, 0.926, 0.953, 0.962, 0.993).  With a
residual add (ResNet-50's bottleneck end), whose epilogue also reads a residual of the
output's shape from no cache near, the tiles ask for its lines alike (`_read_alike`):
relu(conv + bias + residual) at 128 -> 512 took 1.003x and 1.009x the time with the
output's lines alone, 0.942x and 0.951x with the residual's too (two runs, 200-400
rounds, the same conditions).  Only where the output outgrows L2 twice over
(OUTPUT_PREFETCH_BYTES) and few input channels (a short reduction) leave a store's wait
unhidden: with 256 input channels and an output of 800
KB (256 -> 1024 at 14x14, 256 -> 64 at 56x56) 0.98x and 1.00x, 1024 -> 256 (200 KB,
within L2) 1.06x.  Tried: the same for conv.py's tile, whose epilogue stores 12 vectors
after each tile's reduction (the out-of-order core overlaps them with the next tile):
64 -> 256 at 56x56 (3.2 MB) 1.06x, 1.04x and 1.01x the time asking 1, 2 and 4 tiles ahead,
MobileNet v2's 24 -> 144 and 144 -> 24 at 56x56 1.00x; and the next chunk's filters asked
for over the chunk before (960 -> 160 at 7x7, whose 614 KB of weights outgrow L2) 1.02-1.05x,
1024 -> 256 0.95-0.97x, 128 -> 512 and 2048 -> 512 1.00x (the same runs): not taken.
With the tile ending in the epilogue (conv_chunks.py), AHEAD 2 against 1 in the model (1
thread, the two builds' inferences alternated 30-40 times, load 6-7): 64 -> 256 + residual
at 56x56 (a single chunk) 0.96-1.00x, 128 -> 512 + residual 0.95-1.00x, the kernels it
leaves alone 0.99x: not taken.

A flattened 1x1 tile of stride 1 over a plane of at least INPUT_PREFETCH_POSITIONS
(ResNet-50's at 56x56 and 28x28) also asks for the input lines it will broadcast from INPUT_AHEAD
tiles on, two lines of each input block of the chunk a tile (`prefetch_input`).  Each
step of the chunk's reduction broadcasts from another block's plane, 56 x 56 x 8 floats
(98 KiB, 2 KiB past a multiple of 4 KiB) apart, so the 8 lines a tile starts on fall in
two of L1's 64 sets (probably what its own prefetcher keeps up with badly); in a sampled profile
in the model (perf, cpu-clock) of 64 -> 256 + residual, the three instructions after a
step's first broadcasts held 13% of the kernel's samples.  Measured in the model (1
thread, the two builds' inferences alternated 10-12 rounds, two process pairs, each
kernel's least of 3 calls a round, median of the paired ratios; load 6-7 from other
work), 2 tiles ahead against none: 64 -> 256 + residual (layer1's three ends) 0.86,
0.94, 0.92 and 0.95, 0.97, 0.96 (two runs), the downsample 0.95 and 0.95, 64 -> 64 0.97
and 0.98, 256 -> 64 1.03, 0.94 and 1.02, 0.96, 256 -> 128 0.95 and 1.01; the same build
against itself moved its kernels by 0.96-1.07.  At 28x28 (128 -> 512 + residual 0.995,
512 -> 128 0.99-1.03) no gain: not asked there.  4 tiles ahead against 2: layer1's ends
0.99, 0.995, 0.97 (load 6.5-8.9).  4 ahead against the base (12 rounds, load 5-6.3):
layer1's ends 0.979, 0.963, 0.969, the downsample 0.970, 64 -> 64 0.910, 256 -> 64 0.947
and 0.953, 256 -> 128 0.931; the kernels left alone 0.985-1.03; the whole inference 0.992x
CPU time (quartiles 0.94-1.04).  Only the first block's two lines (a slip: the chunk
counted in channels, not blocks) gave 0.976, 0.969, 0.983 on the ends in a run before.
MobileNet v2 (the same way, load 4.6-6): its flattened 1x1s at 56x56 and 112x112 take it
too, 32 -> 16 at 112x112 0.962, 96 -> 24 0.979, 144 -> 24 + residual 0.899; the whole
inference 0.990x.  Beside onnxruntime's nodes (bench/layers.py, 1 thread, 4 runs of each
build in turns, load 3.4-4.5, medians of the runs' ratios): layer1's ends 0.99, 1.00,
0.99 -> 0.965, 0.955, 0.96 (each run's 0.94-1.03), the downsample 0.975 -> 0.94.

From 28x28 too, 4 tiles ahead (stop 30, h-rn10): a sampled profile in the model of
layer2's bottleneck end (128 -> 512 + residual at 28x28) put 9% of its samples on the
three broadcasts that start an input block's step, as at 56x56.  Measured in the model
(1 thread; the two builds in two processes, their inferences alternated 40-60 rounds,
each kernel's CPU time read around its call (CLOCK_THREAD_CPUTIME_ID), median of the
paired ratios; three runs at load 6-7 from other work): 512 -> 128 at 28x28 (3 calls)
0.88, 0.89, 0.97 / 0.88, 0.92, 0.89 / 0.90, 0.92, 0.89, 512 -> 256 at 28x28 0.97, 0.91,
0.88, layer2's four ends 0.97-0.99 / 0.89-0.99 / 0.93-1.02 (medians about 0.97), the
kernels left alone 0.94-1.06; the whole inference 1.00x, 0.97x, 0.99x.  At 14x14 too
(one run, wall time, load 4.4-5): layer3's ends (256 -> 1024 + residual, an input of 200
KB that stays in L2) 1.00-1.10x, 1024 -> 256 0.95-1.02x: not asked there.  MobileNet v2
(its flattened 1x1s at 28x28 take it too; 80 rounds, twice, load 6-7): the whole 1.004x
and 0.981x, CPU time 1.000x both, its 1x1s at 28x28 0.97-1.07x.

A chunked filter wider than 1x1 at a stride of 2 or more, over an input of at least
WINDOW_PREFETCH_BYTES, asks at each filter row (`ry`) of a tile for the lines of that
input row the tile WINDOW_AHEAD tiles on reads, `cols` x stride positions (past the
buffer's rows: the next chunk's first tiles), from its padded copy (Schedule.prefetch
takes an operand computed whole) or its input (`prefetch_window`).  In a sampled profile
in the model (perf, cpu-clock, 1 thread) of ResNet-50's stride-2 3x3 of 128 channels at
56x56 (a padded copy of 1.7 MB, read once per group of 4 filter blocks, from beyond L2),
27% of the tiles' samples sat on the first broadcast and weight load of a filter tap, as
with depthwise.py's stride-2 kernels.  Measured in the model (1 thread; the two builds in
two processes, their inferences alternated 30-40 rounds, each kernel's CPU time around its
call, median of the paired ratios; four runs at load 8-9 from other work): layer2.0's
3x3 (56x56 to 28x28) 0.89, 0.85, 0.78, 0.84; layer3.0's (28x28, 900 KiB) 0.87, 0.91,
0.92, 0.915; layer4.0's (14x14, a padded input of 512 KiB) 1.02, 0.96, 1.05: not asked
there (0.98 without).  8 tiles ahead against 4: 1.005 and 1.007 (30 rounds, load 9).

A flattened 1x1 tile whose packed filters are at least WEIGHT_PREFETCH_BYTES, over a
plane of at most WEIGHT_PREFETCH_POSITIONS (14x14: a chunk's filters serve few tiles), also asks,
at each tile of a chunk, for its share of the filter lines the group's next chunk (past
the last, the next group's first) will read (`prefetch_weights`: tile t asks for line t
of each of the group's blocks, more a tile when a block's piece of a chunk has more
lines than the chunk has tiles; PREFETCHT1, into L2).  In the model every filter comes
from beyond L2 (MobileNet v2's 14 MB of them pass through it once an inference), and a
chunk reads `vectors` pieces of 1.5-2 KiB, 30 KiB apart for 960 input channels:
MobileNet v2's 960 -> 320 at 7x7 took 354 us called again and again on the same
buffers (its 1.2 MB of filters from L3), 435 us in the model, 960 -> 160 + residual 176
against 210.  Measured in the model (1 thread, the two builds' inferences alternated in
one process, 20-24 rounds, each kernel's least of 3 calls a round, median of the paired
ratios; load 2.5-3.8 from other work): MobileNet v2's 1x1s at 7x7, 576 -> 160 0.85-0.88,
960 -> 160 + residual 0.83-0.88, 160 -> 960 0.84-0.89, 960 -> 320 0.88-0.90, 320 ->
1280 0.86-0.91 (three runs); 192 -> 64 at 14x14 (48 KiB) 0.94-0.985; the sum of its
kernels 0.965x and 0.976x.  ResNet-50 (20 rounds, load 3.5): layer4's 1x1s 0.91-0.95
(weights of 2-4 MB), the others 0.96-1.01, the sum of its kernels 0.993x; at 28x28
and 56x56 (layer1's and layer2's 1x1s, 64-512 KiB of filters, each filter line serving
hundreds of positions) 0.96-1.05 there and again at load 11 (both build orders): not
asked there.  So bounded, both build orders (12 rounds each, load 8.6; the geometric
mean of the two): layer4's 1x1s 0.92-0.955, layer3's 0.95-1.02, the sum of the kernels
0.988x.  Flattened 1x1s with filters under 32 KiB (MobileNet v2's at 28x28 and
above) moved by 0.95-1.04, not taken there.  Tried: the same for MobileNet v2's 2 x 6 tiles a row at 14x14 (384 ->
96, 576 -> 96 + residual; 147 and 221 KiB of filters): 1.04, 0.98, 0.99, no gain;
they took 163 and 268 us called again and again, 184 and 271 in the model.  Filters read
as one chunk by one group (`single_piece`: conv_chunks.py's square tile over 14x14 takes
every input channel in one chunk, and 4 blocks are one group) have no next piece: the
lines asked for lay past the filters' end, 64 a tile for 384 -> 64.  Asking for none
(bench/layers.py, 1 thread, the base in turns, 5 runs each, load 3-5): MobileNet v2's
384 -> 64 + residual at 14x14 43.0 -> 39.8 us (0.99x -> 0.92x onnxruntime's node) in
features.8, 38.5-38.9 -> 37.9-38.1 in features.9 and 10, 192 -> 64 21.6 -> 21.2 us.
"""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage
from .stage import Axis

LINE_BYTES = 64  # a cache line
AHEAD = 1  # tiles ahead whose output lines a tile asks for (0, the tile's own: 0.953x against 0.915x)
OUTPUT_PREFETCH_BYTES = 1 << 20  # an output at least this large (twice this machine's L2) gets its lines asked for
OUTPUT_PREFETCH_CHANNELS = 128  # ... when the reduction is no longer than this many input channels
INPUT_AHEAD = 4  # tiles ahead whose input lines a flattened 1x1 tile asks for (against 2: 0.97-0.995x)
INPUT_PREFETCH_POSITIONS = 28 * 28  # ... over a plane of at least this many positions (at 14x14 it lost)
WINDOW_AHEAD = 4  # tiles ahead whose input lines a strided 3x3 tile asks for (`prefetch_window`)
WINDOW_PREFETCH_BYTES = 768 << 10  # ... from an input of at least this many bytes (at 512 KiB no gain)
WEIGHT_PREFETCH_BYTES = 32 << 10  # packed filters at least this large get the next chunk's lines asked for
WEIGHT_PREFETCH_POSITIONS = 14 * 14  # ... over a plane of at most this many positions (at 28x28, 56x56 no gain)


def wants_output_prefetch(conv: Stage, out: Stage) -> bool:
    """Whether `conv`'s tiles should ask for `out`'s lines (see the module doc): `out` the
    blocked output (N, B, OH, OW, lanes) of at least OUTPUT_PREFETCH_BYTES, the reduction
    over at most OUTPUT_PREFETCH_CHANNELS input channels."""
    t = out.tensor
    size = max(1, te.bits(t.dtype) // 8)
    for d in t.shape:
        size *= d
    channels = 1
    for axis in conv.reduce_axes:
        channels *= axis.extent
    return t.ndim == 5 and size >= OUTPUT_PREFETCH_BYTES and channels <= OUTPUT_PREFETCH_CHANNELS


def prefetch_output(sch: Schedule, conv: Stage, out: Stage, at: Axis, step: te.PrimExpr, steps: int,
                    cols: int, vectors: int) -> None:
    """At each of the `steps` iterations of `conv`'s loop `at` (`step` its index, in conv's
    IterVars), ask for writing for a share of `out`'s lines that the tile AHEAD tiles on
    will write: `vectors` blocks of `cols` consecutive positions (a row's, or flattened
    rows'), `out` the blocked output (N, B, OH, OW, lanes) written at conv's own positions;
    and for reading the same lines of each input `out` reads alike (a residual)."""
    _, blocks, oh, ow, lanes = conv.tensor.shape
    n, ob, y, x, _ = conv.tensor.op.axes
    per_line = max(1, LINE_BYTES // (lanes * max(1, te.bits(out.tensor.dtype) // 8)))
    span = cols // per_line if cols % per_line == 0 else -(-(cols - 1) // per_line) + 1  # lines a block's tile spans
    reps = -(-(vectors * span) // steps)
    for q in range(reps):
        k = step * reps + q if reps > 1 else step
        position = y * ow + x + AHEAD * cols + (k // vectors) * per_line
        index = ((n * blocks + ob + k % vectors) * (oh * ow) + position) * lanes
        sch.prefetch(conv.tensor, at, out.tensor, index, write=True)
        for residual in _read_alike(sch, conv, out):
            sch.prefetch(conv.tensor, at, residual, index)


def _read_at_positions(sch: Schedule, conv: Stage) -> list[te.Tensor]:
    """The blocked inputs of the schedule that `conv` reads over a plane of its own size
    (a 1x1 convolution's data at stride 1)."""
    _, _, oh, ow, _ = conv.tensor.shape
    found = []
    for ld in te.nodes(conv.body):
        if (isinstance(ld, te.Load) and ld.tensor.ndim == 5 and tuple(ld.tensor.shape[2:4]) == (oh, ow)
                and any(ld.tensor is i for i in sch.inputs) and all(ld.tensor is not f for f in found)):
            found.append(ld.tensor)
    return found


def _read_alike(sch: Schedule, conv: Stage, out: Stage) -> list[te.Tensor]:
    """The inputs of the schedule that `out` reads with conv's shape (a residual: read at
    the output's own positions)."""
    found = []
    for ld in te.nodes(sch.effective_body(out)):
        if (isinstance(ld, te.Load) and tuple(ld.tensor.shape) == tuple(conv.tensor.shape)
                and any(ld.tensor is i for i in sch.inputs) and all(ld.tensor is not f for f in found)):
            found.append(ld.tensor)
    return found


def prefetch_input(sch: Schedule, conv: Stage, at: Axis, cols: int, chunk: int) -> None:
    """At each iteration of `conv`'s tile loop `at` (a 1x1 tile of `cols` positions
    flattened over the rows, `chunk` input blocks a chunk), ask for the lines of every
    input block of the chunk that the tile INPUT_AHEAD tiles on broadcasts from, when the
    input is read at the output's own positions (stride 1) over a plane of at least
    INPUT_PREFETCH_POSITIONS (module doc)."""
    _, _, oh, ow, _ = conv.tensor.shape
    n, _, y, x, _ = conv.tensor.op.axes
    if oh * ow < INPUT_PREFETCH_POSITIONS:
        return
    for data in _read_at_positions(sch, conv):
        _, blocks, h, w, lanes = data.shape
        per_line = max(1, LINE_BYTES // (lanes * max(1, te.bits(data.dtype) // 8)))
        first = conv.body.axes[0]  # the input blocks' axis: the chunk's first block where the tile starts
        for j in range(chunk):
            for line in range(-(-(cols - 1) // per_line) + 1):  # lines a tile's positions span
                position = y * ow + x + INPUT_AHEAD * cols + line * per_line
                sch.prefetch(conv.tensor, at, data, ((n * blocks + first + j) * (h * w) + position) * lanes)


def prefetch_window(sch: Schedule, conv: Stage, at: Axis, cols: int, rows: int, chunk: int) -> None:
    """At each filter row `at` (ry) of a tile of `cols` positions (a row's, or flattened
    over the buffer's `rows` rows) of a filter wider than 1x1 at a stride of at least 2,
    ask for the lines of that input row that the tile WINDOW_AHEAD tiles on reads (past
    the buffer's rows: the next chunk's first tiles), from the blocked input (N, B, H, W,
    lanes) conv reads, when at least WINDOW_PREFETCH_BYTES (module doc)."""
    data = _window_input(sch, conv)
    _, _, oh, ow, _ = conv.tensor.shape
    if data is None or ow < 2 or oh < 2:
        return
    _, blocks, height, width, lanes = data.shape
    stride = (width - conv.body.axes[2].extent) // (ow - 1)  # rx's taps
    if stride < 2 or blocks * height * width * lanes * max(1, te.bits(data.dtype) // 8) < WINDOW_PREFETCH_BYTES:
        return
    n, _, y, x, _ = conv.tensor.op.axes
    first, ry = conv.body.axes[0], conv.body.axes[1]
    per_line = max(1, LINE_BYTES // (lanes * max(1, te.bits(data.dtype) // 8)))
    span = rows * ow  # the positions of the buffer's rows
    local = (y % rows) * ow + x + WINDOW_AHEAD * cols
    block = first + local // span * chunk
    ahead = local % span
    row = (y - y % rows + ahead // ow) * stride + ry
    for k in range(-(-(cols * stride) // per_line)):
        col = ahead % ow * stride + k * per_line
        sch.prefetch(conv.tensor, at, data, (((n * blocks + block) * height + row) * width + col) * lanes)


def _window_input(sch: Schedule, conv: Stage) -> te.Tensor | None:
    """The blocked input (N, B, H, W, lanes) `conv` reads: an input of the schedule, or
    the padded copy the schedule computes whole."""
    for ld in te.nodes(conv.body):
        if isinstance(ld, te.Load) and ld.tensor.ndim == 5:
            if ld.tensor.op is None:
                return ld.tensor if any(ld.tensor is i for i in sch.inputs) else None
            stage = sch[ld.tensor]
            if not stage.inlined and stage.attach is None:
                return ld.tensor
    return None


def prefetch_weights(sch: Schedule, conv: Stage, at: Axis, cols: int, rows: int, chunk: int, vectors: int) -> None:
    """At each iteration of `conv`'s tile loop `at` (a 1x1 tile of `cols` positions
    flattened over the rows, `chunk` input blocks a chunk, `vectors` output blocks), ask
    for a share of the filter lines the group's next chunk reads: the tile t of a chunk
    asks for line t of each block's piece (more than one a tile when a piece has more
    lines than the chunk has tiles), when the packed filters are at least
    WEIGHT_PREFETCH_BYTES and the plane at most WEIGHT_PREFETCH_POSITIONS (module doc)."""
    weight = _packed_weight(sch, conv)
    if weight is None or single_piece(weight, chunk, vectors):
        return
    size = max(1, te.bits(weight.dtype) // 8)
    for d in weight.shape:
        size *= d
    _, _, oh, ow, _ = conv.tensor.shape
    if size < WEIGHT_PREFETCH_BYTES or oh * ow > WEIGHT_PREFETCH_POSITIONS:
        return
    _, ob, y, x, _ = conv.tensor.op.axes
    blocks_in, per_block = weight.shape[1], 1
    for d in weight.shape[2:]:
        per_block *= d  # the elements of one output block's filters for one input block
    per_line = max(1, LINE_BYTES // max(1, te.bits(weight.dtype) // 8))
    lines = -(-(chunk * per_block) // per_line)  # lines of one block's piece of a chunk
    tiles = (rows * ow) // cols  # the tile loop's iterations a chunk (the tail is a loop of its own)
    if tiles == 0:  # a plane smaller than one tile (an SE block's 1x1 after its pooling): no tile to ask at
        return
    tile = (y * ow + x) % (rows * ow) // cols
    reps = -(-lines // tiles)
    after = conv.body.axes[0] + chunk  # the next chunk's first input block (the chunk's first where the tile starts)
    group = ob + after // blocks_in * vectors  # past the last chunk: the next group's first
    for j in range(vectors):
        for q in range(reps):
            line = tile * reps + q
            index = ((group + j) * blocks_in + after % blocks_in) * per_block + line * per_line
            sch.prefetch(conv.tensor, at, weight, index)


def single_piece(weight: te.Tensor, chunk: int, vectors: int) -> bool:
    """Whether the packed filters (O, I, ...) are read as one chunk of `chunk` input blocks
    by one group of `vectors` output blocks: no next chunk or group to ask for (the lines
    `prefetch_weights` would compute lie past the filters' end, in whatever follows them;
    MobileNet v2's 384 -> 64 + residual at 14x14 asked for 64 such lines a tile of 4
    positions, 1,600 a call)."""
    return chunk >= weight.shape[1] and vectors >= weight.shape[0]


def _packed_weight(sch: Schedule, conv: Stage) -> te.Tensor | None:
    """The packed filters (OIHW[i]i[o]o) `conv` reads, when an input of the schedule."""
    for ld in te.nodes(conv.body):
        if isinstance(ld, te.Load) and ld.tensor.ndim == 6 and any(ld.tensor is i for i in sch.inputs):
            return ld.tensor
    return None
