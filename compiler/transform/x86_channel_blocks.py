"""The channel blocks of a blocked (NCHW[x]c) convolution on an AVX-512 host, where they
depart from TVM's untuned x86 rule (x86_conv2d_layout.py `blocks`).

    channel_block(channels, simd_lanes) -> the block of `channels` channels
    wide_blocks(in_channels, out_channels, simd_lanes) -> (ic_bn, oc_bn)

TVM's fallback config takes oc_bn, the largest divisor of the output channels up to the
vector's lanes, and ic_bn, the largest divisor of the input channels up to oc_bn.  With
16 lanes, 24 channels (MobileNet v2's inverted residuals at 56x56) so get blocks of 12:
each a vector of 8 and one of 4 (codegen/lanes.py cuts a width that is not a power of
two into a vector per power of two), so a convolution's step does 4 FMAs for 24 output
channels of a position, each on a quarter or half of the register.  TVM's rule also
puts a layout_transform from 16c to 12c before each convolution reading 144 or 96
channels of 16c to 24 (ic_bn up to oc_bn = 12), and one from 12c to 16c is avoided only
because the expansion after it reads 12c.

Here, when TVM's block is not a power of two, the block is instead the divisor of the
channels up to twice the lanes whose vector takes the fewest registers per channel
(`VectorUnit.registers_for`'s count; ties to TVM's, then the larger): 24 channels are one
block of 24, a vector of 16 and one of 8, 2 FMAs a position for the 24.  ic_bn is TVM's
(the largest divisor up to oc_bn) unless that is not a power of two either, then the
block the producer of the input writes by the same rule (`channel_block` of the input
channels): 96 -> 24 and 144 -> 24 read their input in 16c, as the depthwise convolution
before them writes it, and 24 -> 144 reads 24c.  A block of a power of two is TVM's, so
every convolution of ResNet-50 and every other one of MobileNet v2 keeps its layout; on
a unit of fewer lanes (AVX2) TVM's rule stands (not measured there).
AlterOpLayout(tvm_blocks=True) keeps TVM's rule on any host.

Measured on the AVX-512 host (Zen 5, 1 thread; bench/layers.py --model mobilenet, ours
and onnxruntime in turns, 30 runs; load 3-5): features.2's projection 96 -> 24 at 56x56
146 -> 91-103 µs (1.24-1.42x onnxruntime's node -> 0.82-0.96x), features.3's 144 -> 24
with its residual add 219-224 -> 146-162 µs (1.65-1.74x -> 1.17-1.25x), the two
layout_transforms 16c -> 12c (25 and 39 µs) gone, the expansions 24 -> 144 reading 24c
unchanged (102 µs; their input block of 24 stays a loop, conv_tile_end.py
UNROLL_CHANNELS_MAX: unrolled, LLVM kept the 24 weight vectors of a block in registers
and chained 24 FMAs on each of 4 accumulators, 118-122 µs).
"""

from __future__ import annotations


def _registers(lanes: int, simd_lanes: int) -> int:
    """Vector registers one vector of `lanes` float32 takes (VectorUnit.registers_for)."""
    whole, rest = divmod(lanes, simd_lanes)
    return whole + bin(rest).count("1")


def _largest_divisor(n: int, limit: int) -> int:
    return next(bn for bn in range(min(limit, n), 0, -1) if n % bn == 0)


def _power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


def channel_block(channels: int, simd_lanes: int) -> int:
    """The block of `channels` on a unit of `simd_lanes` (see the module doc): TVM's
    largest divisor up to the lanes when it is a power of two, else the divisor up to
    twice the lanes with the most channels per register."""
    tvm = _largest_divisor(channels, simd_lanes)
    if _power_of_two(tvm):
        return tvm
    divisors = [d for d in range(1, 2 * simd_lanes + 1) if channels % d == 0]
    return max(divisors, key=lambda d: (d / _registers(d, simd_lanes), d == tvm, d))


def lanes_filled(block: int, simd_lanes: int) -> float:
    """The share of the lanes a block of `block` channels fills in its registers."""
    return block / (_registers(block, simd_lanes) * simd_lanes)


def wide_blocks(in_channels: int, out_channels: int, simd_lanes: int) -> tuple[int, int]:
    """(ic_bn, oc_bn) of a convolution on an AVX-512 unit (see the module doc)."""
    oc_bn = channel_block(out_channels, simd_lanes)
    ic_bn = _largest_divisor(in_channels, oc_bn)
    if not _power_of_two(ic_bn):
        ic_bn = channel_block(in_channels, simd_lanes)
    return ic_bn, oc_bn
