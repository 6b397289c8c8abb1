"""onnxruntime's quantized contrib ops (domain com.microsoft) that TVM v0.16 imports
(python/tvm/relay/frontend/onnx.py `QLinearAdd`, `QLinearConcat`), as TVM imports them:

    QLinearAdd(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
      => qnn.quantize(add(qnn.dequantize(A, A_scale, A_zp), qnn.dequantize(B, B_scale, B_zp)),
                      C_scale, C_zp, out_dtype=<A's dtype>)
    QLinearConcat(Y_scale, Y_zp, X1, X1_scale, X1_zp, X2, ...; axis)
      => qnn.concatenate((X1, X2, ...), (X1_scale, ...), (X1_zp, ...), Y_scale, Y_zp, axis=axis)

TVM keeps QLinearAdd in float (onnxruntime computes it so: dequantize, add, quantize)
rather than qnn.add.  A scale or zero point is a scalar (qparams.py).  Other com.microsoft
ops are not supported.
"""

from __future__ import annotations

from ...ir.expr import Expr
from .builder import call, dtype, make_tuple
from .context import NodeContext
from .errors import NodeError
from .qparams import qparam
from .registry import converter

CONTRIB = "com.microsoft"


@converter("QLinearAdd", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    a, b = ctx.input(0), ctx.input(3)
    out_dtype = dtype(a)
    if out_dtype not in ("int8", "uint8"):
        raise NodeError(f"A must be int8 or uint8, found {out_dtype}")
    a = call("qnn.dequantize", a, qparam(ctx, 1, "A_scale", "float32"), qparam(ctx, 2, "A_zero_point", "int32"))
    b = call("qnn.dequantize", b, qparam(ctx, 4, "B_scale", "float32"), qparam(ctx, 5, "B_zero_point", "int32"))
    return call("qnn.quantize", call("add", a, b), qparam(ctx, 6, "C_scale", "float32"),
                qparam(ctx, 7, "C_zero_point", "int32"), out_dtype=out_dtype)


@converter("QLinearConcat", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    count = len(ctx.node.input)
    if count < 5 or count % 3 != 2:
        raise NodeError("QLinearConcat takes Y_scale, Y_zero_point, then (tensor, scale, zero point) "
                        f"triples; found {count} inputs")
    tensors = [ctx.input(k) for k in range(2, count, 3)]
    scales = [qparam(ctx, k + 1, f"the scale of input {k}", "float32") for k in range(2, count, 3)]
    zero_points = [qparam(ctx, k + 2, f"the zero point of input {k}", "int32") for k in range(2, count, 3)]
    axis = ctx.attrs.int("axis")
    return call("qnn.concatenate", make_tuple(tensors), make_tuple(scales), make_tuple(zero_points),
                qparam(ctx, 0, "Y_scale", "float32"), qparam(ctx, 1, "Y_zero_point", "int32"), axis=int(axis))

