"""A strided transposed convolution computed by phases, without the zeros between inputs.

nn_conv.py computes a transposed convolution as a convolution with the flipped kernel over
the input dilated by the strides.  With stride s, all but one in s of the dilated input's
positions along each axis are zeros, so most of that reduction multiplies zeros (3 of 4
products for a 2x2 kernel of stride 2), in a reduction whose reads carry the dilation's
select.  Here, for dilation 1 and a stride above 1, each output position reads only the
kernel taps that reach it.  An output position y = s*q + p (its phase p in [0, s)) is
input position y + pad_before of the full result, so with k = (p + pad) % s and
d = (p + pad) // s:

    out[o, y] = sum over c, t of  x[c, q + d - t] * w[c, o, k + s*t]      t in [0, T), T = ceil(K / s)

four stages (the spatial axes one or two, the sum above per axis):

    T_pad_phases[n, j.., c, j]      x shifted by T - 1, zeros around: no select in the sum; the
                                    channels inside the rows (NHCW), so the rows a tile's
                                    reduction reads (every channel of T input rows) are T
                                    contiguous blocks, not 2T rows a channel's plane apart
    T_kernel_phases[p.., o, c, t..] w[c, o, (p + pad) % s + s*t], zero past the kernel; a tile's
                                    4 output channels 4 streams along c (taps inside)
    T_<op>_phases[n, p.., q.., o, q]  the sum, tagged with the op: a product, so defaults.py
                                    gives it the register tile over its last two axes, 4
                                    output channels by 16 positions of an input row, the tile
                                    loops visiting every channel of a row while the row stays
                                    in L1 (o before the last q for that: with o outermost each
                                    channel swept the whole input, 2-3x slower)
    T_<op>[n, o, y]                 the phases interleaved into the output, an epilogue (bias,
                                    relu) inlined into it; schedule/interleave.py

The two transforms are read by the product and so are computed once a call (defaults.py);
the kernel's is C x O x s^2 x T^2 elements, small beside the product.  An output whose last
axis is not the last spatial one (NHWC, which Legalize turns into NCHW before) keeps the
dilated form.

Measured (ONNX ConvTranspose, 1 thread CPU time, the same run's onnxruntime node beside,
paired): 128 -> 64 channels, 2x2 stride 2 from 28x28 (+ relu): 22x onnxruntime's time
before phases, 1.3-1.5x now; 64 -> 32, 4x4 stride 2 pad 1 to 112x112: 28x before, 1.84-2.12x
with the input padded channel by channel (NCHW), 1.28-1.43x with its channels inside the
rows (NHCW), 1.01-1.07x with the taps unrolled (schedule/interleave.py), 0.91-1.05x with the
kernel phases (p, o, c, t) (load 3-8.6, each step alternated with the one before).  Tried:
the product's axes (n, p.., o, q..), so the tile is 4 rows of one channel by 16 positions
and the channels outermost: 1.86-1.96x (2x2) and 1.59x (4x4) against 1.33x and 0.91-0.97x;
4 input channels a trip of the 2x2 product's channel loop (T = 1, 8 FMAs a trip): 1.40-1.49x
against 1.34-1.40x, no gain.  What is left: the tile's 16 positions against rows of 14 or 28
(a clamped last tile: 32 positions computed for 28), and the 2x2 product (one input row of
all channels against all of a phase's 32 KB of weights a row).
"""

from __future__ import annotations

import math
from typing import Sequence

from ....ops.conv_geometry import ConvSpec, forward_shape
from .. import expr as te
from .nn_conv import Indices, canonical_indices, read_in_layout

PHASES = "_phases"  # the name of the product stage ends so (schedule/interleave.py finds it)
PAD_PHASES = "T_pad_phases"  # the input's copy, channels inside the rows (schedule/phase_pad.py)


def phases_apply(spec: ConvSpec, plan) -> bool:
    """Whether the transposed convolution is computed by phases: dilation 1, a stride
    above 1, the spatial axes whole in every layout, the last spatial axis the output's
    last (schedule/interleave.py vectorizes along it)."""
    return (all(d == 1 for d in plan.dilation) and any(s > 1 for s in plan.strides)
            and plan.out_layout.name.endswith(spec.spatial[-1])
            and all(layout.factor(letter) is None for layout in (plan.data_layout, plan.kernel_layout,
                                                                 plan.out_layout) for letter in spec.spatial))


