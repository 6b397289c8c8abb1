"""A strided convolution's padded input made a tile at a time, inside the tile that reads
it (conv_chunks.py's square tile a row, on a 32-register unit), instead of a padded copy
of the whole input before the convolution.

A blocked convolution reads its input through `T_pad` (te/topi/conv_blocked.py), which
conv.py otherwise computes whole before the tiles: for ResNet-50's stride-2 3x3 of 128
channels at 56x56 a copy of 1.7 MB (beyond this machine's 1 MiB L2), read back once per
group of 4 filter blocks.  In a sampled profile in the model (perf, cpu-clock, 1 thread,
AVX-512 Zen 5) that copy held 3.8-4.7% of the kernel's samples (its loads of an input the
kernel before left beyond L2), the tiles' reduction loop 93% (about 96% of the FMA
units' peak), storing and reloading the sums between chunks 2%.  Here each tile of
conv_chunks.py's SQUARE columns of a row computes, for its chunk's input block, the padded window it
reads, (kernel height) x ((SQUARE - 1) x stride + kernel width) positions of 16 lanes:
3 x 9 vectors (1.7 KB, in L1) for a 3x3 at stride 2, the copy's selects now on 27
vectors a tile, its loads overlapping the FMA-bound reduction of the tile before.  The
tile stays a row (`flat` False): over rows flattened the region of a tile is not one row
and the bound inference took the buffer's rows whole (5 x 57 vectors a tile).  Each sum
adds the same terms in the same order (outputs bit-identical).

Measured in the model (1 thread; four builds in one process, A B B A, their inferences
rotated 16 rounds, each kernel's least of 3 calls a round, median of the paired ratios;
load 12-14 from other work): ResNet-50's layer2.0 stride-2 3x3 0.957 and 0.973 (the two
pairs 0.965/0.955 and 0.973/0.964); the rest of the model unchanged (median 1.00).  In
two processes (the base's and this build's workers alternated, 30 rounds, each kernel's
least of 3 calls; load 13) 0.984 and, the processes' roles swapped, 0.997, where the
unchanged Winograd kernels moved by 0.89-0.96 between the two processes: at that load a
few percent either way is where each process's buffers lie.  conv_prefetch.py's window
prefetch asked for the padded copy's lines 4 tiles ahead; with no such copy it asks for
nothing here (asking for the input's lines instead: below).
Tried and not kept, the same way: the padded rows of a band of output rows made per band
(compute_at the convolution's outermost loop, the band's groups and chunks inside, 1 to
4 rows a band) 1.00 with the next band's input asked for a tile ahead or a chunk ahead
1.00-1.02; the window of a chunk made per chunk 1.00 (flattened, whole rows); the input
lines of the tile 4 tiles on asked for (PREFETCHT1, at each tile or each filter row) on
top of this 1.014 and 1.020; the tile a row without the per-tile window 0.99 (noise).

The window's columns are unrolled (h-near): each of its rows is then a row check, the
first column's check, and the row's vectors loaded and stored with no loop between them
(a 9-iteration loop with a compare and a branch a vector before).  Where the time of
this kernel goes (ResNet-50's layer2.0 3x3, called alone on one thread, the variants'
LLVM IR loaded in one process and called in turns, 20-40 rounds, median of the paired
ratios; load 4-6): the reduction runs at the FMA units' peak (the kernel without the
window's loads and stores, its sums wrong, took 0.945-0.957 of the time, 98% of a
measured peak of 8.6 G FMAs of 16 lanes a second); the window's 27 loads and 27 stores
a tile cost about a cycle each, not hidden behind the FMAs of the tile before; its loads
hitting L1 (the input lines made to repeat) 0.984-0.986.  Unrolled: 0.975-0.987 (its
rows too: 0.994); at load 13, 0.985-0.995.  In the model beside onnxruntime's node
(bench/layers.py, 1 thread, 30 runs, the two builds in turns, 6 runs each, load 6-13):
the kernel's median 918 -> 910 us, its ratio 1.01-1.02x -> 0.98-1.01x.  Tried, not
kept (alone, the same way, against this kernel before the unroll): the next tile's
window lines asked for a tile ahead (PREFETCHT0 1.039, PREFETCHT1 1.028,
with the unroll 0.990 against 0.982, 2 tiles ahead 1.002); the broadcasts reading the
input itself, no window (the borders wrong, so a bound): 1.098, with the next tile's
lines asked for 1.118; the window made once a row of tiles (3 x 57 vectors) 1.059, once
a chunk 1.019; the bands of rows outside the block groups (each band's input read by
both groups from L2) 1.000; 2 and 1 rows a buffer 0.992 and 1.010; the chunks innermost
(the sums in registers across the reduction, no buffer; 288 KiB of filters a tile from
L2) 1.075; the 4 filter blocks' weights 1 KiB apart in L1's sets (a hand-edited kernel,
as a bound) 0.976-0.986, not on top of the unroll.
Tried, not kept (h-near3): the input block's 16 channels a loop (conv_rolled.py's idea)
and the wider tiles that might allow.  The unrolled 4 x 4 does not spill: its inner loop
(a filter column) is 256 FMAs, 128 loads (64 broadcasts, 64 weight vectors), no stack
access.  Rolled, a step is 16 FMAs, 4 broadcasts, 4 weight loads, no stack access.  Alone
(this kernel with a residual, the variants lowered in one process and called in turns,
40 rounds, each one's least of 3 calls, median of the paired ratios; load 0.8-0.9):
4 x 4 rolled 1.001-1.003 (ob and xi swapped: 1.006); 5 x 4 rolled or not 1.007 (a tail
of 3); 6 x 4 rolled 1.020 (no stack access in the step's loop; a tail of 4; swapped
1.022); 7 x 4 rolled 1.094-1.098 (28 accumulators and 7 broadcasts: 5 sums stored and
reloaded a step, 10 stack accesses per 28 FMAs), unrolled about 1.15.  In the model
(bench/layers.py --model resnet50 --runs 30, 1 thread, base then 4 x 4 rolled, 3 pairs,
load 0.5-1.2): 870.0 / 877.6 / 860.0 µs (1.02x, 1.02x, 1.01x onnxruntime's node) against
872.9 / 871.7 / 861.3 µs (1.02x, 1.03x, 1.02x); outputs bit-identical.

How onnxruntime's MLAS runs this convolution (h-near4, read in microsoft/onnxruntime's
onnxruntime/core/mlas/lib/snchwc.cpp, x86_64/SconvKernelAvx512F.S and SconvKernelCommon.h;
facts only).  The work is (batch, group, filter set of 4 blocks of 16, output row); at one
thread: for each filter set (2 here), for each input block of 16 channels (8), for every
output row (28), one kernel call computing the whole row (28 positions) x the set's 4
blocks for those 16 channels and every tap, its sums added into the output in memory
(read back from the second input block on; bias and ReLU in the last block's call).  No
padded copy: a row whose taps reach a padded row gets a shorter kernel height and the
filter pointer moved past those rows (no work for them); each row is split into outputs
with left padding, without, with right padding (1 / 27 / 0 here), the padded ones done one
at a time by a 1 x 4 path that tests each tap's column and skips it, the others in tiles
of 6 positions, then 3 and 2, with no test at all, broadcasting from the input itself at
the stride (2 x 64 bytes apart).  The AVX-512 tile: 4 blocks x 6 positions, 24
accumulators (zmm0-23); a step (one input channel of one tap) is 6 broadcasts from the
input into zmm26-31, then for each block its weight vector into zmm24 and 6 FMAs (24
FMAs, 10 loads); the loops inside a call are the filter's rows, its columns, then the 16
channels unrolled; no software prefetch; the 4 blocks' filters 73,728 bytes apart (as
ours).  So MLAS makes no window at all, and on the top row and the first column it does
a third fewer taps: 2.3% fewer FMAs than the textbook count both sides' GFLOP/s use.
What follows from it, measured alone (the variants lowered in one process, called in
turns, each one's least of 3 calls a round, median of the paired ratios, 1 thread; load
4-7 from other work): the tiles whose window lies inside the input read it in place, the
border ones keep the window (conv_window_inside.py): 0.977-0.987x (five runs of 20-40
rounds), where the bound, every tile in place on an input padded before (58 x 58, no
window anywhere), is 0.963-0.985x (three runs).  Written as the window's index read through the input
the first time, its -1 row and column inside the sum, it took 1.08-1.10x: LLVM kept an
address a read, 126 of them spilled to the stack in the 256 FMAs of a tap (likely the
1.098 above).  On top, the border tiles skip the filter rows that read only padding (the
top row's first tap, as MLAS's shorter kernel): 0.971x against 0.977x in place alone
(the same run, 30 rounds, load 7).  Not kept: MLAS's 6 x 4 tile (in place, the padded-input
bound) 0.980 against 0.963 for 4 x 4 (the same run, 30 rounds); its loop order, every
row of the group a chunk (a 200 KB buffer of sums in L2, as its output): 0.979-0.980
against 0.983-0.987 in place, 0.969 against 0.971 with the skip (30-40 rounds), 2, 7 and
14 rows 0.984-0.989 (20 rounds, within the noise); chunks of 2 input blocks 1.008, with 2
rows 1.007.  In the model (bench/layers.py --model resnet50 --runs 30, 1 thread, this
branch then base, 3 pairs each, load 5.4-6.9): in place 889.4 / 893.6 / 875.3 µs (1.01x,
0.98x, 0.99x onnxruntime's node) against base 893.0 / 910.8 / 911.0 (1.01x x3); with the
skip 877.7 / 878.9 / 849.6 µs (0.99x, 1.00x, 0.99x) against 894.1 / 885.1 / 883.5 (1.01x
x3); outputs bit-identical to the window's, every other ResNet-50 and MobileNet v2 kernel's
optimised IR unchanged.  The kernel's code holds the reduction twice: lowering it takes
0.13 s of CPU instead of 0.08.
"""

