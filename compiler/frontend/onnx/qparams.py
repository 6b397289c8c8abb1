"""Scales and zero points of the quantized ops, read as TVM's frontend reads them
(`get_scalar`, `get_scalar_or_1d_tensor`): a known value becomes a constant of the dtype
qnn wants (scales float32, zero points int32), a run-time one is cast to it; a
one-element tensor is a scalar.  A missing zero point is 0, as every ONNX quantized op
says.  `requantize` re-expresses an int32 accumulation with the output's scale and zero
point as TVM's converters do: qnn.requantize when the output scale is a constant, else
qnn.dequantize then qnn.quantize.
"""

from __future__ import annotations

import math

from ...ir.expr import Constant, Expr
from .builder import call, const, dtype, shape
from .context import NodeContext
from .errors import NodeError


def qparam(ctx: NodeContext, k: int, what: str, as_dtype: str, channels=None) -> Expr:
    """Input k as a scalar of `as_dtype`, or (`channels` given) also a vector of that many
    values, one per channel (of any length when the channel extent is unknown, `?`: the
    qnn op's relation checks it once the extent is known); 0 when an int32 zero point is
    absent."""
    expr = ctx.optional(k)
    if expr is None:
        if as_dtype != "int32":
            raise NodeError(f"{what} (input {k}) is required")
        return const(0, "int32")
    allowed = "a scalar" if channels is None else f"a scalar or a vector of {channels} values (one per channel)"
    known = ctx.static(k)
    dims = tuple(known.shape) if known is not None else shape(expr)
    size = None if any(not isinstance(d, int) for d in dims) else math.prod(dims)
    if size != 1 and (channels is None or len(dims) != 1 or (isinstance(channels, int) and dims[0] != channels)):
        raise NodeError(f"{what} (input {k}) must be {allowed}, found shape {list(dims)}")
    if known is not None:
        value = known.reshape(()) if size == 1 else known
        return const(value.astype(as_dtype), as_dtype)
    if size == 1 and dims != ():
        expr = call("reshape", expr, newshape=[])
    return expr if dtype(expr) == as_dtype else call("cast", expr, dtype=as_dtype)


def requantize(out: Expr, scale: Expr, y_scale: Expr, y_zp: Expr, out_dtype: str, axis: int, **rounding) -> Expr:
    """out (scale `scale`, zero point 0) re-expressed with y_scale and y_zp."""
    zero = const(0, "int32")
    if isinstance(y_scale, Constant):
        return call("qnn.requantize", out, scale, zero, y_scale, y_zp, axis=axis, out_dtype=out_dtype, **rounding)
    real = call("qnn.dequantize", out, scale, zero, axis=axis)
    return call("qnn.quantize", real, y_scale, y_zp, axis=axis, out_dtype=out_dtype)