def phased_conv_transpose(op: str, spec: ConvSpec, plan, data: te.Tensor, weight: te.Tensor,
                          out_shape: Sequence[int], acc: str) -> te.Tensor:
    spatial, n = spec.spatial, spec.ndim
    dshape = forward_shape(plan.data_layout, data.shape, spec.data_canonical)
    wshape = forward_shape(plan.kernel_layout, weight.shape, spec.kernel_canonical)
    oshape = forward_shape(plan.out_layout, tuple(out_shape), spec.data_canonical)
    strides, before = plan.strides, plan.pad_before
    kernel, sizes, extents = wshape[2:], dshape[2:], oshape[2:]
    taps = [math.ceil(k / s) for k, s in zip(kernel, strides)]  # T per axis
    rows = [math.ceil(e / s) for e, s in zip(extents, strides)]  # positions q per phase
    groups = plan.groups
    per_group_in, per_group_out = dshape[1] // groups, wshape[1]

    def shift(i: int, phase: te.PrimExpr) -> te.PrimExpr:
        """How far the kernel's phase of output phase `phase` moves q: (phase + pad) // s."""
        return (phase + before[i]) // strides[i]

    # T_pad_phases[n, c, j] = x[n, c, j - (T - 1)], zero outside
    padded_sizes = [r + (s - 1 + b) // s + t - 1 for r, s, b, t in zip(rows, strides, before, taps)]

    def pad_body(*axes):  # (n, j except the last..., c, the last j)
        js = axes[1:n] + axes[-1:]
        idx: Indices = {"N": axes[0], "C": axes[-2]}
        inside: list[te.PrimExpr] = []
        for i, letter in enumerate(spatial):
            pos = js[i] - (taps[i] - 1)
            if taps[i] > 1:
                inside.append(te.ge(pos, 0))
            if padded_sizes[i] - (taps[i] - 1) > sizes[i]:
                inside.append(te.lt(pos, sizes[i]))
            idx[letter] = pos
        value = te.cast(read_in_layout(data, plan.data_layout, idx), acc)
        return te.select(te.all_of(*inside), value, te.const(0, acc)) if inside else value

    padded = te.compute([dshape[0], *padded_sizes[:-1], dshape[1], padded_sizes[-1]], pad_body, PAD_PHASES)

    # T_kernel_phases[c, o, p..., t...] = w[c, o, (p + pad) % s + s*t], 0 past the kernel
    def kernel_body(*axes):  # (p..., o, c, t...)
        o, c, ps, ts = axes[n], axes[n + 1], axes[:n], axes[n + 2:]
        idx: Indices = {"I": c, "O": o}
        inside: list[te.PrimExpr] = []
        for i, letter in enumerate(spatial):
            tap = (ps[i] + before[i]) % strides[i] + strides[i] * ts[i]
            if strides[i] * taps[i] > kernel[i]:
                inside.append(te.lt(tap, kernel[i]))
            idx[letter] = tap
        value = te.cast(read_in_layout(weight, plan.kernel_layout, idx), acc)
        return te.select(te.all_of(*inside), value, te.const(0, acc)) if inside else value

    kernel_phases = te.compute([*strides, wshape[1], wshape[0], *taps], kernel_body, "T_kernel_phases")

    rc = te.reduce_axis(per_group_in, "rc")
    rts = [te.reduce_axis(t, f"r{letter.lower()}") for letter, t in zip(spatial, taps)]

    def product_body(nn, *axes):  # (n, p..., q except the last..., o, the last q)
        ps, qs, o = axes[:n], axes[n:2 * n - 1] + axes[-1:], axes[-2]
        c = rc if groups == 1 else (o // per_group_out) * per_group_in + rc
        at = [qs[i] + shift(i, ps[i]) - rts[i] + taps[i] - 1 for i in range(n)]
        x = padded[(nn, *at[:-1], c, at[-1])]
        w = kernel_phases[(*ps, o if groups == 1 else o % per_group_out, c, *rts)]
        return te.sum(x * w, axis=[rc, *rts])

    phases = te.compute([oshape[0], *strides, *rows[:-1], oshape[1], rows[-1]], product_body,
                        f"T_{op.removeprefix('nn.')}{PHASES}", tag=op)

    def out_body(*axes):
        idx = canonical_indices(plan.out_layout, axes)
        where = [idx[letter] for letter in spatial]
        qs = [w // s for w, s in zip(where, strides)]
        return phases[(idx["N"], *(w % s for w, s in zip(where, strides)), *qs[:-1], idx["C"], qs[-1])]

    return te.compute(out_shape, out_body, f"T_{op.removeprefix('nn.')}")
