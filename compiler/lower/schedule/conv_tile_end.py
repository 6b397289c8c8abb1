"""What the blocked and the depthwise convolution schedules (conv.py, conv_chunks.py,
depthwise.py) share: whether an NCHW output's channel planes alias in L1 (`planes_alias`),
the unrolled channels of an input block (`unroll_block_channels`), and the last step of
a tile schedule (`parallel_tiles`): the epilogue's fused tile loop run in parallel when the
convolution's work is worth a fork and join, the convolution computed at that loop.

An NCHWc convolution's reduction ends in the channels of one input block (`rci`, the x of
NCHW[x]c: 8 on AVX2): its step broadcasts one input channel at `cols` positions and
multiplies it by `vectors` weight vectors.  As a loop of 8 it costs an induction variable,
a compare and a branch beside each step's 19 instructions (3 x 4), and its trip ends every
8 steps; unrolled, the 8 steps read the broadcasts and the weights at constant offsets from
one base each (as MLAS's NCHWc kernels are written).  Measured (1 thread, CPU time, each
kernel alone as bench/cnn_kernels.py builds it, the two builds' kernels alternated 25
times, median of the paired ratios, load 4-6 from other work): ResNet-50's 1x1
convolutions 256 -> 64 at 56x56 0.77, 512 -> 128 at 28x28 0.86, 128 -> 512 0.93, 1024 ->
256 at 14x14 0.90, 256 -> 1024 0.87, 2048 -> 512 at 7x7 0.87, 512 -> 2048 0.91, 64 -> 256
at 56x56 0.97 (conv.py's tile); MobileNet v2's 24 -> 144 at 56x56 0.94, 144 -> 24 0.99,
96 -> 24 0.99, 960 -> 160 at 7x7 0.82.  In a sampled profile (perf, cpu-clock) of 256 ->
64 at 14x14 the loop of 8 held 88% of the kernel's samples before.

A parallel region costs a fork and a join: libgomp's threads sleep after a short spin
(runtime/jit.py), so the calling thread may wake the others through the kernel; waiting
passively, a region on two threads took at least 10 us longer than its work (a 7 us add of
32,768 floats: 16-39 us on two threads, the least of 15 x 500 calls, 2 cores at load 5-7;
tens of microseconds more on a busy machine).  FORK_MIN multiply-adds (about 20 us on one
thread at 25 GMAC/s) was the bound below which a second thread could not win that back,
measured on kernels timed alone; it still bounds the global pools (schedule/defaults.py)
and Winograd's tiles.

A convolution's tiles fork from TILE_FORK_MIN, a quarter of that: in a model, a kernel
that stays serial on two threads reads an input the kernel before wrote half on the other
core (probably its lines in the other core's L2), and ran about twice its one-thread time
there, while forked each thread reads mostly the half it wrote (the consecutive kernels
split their channel blocks alike, codegen/shares.py).  MobileNet v2's depthwise kernels
at 7x7 and its stride-2 ones (254,016 to 423,360 multiply-adds, 11-19 us on one thread),
in the model at 2 threads (bench/steps.py's timed entry, the two builds' inferences
alternated, 150 each, threads at real-time priority with a 2,000 spin as on an idle
machine, load 3-5 from other work): 1x72x7x7x8 (stride 2) 44 -> 24 us, 1x24x14x14x8
(stride 2) 71-76 -> 26-33 us and the 1x1 convolution reading it 66-84 -> 57-62,
1x120x7x7x8 51-53 -> 33-34 us (the second and third calls; the first 18-22 -> 16).  The
inference 9.45 -> 9.34 and 8.10 -> 7.87 ms; onnxruntime's paired ratio 1.00x -> 0.965x
(40 pairs) and 1.03x -> 1.00x (20 pairs).  Under load (two busy loops beside, the passive
wait) 0.958x -> 0.920x (30 pairs); 1 thread, CPU time, 0.982x -> 0.984x (40 pairs: the
same code).

Which core holds what: a 1x1 convolution whose input outgrows a core's L2 and whose
weight fits in half of it (conv.py `_rows_first`: ResNet-50's at 56x56 and its 512 ->
128 at 28x28) runs its parallel loop over ROW_PARTS parts of the output's rows first,
its block groups inside each part (conv.py's tile and conv_chunks.py's buffer of rows
alike), instead of the groups first.  On two threads each thread so writes half of the
rows of every channel, as the next such kernel and 56x56's blocked Winograd (winograd.py,
blocks of tile rows) read them, where with the groups first a thread read every row of
every channel and wrote half of the channels; within a part the groups and their
filters keep the order they had, so one thread runs them as before (the input read
once a group, the group's filters in L1 across the part's rows).  Measured in the model
at 2 threads (bench/steps.py's timed entry, the two builds in one process, inferences
alternated, 30-40 each; real-time priority and a spin of 2,000 as on an idle machine,
load 6-7 from other work), us, groups first -> rows first: 256 -> 128 at 56x56 2454 ->
1653, 256 -> 64 (2 calls) 2227 -> 1829, 64 -> 256 with the residual add (3 calls) 3984
-> 2776, 64 -> 256 (the projection) 989 -> 846, 64 -> 64 352 -> 299, 512 -> 128 at 28x28
(3 calls) 2931 -> 2396, the 56x56 Winograd after them (3 calls) 3584 -> 3182; the
inference 0.942x and 0.947x the time (paired), 0.95x with the builds' order swapped;
against onnxruntime (bench/run.py, 2 threads, the same priority and spin, the two
builds' processes alternated, 5 each, load 5-7) paired 0.90, 0.89, 0.90, 0.87, 0.93 ->
0.88, 0.86, 0.82, 0.87, 0.87; at 1 thread (CPU time, 3 each) 0.87, 0.93, 0.91 -> 0.89,
0.89, 0.91.  With the groups first these kernels' times moved with where the build's
buffers lay: in one of six such runs they took what they take with the rows first
(which they took in all six).  1 thread (the timed entry at real-time priority, 40
inferences each, load 7): the sums of the kernels 1.009x, two builds of the same
schedule in one process 1.017x (noise).  Tried: the
rows first without parts (every group for one block of rows: the input read once in
all): 2 threads the same, 1 thread 256 -> 64 1.11x and 64 -> 256 + add 1.09x the time
(the groups' filters no longer in L1 across the rows); the stride-2 1x1 of 256 -> 512
and 512 -> 256 at 28x28 too (weights of 512 KiB): 1.01x and 1.04x; a 3x3 filter too
(the input beyond L2 and twice its weight): the stride-2 3x3 of 128 channels at 56x56
0.89x in one run and 0.99x in another, the stem (one block of 3 channels) 1.04x and the
max pool after it 1.26x, since the pool splits its channels.  MobileNet v2 at 2 threads
(the same way, 150 inferences each, load 6): the inference 0.996x the time; its 1x1 16 ->
96 at 112x112 0.93x, the depthwise kernel after it (split by channels) 1.28x.  Tried
later (h-2t2, the same way, 40-80 inferences each, load 5-10): ResNet-50's stride-2
3x3 of 128 channels at 56x56 rows first with its padded copy's loop over 2 parts of the
rows first too (its input beyond L2 and twice its weight, more than one input block: it
alone) 0.87x at 2 threads but 1.04-1.06x at 1 thread (the padded copy alone split so
1.037x at 2 threads); the padded and strided copies of every convolution split so,
whatever the convolution's split: 1.04-1.08x for the 56x56 ones at 2 threads; the 1x1s
with an input of more than half of L2 rows first (adds 128 -> 512 at 28x28): no
difference.  MobileNet v2's depthwise kernels whose input outgrows L2 split by 2 parts
of their rows first (depthwise.py; 300 inferences each at 2 threads): 96 at 112x112
stride 2 (between two 1x1s that split their rows) 0.92x, 32 at 112x112 1.06x, 144 at
56x56 1.12-1.15x, 192 at 28x28 1.25x, the inference 1.009x."""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage
from .stage import Axis

