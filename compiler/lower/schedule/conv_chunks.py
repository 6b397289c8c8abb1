"""Blocked convolutions summed a chunk of input channels at a time (the loop order of
MLAS's and oneDNN's NCHWc kernels), for the non-depthwise convolutions of conv.py on a
vector unit of 16 registers (AVX2), whose epilogue stores a channel per lane.

conv.py's tile sums the whole reduction (input channels x filter window) in registers
before it moves on, so every tile of `cols` output columns reads the filters of its
`vectors` output blocks whole: 128 KiB for 1024 input channels and 4 blocks of 8, from
L2, per 3 columns.  Here the epilogue's tile loop runs over (n, block group, row block),
parallel (a large 1x1's row blocks in ROW_PARTS parts first: conv_tile_end.py), and the
convolution is computed there into a buffer of the group's rows (at most ACC_BYTES):

    for rc.outer                    a chunk of input channels, whose filters (at most
                                    WEIGHT_BYTES) stay in L1 across the rows
      for y, x.outer                every register tile of the rows
        acc = 0 in the first chunk, cache_accumulator (primitives.py): the tile in registers
              else buffer[tile]
        for rc.inner, ry, rx (, rci):  vectors x cols FMAs a step
        the last chunk: out[tile] = epilogue(acc)   (bias, residual, relu, from registers)
        else buffer[tile] = acc

Each sum adds the same terms in the same order as conv.py's tile.
The reduction visits every tile once per chunk, so tiles must not overlap (conv.py's
may overlap the one before): `vectors` divides the blocks, and `cols` either divides
the width or, for a filter wider than 1x1, leaves the last `width % cols` columns to a
tile of their own (a split with a tail: the tile loop made a second time for them, in
the same chunk and rows, MLAS's remainder columns).  Among those, `chunked_tile` takes the fewest cycles a
row by conv.py's model of a step with the weights read from L1 (costing as much as a
broadcast), the step's broadcasts in registers beside the accumulators; ties go to
fewer loads, then to more blocks (each group reads the whole input once).  ResNet-50's
3x3 convolutions (AVX2, 8 lanes) so take MLAS's 3 columns x 4 blocks with a remainder
of 1 or 2 columns, where 2 x 4 (1 x 8 at 7x7) divided the width.  Measured (1 thread,
CPU time, paired ratios against the old tile in the same run, 15 rounds, load 10-12):
512 channels at 7x7 0.78, stride 2 to 7x7 0.74, 256 at 14x14 0.92, 128 at 28x28 0.87,
64 at 56x56 0.91, stride 2 to 14x14 0.98-1.00 and to 28x28 0.83-1.19 (noisy).  A 1x1
filter keeps a dividing tile a row (then flattened, below; 256 -> 64 at 56x56 1.43x slower, probably 3-column tiles
straddling the cache lines of an input that outgrows L1; 1024 -> 256 at 14x14 0.89x,
512 -> 128 at 28x28 0.98x), unless that tile is a single column: 2048 -> 512 at 7x7 0.75x,
512 -> 2048 0.76x (1 x 8 before).

A 1x1 filter reads the input at the output's own positions (times the stride), so the
buffer's rows x columns are one axis to the tile (`flat`): when, with the same blocks, a
tile over those positions flattened, the last ones a tail, costs fewer modelled cycles
than a tile a row, the tile's columns run across the rows: at 14x14 3 x 4 over 98
positions (32 tiles and a 2-position tail) instead of 7 tiles of 2 x 4 a row; at 7x7
16 tiles of 3 x 4 and a tail of 1 for the whole plane instead of a 1-column tail every
row.  Measured (1 thread, CPU time; the two builds' kernels alternated 60 times on the
same input arrays, median of the ratios, 4-6 builds each; load 2.3): ResNet-50's 1x1
(with bias and relu, residual add where the model has it) 256 -> 1024 + add at 14x14
0.97, 1024 -> 256 0.975, 1024 -> 512 0.97, 512 -> 1024 stride 2 to 14x14 0.96, 1024 ->
2048 stride 2 to 7x7 0.95, 512 -> 2048 + add at 7x7 0.93, 2048 -> 512 0.93, 256 -> 64
at 56x56 0.95, 256 -> 128 0.97, 512 -> 128 at 28x28 0.96, 512 -> 256 0.87-0.95, 256 ->
512 stride 2 0.98; the same build against itself 1.00-1.01.  When the tile a row is a
single column (7 columns of 20 or 120 blocks: 1 x 10, 1 x 12), the flattened tile
takes the blocks of its own that cost the fewest modelled cycles over the output
(`_flat_cost`; ties to more blocks): MobileNet v2's 960 -> 160 and 160 -> 960 at 7x7
2 x 5 and 2 x 6, 0.94 and 0.93 (the same way, load 2.2).  So does a flattened tile of
more blocks than the row's when it costs fewer modelled cycles over the output (of fewer
blocks the model would take 5 x 2 for ResNet-50's 1x1s at 56x56 and 7x7, no faster): MobileNet
v2's projections to 24 channels (3 blocks) at 56x56 take 3 x 3 over two rows flattened
(7 x 1 a row before, whose filters fit: conv.py's 3 x 3 a row, overlapping), 72 and 48
input channels a chunk: 144 -> 24 0.83-0.85x the time, 96 -> 24 0.87-0.90x (1 thread, CPU
time, alternated in one run, 21 rounds, load 3.8; 2 or 4 rows, chunks of 24 to 72
channels measured, 72 the best); the whole model at 1 thread 0.98-1.00x (CPU time, the two
builds alternated, 41 rounds, load 3-6).  Against it: 4 x 3 (12 accumulators and 4
broadcasts) 1.63x, the 144 channels in one chunk 1.48x, a row at a time 1.18x.  ResNet-50's
chunked 1x1s kept their tiles: other chunks (4 to 16 blocks), rows (1 to 14), 5 x 2 or 2 x 4
instead of 3 x 4 were no faster (within the 5-15% noise of a load of 4-7), and a single
chunk at 7x7 (2048 -> 512) 1.27x slower.  On fresh input arrays per
build the ratios of one kernel moved between 0.7 and 1.2 from build to build, the same
code included (where the arrays lie): a first measurement of the flattened tile at
56x56 (1.45x slower) was that, and the single runs above may be too.

A wider filter flattens its rows alike (with the tile of a row's blocks, by the same
model): its columns' input positions, no longer a row's, are worked out once a tile,
outside the reduction.  ResNet-50's stride-2 3x3 of 512 channels to 7x7 so takes 16
tiles of 3 x 4 and a tail of one position for the plane instead of 3 + 3 + 1 columns a
row: 0.94x the time; 128 channels at 56x56 (2 rows of 28: 18 tiles and a 2-position
tail instead of 9 and a 1-column tail a row) 0.98x; 256 at 28x28 keeps its row (28
positions cost no fewer cycles).  Measured (1 thread, CPU time, each kernel alone, two
processes of each build, alternated 9 times, median of the paired ratios, load 6).

The tile so starts and ends as MLAS's NCHWc kernels' do (cache_accumulator's `into`: the
epilogue, reading the blocked result in place, has no loop of its own): no pass zeroing
the buffer, no load in the first chunk, no store back and no epilogue pass re-reading the
buffer after the last.  Against the buffer zeroed first and the epilogue a pass of its
own over the rows (in the model at 1 thread, the two builds' inferences alternated, 20-80
rounds, each kernel's least of 3-5 calls a round, median of the paired ratios; whole
inference CPU time; load 3-5.5 from other work): ResNet-50 0.965x and 0.985x, its
chunked 1x1s 256 -> 64 at 56x56 0.91-0.96, 256 -> 128 0.94, 128 -> 512 + residual at
28x28 0.95-0.975, 256 -> 1024 + residual at 14x14 0.94-1.00, 512 -> 2048 + residual at
7x7 0.99-1.04, the kernels left alone (Winograd) 0.994 summed; MobileNet v2 1.003x
(0.99-1.02 quartiles; its kernels' medians summed 0.987), its 96 -> 24 at 56x56 0.90,
144 -> 32 at 28x28 0.94-0.96, 384 -> 64 at 14x14 0.97-0.99, its expansions 64 -> 384 and
96 -> 576 at 14x14 0.94-0.96, 160 -> 960 at 7x7 0.94-0.96, but 960 -> 160 + residual
1.01-1.03 (20 chunks, one of which ends).  Tried with the fold (the same way, against it,
60-80 rounds, load 5-7): no fold beyond 8 chunks, 960 -> 160 + residual 1.00-1.01x, 576
-> 96 at 14x14 (18 chunks) 1.04x, with its residual 1.01-1.05x; that kernel with 3 x 4
over two rows flattened 0.98-0.99x, with 64 channels a chunk (12 KiB of filters) 0.99x,
with its residual 0.96x (the unchanged depthwise kernels 0.99-1.01); WEIGHT_BYTES 12 KiB
for all: MobileNet v2 1.001x and 0.985x (64 -> 384 at 14x14 a single chunk, so conv.py's
tile, 0.87-0.89; 576 -> 96 0.96-0.98; 960 -> 320 at 7x7 0.95-0.96; 960 -> 160 + residual
1.01-1.04), ResNet-50 0.995x and 1.016x (its 7x7 1x1s 0.94-0.98; its unchanged Winograd
kernels 0.996x and 1.00-1.14x in the same runs): not taken on that noise.

Used when the filters of one group (all input channels) outgrow WEIGHT_BYTES, or when
they fit (the chunk is the whole reduction: no buffer at all) for a 1x1 whose tile is
flattened: where conv.py's tile overlaps the one before (3 x 4 on a row of 56), the
flattened one computes no column twice.  ResNet-50's 64 -> 256 + residual at 56x56
0.91-0.94x the time, its downsample 64 -> 256 0.965, 64 -> 64 0.92; MobileNet v2's 32 ->
16 at 112x112 0.92-0.93 (the same runs).  Where a row's tile divides the width, conv.py's
is the same tile, and was faster: MobileNet v2's 16 -> 96 at 112x112 (2 x 6) 0.99-1.03,
24 -> 144 at 56x56 1.00-1.02, 32 -> 192 at 28x28 1.00-1.04 as a single chunk.  Before
the fold, conv.py's tile was the faster for filters that fit (1x1, 64 -> 256 channels at
56x56, 1 thread: 1.36 against 1.62 ms).  Measured
(1 thread, CPU time, NCHW8c, against onnxruntime's Conv in the same run): 1x1 1024 ->
256 at 14x14 2.46 -> 1.51 ms (onnxruntime 1.62), 1x1 256 -> 64 at 56x56 4.5 -> 2.5 ms
(2.5), 1x1 512 -> 128 at 28x28 4.1 -> 2.0 ms (1.85); nn.conv2d in NCHW (blocks of 16
lanes, two registers each; no AlterOpLayout), 3x3 with bias and relu, bench/run.py's
kernels: 1x64x56x56 7.1 -> 3.5 ms, 1x256x14x14 7.1 -> 3.3 ms.  The machine was shared
(load 4-7): single runs of these moved by 20-30%.

WEIGHT_BYTES is a quarter of L1 (32 KiB), not half: a chunk's filters share L1 with the
buffer of the group's rows (ACC_BYTES) and the lines of input each tile broadcasts
from, and at half the three outgrew it.  Measured (ResNet-50 and MobileNet v2 whole,
the two builds alternated in one run, paired ratios, 21-41 rounds, load 6-7; the
outputs bit-identical, each sum's terms in the same order): 8 KiB against 16, ResNet-50
at 1 thread (CPU time) 0.926x and 0.939x the time in two runs, at 2 threads (wall)
0.872x; MobileNet v2 at 1 thread 0.973x.  4 KiB against 8: ResNet-50 1.013x.  Keeping
conv.py's tile for filters of 8-16 KiB (chunking only beyond 16) was 1.04x slower on
ResNet-50 (its 1x1 convolutions from 128 channels: 16 KiB of filters a group), 0.99x on
MobileNet v2.  With the channels of an input block unrolled (conv_tile_end.py), measured
again on the kernels alone (1 thread, CPU time, alternated 21 times, load 7-8): 16 KiB
(MLAS's 128 channels a chunk) 1.34x the time on 256 -> 64 at 56x56, 1.17x on 144 -> 24,
0.94-1.08x on the others; 10 and 12 KiB 0.97-1.07x; ACC_BYTES 32 KiB 0.93-1.16x.  Kept.

A 1x1 whose tile stays a row (not flattened: MobileNet v2's 2 x 6 at 14x14, whose
buffer of two rows holds 5 KiB of sums; every 1x1 of ResNet-50 is flattened) takes
ROW_WEIGHT_BYTES, 12 KiB, of filters a chunk: 64 input channels instead of 32 for 576 ->
96 (with its residual add) and 384 -> 96, 48 for 96 -> 576, and 64 -> 384's 64 in one
chunk (so conv.py's tile).  Measured in the model (1 thread; the two builds' inferences
alternated 40 times in one process, two builds of each, each kernel's least of 3 calls a
round, median of the paired ratios; load 7 from other work): 576 -> 96 + residual
0.94x and 0.97x the time (its two calls), 384 -> 96 0.97x, 64 -> 384 0.89-0.91x (four
calls), 96 -> 576 0.98-1.00x, the kernels' medians summed 0.988x; the same with 960 ->
320 at 7x7 in chunks of 64 too (a flattened tile) 0.99x and 1.03x for it, in chunks of 80
0.975x and 0.977x (25 and 40 rounds, load 6-7; unchanged kernels moved by 2-5% in the
same runs), 3 x 4 over its 49 positions 1.01x, chunks of 32 1.00x: left at 48.

Those tiles a row now give way to a flattened tile whose buffer holds more rows when it
costs at most FLAT_SLACK (1%) more modelled cycles with as many accumulators
(`_taller_flat`): MobileNet v2's 384 -> 96, 576 -> 96 + residual and 96 -> 576 at 14x14
take 3 x 4 over 7 rows flattened (0.5% more cycles by the model) and 8 KiB of filters a
chunk.  A chunk's filters stay in L1 for its buffer's rows only, so the row's tile read
each group's filters (72-108 KiB, from L2, with the input and output of the layer
around them there) again for each of the 7 buffers of two rows; the taller one reads
them twice, and its filters (147-221 KiB) get the next chunk's lines asked for
(conv_prefetch.py).  Measured in the model (1 thread, the two builds' inferences
alternated in one process, 30 rounds, each kernel's least of 3 calls a round, median of
the paired ratios; the builds made in both orders, load 5.7-7.4 from other work; the
geometric mean of the two runs): 384 -> 96 0.97x, 576 -> 96 + residual 0.96x and 0.97x,
96 -> 576 0.93x (three calls); unchanged kernels between them (192 -> 64, 64 -> 384)
0.99-1.03x.  ResNet-50's 1x1s are all flattened before it, untouched.  Tried: 3 x 4
over 7 rows for 384 -> 96 and 576 -> 96 alone, one run in each order: 0.93-0.95x and
1.01-1.02x the other way.

On a 32-register unit (AVX-512) none of the above: a convolution whose blocks (16
lanes) 4 divides, when its filter is wider than 1x1 or its width one 4 does not divide
(ResNet-50's 1x1s at 14x14 and 7x7), takes conv.py's square tile, 4 positions x 4
blocks, over its rows flattened (`_flat_square`; conv.py's module doc has the first
figures).  A 1x1 whose plane's sums outgrow SQUARE_ACC_BYTES
(14x14: 49 KiB) sums every input channel in one chunk over the whole plane: ResNet-50's
layer3 end 0.79x the time of 7 x 2 a row, 1024 -> 256 0.92x, where chunks of 128
channels over 2 rows took 0.83x and 0.96x.  Otherwise (a 1x1 at 7x7, and every wider
filter, whose filters for all channels would stream from L2 at every tile) chunks of
filters within SQUARE_WEIGHT_BYTES (16 KiB: 64 channels of a 1x1; at least one input
block, 36 KiB for a 3x3) over the most rows whose sums fit SQUARE_ACC_BYTES (a 7x7
plane's 12 KiB, 7 rows of 14).  Measured in the model (1 thread, the two builds in two
processes alternated 30-40 rounds, each kernel's least of 3 calls a round, median of the
paired ratios; load 11-20 from other work), against the single chunk at 7x7 and 7 x 2 a
row for the 3x3s: ResNet-50's stride-2 3x3 to 14x14 0.90, to 7x7 0.84; its 1x1s at 7x7
with chunks of 128 channels 0.89-0.98, then 64 against 128 0.79-0.86 (32 channels
0.83-0.87: a chunk's filters, the buffer and the chunk's input lines share L1's 48 KiB);
the 3x3s' buffers of 2 rows at 14x14 and 1 at 7x7 (8 KiB) 1.00 and 1.13.  The stride-2
3x3 to 28x28, where 4 x 4 divides the row, so chunked (4 rows a buffer) against conv.py's
4 x 4 a row (its 295 KiB of filters read at every tile): 0.956, the stem 1.00; 8 x 2
instead of 4 x 4 for the 3x3s (18 KiB of filters a block) 1.23-1.30.  MobileNet v2:
its 1x1s at 7x7 0.81-0.96 (128 channels a chunk, load 14).  A 1x1 of blocks 5 divides
and 4 does not (10 at 7x7) takes 4 positions x 5 blocks flattened alike
(`_flat_five_blocks`).  Everything else keeps conv.py's tile there.  A strided filter whose row 4 divides (that stride-2 3x3 to 28x28)
keeps its tile a row instead of flattened, and makes the padded window each tile reads
inside the tile rather than a padded copy of the whole input (conv_tile_pad.py).

A 1x1 whose group's filters for all its input channels fit in SINGLE_WEIGHT_BYTES (16
KiB), over an input within SINGLE_INPUT_BYTES (L2: each group reads it again from
there), takes them in a single chunk: no buffer between chunks, each tile's sums go from
registers through the epilogue, and each tile's loop starts and ends once.  Only
ResNet-50's layer2 ends (128 -> 512 + residual at 28x28, 64 input channels a chunk
before) meet it in ResNet-50 and MobileNet v2 (MobileNet v2's 144 -> 24 at 56x56, whose
1.8 MB input outgrows L2, took 1.48x the time in one chunk, above).  Measured in the model
(1 thread; the two builds in two processes, inferences alternated 30 and 40 rounds, each
kernel's CPU time around its call, median of the paired ratios; load 8-9 from other
work): its four calls 0.94, 0.93, 0.98, 0.98 and 0.94, 0.96, 0.905, 0.90.

A filter wider than 1x1 keeps half of ACC_BYTES for the buffer: a chunk's tiles read
(rows - 1) x stride + the filter's height rows of the padded input, which share L1
with the buffer and the chunk's filters.  ResNet-50's stride-2 3x3 convolution of 128
channels at 56x56 (one input block a chunk, 9 KiB of filters) took 4 rows of 28x28
with 16 KiB of sums: 14 KiB of buffer, 17 KiB of its 9 input rows and 9 KiB of
filters, 40 KiB against L1's 32; 2 rows need 26 KiB.  Measured (1 thread, CPU time,
each kernel alone, two processes of each build, alternated 9 times, median of the
paired ratios, load 9 from other work): that convolution 0.80x the time (4 rows ->
2), 256 at 28x28 0.96x (7 -> 2), 512 at 14x14 the same (7 rows either way); a quarter
of ACC_BYTES (1 row at 56x56, 1 at 14x14) 0.82x, 1.03x, 1.10x.  ResNet-50 at 1 thread
0.960x the time (the two builds' inferences alternated 30 times in one run, CPU time,
load 5.6; outputs bit-identical).

The epilogue's stores go to output lines no cache holds; where the output outgrows L2
twice over and the reduction is short (ResNet-50's 128 -> 512 at 28x28), the tiles ask
for those lines while they compute (conv_prefetch.py: 11.6% of the kernel's samples in
the epilogue before, 2.6% after).  A flattened 1x1 tile at 56x56 or 28x28 also asks, at each tile,
for the input lines of every block of the chunk that the tile 4 tiles on broadcasts from
(conv_prefetch.py `prefetch_input`: ResNet-50's layer1 ends 0.96-0.98x the time).

Tried and not taken: the filter blocks of a tile side by side in the packed weight.  A
tile's `vectors` blocks of OIHW8i8o lie I x 32 bytes apart (8 KiB for 256 input
channels: one L1 set for all four).  AlterOpLayout packing OIHW8i4o8o instead (the 4
blocks of a group adjacent for each input channel, 128 contiguous bytes a step, the
kernel reading weight[ob // 4, ..., ob % 4, lane]) gave 0.88-1.11x on the 1x1 kernels,
no consistent gain (1 thread, alternated 15 times, load 6): the conflict is not where
the time goes.  MLAS's own NCHWc filters are OIHW8i8o with the blocks apart, as here.
"""

