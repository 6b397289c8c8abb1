"""onnxruntime's quantized contrib ops (domain com.microsoft) that TVM v0.16 imports
(python/tvm/relay/frontend/onnx.py), as TVM imports them:

    QLinearAdd(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
      => qnn.quantize(add(qnn.dequantize(A, A_scale, A_zp), qnn.dequantize(B, B_scale, B_zp)),
                      C_scale, C_zp, out_dtype=<A's dtype>)
    QLinearMul: the same with multiply
    QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax (X, X_scale, X_zp, Y_scale, Y_zp)
      => qnn.quantize(f(qnn.dequantize(X, X_scale, X_zp)), Y_scale, Y_zp, out_dtype=<X's dtype>)
    QLinearAveragePool, QLinearGlobalAveragePool: the same with AveragePool's and
      GlobalAveragePool's pools (convert_pool.py; NCHW only: channels_last=1 is refused)
    QLinearConcat(Y_scale, Y_zp, X1, X1_scale, X1_zp, X2, ...; axis)
      => qnn.concatenate((X1, X2, ...), (X1_scale, ...), (X1_zp, ...), Y_scale, Y_zp, axis=axis)
    QGemm(A, A_scale, A_zp, B, B_scale, B_zp[, C, Y_scale, Y_zp]; alpha, transA, transB)
      => qnn.requantize(add(qnn.dense(A, B as (N, K), A_zp, B_zp, A_scale, B_scale), C),
                        multiply(A_scale, B_scale) [* alpha], 0, Y_scale, Y_zp, axis=-1,
                        rounding="TONEAREST", out_dtype=<A's dtype>)
      without Y_scale, a float result: multiply(cast(that sum, "float32"), the scale).

TVM keeps the element-wise ones in float (onnxruntime computes them so: dequantize, f,
quantize) rather than qnn.add or qnn.mul.  A scale or zero point is a scalar, but QGemm's
B_scale and B_zp, which may be one per column of B (qparams.py).  Other com.microsoft
ops are not supported.
"""

from __future__ import annotations

from ...ir.expr import Expr
from .builder import call, const, dtype, make_tuple, rank, static_shape
from .convert_activation import leaky_relu
from .convert_pool import global_pool, pool
from .context import NodeContext
from .errors import NodeError
from .qparams import qparam, requantize
from .registry import converter

CONTRIB = "com.microsoft"


def _quantized(ctx: NodeContext, k: int, what: str) -> Expr:
    x = ctx.input(k)
    if dtype(x) not in ("int8", "uint8"):
        raise NodeError(f"{what} (input {k}) must be int8 or uint8, found {dtype(x)}")
    return x


def _dequantized(ctx: NodeContext, k: int, what: str) -> Expr:
    """Input k in float, with its scale and zero point from inputs k + 1 and k + 2."""
    return call("qnn.dequantize", _quantized(ctx, k, what), qparam(ctx, k + 1, f"{what}_scale", "float32"),
                qparam(ctx, k + 2, f"{what}_zero_point", "int32"))


def _requantized(ctx: NodeContext, real: Expr, k: int, what: str) -> Expr:
    """`real` quantized with the scale and zero point of inputs k and k + 1, in input 0's dtype."""
    return call("qnn.quantize", real, qparam(ctx, k, f"{what}_scale", "float32"),
                qparam(ctx, k + 1, f"{what}_zero_point", "int32"), out_dtype=dtype(ctx.input(0)))


@converter("QLinearAdd", "QLinearMul", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    op = "add" if ctx.op_type == "QLinearAdd" else "multiply"
    real = call(op, _dequantized(ctx, 0, "A"), _dequantized(ctx, 3, "B"))
    return _requantized(ctx, real, 6, "C" if ctx.op_type == "QLinearAdd" else "Y")


@converter("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    x = _dequantized(ctx, 0, "X")
    if ctx.op_type == "QLinearSigmoid":
        real = call("sigmoid", x)
    elif ctx.op_type == "QLinearLeakyRelu":
        real = leaky_relu(x, ctx.attrs.float("alpha", 0.01))
    else:
        real = call("nn.softmax", x, axis=ctx.attrs.int("axis", -1))
    return _requantized(ctx, real, 3, "Y")


@converter("QLinearAveragePool", "QLinearGlobalAveragePool", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    if ctx.attrs.int("channels_last", 0):
        raise NodeError("channels_last=1 is not supported (NCHW only)")
    x = _dequantized(ctx, 0, "X")
    real = pool(ctx, x, "AveragePool") if ctx.op_type == "QLinearAveragePool" else global_pool(x, True)
    return _requantized(ctx, real, 3, "Y")


@converter("QGemm", domain=CONTRIB)
def _(ctx: NodeContext) -> Expr:
    a, b = _quantized(ctx, 0, "A"), _quantized(ctx, 3, "B")
    if rank(a) != 2 or rank(b) != 2:
        raise NodeError(f"A and B must be 2-D, found ranks {rank(a)} and {rank(b)}")
    trans_b = ctx.attrs.int("transB", 0)
    columns = static_shape(b, "B")[0 if trans_b else 1]
    a_scale, b_scale = qparam(ctx, 1, "A_scale", "float32"), qparam(ctx, 4, "B_scale", "float32", columns)
    if ctx.attrs.int("transA", 0):
        a = call("transpose", a, axes=(1, 0))
    if not trans_b:
        b = call("transpose", b, axes=(1, 0))
    out = call("qnn.dense", a, b, qparam(ctx, 2, "A_zero_point", "int32"),
               qparam(ctx, 5, "B_zero_point", "int32", columns), a_scale, b_scale, units=columns)
    bias = ctx.optional(6)
    if bias is not None:
        out = call("add", out, bias)
    scale = call("multiply", a_scale, b_scale)
    alpha = ctx.attrs.float("alpha", 1.0)
    if alpha != 1.0:
        scale = call("multiply", scale, const(alpha, "float32"))
    if ctx.optional(7) is None:
        return call("multiply", call("cast", out, dtype="float32"), scale)
    y_scale, y_zp = qparam(ctx, 7, "y_scale", "float32"), qparam(ctx, 8, "y_zero_point", "int32")
    return requantize(out, scale, y_scale, y_zp, dtype(ctx.input(0)), axis=-1, rounding="TONEAREST")


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

