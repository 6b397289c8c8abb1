"""QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, as TVM v0.16 imports them
(python/tvm/relay/frontend/onnx.py):

    QuantizeLinear(x, y_scale, y_zp; axis)     => qnn.quantize(x, y_scale, y_zp, axis=axis, out_dtype=<y_zp's>)
    DequantizeLinear(x, x_scale, x_zp; axis)   => qnn.dequantize(x, x_scale, x_zp, axis=axis)
    DynamicQuantizeLinear(x)                    => (qnn.quantize(x, s, zp, out_dtype="uint8"), s, zp) with
        s  = (maximum(0, max(x)) - minimum(0, min(x))) / 255, or 1 where that span is 0
             (onnxruntime's choice; TVM's 0 made the zero point 0 / 0)
        zp = cast(round(clip(0 - min(x) / s, 0, 255)), "uint8")

A scale or zero point is a scalar (per tensor) or, from opset 13, a vector along `axis`
(default 1; 0 for a tensor of rank < 2, as TVM sets it); a missing zero point is 0 and
the output uint8 (or opset 21's `output_dtype`).  qnn.quantize rounds halves away from
zero where ONNX rounds them to even: a tie comes out one quantum apart.

Refused at the node: blocked quantization (opset 21's `block_size` > 0) and the 4-bit and
float8 types (whose `saturate` attribute is the only one it concerns, and is otherwise
ignored, as the spec says).
"""

from __future__ import annotations

from onnx import TensorProto

from ...ir.expr import Expr
from .builder import call, const, dtype, normalize_axis, rank, shape
from .context import NodeContext
from .dtypes import type_name
from .errors import NodeError
from .qparams import qparam
from .registry import converter

QUANTIZED = ("int8", "uint8", "int16", "uint16")
_OUTPUT_DTYPES = {TensorProto.INT8: "int8", TensorProto.UINT8: "uint8", TensorProto.INT16: "int16",
                  TensorProto.UINT16: "uint16"}


def _no_blocks(ctx: NodeContext) -> None:
    block_size = ctx.attrs.int("block_size", 0)
    if block_size > 0:
        raise NodeError(f"blocked quantization (block_size={block_size}) is not supported; only per-tensor "
                        f"and per-axis scales are")


def _axis(ctx: NodeContext, x: Expr) -> int:
    """The channel axis of a per-axis scale (TVM: 0 below rank 2; none before opset 13)."""
    if ctx.opset < 13:
        return 0
    if rank(x) < 2:
        return 0
    return normalize_axis(ctx.attrs.int("axis", 1), rank(x))


def _channels(ctx: NodeContext, x: Expr, axis: int):
    """The extent of the channel axis a per-axis scale must have; None before opset 13."""
    if ctx.opset < 13:
        return None
    return shape(x)[axis] if rank(x) > 0 else 1


def _float32(x: Expr, what: str) -> Expr:
    """x as qnn.quantize takes it: float16 cast to float32 (opset 10's int32 x, which
    onnxruntime does not run either, is refused)."""
    if dtype(x) == "float32":
        return x
    if dtype(x) == "float16":
        return call("cast", x, dtype="float32")
    raise NodeError(f"{what} must be float32 or float16, found {dtype(x)}")


@converter("QuantizeLinear", since=10)
def _(ctx: NodeContext) -> Expr:
    _no_blocks(ctx)
    x = _float32(ctx.input(0), "x")
    zp = ctx.optional(2)
    wanted = ctx.attrs.int("output_dtype", 0)
    if zp is not None:
        out_dtype = dtype(zp)
    elif wanted:
        if wanted not in _OUTPUT_DTYPES:
            raise NodeError(f"output_dtype {type_name(wanted)} is not supported (int8, uint8, int16, uint16 are)")
        out_dtype = _OUTPUT_DTYPES[wanted]
    else:
        out_dtype = "uint8"
    if out_dtype not in QUANTIZED:
        raise NodeError(f"quantizing to {out_dtype} is not supported (int8, uint8, int16, uint16 are)")
    axis = _axis(ctx, x)
    channels = _channels(ctx, x, axis)
    scale = qparam(ctx, 1, "y_scale", "float32", channels)
    return call("qnn.quantize", x, scale, qparam(ctx, 2, "y_zero_point", "int32", channels),
                axis=axis, out_dtype=out_dtype)


@converter("DequantizeLinear", since=10)
def _(ctx: NodeContext) -> Expr:
    _no_blocks(ctx)
    x = ctx.input(0)
    if dtype(x) not in QUANTIZED + ("int32",):
        raise NodeError(f"dequantizing {dtype(x)} is not supported (int8, uint8, int16, uint16, int32 are)")
    scale_dtype = dtype(ctx.input(1))
    if scale_dtype not in ("float32", "float16"):
        raise NodeError(f"x_scale must be float32 or float16, found {scale_dtype}")
    axis = _axis(ctx, x)
    channels = _channels(ctx, x, axis)
    return call("qnn.dequantize", x, qparam(ctx, 1, "x_scale", "float32", channels),
                qparam(ctx, 2, "x_zero_point", "int32", channels), axis=axis, out_dtype=scale_dtype)


@converter("DynamicQuantizeLinear", since=11)
def _(ctx: NodeContext) -> list[Expr]:
    x = ctx.input(0)
    if dtype(x) != "float32":
        raise NodeError(f"x must be float32, found {dtype(x)}")
    zero = const(0.0, "float32")
    low = call("min", x)
    span = call("subtract", call("maximum", zero, call("max", x)), call("minimum", zero, low))
    # an all-zero x: scale 1 as onnxruntime takes it (TVM's 0 / 255 made the zero point 0 / 0)
    scale = call("where", call("equal", span, zero), const(1.0, "float32"), call("divide", span, const(255.0, "float32")))
    zp = call("divide", low, scale)
    zp = call("cast", call("round", call("clip", call("subtract", zero, zp), a_min=0.0, a_max=255.0)), dtype="uint8")
    y = call("qnn.quantize", x, scale, call("cast", zp, dtype="int32"), axis=0, out_dtype="uint8")
    return [y, scale, zp]
