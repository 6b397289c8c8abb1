"""What TVM's x86 strategy makes of a conv2d in AlterOpLayout, untuned (TVM:
python/tvm/topi/x86/conv2d_alter_op.py `_alter_conv2d_layout` with the fallback config of
topi/x86/conv2d.py `_get_default_config`).

    alter_conv2d(call, attrs, args, simd_lanes=16) -> Call | None

A float32 `nn.conv2d` in NCHW/OIHW without groups and with static shapes becomes
`nn.contrib_conv2d_NCHWc` with data layout NCHW{ic_bn}c, kernel layout OIHW{ic_bn}i{oc_bn}o
and out layout NCHW{oc_bn}c (channels set to the output channels); a depthwise one (one
filter per channel, no dilation) becomes `nn.contrib_depthwise_conv2d_NCHWc` with kernel
layout OIHW1i{oc_bn}o (topi/x86/depthwise_conv2d.py's fallback picks the blocks the same
way).  A grouped one whose groups are whole vectors of channels becomes
`nn.contrib_conv2d_NCHWc` with its groups (x86_grouped_conv2d.py; not TVM's choice).
The layout rewriter then puts the layout_transforms around it.  The fallback config picks

    oc_bn = the largest divisor of the output channels up to simd_lanes
    ic_bn = the largest divisor of the input channels up to oc_bn

(the same for 1x1 kernels and the others: conv2d_avx_1x1 and conv2d_avx_common only
differ in their row tiles).  Not on an AVX-512 host where that block is not a power of
two (24 channels: TVM's 12 lanes, a vector of 8 and one of 4): x86_channel_blocks.py
takes blocks of 24 there, unless AlterOpLayout(tvm_blocks=True).  `simd_lanes` is
TVM's get_simd_32bit_lanes for the target: 16 with AVX-512 F and BW, 8 with AVX2, 4
otherwise; RelayLens compiles for the host, so `host_simd_lanes()` asks LLVM for the
host's features.

Winograd (not TVM's untuned x86 choice: TVM takes it on x86 only for the auto-scheduler).
A float32 conv2d with a 3x3 kernel, stride 1, dilation 1, no groups and at least
WINOGRAD_CHANNELS_MIN channels in and out (multiples of the lanes) becomes
`nn.contrib_conv2d_winograd_without_weight_transform` (ops/winograd.py) on the same
NCHW{ic_bn}c / NCHW{oc_bn}c data, its weight `nn.contrib_conv2d_winograd_weight_transform`
then reshaped and transposed to (alpha, alpha, O/oc_bn, I, oc_bn), all of which
FoldConstant evaluates when the weight is bound (as TVM's ARM AlterOpLayout packs it).
Only for a constant weight (bound, as relay.build binds it): a weight given at run time would
be transformed on every call (and its transform compiled: ResNet-50's cold build with its
weights as parameters went from 6 to 39 s).
F(4x4, 3x3) (36 products per 16 outputs) when the output has at least
WINOGRAD_F4_TILES_MIN tiles of 4x4, else F(2x2, 3x3) (16 per 4).  Measured on AVX2
(AMD EPYC, 1 thread, CPU time, each kernel with its bias and relu, best of 5; warm /
with the caches flushed before each call), NCHWc against F2 and F4, ms:

    64 -> 64 at 56x56      2.74-2.83 / 2.86-2.96    F2 1.97-2.02 / 2.22-2.41   F4 1.17-1.21 / 1.64-1.83
    128 -> 128 at 28x28    2.85-3.05 / 2.89-3.48    F2 1.69-2.11 / 2.08-2.47   F4 1.25-1.28 / 1.76-1.87
    256 -> 256 at 14x14    2.78-2.85 / 2.89-2.95    F2 1.55-1.61 / 1.90-2.38   F4 1.53-1.62 / 1.95-2.62
    512 -> 512 at 7x7      3.10-3.35 / 3.18-3.45    F2 2.32-2.55 / 2.46-2.97   F4 2.42-2.79 / 2.78-3.06

F4 multiplies least, but its transformed weight is 4x the filters (F2's 1.8x) and each
weight element serves as many products as there are tiles: from 14x14 down (16 tiles of
4x4) the weights' traffic eats the gain, so F2 there (49 tiles at 14x14).  Below 64
channels nothing was measured.  ResNet-50 at 1 thread (CPU time, beside onnxruntime in
the same run, load 2-4): 0.97-1.26x of onnxruntime without, 0.85-1.01x with (paired
runs 0.82-0.95x of the time without); at 2 threads 1.30x without, 1.13x with.  Its
cold build (weights bound) costs more CPU: the unrolled transforms' code (an F(4x4)
kernel lowers in about 0.75 s, an NCHWc one in 0.2) and the weight transforms folded;
`bench/tvm_compile.py` read 9.9 CPU s against 4.8 before, 6.3 s wall against TVM
Relax's 6.0.

Not done here (TVM does them): float16/float64 conv2d stay as they are (TVM alters them
too; our NCHWc schedule is for float32); int8 conv2d.

int8 and VNNI.  TVM v0.16's `_alter_conv2d_layout` treats int8 x int8 as uint8 x
int8 (the data shifted by 128, conv2d_alter_int8_common) and takes the int8 path when
`is_int8_hw_support` (topi/x86/conv2d_int8.py): uint8 data, int8 kernel, LLVM >= 8 and a
*target* with sse4.2 (`target_has_features` reads `-mcpu`/`-mattr`, not the machine).
Then the conv2d becomes `nn.contrib_conv2d_NCHWc` with data NCHW{ic_bn}c and kernel
OIHW{ic_bn/4}i{oc_bn}o4i (the `i` split twice), computed by conv2d_NCHWc_int8 with the
tensor intrinsic dot_16x1x16_uint8_int8_int32: VNNI `vpdpbusd` when the target has
avx512vnni or avxvnni, else `vpmaddubsw`/`vpmaddwd` at get_simd_32bit_lanes' width.
qnn.Legalize makes the same test (`is_fast_int8_on_intel`: sse4.2) before keeping
qnn.conv2d in int8 (qnn_legalize.py).  A plain `llvm` target (no `-mcpu`) is LLVM's
"generic" x86-64, SSE2 only, so TVM chooses none of this: int8 convolutions stay NCHW on
int16 operands, as here.  This machine has AVX2 and no AVX-512 or VNNI, so even
`llvm -mcpu=native` would reach only the pmaddubsw form; RelayLens does not implement
the int8 NCHWc kernels.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..host import host

from ..ir.attrs import Attrs, IntImm
from ..ir.expr import Call, Constant, op
from ..ops.attrs import to_ir_value
from ..ops.winograd import CONV_OP, WEIGHT_OP
from ..ir.types import TensorType
from ..ops import get_op
from ..ops.conv_geometry import is_depthwise, padding_pairs
from .x86_channel_blocks import wide_blocks
from .x86_grouped_conv2d import grouped_blocks, merged_groups, merged_weight


@lru_cache(maxsize=1)
def host_simd_lanes() -> int:
    """32-bit lanes of the host's widest useful vector (TVM's get_simd_32bit_lanes)."""
    try:
        facts = host()
    except Exception:  # noqa: BLE001 -- no LLVM: the narrowest choice
        return 4
    if facts.has("avx512f", "avx512bw"):
        return 16
    return 8 if facts.has("avx2") else 4


def largest_divisor(n: int, limit: int) -> int:
    return next(bn for bn in range(min(limit, n), 0, -1) if n % bn == 0)


def blocks(in_channels: int, out_channels: int, simd_lanes: int, tvm: bool = False) -> tuple[int, int]:
    """(ic_bn, oc_bn): the fallback config's, or, with 16 lanes or more unless `tvm`,
    x86_channel_blocks.py's where the fallback's block is not a power of two."""
    if simd_lanes >= 16 and not tvm:
        return wide_blocks(in_channels, out_channels, simd_lanes)
    oc_bn = largest_divisor(out_channels, simd_lanes)
    return largest_divisor(in_channels, oc_bn), oc_bn


def alter_conv2d(call: Call, attrs: Attrs, args: list, simd_lanes: int, tvm_blocks: bool = False) -> Call | None:
    data, weight = (a.ty for a in call.args)
    if not (isinstance(data, TensorType) and isinstance(weight, TensorType)):
        return None
    a = get_op("nn.conv2d").normalize_attrs(attrs)
    if (a.data_layout != "NCHW" or a.kernel_layout != "OIHW"
            or a.out_layout not in ("", "NCHW") or data.dtype != "float32" or weight.dtype != "float32"
            or (a.out_dtype or "float32") != "float32"
            or not all(isinstance(d, int) for d in (*data.shape, *weight.shape))):
        return None
    out_c, in_c = weight.shape[0], data.shape[1]
    tile = winograd_tile(a, data.shape, weight.shape, simd_lanes) if isinstance(args[1], Constant) else None
    if tile is not None:
        return _winograd(call, attrs, args, tile, *blocks(in_c, out_c, simd_lanes, tvm_blocks))
    if a.groups == 1:
        ic_bn, oc_bn = blocks(in_c, out_c, simd_lanes, tvm_blocks)
        kernel, name = f"OIHW{ic_bn}i{oc_bn}o", "nn.contrib_conv2d_NCHWc"
    elif (is_depthwise(a.groups, in_c, out_c) and weight.shape[1] == 1 and out_c == in_c
          and tuple(a.dilation) == (1, 1)):
        ic_bn, oc_bn = blocks(in_c, out_c, simd_lanes, tvm_blocks)
        kernel, name = f"OIHW1i{oc_bn}o", "nn.contrib_depthwise_conv2d_NCHWc"
    elif (merged := _merged(call, args, a.groups, in_c, out_c, simd_lanes)) is not None:
        args, groups = merged  # groups narrower than a vector merged (x86_grouped_conv2d.py)
        attrs = attrs.with_(groups=IntImm(groups))
        kernel, name, ic_bn, oc_bn = f"OIHW{simd_lanes}i{simd_lanes}o", "nn.contrib_conv2d_NCHWc", simd_lanes, simd_lanes
    elif (grouped := grouped_blocks(in_c, out_c, a.groups, simd_lanes)) is not None:
        ic_bn, oc_bn = grouped  # groups of whole vectors (x86_grouped_conv2d.py)
        kernel, name = f"OIHW{ic_bn}i{oc_bn}o", "nn.contrib_conv2d_NCHWc"
    else:  # grouped, or depthwise with a channel multiplier or dilation: TVM's generic kernels
        return None
    new = attrs.with_(channels=IntImm(out_c), data_layout=f"NCHW{ic_bn}c",
                      kernel_layout=kernel, out_layout=f"NCHW{oc_bn}c")
    return Call(op(name), tuple(args), new)


def _merged(call: Call, args: list, groups: int, in_c: int, out_c: int, simd_lanes: int):
    """(args with the block-diagonal weight, the merged groups) for a grouped conv2d of
    fewer channels a group than the lanes whose weight is a known constant, else None
    (x86_grouped_conv2d.py `merged_groups`); the new weight carries the old one's span."""
    k = merged_groups(in_c, out_c, groups, simd_lanes)
    weight = args[1]
    if k is None or not isinstance(weight, Constant) or not weight.known:
        return None
    data = merged_weight(np.asarray(weight.data), k)
    new = Constant(data, span=weight.span or call.span, ty=TensorType(data.shape, str(data.dtype)))
    return [args[0], new, *args[2:]], groups // k


