"""onnxruntime's quantized contrib ops (domain com.microsoft) that TVM v0.16 imports
(python/tvm/relay/frontend/onnx.py `QLinearAdd`, `QLinearConcat`), as TVM imports them:

    QLinearAdd(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
      => qnn.quantize(add(qnn.dequantize(A, A_scale, A_zp), qnn.dequantize(B, B_scale, B_zp)),
                      C_scale, C_zp, out_dtype=<A's dtype>)
    QLinearConcat(Y_scale, Y_zp, X1, X1_scale, X1_zp, X2, ...; axis)
      => qnn.concatenate((X1, X2, ...), (X1_scale, ...), (X1_zp, ...), Y_scale, Y_zp, axis=axis)

TVM keeps QLinearAdd in float (onnxruntime computes it so: dequantize, add, quantize)
rather than qnn.add.  A scale or zero point is a scalar (a one-element tensor is reshaped
to one), zero points int32 (TVM's get_scalar); a missing zero point is 0, as the contrib
spec says.  Other com.microsoft ops are not supported.
"""

from __future__ import annotations

from ...ir.expr import Expr
from .builder import call, const, dtype, make_tuple, shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter

CONTRIB = "com.microsoft"


def _scalar(ctx: NodeContext, k: int, what: str, as_dtype: str) -> Expr:
    """Input k as a scalar of `as_dtype` (TVM's get_scalar); 0 when a zero point is absent."""
    expr = ctx.optional(k)
    if expr is None:
        if as_dtype != "int32":
            raise NodeError(f"{what} (input {k}) is required")
        return const(0, "int32")
    known = ctx.static(k)
    if known is not None:
        if known.size != 1:
            raise NodeError(f"{what} (input {k}) must be a scalar, found shape {list(known.shape)}")
        return const(known.reshape(()).astype(as_dtype), as_dtype)
    dims = shape(expr)
    if dims not in ((), (1,)):
        raise NodeError(f"{what} (input {k}) must be a scalar, found shape {list(dims)}")
    if dims == (1,):
        expr = call("reshape", expr, newshape=[])
    return expr if dtype(expr) == as_dtype else call("cast", expr, dtype=as_dtype)


@converter("QLinearAdd", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    a, b = ctx.input(0), ctx.input(3)
    out_dtype = dtype(a)
    if out_dtype not in ("int8", "uint8"):
        raise NodeError(f"A must be int8 or uint8, found {out_dtype}")
    a = call("qnn.dequantize", a, _scalar(ctx, 1, "A_scale", "float32"), _scalar(ctx, 2, "A_zero_point", "int32"))
    b = call("qnn.dequantize", b, _scalar(ctx, 4, "B_scale", "float32"), _scalar(ctx, 5, "B_zero_point", "int32"))
    return call("qnn.quantize", call("add", a, b), _scalar(ctx, 6, "C_scale", "float32"),
                _scalar(ctx, 7, "C_zero_point", "int32"), out_dtype=out_dtype)


@converter("QLinearConcat", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    count = len(ctx.node.input)
    if count < 5 or count % 3 != 2:
        raise NodeError("QLinearConcat takes Y_scale, Y_zero_point, then (tensor, scale, zero point) "
                        f"triples; found {count} inputs")
    tensors = [ctx.input(k) for k in range(2, count, 3)]
    scales = [_scalar(ctx, k + 1, f"the scale of input {k}", "float32") for k in range(2, count, 3)]
    zero_points = [_scalar(ctx, k + 2, f"the zero point of input {k}", "int32") for k in range(2, count, 3)]
    axis = ctx.attrs.int("axis")
    return call("qnn.concatenate", make_tuple(tensors), make_tuple(scales), make_tuple(zero_points),
                _scalar(ctx, 0, "Y_scale", "float32"), _scalar(ctx, 1, "Y_zero_point", "int32"), axis=int(axis))

