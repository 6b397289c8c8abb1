"""What the blocked and the depthwise convolution schedules (conv.py, depthwise.py) share:
whether an NCHW output's channel planes alias in L1 (`planes_alias`), and the last step of
a tile schedule (`parallel_tiles`): the epilogue's fused tile loop run in parallel when the
convolution's work is worth a fork and join, the convolution computed at that loop.

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
same code)."""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage
from .stage import Axis

FORK_MIN = 1 << 19  # multiply-adds (elements times reduction length) worth a parallel region
TILE_FORK_MIN = 1 << 17  # the same for a convolution's tiles, whose input the kernel before wrote on both cores
L1_SET_STRIDE = 4096  # addresses this far apart share an L1 set (64 sets of 64-byte lines)


def planes_alias(t: te.Tensor) -> bool:
    """Whether the channel planes of an NCHW tensor lie a multiple of L1's set stride
    apart, so that the stores of a channel-per-lane vector fall into one cache set (the
    epilogue then stores a vector of columns per channel instead; conv.py's module doc has
    the measurements)."""
    return (t.shape[2] * t.shape[3] * te.bits(t.dtype) // 8) % L1_SET_STRIDE == 0


def parallel_tiles(sch: Schedule, conv: Stage, epilogue: Stage, loop: Axis) -> None:
    """`loop` (the epilogue's tiles, fused) parallel when the convolution does at least
    TILE_FORK_MIN multiply-adds and there is more than one tile; the convolution computed
    at it."""
    work = 1
    for extent in (*conv.tensor.shape, *(a.extent for a in conv.reduce_axes)):
        work *= extent
    if loop.extent > 1 and work >= TILE_FORK_MIN:
        sch.parallel(epilogue.tensor, loop)
    sch.compute_at(conv.tensor, epilogue.tensor, loop)