WINOGRAD_CHANNELS_MIN = 64  # the fewest input and output channels measured to win (module doc)
WINOGRAD_F4_TILES_MIN = 49  # 4x4 output tiles below which F(2x2, 3x3) is chosen (module doc)


def winograd_tile(a, data_shape, weight_shape, simd_lanes: int) -> int | None:
    """m of F(m x m, 3 x 3) for a float32 NCHW conv2d (the caller checked dtypes, layouts
    and static shapes), None for the NCHWc path: a 3x3 kernel, stride 1, dilation 1, no
    groups, at least WINOGRAD_CHANNELS_MIN channels in and out, both multiples of the
    vector's lanes; m = 4 when the output has at least WINOGRAD_F4_TILES_MIN tiles of
    4 x 4, else 2 (see the module doc)."""
    out_c, in_c, kh, kw = weight_shape
    if (a.groups != 1 or (kh, kw) != (3, 3) or tuple(a.strides) != (1, 1) or tuple(a.dilation) != (1, 1)
            or min(in_c, out_c) < WINOGRAD_CHANNELS_MIN or in_c % simd_lanes or out_c % simd_lanes):
        return None
    (pt, pl), (pb, pr) = padding_pairs("nn.conv2d", a.padding, 2)
    oh, ow = data_shape[2] + pt + pb - 2, data_shape[3] + pl + pr - 2
    if oh < 2 or ow < 2:
        return None
    return 4 if (-(-oh // 4)) * (-(-ow // 4)) >= WINOGRAD_F4_TILES_MIN else 2


def _winograd(call: Call, attrs: Attrs, args: list, tile: int, ic_bn: int, oc_bn: int) -> Call:
    """The conv2d as nn.contrib_conv2d_winograd_without_weight_transform on NCHW{ic_bn}c
    data, its weight transformed and packed (alpha, alpha, O/oc_bn, I, oc_bn) by calls
    that FoldConstant evaluates when the weight is bound; every new call carries the
    conv's span."""
    weight = args[1]
    out_c, in_c = call.args[1].ty.shape[:2]
    alpha = tile + 2
    span = call.span
    transformed = Call(op(WEIGHT_OP), (weight,), Attrs({"tile_size": IntImm(tile)}), span=span)
    newshape = to_ir_value((alpha, alpha, out_c // oc_bn, oc_bn, in_c))
    split = Call(op("reshape"), (transformed,), Attrs({"newshape": newshape}), span=span)
    packed = Call(op("transpose"), (split,), Attrs({"axes": to_ir_value((0, 1, 2, 4, 3))}), span=span)
    new = Attrs({"tile_size": IntImm(tile)}).with_(**dict(attrs.without("data_layout", "kernel_layout", "out_layout",
                                                                          "channels", "kernel_size").items()))
    new = new.with_(channels=IntImm(out_c), kernel_size=to_ir_value((3, 3)), data_layout=f"NCHW{ic_bn}c",
                    kernel_layout="OIHW", out_layout=f"NCHW{oc_bn}c")
    return Call(op(CONV_OP), (args[0], packed), new)
