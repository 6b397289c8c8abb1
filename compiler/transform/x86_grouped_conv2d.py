"""The channel blocks of a grouped conv2d that AlterOpLayout puts in NCHW[x]c
(x86_conv2d_layout.py `alter_conv2d`).

    grouped_blocks(in_channels, out_channels, groups, simd_lanes) -> (ic_bn, oc_bn) | None

A grouped float32 conv2d (not depthwise) whose every group has a multiple of the vector's
lanes in input and output channels becomes `nn.contrib_conv2d_NCHWc` with `groups` kept,
data NCHW{ic_bn}c, kernel OIHW{ic_bn}i{oc_bn}o (O/oc_bn, I/groups/ic_bn, KH, KW, ic_bn,
oc_bn) and output NCHW{oc_bn}c.  The blocks are TVM's fallback for a grouped conv2d
(topi/x86/group_conv2d.py `_fallback_schedule`: oc_bn the largest divisor of a group's
output channels up to the lanes, ic_bn the largest divisor of a group's input channels up
to oc_bn), so here both are the lanes: a block never straddles two groups, and an output
block reads only the input blocks of its group (te/topi/conv_blocked.py `nchwc_conv2d`).
RegNet's and ResNeXt's 3x3 convolutions of 16 channels a group are so, per output block,
a dense convolution of one input block, scheduled as the other NCHWc ones (conv.py).

TVM v0.16 itself does not alter a grouped conv2d's layout: its x86 strategy runs
group_conv2d_nchw.x86, which packs the NCHW data into blocks inside the kernel on every
call.  Here the blocks stay between layers as for the dense convolutions, so the 1x1
convolutions around a grouped one read and write them without a layout_transform.
Groups of fewer channels than the lanes (ResNeXt-50's 4 and 8 a group, at 16 lanes),
when the weight is a constant (bound, as relay.build binds it): k = lanes / p neighbouring
groups of p channels are merged into one of `lanes` channels whose weight is block
diagonal (`merged_weight`: each output channel's p taps where its own group's inputs sit
in the merged group, zeros elsewhere), so the convolution runs as one of groups / k groups
of whole vectors.  That multiplies k times the products, each FMA on a full vector: the
same count of vector FMAs as blocks of p (TVM's fallback, a quarter or half of a register
each), and the 16c blocks of the 1x1 convolutions around it stay, with no
layout_transform between them.  At most MERGED_GROUPS_MAX groups a vector (4: ResNeXt's 4
channels a group).  A weight given at run time keeps the generic kernel.

Measured (AVX-512 host, 1 thread, each kernel with its relu alone, the NCHW kernel and
the blocked one alternated, 60 pairs, load 9-13; onnxruntime's session of the one Conv +
Relu, 100 runs):

    RegNet 160 ch, groups 10, 28x28 stride 2     NCHW 801 us   NCHW16c 78   onnxruntime 76
    RegNet 160 ch, groups 10, 14x14              NCHW 192 us   NCHW16c 64   onnxruntime 58
    ResNeXt 256 ch, groups 32 (8), 28x28         NCHW 538 us   merged 332   onnxruntime 534
    ResNeXt 256 ch, groups 32 (8), 56x56 s2      NCHW 2945 us  merged 583   onnxruntime 881
    ResNeXt 128 ch, groups 32 (4), 56x56         NCHW 731 us   merged 665   onnxruntime 755

(blocks of 8 for ResNeXt's 8 a group, TVM's choice: 292 and 476 us, but a layout_transform
from and to the 16c of the 1x1 convolutions on each side).  Whole models at 1 thread
against onnxruntime (bench/onnx_file.py, 20 pairs, load 8-15): RegNet-X 400MF 2.61x ->
0.88x; ResNeXt-50 32x4d 1.42x -> 1.00x with the groups of 16 alone, 0.94-0.99x with the
narrow groups merged too (1.04-1.05x without them in the same series).
"""

from __future__ import annotations

import numpy as np

MERGED_GROUPS_MAX = 4  # groups merged into one vector at most (k times the products; module doc)


def grouped_blocks(in_channels: int, out_channels: int, groups: int, simd_lanes: int) -> tuple[int, int] | None:
    """(ic_bn, oc_bn) for a grouped conv2d whose groups are whole vectors of channels,
    else None (see the module doc)."""
    if groups <= 1 or in_channels % groups or out_channels % groups:
        return None
    per_in, per_out = in_channels // groups, out_channels // groups
    if per_in % simd_lanes or per_out % simd_lanes:
        return None
    return simd_lanes, simd_lanes


def merged_groups(in_channels: int, out_channels: int, groups: int, simd_lanes: int) -> int | None:
    """k, the neighbouring groups of p channels (p in and p out) that make one group of
    `simd_lanes` channels, when p divides the lanes, k is at most MERGED_GROUPS_MAX and k
    divides the groups; else None (see the module doc)."""
    if groups <= 1 or in_channels % groups or out_channels % groups:
        return None
    p = in_channels // groups
    if out_channels // groups != p or p >= simd_lanes or simd_lanes % p:
        return None
    k = simd_lanes // p
    return k if k <= MERGED_GROUPS_MAX and groups % k == 0 else None


def merged_weight(weight: np.ndarray, k: int) -> np.ndarray:
    """The OIHW `weight` (O, p, KH, KW) of groups of p channels as that of groups of k * p
    channels: (O, k * p, KH, KW), output channel o's p taps at the inputs (g % k) * p of
    its merged group, g = o // p its own group, zeros elsewhere."""
    o, p = weight.shape[:2]
    merged = np.zeros((o, k * p, *weight.shape[2:]), dtype=weight.dtype)
    for at in range(k):
        rows = np.arange(o).reshape(-1, k, p)[:, at].ravel()  # the groups g with g % k == at
        merged[rows, at * p:(at + 1) * p] = weight[rows]
    return merged
