"""The integer layers: QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger, as TVM
v0.16 imports them (python/tvm/relay/frontend/onnx.py):

    QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp[, B])
      => qnn.requantize(nn.bias_add(qnn.conv2d(x, w, xzp, wzp, xs, ws, ...), B, axis=1),
                        multiply(xs, ws), 0, ys, yzp, axis=1, out_dtype=<yzp's>)
    QLinearMatMul(a, as, azp, b, bs, bzp, ys, yzp)
      => qnn.requantize(qnn.dense(a, transpose(b), azp, bzp, as, bs), multiply(as, bs), 0, ys, yzp,
                        axis=-1, rounding="TONEAREST", out_dtype=<yzp's>)
    ConvInteger(x, w[, xzp, wzp])       => qnn.conv2d(x, w, xzp, wzp, 1f, 1f, ...)     (int32)
    MatMulInteger(a, b[, azp, bzp])     => qnn.dense(a, transpose(b), azp, bzp, 1f, 1f)  (int32)

The weight's scale and zero point may be per output channel (a vector along the weight's
axis 0 for a convolution, along B's columns for a product), the others are scalars
(qparams.py).  An output scale known only at run time is requantized as TVM does it
then: qnn.dequantize, then qnn.quantize.  Products of rank above 2 flatten A to a dense
when B is 2-D, else broadcast and flatten the batch axes for a qnn.batch_matmul of A
and B transposed, as for MatMul (convert_nn.py); its B has one scale and zero point.
Convolutions are 2-D only, as in TVM; the padding is the input zero point (qnn.conv2d
pads the shifted input with 0).
"""

from __future__ import annotations

from ...ir.expr import Expr
from .builder import call, const, dtype, rank, shape, static_shape
from .context import NodeContext
from .convert_nn import matmul
from .errors import NodeError
from .qparams import qparam, requantize
from .registry import converter
from .windows import read_window

_INT8 = ("int8", "uint8")


def _int8(ctx: NodeContext, k: int, what: str) -> Expr:
    x = ctx.input(k)
    if dtype(x) not in _INT8:
        raise NodeError(f"{what} (input {k}) must be int8 or uint8, found {dtype(x)}")
    return x


def _out_dtype(ctx: NodeContext, k: int) -> str:
    out = dtype(ctx.input(k))
    if out not in _INT8:
        raise NodeError(f"y_zero_point (input {k}) must be int8 or uint8, found {out}")
    return out


def _conv(ctx: NodeContext, x: Expr, w: Expr, x_zp: Expr, w_zp_at: int, x_scale: Expr, w_scale_at: int | None):
    """qnn.conv2d of x and w; the weight's zero point (and scale) read from inputs w_zp_at
    (w_scale_at), scalars or one per output channel."""
    wshape = static_shape(w, f"the weight of {ctx.op_type}")
    if rank(x) != 4:
        raise NodeError(f"only 2-D convolutions are supported (input of rank 4), found rank {rank(x)}")
    window = read_window(ctx, x, wshape[2:])
    w_zp = qparam(ctx, w_zp_at, "the weight's zero point", "int32", wshape[0])
    w_scale = const(1.0, "float32") if w_scale_at is None else qparam(ctx, w_scale_at, "w_scale", "float32", wshape[0])
    out = call("qnn.conv2d", x, w, x_zp, w_zp, x_scale, w_scale, kernel_size=window.kernel, channels=wshape[0],
               strides=window.strides, padding=window.pads, dilation=window.dilations,
               groups=ctx.attrs.int("group", 1))
    return out, w_scale


@converter("QLinearConv", since=10)
def _(ctx: NodeContext) -> Expr:
    x, w = _int8(ctx, 0, "x"), _int8(ctx, 3, "w")
    x_scale = qparam(ctx, 1, "x_scale", "float32")
    out, w_scale = _conv(ctx, x, w, qparam(ctx, 2, "x_zero_point", "int32"), 5, x_scale, 4)
    bias = ctx.optional(8)
    if bias is not None:
        if dtype(bias) != "int32":
            raise NodeError(f"B (input 8) must be int32, found {dtype(bias)}")
        out = call("nn.bias_add", out, bias, axis=1)
    return requantize(out, call("multiply", x_scale, w_scale), qparam(ctx, 6, "y_scale", "float32"),
                      qparam(ctx, 7, "y_zero_point", "int32"), _out_dtype(ctx, 7), axis=1)


@converter("ConvInteger", since=10)
def _(ctx: NodeContext) -> Expr:
    x, w = _int8(ctx, 0, "x"), _int8(ctx, 1, "w")
    out, _ = _conv(ctx, x, w, qparam(ctx, 2, "x_zero_point", "int32"), 3, const(1.0, "float32"), None)
    return out


def _qmatmul(ctx: NodeContext, b_at: int, a_zp: Expr, b_zp_at: int, a_scale: Expr, b_scale_at: int | None):
    """The qnn.dense (B 2-D) or qnn.batch_matmul product of A (input 0) and B (input b_at);
    B's zero point (and scale) from inputs b_zp_at (b_scale_at), scalars or one per column
    of B."""
    a, b = _int8(ctx, 0, "A"), _int8(ctx, b_at, "B")
    columns = shape(b)[-1] if rank(b) >= 2 else 1
    b_zp = qparam(ctx, b_zp_at, "B's zero point", "int32", columns)
    b_scale = const(1.0, "float32") if b_scale_at is None else qparam(ctx, b_scale_at, "b_scale", "float32", columns)

    def dense(a2: Expr, weight: Expr, units: int | None) -> Expr:
        return call("qnn.dense", a2, weight, a_zp, b_zp, a_scale, b_scale, units=units, out_dtype="int32")

    def batch_matmul(a3: Expr, b3: Expr) -> Expr:
        if b_zp.ty.ndim or b_scale.ty.ndim:
            raise NodeError("a batched B takes a per-tensor scale and zero point (qnn.batch_matmul's)")
        return call("qnn.batch_matmul", a3, call("transpose", b3, axes=(0, 2, 1)), a_zp, b_zp, a_scale, b_scale)

    return matmul(a, b, dense, batch_matmul), b_scale


@converter("QLinearMatMul", since=10)
def _(ctx: NodeContext) -> Expr:
    a_scale = qparam(ctx, 1, "a_scale", "float32")
    out, b_scale = _qmatmul(ctx, 3, qparam(ctx, 2, "a_zero_point", "int32"), 5, a_scale, 4)
    return requantize(out, call("multiply", a_scale, b_scale), qparam(ctx, 6, "y_scale", "float32"),
                      qparam(ctx, 7, "y_zero_point", "int32"), _out_dtype(ctx, 7), axis=-1, rounding="TONEAREST")


@converter("MatMulInteger", since=10)
def _(ctx: NodeContext) -> Expr:
    out, _ = _qmatmul(ctx, 1, qparam(ctx, 2, "a_zero_point", "int32"), 3, const(1.0, "float32"), None)
    return out
