"""Activations: the ones Relay has (`nn.relu`, `nn.leaky_relu`, `nn.prelu`, `sigmoid`),
and the ones composed from other ops (Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus,
Mish, Gelu, Swish...): one node, several calls, all with the node's span.
"""

from __future__ import annotations

import math

from ...ir.expr import Expr
from .builder import call, dtype, scalar, shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter


def _where_negative(x: Expr, negative: Expr, positive: Expr | None = None) -> Expr:
    """`negative` where x < 0 (or <= 0), else `positive` (x itself by default)."""
    return call("where", call("greater", x, scalar(0, x)), x if positive is None else positive, negative)


def leaky_relu(x: Expr, alpha: float) -> Expr:
    if alpha >= 0:
        return call("nn.leaky_relu", x, alpha=alpha)
    return _where_negative(x, call("multiply", x, scalar(alpha, x)))


@converter("LeakyRelu")
def _(ctx: NodeContext) -> Expr:
    return leaky_relu(ctx.input(0), ctx.attrs.float("alpha", 0.01))


@converter("PRelu")
def _(ctx: NodeContext) -> Expr:
    x, slope = ctx.input(0), ctx.input(1)
    xs, ss = shape(x), list(shape(slope))
    if ctx.opset < 7 and len(ss) == 1 and len(xs) >= 2 and ss[0] == xs[1] != 1:  # one slope per channel
        return call("nn.prelu", x, slope, axis=1)
    while len(ss) > 1 and ss[0] == 1 and len(ss) >= len(xs):
        ss.pop(0)
    if len(xs) >= 2 and len(ss) == len(xs) - 1 and all(d == 1 for d in ss[1:]) and ss[0] == xs[1]:
        return call("nn.prelu", x, call("reshape", slope, newshape=(-1,)), axis=1)
    return _where_negative(x, call("multiply", x, slope))


def elu(x: Expr, alpha: float) -> Expr:
    return _where_negative(x, _expm1_scaled(x, alpha))


@converter("Elu")
def _(ctx: NodeContext) -> Expr:
    return elu(ctx.input(0), ctx.attrs.float("alpha", 1.0))


def _expm1_scaled(x: Expr, alpha: float) -> Expr:
    return call("multiply", scalar(alpha, x), call("subtract", call("exp", x), scalar(1, x)))


@converter("Selu")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    alpha = ctx.attrs.float("alpha", 1.67326319217681884765625)
    gamma = ctx.attrs.float("gamma", 1.05070102214813232421875)
    return call("multiply", scalar(gamma, x), _where_negative(x, _expm1_scaled(x, alpha)))


@converter("Celu")
def _(ctx: NodeContext) -> Expr:
    x, alpha = ctx.input(0), ctx.attrs.float("alpha", 1.0)
    scaled = call("divide", x, scalar(alpha, x))
    return _where_negative(x, _expm1_scaled(scaled, alpha))


def thresholded_relu(x: Expr, alpha: float) -> Expr:
    return call("where", call("greater", x, scalar(alpha, x)), x, scalar(0, x))


@converter("ThresholdedRelu")
def _(ctx: NodeContext) -> Expr:
    return thresholded_relu(ctx.input(0), ctx.attrs.float("alpha", 1.0))


def hard_sigmoid(x: Expr, alpha: float, beta: float) -> Expr:
    linear = call("add", call("multiply", x, scalar(alpha, x)), scalar(beta, x))
    return call("clip", linear, a_min=0.0, a_max=1.0)


@converter("HardSigmoid")
def _(ctx: NodeContext) -> Expr:
    return hard_sigmoid(ctx.input(0), ctx.attrs.float("alpha", 0.2), ctx.attrs.float("beta", 0.5))


@converter("HardSwish")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    return call("multiply", x, hard_sigmoid(x, 1 / 6, 0.5))


def softplus(x: Expr) -> Expr:
    """log(1 + exp(x)), with log(1 + u) computed as u·log(w)/(w - 1), w = 1 + u, so that it
    keeps its precision where exp(x) is tiny (Relay has no log1p); x itself where exp(x)
    would overflow the formula."""
    u = call("exp", x)
    w = call("add", u, scalar(1, x))
    ratio = call("divide", call("multiply", u, call("log", w)), call("subtract", w, scalar(1, x)))
    small = call("where", call("equal", w, scalar(1, x)), u, ratio)
    large = scalar(10 if dtype(x) == "float16" else 20, x)
    return call("where", call("greater", x, large), x, small)


@converter("Softplus")
def _(ctx: NodeContext) -> Expr:
    return softplus(ctx.input(0))


def softsign(x: Expr) -> Expr:
    return call("divide", x, call("add", call("abs", x), scalar(1, x)))


@converter("Softsign")
def _(ctx: NodeContext) -> Expr:
    return softsign(ctx.input(0))


@converter("Mish")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    return call("multiply", x, call("tanh", softplus(x)))


@converter("Gelu")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    approximate = ctx.attrs.string("approximate", "none")
    if approximate == "none":
        inner = call("erf", call("multiply", x, scalar(1 / math.sqrt(2), x)))
    elif approximate == "tanh":
        cube = call("multiply", call("multiply", x, x), x)
        poly = call("add", x, call("multiply", cube, scalar(0.044715, x)))
        inner = call("tanh", call("multiply", poly, scalar(math.sqrt(2 / math.pi), x)))
    else:
        raise NodeError(f"approximate={approximate} is not supported (none or tanh)")
    half = call("multiply", x, scalar(0.5, x))
    return call("multiply", half, call("add", inner, scalar(1, x)))


@converter("Swish")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    return call("multiply", x, call("sigmoid", call("multiply", x, scalar(ctx.attrs.float("alpha", 1.0), x))))


@converter("Shrink")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    bias, lambd = ctx.attrs.float("bias", 0.0), ctx.attrs.float("lambd", 0.5)
    below = call("where", call("less", x, scalar(-lambd, x)), call("add", x, scalar(bias, x)), scalar(0, x))
    return call("where", call("greater", x, scalar(lambd, x)), call("subtract", x, scalar(bias, x)), below)