from __future__ import annotations

from ..te import expr as te
from .conv_prefetch import prefetch_input, prefetch_output, prefetch_weights, prefetch_window, wants_output_prefetch
from .conv_tile_end import ROW_PARTS, unroll_block_channels
from .conv_tile_pad import pad_at_tile, wants_tile_pad
from .primitives import Schedule, Stage
from .vector_unit import VectorUnit, host_unit

WEIGHT_BYTES = 8 << 10  # filters of one chunk: a quarter of L1, beside the buffer and the input's lines
ACC_BYTES = 16 << 10  # the buffer of a group's rows
SINGLE_WEIGHT_BYTES = 16 << 10  # a 1x1's filters of a group up to this, over an input of at most
SINGLE_INPUT_BYTES = 512 << 10  # ... this (L2), take a single chunk (module doc)
ROW_WEIGHT_BYTES = 12 << 10  # filters of one chunk of a 1x1 whose tile stays a row (module doc)
FMA_LATENCY, FMA_PORTS, LOAD_PORTS = 5, 2, 2  # as conv.py's model
FLAT_SLACK = 0.01  # a taller flattened 1x1 tile may cost this much more than a row's (`_taller_flat`)
SQUARE = 4  # columns and blocks of a register tile on a 32-register unit (conv.py's module doc)
SQUARE_WEIGHT_BYTES = 16 << 10  # filters of a chunk of the square tile's group (a third of Zen 5's L1)
SQUARE_ACC_BYTES = 32 << 10  # the square tile's buffer of a group's rows


