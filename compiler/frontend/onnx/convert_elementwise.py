"""Element-wise ops: math, comparisons, logic, bitwise, Clip, Cast, Where, Identity, Dropout.

ONNX broadcasting is NumPy's, as Relay's, so binary ops map one to one.  Functions Relay
has no op for (Round to even, Sinh, Asin...) are composed from the ops it has (one node,
several calls, one span).
"""

from __future__ import annotations

import math

from ...ir.expr import Expr
from .builder import call, dtype, rank, scalar, static_shape
from .context import NodeContext
from .dtypes import relay_dtype
from .errors import NodeError
from .registry import converter

UNARY = {
    "Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Erf": "erf", "Sqrt": "sqrt", "Exp": "exp",
    "Log": "log", "Neg": "negative", "Abs": "abs", "Floor": "floor", "Ceil": "ceil", "Sin": "sin",
    "Cos": "cos", "Tan": "tan", "Atan": "atan", "Sign": "sign", "Not": "logical_not", "IsNaN": "isnan",
    "BitwiseNot": "bitwise_not",
}

BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Equal": "equal", "Less": "less",
    "Greater": "greater", "LessOrEqual": "less_equal", "GreaterOrEqual": "greater_equal",
    "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
    "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
}

VARIADIC = {"Sum": "add", "Max": "maximum", "Min": "minimum", "Mean": "add"}


@converter(*UNARY)
def _(ctx: NodeContext) -> Expr:
    return call(UNARY[ctx.op_type], ctx.input(0))


@converter(*BINARY)
def _(ctx: NodeContext) -> Expr:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.opset < 7 and ctx.attrs.int("broadcast", 0) and "axis" in ctx.attrs:
        b = _align(b, rank(a), ctx.attrs.int("axis"))
    return call(BINARY[ctx.op_type], a, b)


def _align(b: Expr, target_rank: int, axis: int) -> Expr:
    """Before opset 7, `broadcast=1, axis=k` lines b's axes up with a's from axis k on:
    trailing unit axes make NumPy broadcasting do the same."""
    axis = axis % target_rank if axis < 0 else axis
    trailing = target_rank - axis - rank(b)
    if trailing < 0:
        raise NodeError(f"axis {axis} leaves no room for the {rank(b)} axes of input 1")
    return b if trailing == 0 else call("expand_dims", b, axis=rank(b), num_newaxis=trailing)


@converter(*VARIADIC)
def _(ctx: NodeContext) -> Expr:
    args = ctx.variadic()
    result = args[0]
    for arg in args[1:]:
        result = call(VARIADIC[ctx.op_type], result, arg)
    if ctx.op_type == "Mean":
        result = call("divide", result, scalar(len(args), result))
    return result


@converter("Pow")
def _(ctx: NodeContext) -> Expr:
    base, exponent = ctx.input(0), ctx.input(1)
    if dtype(exponent) != dtype(base):  # opset 12 allows another exponent type
        exponent = call("cast", exponent, dtype=dtype(base))
    return call("power", base, exponent)


@converter("Mod")
def _(ctx: NodeContext) -> Expr:
    """fmod=1: the sign of the dividend (C's fmod); fmod=0: the sign of the divisor."""
    fmod = ctx.attrs.int("fmod", 0)
    return call("mod" if fmod else "floor_mod", ctx.input(0), ctx.input(1))


@converter("Reciprocal")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    return call("divide", scalar(1, x), x)


@converter("Round")
def _(ctx: NodeContext) -> Expr:
    """Halves to even, as ONNX (and NumPy) round; Relay's `round` takes them away from zero."""
    x = ctx.input(0)
    y = call("floor", call("add", x, scalar(0.5, x)))
    tie = call("equal", call("subtract", y, x), scalar(0.5, x))
    odd = call("equal", call("floor_mod", y, scalar(2, x)), scalar(1, x))
    return call("where", call("logical_and", tie, odd), call("subtract", y, scalar(1, x)), y)


@converter("IsInf")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    positive, negative = ctx.attrs.int("detect_positive", 1), ctx.attrs.int("detect_negative", 1)
    inf = call("isinf", x)
    if positive and negative:
        return inf
    if not positive and not negative:
        return call("logical_and", inf, call("logical_not", inf))
    sign = call("greater" if positive else "less", x, scalar(0, x))
    return call("logical_and", inf, sign)