from __future__ import annotations

from ..te import expr as te
from .conv_window_inside import read_inside
from .primitives import Schedule, Stage
from .stage import Axis
from .vector_unit import VectorUnit

READ_INSIDE = True  # the tiles whose window lies inside the input read it in place (conv_window_inside.py)
MIN_STRIDE = 2  # the windows of neighbouring tiles overlap by one column at most from here


def _window_read(conv: Stage) -> te.Load | None:
    """The 5-D load of the blocked input (N, B, H, W, lanes) whose column index reads the
    output's column axis (the data of a blocked convolution)."""
    x = conv.tensor.op.axes[3]
    for ld in te.nodes(conv.tensor.op.body.source):
        if isinstance(ld, te.Load) and ld.tensor.ndim == 5 and any(n is x for n in te.nodes(ld.indices[3])):
            return ld
    return None


def column_stride(conv: Stage) -> int:
    """The stride of `conv`'s window along the columns, from the widths of its input and
    output and the filter's width (the reduction axis the input's column index reads): 1
    when the output has a single column."""
    ld = _window_read(conv)
    ow = conv.tensor.shape[3]
    if ld is None or ow < 2:
        return 1
    widths = [iv.extent for iv in conv.tensor.op.body.axes if any(n is iv for n in te.nodes(ld.indices[3]))]
    kw = widths[0] if widths else 1
    return (ld.tensor.shape[3] - kw) // (ow - 1)


