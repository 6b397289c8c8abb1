"""Output channels padded to whole vectors: a conv2d whose output channels have no block
that fills the vector registers computes a few zero filters more, and a strided_slice
drops them (AlterOpLayout's first step on an AVX-512 host, before the layout rewriter).

    pad_out_channels(func, simd_lanes) -> Function

x86_channel_blocks.py takes, for channels without a power-of-two block up to the lanes,
the divisor up to twice the lanes with the most channels per register.  For 24 channels
that is a block of 24 (a vector of 16 and one of 8, 75% of the lanes busy); for 1000
(SqueezeNet 1.1's classifier, 512 -> 1000 at 13x13) it is 20 (16 + 4: 62%), and the
convolution ran at 94 GFLOP/s where onnxruntime's node, which pads its NCHWc filters to
whole blocks (MLAS), ran at 248.  Here a float32 NCHW/OIHW conv2d without groups and with
a bound (constant) weight whose output channels are not a multiple of the lanes gets its
weight padded with zero filters up to the next multiple when that fills more of the lanes
than the block would (1000 -> 1008: 99%; 24 -> 32 is no better than 24's 75%, so 24
stays); the conv2d then takes blocks of 16, and `strided_slice(axes=[1], end=[channels])`
gives back the channels asked for.  The layout rewriter puts the NCHW16c -> NCHW
transform before that slice (a slice whose end does not divide by the block stays in the
old layout).  A weight given at run time is left alone (it would be padded on every call).

Measured (1 thread, relaylens profile, load 7): the classifier's convolution alone in
NCHWc, blocks of 20 1.86-2.00 ms, of 40 1.49 ms, 1008 channels in blocks of 16 1.12-1.13 ms.

Spans: the padded weight takes the weight's span, the new conv2d and the strided_slice
the conv2d's.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attrs, IntImm
from ..ir.expr import Call, Constant, Expr, Function, Op, op
from ..ir.functor import ExprMutator
from ..ir.types import TensorType
from ..ops import get_op
from ..ops.attrs import to_ir_value
from .x86_channel_blocks import channel_block, lanes_filled


def padded_channels(out_channels: int, simd_lanes: int) -> int | None:
    """The channels to compute for `out_channels` outputs, or None to keep them: the next
    multiple of the lanes when that fills more lanes than channel_block's block."""
    if out_channels % simd_lanes == 0 or out_channels < simd_lanes:
        return None
    padded = -(-out_channels // simd_lanes) * simd_lanes
    block = channel_block(out_channels, simd_lanes)
    if out_channels / padded <= lanes_filled(block, simd_lanes):
        return None
    return padded


def pad_conv2d(call: Call, simd_lanes: int) -> Expr | None:
    """`strided_slice(conv2d(data, padded weight))` for a conv2d that padded_channels
    pads (see the module doc), else None."""
    if not (isinstance(call.op, Op) and call.op.name == "nn.conv2d" and len(call.args) == 2):
        return None
    data, weight = call.args
    dty, wty, oty = data.ty, weight.ty, call.ty
    if not (isinstance(weight, Constant) and all(isinstance(t, TensorType) for t in (dty, wty, oty))):
        return None
    a = get_op("nn.conv2d").normalize_attrs(call.attrs)
    if (a.groups != 1 or a.data_layout != "NCHW" or a.kernel_layout != "OIHW" or a.out_layout not in ("", "NCHW")
            or wty.dtype != "float32" or dty.dtype != "float32" or (a.out_dtype or "float32") != "float32"
            or not all(isinstance(d, int) for d in (*dty.shape, *wty.shape, *oty.shape))):
        return None
    out_c = wty.shape[0]
    padded = padded_channels(out_c, simd_lanes)
    if padded is None or weight.data is None:
        return None
    values = np.asarray(weight.data)
    filled = np.zeros((padded, *values.shape[1:]), dtype=values.dtype)
    filled[:out_c] = values
    new_weight = Constant(filled, ty=TensorType((padded, *wty.shape[1:]), wty.dtype), span=weight.span)
    conv = Call(call.op, (data, new_weight), call.attrs.with_(channels=IntImm(padded)),
                ty=TensorType((oty.shape[0], padded, *oty.shape[2:]), oty.dtype), span=call.span)
    attrs = Attrs({"begin": to_ir_value([0]), "end": to_ir_value([out_c]), "strides": to_ir_value([1]),
                   "axes": to_ir_value([1])})
    return Call(op("strided_slice"), (conv,), attrs, ty=oty, span=call.span)


class _PadOutChannels(ExprMutator):
    def __init__(self, simd_lanes: int) -> None:
        super().__init__()
        self.simd_lanes = simd_lanes

    def visit_call(self, call: Call) -> Expr:
        new = self.rebuild(call)
        return pad_conv2d(new, self.simd_lanes) or new


def pad_out_channels(func: Function, simd_lanes: int) -> Function:
    """`func` with every conv2d that padded_channels pads rewritten (see the module doc)."""
    return _PadOutChannels(simd_lanes).visit(func)
