"""What the blocked and the depthwise convolution schedules (conv.py, depthwise.py) share:
whether an NCHW output's channel planes alias in L1 (`planes_alias`), and the last step of
a tile schedule (`parallel_tiles`): the epilogue's fused tile loop run in parallel when the
convolution's work is worth it, the convolution computed at that loop."""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage
from .stage import Axis

PARALLEL_MIN = 16384  # elements times reduction length, as defaults.py
L1_SET_STRIDE = 4096  # addresses this far apart share an L1 set (64 sets of 64-byte lines)


def planes_alias(t: te.Tensor) -> bool:
    """Whether the channel planes of an NCHW tensor lie a multiple of L1's set stride
    apart, so that the stores of a channel-per-lane vector fall into one cache set (the
    epilogue then stores a vector of columns per channel instead; conv.py's module doc has
    the measurements)."""
    return (t.shape[2] * t.shape[3] * te.bits(t.dtype) // 8) % L1_SET_STRIDE == 0


def parallel_tiles(sch: Schedule, conv: Stage, epilogue: Stage, loop: Axis) -> None:
    """`loop` (the epilogue's tiles, fused) parallel when the convolution does at least
    PARALLEL_MIN multiply-adds and there is more than one tile; the convolution computed
    at it."""
    work = 1
    for extent in (*conv.tensor.shape, *(a.extent for a in conv.reduce_axes)):
        work *= extent
    if loop.extent > 1 and work >= PARALLEL_MIN:
        sch.parallel(epilogue.tensor, loop)
    sch.compute_at(conv.tensor, epilogue.tensor, loop)