def chunked_tile(conv: Stage, unit: VectorUnit | None = None) -> tuple[int, int, int, int, bool] | None:
    """(cols, vectors, rows, chunk, flat) for the blocked convolution `conv` (N, B, OH,
    OW, lanes), or None when conv.py's tile is the better one (see the module doc): the
    register tile, the rows of the buffer, the input channels (the first reduction axis)
    of a chunk, and whether the tile's columns run over the buffer's rows flattened
    (`cols` then counts positions of rows x OW, the last ones a tail)."""
    unit = unit or host_unit()
    _, blocks, oh, ow, lanes = conv.tensor.shape
    if not conv.reduce_axes:
        return None
    if unit.registers >= 32:
        return _flat_square(conv, unit) or _flat_five_blocks(conv, unit)
    per_block = unit.registers_for(lanes)
    channels, *window = conv.reduce_axes
    per_channel = 1
    for axis in window:
        per_channel *= axis.extent
    tile = _tile(ow, blocks, unit, per_block, tail=filter_taps(conv) > 1)
    if tile is not None and tile[0] == 1:  # a 1x1 filter whose width has no better divisor (7)
        tile = _tile(ow, blocks, unit, per_block, tail=True)
    if tile is None:
        return None
    cols, vectors = tile
    flat_first = False
    if filter_taps(conv) == 1:  # 1x1: the flattened rows' tile of the cheapest blocks, when cheaper than a row's
        best = min(((_flat_cols(_rows(oh, ow, v * lanes * 4) * ow, v, unit, per_block), v)
                    for v in _divisors(blocks) if unit.tile_fits(1, v, per_block)),
                   key=lambda t: (_flat_cost(oh, ow, blocks, lanes, t[0], t[1], per_block), -t[1]))
        if cols == 1 or (best[1] > vectors and _flat_cost(oh, ow, blocks, lanes, *best, per_block)
                         < (blocks // vectors) * oh * _cycles(ow, cols, vectors, per_block)):
            flat_first = cols > 1  # more blocks beat a row's tile: taken as is (one column goes on below)
            cols, vectors = best
    group_bytes = vectors * lanes * 4
    chunk = max(d for d in _divisors(channels.extent) if d == 1 or d * per_channel * group_bytes <= WEIGHT_BYTES)
    if (filter_taps(conv) == 1 and channels.extent * per_channel * group_bytes <= SINGLE_WEIGHT_BYTES
            and channels.extent * per_channel * oh * ow * 4 <= SINGLE_INPUT_BYTES):
        chunk = channels.extent  # a 1x1 of few channels over an input within L2: one chunk (module doc)
    single = chunk == channels.extent  # the filters fit: conv.py's tile, unless a 1x1's flattened one (module doc)
    if single and filter_taps(conv) > 1:
        return None
    rows = _rows(oh, ow, group_bytes, ACC_BYTES if filter_taps(conv) == 1 else ACC_BYTES // 2)
    if flat_first:
        return cols, vectors, rows, chunk, True
    if rows > 1:
        flat = _flat_cols(rows * ow, vectors, unit, per_block)
        if _cycles(rows * ow, flat, vectors, per_block) < rows * _cycles(ow, cols, vectors, per_block):
            return flat, vectors, rows, chunk, True
    if filter_taps(conv) == 1:  # a 1x1 whose tile stays a row: a small buffer, more filters (module doc)
        chunk = max(d for d in _divisors(channels.extent) if d == 1 or d * per_channel * group_bytes <= ROW_WEIGHT_BYTES)
        single = chunk == channels.extent
        if not single:
            taller = _taller_flat(conv, unit, per_block, rows, cols * vectors,
                                  (blocks // vectors) * oh * _cycles(ow, cols, vectors, per_block))
            if taller is not None:
                return taller
    return None if single else (cols, vectors, rows, chunk, False)


def _flat_square(conv: Stage, unit: VectorUnit) -> tuple[int, int, int, int, bool] | None:
    """On a 32-register unit, for a convolution whose blocks (of the unit's lanes) SQUARE
    divides, a filter wider than 1x1 or a 1x1 whose width SQUARE does not divide (14, 7):
    conv.py's square tile over the rows flattened, (SQUARE, SQUARE, rows, chunk, True);
    else None (conv.py's tile, a row).  A 1x1
    sums every input channel in one chunk over the whole plane (half of it when its
    blocks make a single group: two threads then share its rows), unless the plane's sums
    fit SQUARE_ACC_BYTES: then, as a wider filter always, chunks of filters within
    SQUARE_WEIGHT_BYTES (at least one input block) over the most rows whose sums fit
    SQUARE_ACC_BYTES (see the module doc)."""
    _, blocks, oh, ow, lanes = conv.tensor.shape
    if lanes != unit.lanes or blocks % SQUARE or ow % SQUARE == 0 and filter_taps(conv) == 1:
        return None
    channels, *window = conv.reduce_axes
    group_bytes = SQUARE * lanes * 4
    rows = _rows(oh, ow, group_bytes, SQUARE_ACC_BYTES)
    if filter_taps(conv) == 1 and rows < oh:
        return SQUARE, SQUARE, oh // 2 if blocks == SQUARE and oh % 2 == 0 else oh, channels.extent, True
    per_block = group_bytes
    for axis in window:
        per_block *= axis.extent
    chunk = max(d for d in _divisors(channels.extent) if d == 1 or d * per_block <= SQUARE_WEIGHT_BYTES)
    return SQUARE, SQUARE, rows, chunk, not wants_tile_pad(conv, unit, SQUARE)  # conv_tile_pad.py: a row


FIVE = 5  # blocks of `_flat_five_blocks`' tile


def _flat_five_blocks(conv: Stage, unit: VectorUnit) -> tuple[int, int, int, int, bool] | None:
    """On a 32-register unit, for a 1x1 convolution whose blocks (of the unit's lanes) FIVE
    divides and SQUARE does not (MobileNet v2's projections to 160 channels, 10 blocks, at
    7x7), on a row SQUARE does not divide: SQUARE positions x FIVE blocks over the rows
    flattened (20 accumulators, 4 broadcasts, 5 weight vectors), chunks of input blocks
    whose filters fit SQUARE_WEIGHT_BYTES (3 blocks, 48 channels, 15 KiB), over the most
    rows whose sums fit SQUARE_ACC_BYTES (the 7x7 plane, 16 KiB), as
    (SQUARE, FIVE, rows, chunk, True); else None (conv.py's tile, 7 x 2 a row, whose
    broadcasts LLVM kept on the stack: about 55 stores and 55 loads a loop of 224 FMAs).
    Alone (1 thread, the variants' calls alternated 150 times, load 11-14; their inputs
    just read / after a 16 MiB sweep): 576 -> 160 at 7x7 39.2 / 51.3 -> 35.3-35.7 /
    44.0-44.2 µs (3 x 5 34.7 / 43.3; the 36 input blocks in one chunk 35.4 / 49.4), 960 ->
    160 + residual 60.2 / 82.5 -> 59.6 / 75.8 µs (3 x 5 59.0 / 80.1)."""
    _, blocks, oh, ow, lanes = conv.tensor.shape
    if (lanes != unit.lanes or blocks % FIVE or blocks % SQUARE == 0 or ow % SQUARE == 0
            or filter_taps(conv) != 1):
        return None
    channels, *window = conv.reduce_axes
    group_bytes = FIVE * lanes * 4
    per_block = group_bytes
    for axis in window:
        per_block *= axis.extent
    chunk = max(d for d in _divisors(channels.extent) if d == 1 or d * per_block <= SQUARE_WEIGHT_BYTES)
    return SQUARE, FIVE, _rows(oh, ow, group_bytes, SQUARE_ACC_BYTES), chunk, True


def _taller_flat(conv: Stage, unit: VectorUnit, per_block: int, rows: int, row_tile: int, row_cost: float):
    """For a chunked 1x1 whose tile stays a row over a buffer of `rows` rows: the
    flattened tile of the blocks whose buffer holds more rows, when it costs at most
    FLAT_SLACK more modelled cycles over the output than the row's (`row_cost`) and
    holds as many accumulators (`row_tile`), as
    (cols, vectors, rows, chunk, True) with WEIGHT_BYTES of filters a chunk; else None
    (module doc: the row's tile reads its group's filters again for every buffer)."""
    _, blocks, oh, ow, lanes = conv.tensor.shape
    channels, *window = conv.reduce_axes
    per_channel = 1
    for axis in window:
        per_channel *= axis.extent
    found = []
    for v in _divisors(blocks):
        taller = _rows(oh, ow, v * lanes * 4)
        if taller <= rows or not unit.tile_fits(1, v, per_block):
            continue
        cols = _flat_cols(taller * ow, v, unit, per_block)
        if cols * v < row_tile:  # as many accumulators as the row's tile
            continue
        cost = _flat_cost(oh, ow, blocks, lanes, cols, v, per_block)
        if cost <= (1 + FLAT_SLACK) * row_cost:
            found.append((cost, -v, cols, taller))
    if not found:
        return None
    _, v, cols, taller = min(found)
    chunk = max(d for d in _divisors(channels.extent) if d == 1 or d * per_channel * -v * lanes * 4 <= WEIGHT_BYTES)
    return cols, -v, taller, chunk, True


def _rows(oh: int, ow: int, group_bytes: int, limit: int = ACC_BYTES) -> int:
    """The rows of the buffer: the most dividing the output's whose sums fit `limit`
    (ACC_BYTES; half of it for a filter wider than 1x1, see the module doc)."""
    return max(d for d in _divisors(oh) if d == 1 or d * ow * group_bytes <= limit)


def _flat_cost(oh: int, ow: int, blocks: int, lanes: int, cols: int, vectors: int, per_block: int) -> float:
    """Modelled cycles of a reduction step over the whole output, a tile of `cols` x
    `vectors` over each buffer's rows flattened."""
    rows = _rows(oh, ow, vectors * lanes * 4)
    return (blocks // vectors) * (oh // rows) * _cycles(rows * ow, cols, vectors, per_block)


def _flat_cols(positions: int, vectors: int, unit: VectorUnit, per_block: int) -> int:
    """The columns of a tile of `vectors` blocks over `positions` flattened output
    positions, the last `positions % cols` a tail: the fewest cycles by the model of a
    step (`_step`), then the widest."""
    fits = [c for c in range(1, positions + 1) if unit.tile_fits(c, vectors, per_block)]
    return min(fits, key=lambda c: (_cycles(positions, c, vectors, per_block), -c))


def _cycles(positions: int, cols: int, vectors: int, per_block: int) -> float:
    """Modelled cycles of a reduction step over `positions` in tiles of `cols`, the last
    `positions % cols` a tail."""
    return (positions // cols) * _step(cols, vectors, per_block) + _step(positions % cols, vectors, per_block)


def filter_taps(conv: Stage) -> int:
    """The filter's taps over the output's rows and columns (9 for 3x3, 1 for 1x1): the
    extents of the reduction axes that index the input beside the output's y or x."""
    op = conv.tensor.op
    spatial = {id(op.axes[2]), id(op.axes[3])}
    taps, seen = 1, set()
    for ld in (n for n in te.nodes(op.body.source) if isinstance(n, te.Load)):
        for index in ld.indices:
            found = list(te.nodes(index))
            if not any(id(n) in spatial for n in found):
                continue
            for iv in op.body.axes:
                if id(iv) not in seen and any(n is iv for n in found):
                    seen.add(id(iv))
                    taps *= iv.extent
    return taps


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _tile(width: int, blocks: int, unit: VectorUnit, per_block: int, tail: bool) -> tuple[int, int] | None:
    """(cols, vectors), vectors dividing the blocks, the tile fitting the unit's registers
    (`VectorUnit.tile_fits`; 6 x 2 spilled at 12 columns, 2.4x slower than 3 x 4; blocks
    of 16 lanes on AVX2, two registers each: 3 x 2 spilled, 1.2-1.35x slower than 2 x 2):
    the fewest cycles for a row of all blocks by
    the model of a step (see the module doc), with a `tail` the last `width % cols`
    columns a smaller tile of their own, else cols dividing the width; ties to fewer
    loads, then more vectors.  None when nothing but a single accumulator fits."""
    best = None
    for cols in range(1, min(width, unit.accumulators // per_block) + 1):
        full, rest = divmod(width, cols)
        if rest and not tail:
            continue
        for vectors in _divisors(blocks):
            if not unit.tile_fits(cols, vectors, per_block):
                continue
            groups = blocks // vectors
            cycles = groups * _cycles(width, cols, vectors, per_block)
            loads = groups * (full * (cols + vectors * per_block) + (rest + vectors * per_block if rest else 0))
            key = (cycles, loads, -vectors)
            if best is None or key < best[0]:
                best = (key, cols, vectors)
    if best is None or best[1] * best[2] * per_block < 2:
        return None
    return best[1], best[2]


def _step(cols: int, vectors: int, per_block: int) -> float:
    """Cycles of one reduction step of a cols x vectors tile (0 for no columns): FMAs over
    FMA_PORTS, loads (a broadcast a column, a weight vector a block's register) over
    LOAD_PORTS, at least FMA_LATENCY."""
    if not cols:
        return 0
    fmas = cols * vectors * per_block
    return max(fmas / FMA_PORTS, FMA_LATENCY, (cols + vectors * per_block) / LOAD_PORTS)


def schedule_chunked(sch: Schedule, conv: Stage, epilogue: Stage, cols: int, vectors: int, rows: int,
                     chunk: int, flat: bool = False, rows_first: bool = False) -> None:
    """Schedule `conv` at its `epilogue`, as the module doc draws it: the blocked 5-D
    stage that reads it in place (the NCHWc result, or cache_write's copy), or the NCHW
    one that reads it back a channel per lane (conv.py `_epilogue`); `flat`: the tile's
    columns over the buffer's rows and columns fused (`chunked_tile`); `rows_first`: the
    parallel loop over ROW_PARTS parts of the rows first, the block groups inside
    (conv_tile_end.py), when the buffers' rows divide into them."""
    t, e = conv.tensor, epilogue.tensor
    if e.ndim == 5:
        en, eb, ey, ex, lane = epilogue.axes
        bo, bi = sch.split(e, eb, vectors)
    else:
        en, ec, ey, ex = epilogue.axes
        bo, channels = sch.split(e, ec, vectors * t.shape[4])
        bi, lane = sch.split(e, channels, t.shape[4])
    yo, yi = sch.split(e, ey, rows)
    xo, xi = sch.split(e, ex, max(d for d in _divisors(ex.extent) if d <= cols))
    if rows_first and yo.extent % ROW_PARTS == 0:
        part, yo = sch.split(e, yo, yo.extent // ROW_PARTS)
        outer = (en, part, bo, yo)
    else:
        outer = (en, bo, yo)
    sch.reorder(e, *outer, yi, xo, xi, bi, lane)
    sch.unroll(e, xi)
    sch.unroll(e, bi)
    sch.vectorize(e, lane)
    loop = sch.fuse(e, *outer)
    sch.parallel(e, loop)
    sch.compute_at(t, e, loop)
    n, ob, y, x, lane = conv.axes
    channels, *window = conv.reduce_axes
    co, ci = sch.split(t, channels, chunk)
    if flat:
        xo, xi = sch.split(t, sch.fuse(t, y, x), cols, tail=True)
        sch.reorder(t, n, co, xo, ci, *window, ob, xi, lane)
    else:
        xo, xi = sch.split(t, x, cols, tail=True)
        sch.reorder(t, n, co, y, xo, ci, *window, ob, xi, lane)
        if wants_tile_pad(conv, host_unit(), SQUARE):  # its padded window made at each tile (conv_tile_pad.py)
            pad_at_tile(sch, conv, xo)
    sch.cache_accumulator(t, ci, into=e if e.ndim == 5 else None)
    if flat and filter_taps(conv) == 1:  # conv_prefetch.py
        prefetch_input(sch, conv, xo, cols, chunk)
        prefetch_weights(sch, conv, xo, cols, rows, chunk, vectors)
    elif filter_taps(conv) > 1:
        prefetch_window(sch, conv, window[0], cols, rows, chunk)
    if sch.is_output(e) and wants_output_prefetch(conv, epilogue):  # conv_prefetch.py
        prefetch_output(sch, conv, epilogue, ci, conv.body.axes[0] % chunk, ci.extent, cols, vectors)
    unroll_block_channels(sch, conv)
    sch.unroll(t, ob)
    sch.unroll(t, xi)
    sch.vectorize(t, lane)