# --- Clip, Cast, Where ------------------------------------------------------------------------------


@converter("Clip")
def _(ctx: NodeContext) -> Expr:
    """clip when both bounds are known and x is floating point; otherwise maximum/minimum."""
    x = ctx.input(0)
    if ctx.opset < 11:
        lo = ctx.attrs.float("min", None)
        hi = ctx.attrs.float("max", None)
        low = None if lo is None else scalar(lo, x)
        high = None if hi is None else scalar(hi, x)
    else:
        low, high = ctx.optional(1), ctx.optional(2)
        lo, hi = (_scalar_value(ctx, k) for k in (1, 2))
    if lo is not None and hi is not None and dtype(x).startswith("float"):
        return call("clip", x, a_min=lo, a_max=hi)
    if low is not None:
        x = call("maximum", x, low)
    if high is not None:
        x = call("minimum", x, high)
    return x


def _scalar_value(ctx: NodeContext, k: int) -> float | None:
    value = ctx.static(k)
    return None if value is None else float(value.reshape(-1)[0])


@converter("Cast")
def _(ctx: NodeContext) -> Expr:
    target = relay_dtype(ctx.attrs.int("to"))
    x = ctx.input(0)
    return x if dtype(x) == target else call("cast", x, dtype=target)


@converter("CastLike")
def _(ctx: NodeContext) -> Expr:
    x, like = ctx.input(0), ctx.input(1)
    return x if dtype(x) == dtype(like) else call("cast", x, dtype=dtype(like))


@converter("Where")
def _(ctx: NodeContext) -> Expr:
    return call("where", ctx.input(0), ctx.input(1), ctx.input(2))


@converter("Identity")
def _(ctx: NodeContext) -> Expr:
    return ctx.input(0)


@converter("Dropout")
def _(ctx: NodeContext) -> list[Expr]:
    """Inference: the input itself, and a mask of ones if asked for."""
    training = ctx.static(2)
    if ctx.optional(2) is not None and (training is None or bool(training)):
        raise NodeError("training_mode must be a constant false")
    x = ctx.input(0)
    if not ctx.wants(1):
        return [x]
    mask_shape = static_shape(x, "the mask output of Dropout")
    return [x, call("full", scalar(True, "bool"), shape=mask_shape, dtype="bool")]


# --- composed math ---------------------------------------------------------------------------------


@converter("Sinh", "Cosh")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    grow, shrink = call("exp", x), call("exp", call("negative", x))
    both = call("subtract" if ctx.op_type == "Sinh" else "add", grow, shrink)
    return call("multiply", both, scalar(0.5, x))


@converter("Asinh", "Acosh")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    square = call("add" if ctx.op_type == "Asinh" else "subtract", call("multiply", x, x), scalar(1, x))
    return call("log", call("add", x, call("sqrt", square)))


@converter("Atanh")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    ratio = call("divide", call("add", scalar(1, x), x), call("subtract", scalar(1, x), x))
    return call("multiply", call("log", ratio), scalar(0.5, x))


@converter("Asin", "Acos")
def _(ctx: NodeContext) -> Expr:
    """asin x = atan(x / sqrt(1 - x²)); acos x = π/2 - asin x."""
    x = ctx.input(0)
    cosine = call("sqrt", call("subtract", scalar(1, x), call("multiply", x, x)))
    asin = call("atan", call("divide", x, cosine))
    return asin if ctx.op_type == "Asin" else call("subtract", scalar(math.pi / 2, x), asin)


@converter("BitShift")
def _(ctx: NodeContext) -> Expr:
    """x · 2^y (LEFT) or x // 2^y (RIGHT), on the unsigned integers ONNX allows."""
    x, y = ctx.input(0), ctx.input(1)
    direction = ctx.attrs.string("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise NodeError(f"direction={direction} is not supported (LEFT or RIGHT)")
    factor = call("power", scalar(2, y), y)
    return call("multiply" if direction == "LEFT" else "floor_divide", x, factor)
