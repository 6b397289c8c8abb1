"""Normalisations: BatchNormalization, InstanceNormalization, LRN and GroupNormalization
map to Relay ops; LayerNormalization does over the last axis; RMSNormalization,
MeanVarianceNormalization, LpNormalization and LayerNormalization over several axes are
composed from reductions.
"""

from __future__ import annotations

from ...ir.expr import Expr
from .builder import call, dtype, item, normalize_axis, rank, scalar, shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter


@converter("BatchNormalization")
def _(ctx: NodeContext) -> Expr:
    if ctx.attrs.int("training_mode", 0):
        raise NodeError("training_mode=1 is not supported (inference only)")
    if ctx.opset < 9 and not ctx.attrs.int("spatial", 1):
        raise NodeError("spatial=0 is not supported")
    args = [ctx.input(k) for k in range(5)]
    out = call("nn.batch_norm", *args, axis=1, epsilon=ctx.attrs.float("epsilon", 1e-5))
    return item(out, 0)


@converter("InstanceNormalization")
def _(ctx: NodeContext) -> Expr:
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    return call("nn.instance_norm", x, scale, bias, axis=1, epsilon=ctx.attrs.float("epsilon", 1e-5))


@converter("LRN")
def _(ctx: NodeContext) -> Expr:
    return call("nn.lrn", ctx.input(0), size=ctx.attrs.int("size"), axis=1,
                alpha=ctx.attrs.float("alpha", 1e-4), beta=ctx.attrs.float("beta", 0.75),
                bias=ctx.attrs.float("bias", 1.0))


@converter("LayerNormalization")
def _(ctx: NodeContext) -> list[Expr]:
    """`nn.layer_norm` over the last axis; over several axes, or with the Mean and
    InvStdDev outputs, the formula from reductions."""
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.optional(2)
    n = rank(x)
    axis = ctx.attrs.int("axis", -1)
    if not -n <= axis < n:
        raise NodeError(f"axis {axis} is out of range for rank {n}")
    axis %= n
    epsilon = ctx.attrs.float("epsilon", 1e-5)
    simple = axis == n - 1 and rank(scale) == 1 and (bias is None or rank(bias) == 1)
    if simple and not (ctx.wants(1) or ctx.wants(2)):
        beta = bias if bias is not None else call("zeros", shape=shape(scale), dtype=dtype(x))
        return [call("nn.layer_norm", x, scale, beta, axis=-1, epsilon=epsilon, center=bias is not None)]
    axes = tuple(range(axis, n))
    mean = call("mean", x, axis=axes, keepdims=True)
    centred = call("subtract", x, mean)
    variance = call("mean", call("multiply", centred, centred), axis=axes, keepdims=True)
    inv_std = call("rsqrt", call("add", variance, scalar(epsilon, x)))
    out = call("multiply", call("multiply", centred, inv_std), scale)
    if bias is not None:
        out = call("add", out, bias)
    return [out, mean, inv_std]


@converter("RMSNormalization")
def _(ctx: NodeContext) -> Expr:
    x, scale = ctx.input(0), ctx.input(1)
    n = rank(x)
    axes = tuple(range(normalize_axis(ctx.attrs.int("axis", -1), n), n))
    mean_square = call("mean", call("multiply", x, x), axis=axes, keepdims=True)
    inv_rms = call("rsqrt", call("add", mean_square, scalar(ctx.attrs.float("epsilon", 1e-5), x)))
    return call("multiply", call("multiply", x, inv_rms), scale)


@converter("GroupNormalization")
def _(ctx: NodeContext) -> Expr:
    """`nn.group_norm`; before opset 21 scale and bias hold one value per group, which is
    repeated over the group's channels."""
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    groups = ctx.attrs.int("num_groups")
    channels = shape(x)[1]
    if ctx.opset < 21:
        if not isinstance(channels, int):
            raise NodeError("per-group scale and bias need a static channel count")
        scale, bias = (call("repeat", t, repeats=channels // groups, axis=0) for t in (scale, bias))
    return call("nn.group_norm", x, scale, bias, num_groups=groups, axis=1,
                epsilon=ctx.attrs.float("epsilon", 1e-5))


@converter("MeanVarianceNormalization")
def _(ctx: NodeContext) -> Expr:
    """(x - E[x]) / (sqrt(E[x²] - E[x]²) + 1e-9), as ONNX's function body computes it."""
    x = ctx.input(0)
    axes = tuple(normalize_axis(a, rank(x)) for a in ctx.attrs.ints("axes", (0, 2, 3)))
    mean = call("mean", x, axis=axes, keepdims=True)
    mean_square = call("mean", call("multiply", x, x), axis=axes, keepdims=True)
    std = call("sqrt", call("subtract", mean_square, call("multiply", mean, mean)))
    return call("divide", call("subtract", x, mean), call("add", std, scalar(1e-9, x)))


@converter("LpNormalization")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    axis = normalize_axis(ctx.attrs.int("axis", -1), rank(x))
    p = ctx.attrs.int("p", 2)
    if p == 1:
        norm = call("sum", call("abs", x), axis=(axis,), keepdims=True)
    elif p == 2:
        norm = call("sqrt", call("sum", call("multiply", x, x), axis=(axis,), keepdims=True))
    else:
        raise NodeError(f"p={p} is not supported (1 or 2)")
    zero = call("equal", norm, scalar(0, x))
    return call("where", zero, scalar(0, x), call("divide", x, norm))
