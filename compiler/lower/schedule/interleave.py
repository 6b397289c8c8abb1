"""The stage that interleaves a strided transposed convolution's phases into its output
(te/topi/conv_transpose.py): out[..., y, x] = phases[..., y % s, x % s, y // s, x // s],
with whatever injective epilogue (bias, relu) was inlined into it.

The default injective schedule runs x (or the rows and x fused) as one vector loop, whose
lanes then each work out x % s and x // s and gather one element.  Here x is split by
the stride s and the phase runs outside the vector loop:

    for (..., y)          fused, parallel when large
      for x.inner         unrolled: the phase x % s
        for x.outer       vectorized: q = x // s, contiguous in the phase's row
          out[..., y, x.outer * s + x.inner] = phases[..., y % s, x.inner, y // s, x.outer]

so each vector is one load of a phase's row and s-strided stores (scalar stores, lanes.py);
the positions past the last whole stride are a tail of their own (no guard in the vector).

The product before it (T_<op>_phases) takes defaults.py's register tile, with its taps (the
reduction axes after the input channels, T per spatial axis) unrolled inside the channel
loop (TAPS): LLVM left the 2-iteration tap loops rolled, 8 FMAs a loop trip.  Measured
(ONNX ConvTranspose 64 -> 32, 4x4 stride 2 pad 1 to 112x112, 1 thread CPU time, paired
with onnxruntime's node, rolled and unrolled alternated in one run, load 4.5-5.8): 1.28-1.29x
onnxruntime's time rolled, 1.01-1.07x unrolled; the decoder of bench/onnx_ops.py 1.37-1.50x
to 1.12-1.15x.  The 2x2 kernel has no taps to unroll (T = 1).

Its tile is `phase_rows` output channels (not defaults.py's 4) by a vector of positions:
a step of the channel loop loads one vector of an input row and broadcasts a weight per
output channel, so 4 channels kept 4 accumulators, too few FMAs in flight to cover their
latency (2 units, 4 cycles each).  The most channels that divide the output's, up to
PHASE_ROWS within the vector unit's accumulator budget (vector_unit.py): 16 on AVX-512,
at most 6 on AVX2 (a vector of 16 positions is two registers there).  Measured (the
decoder of bench/onnx_ops.py, 1 thread CPU time, the kernels' least time of 30 runs, load
8-9): 128 -> 64 2x2 0.56 ms with 4 channels, 0.43 with 8, 0.40-0.41 with 16; 64 -> 32 4x4
1.93-1.98, 1.35-1.40, 1.23-1.27; the decoder, paired with onnxruntime, 1.23x/1.23x with
4, 0.92x/0.90x with 16.
"""

from __future__ import annotations

import math

from ..te import expr as te
from ..te.topi.conv_transpose import PHASES
from .primitives import Schedule, Stage
from .vector_unit import VectorUnit, host_unit

TAPS = PHASES  # the product's name has it: its reduction axes after the channels (the taps) unrolled
PHASE_ROWS = 16  # the most output channels of the product's register tile


def phase_rows(channels: int, lanes: int, unit: VectorUnit | None = None) -> int:
    """Output channels of the phases product's register tile, each a vector of `lanes`
    positions (see the module doc): the largest divisor of `channels` up to PHASE_ROWS
    whose accumulators fit `unit`'s budget (default the host's)."""
    unit = unit or host_unit()
    limit = min(PHASE_ROWS, max(1, unit.accumulators // unit.registers_for(lanes)))
    return max(d for d in range(1, min(channels, limit) + 1) if channels % d == 0)


def interleave_stride(sch: Schedule, stage: Stage) -> int | None:
    """The stride along the last axis when `stage` reads a transposed convolution's phases
    (and its last axis is that convolution's last spatial axis), else None."""
    for node in te.nodes(sch.effective_body(stage)):
        if isinstance(node, te.Load) and node.tensor.name.endswith(PHASES):
            shape = node.tensor.shape  # (N, s..., q..., O, q): conv_transpose.py
            return int(shape[(len(shape) - 2) // 2])
    return None


def schedule_interleave(sch: Schedule, stage: Stage, stride: int, parallel_min: int) -> None:
    t = stage.tensor
    axes = list(stage.axes)
    x = axes[-1]
    outer = sch.fuse(t, *axes[:-1]) if len(axes) > 2 else axes[0]
    if x.extent >= 2 * stride:
        xo, xi = sch.split(t, x, stride, tail=x.extent % stride != 0)
        sch.reorder(t, xi, xo)
        sch.unroll(t, xi)
        sch.vectorize(t, xo)
    if len(axes) > 1 and outer.extent > 1 and math.prod(t.shape) >= parallel_min:
        sch.parallel(t, outer)
