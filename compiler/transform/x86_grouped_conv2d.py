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
Groups of fewer channels than the lanes (ResNeXt-50's 4 and 8 a group, at 16 lanes)
stay NCHW under the generic schedule: a block of a power of two below the lanes would
fill part of a vector only (not measured).

Measured (AVX-512 host, 1 thread, load 8-9): RegNet-X 400MF's 160 channels, groups=10,
3x3, 28x28 stride 2 alone on blocked operands 72 us against the NCHW kernel's 782 and
onnxruntime's node's 75; stride 1 at 14x14 42-60 against 168 and 58.
"""

from __future__ import annotations


def grouped_blocks(in_channels: int, out_channels: int, groups: int, simd_lanes: int) -> tuple[int, int] | None:
    """(ic_bn, oc_bn) for a grouped conv2d whose groups are whole vectors of channels,
    else None (see the module doc)."""
    if groups <= 1 or in_channels % groups or out_channels % groups:
        return None
    per_in, per_out = in_channels // groups, out_channels // groups
    if per_in % simd_lanes or per_out % simd_lanes:
        return None
    return simd_lanes, simd_lanes