FORK_MIN = 1 << 19  # multiply-adds (elements times reduction length) worth a parallel region
ROW_PARTS = 2  # parts of the rows a large 1x1 convolution's parallel loop takes first (module doc)
TILE_FORK_MIN = 1 << 17  # the same for a convolution's tiles, whose input the kernel before wrote on both cores
L1_SET_STRIDE = 4096  # addresses this far apart share an L1 set (64 sets of 64-byte lines)
UNROLL_CHANNELS_MAX = 16  # the channels of an input block unrolled up to this many (a vector's lanes)
NCHWC_TAG = "nn.contrib_conv2d_NCHWc"  # te/topi/conv_blocked.py nchwc_conv2d's tag


def planes_alias(t: te.Tensor) -> bool:
    """Whether the channel planes of an NCHW tensor lie a multiple of L1's set stride
    apart, so that the stores of a channel-per-lane vector fall into one cache set (the
    epilogue then stores a vector of columns per channel instead; conv.py's module doc has
    the measurements)."""
    return (t.shape[2] * t.shape[3] * te.bits(t.dtype) // 8) % L1_SET_STRIDE == 0


def unroll_block_channels(sch: Schedule, conv: Stage) -> None:
    """Unroll the last reduction axis of an NCHWc convolution (`nchwc_conv2d`'s `rci`, the
    channels of one input block) when it has at most UNROLL_CHANNELS_MAX channels (see
    the module doc); other convolutions are left as they are, and so are conv.py's tiles
    of conv_rolled.py (not called for them)."""
    axes = conv.reduce_axes
    if conv.tensor.op.tag == NCHWC_TAG and len(axes) == 4 and 1 < axes[-1].extent <= UNROLL_CHANNELS_MAX:
        sch.unroll(conv.tensor, axes[-1])


def parallel_tiles(sch: Schedule, conv: Stage, epilogue: Stage, loop: Axis, at: Axis | None = None) -> None:
    """`loop` (the epilogue's tiles, fused) parallel when the convolution does at least
    TILE_FORK_MIN multiply-adds and there is more than one tile; the convolution computed
    at it, or at `at`, a tile loop inside it (conv.py's columns' tiles)."""
    work = 1
    for extent in (*conv.tensor.shape, *(a.extent for a in conv.reduce_axes)):
        work *= extent
    if loop.extent > 1 and work >= TILE_FORK_MIN:
        sch.parallel(epilogue.tensor, loop)
    sch.compute_at(conv.tensor, epilogue.tensor, loop if at is None else at)
