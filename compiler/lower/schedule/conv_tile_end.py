"""What the blocked and the depthwise convolution schedules (conv.py, depthwise.py) share:
whether an NCHW output's channel planes alias in L1 (`planes_alias`), and the last step of
a tile schedule (`parallel_tiles`): the epilogue's fused tile loop run in parallel when the
convolution's work is worth a fork and join, the convolution computed at that loop.

A parallel region costs a fork and a join: libgomp's threads sleep after a short spin
(runtime/jit.py), so the calling thread may wake the others through the kernel; waiting
passively, a region on two threads took at least 10 us longer than its work (a 7 us add of
32,768 floats: 16-39 us on two threads, the least of 15 x 500 calls, 2 cores at load 5-7;
tens of microseconds more on a busy machine).  Below FORK_MIN multiply-adds (about 20 us
on one thread at 25 GMAC/s) a second thread cannot win back that cost, and the kernel runs
serially: MobileNet v2's depthwise convolutions at 7x7 (254,016 and 423,360
multiply-adds: 11 and 12 us on one thread, 21 and 22 us on two, the least of 150 calls
each, load 7) and at 14x14 with 192 channels, and the global pools."""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage
from .stage import Axis

FORK_MIN = 1 << 19  # multiply-adds (elements times reduction length) worth a parallel region
L1_SET_STRIDE = 4096  # addresses this far apart share an L1 set (64 sets of 64-byte lines)


def planes_alias(t: te.Tensor) -> bool:
    """Whether the channel planes of an NCHW tensor lie a multiple of L1's set stride
    apart, so that the stores of a channel-per-lane vector fall into one cache set (the
    epilogue then stores a vector of columns per channel instead; conv.py's module doc has
    the measurements)."""
    return (t.shape[2] * t.shape[3] * te.bits(t.dtype) // 8) % L1_SET_STRIDE == 0


def parallel_tiles(sch: Schedule, conv: Stage, epilogue: Stage, loop: Axis) -> None:
    """`loop` (the epilogue's tiles, fused) parallel when the convolution does at least
    FORK_MIN multiply-adds and there is more than one tile; the convolution computed at
    it."""
    work = 1
    for extent in (*conv.tensor.shape, *(a.extent for a in conv.reduce_axes)):
        work *= extent
    if loop.extent > 1 and work >= FORK_MIN:
        sch.parallel(epilogue.tensor, loop)
    sch.compute_at(conv.tensor, epilogue.tensor, loop)