def wants_tile_pad(conv: Stage, unit: VectorUnit, square: int) -> bool:
    """Whether `conv` (N, B, OH, OW, lanes), on `unit`, takes the square tile (`square`
    columns x `square` blocks) a row with its padded window made in the tile (module doc):
    a 32-register unit, input and output blocks of its lanes, output blocks and a row that
    `square` divides, a filter wider than one column at a stride of at least MIN_STRIDE,
    read through a computed (padded) input."""
    _, blocks, _, ow, lanes = conv.tensor.shape
    ld = _window_read(conv)
    if unit.registers < 32 or lanes != unit.lanes or blocks % square or ow % square or ld is None:
        return False
    if ld.tensor.shape[4] != unit.lanes:  # an input of a few lanes (the stem's 3): not measured
        return False
    return ld.tensor.op is not None and bool(conv.reduce_axes) and column_stride(conv) >= MIN_STRIDE


def pad_at_tile(sch: Schedule, conv: Stage, at: Axis) -> Stage | None:
    """Compute the padded input `conv` reads (a copy the schedule computes, not inlined,
    computed nowhere else yet) at `conv`'s tile loop `at`: the window that tile reads,
    its columns unrolled, its lanes vectorized.  The stage so scheduled, or None when
    `conv` reads no such copy."""
    ld = _window_read(conv)
    if ld is None or ld.tensor.op is None:
        return None
    pad = sch[ld.tensor]
    if pad.inlined or pad.is_reduction or pad.attach is not None:
        return None
    sch.vectorize(pad.tensor, pad.axes[-1])
    sch.unroll(pad.tensor, pad.axes[3])  # the window's columns, no loop between their vectors (module doc)
    sch.compute_at(pad.tensor, conv.tensor, at)
    if READ_INSIDE:
        sch.rewrite(read_inside, f"{pad.name} read in place where its window lies inside its input "
                                 f"(conv_window_inside.py)")
    return pad
