"""The copy a strided transposed convolution makes of its input, with the channels inside
the rows (`T_pad_phases[n, j.., c, j]`, te/topi/conv_transpose.py), in the input's order.

The default injective schedule runs the copy's own order: for each row j, every channel's
row j, a read 28 to 56 floats long from each of C planes a plane apart (128 planes of
3 KiB for the decoder's 2x2 layer).  From a cache near, that is as fast as any; from
memory (an input the caller made a while ago, or one the benchmark's pause between calls
left in no cache) the hardware prefetcher follows none of the C streams, and each line
is a wait.  Here the loops follow the input instead:

    for (n, c, j..)      fused, parallel when large
      for j (the last)   vectorized
        T_pad_phases[n, j.., c, j] = x[n, c, j.. - (T - 1), j - (T - 1)] or 0

so the input is read once, front to back, and the writes go to rows C x W floats apart
of a buffer the kernel reuses call after call.

Found as the decoder's "checkout-dependent" time (bench/onnx_ops.py, docs/performance.md):
the executable copies an input numpy placed off a 64-byte line into a staging buffer
(runtime/input_staging.py), a sequential read that brings it near, and reads an aligned
one in place, where this copy met it in memory.  Whether numpy's input landed on a line
followed the process's heap, which the checkout's path moves.  Measured before this
(1 thread, CPU time, the decoder called after a 0.1 s pause, as paired_ratio calls it,
the input at chosen offsets in one process, load 3-5): aligned inputs 1.11-1.15x the
time of staged ones; with the input read before the pause (warm) 0.98-1.01x.
"""

from __future__ import annotations

import math

from ..te.topi.conv_transpose import PAD_PHASES
from .primitives import Schedule, Stage


def is_phase_pad(stage: Stage) -> bool:
    """Whether `stage` is a transposed convolution's input copy of conv_transpose.py."""
    return stage.tensor.name == PAD_PHASES and len(stage.axes) >= 3


def schedule_phase_pad(sch: Schedule, stage: Stage, parallel_min: int) -> None:
    """The loops of the module doc."""
    t = stage.tensor
    n, *rows, c, last = stage.axes
    sch.reorder(t, n, c, *rows, last)
    outer = sch.fuse(t, n, c, *rows)
    sch.vectorize(t, last)
    if math.prod(t.shape) >= parallel_min and outer.extent > 1:
        sch.parallel(t, outer)
