"""Reductions, ArgMax/ArgMin, the softmax family and TopK.

Reduce* take their axes as an attribute until ReduceSum-13 and the others' opset 18, as
an input from then on; no axes means all of them, unless `noop_with_empty_axes` says the
node is an identity.  Before opset 13, Softmax, LogSoftmax and Hardmax flatten the input
to 2-D at `axis` and normalise each row; from 13 they work along `axis` alone.
"""

from __future__ import annotations

from ...ir.expr import Expr
from .builder import call, dtype, item, normalize_axis, rank, scalar, shape, static_shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter

SIMPLE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod"}
COMPOSED = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


@converter(*SIMPLE, *COMPOSED)
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    since = 13 if ctx.op_type == "ReduceSum" else 18
    axes = ctx.axes(1, since)
    if not axes:
        if ctx.attrs.int("noop_with_empty_axes", 0):
            return x
        axes = None
    else:
        axes = tuple(sorted(normalize_axis(a, rank(x)) for a in axes))
    keep = bool(ctx.attrs.int("keepdims", 1))
    if ctx.op_type in SIMPLE:
        return call(SIMPLE[ctx.op_type], x, axis=axes, keepdims=keep)
    return _composed(ctx.op_type, x, axes, keep)


def _composed(op_type: str, x: Expr, axes, keep: bool) -> Expr:
    if op_type == "ReduceL1":
        return call("sum", call("abs", x), axis=axes, keepdims=keep)
    if op_type == "ReduceSumSquare":
        return call("sum", call("multiply", x, x), axis=axes, keepdims=keep)
    if op_type == "ReduceL2":
        return call("sqrt", call("sum", call("multiply", x, x), axis=axes, keepdims=keep))
    if op_type == "ReduceLogSum":
        return call("log", call("sum", x, axis=axes, keepdims=keep))
    # ReduceLogSumExp, shifted by the maximum so that exp cannot overflow
    top = call("max", x, axis=axes, keepdims=True)
    summed = call("sum", call("exp", call("subtract", x, top)), axis=axes, keepdims=keep)
    shift = top if keep else call("squeeze", top, axis=axes)
    return call("add", call("log", summed), shift)


@converter("ArgMax", "ArgMin")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    axis = normalize_axis(ctx.attrs.int("axis", 0), rank(x))
    out = call("argmax" if ctx.op_type == "ArgMax" else "argmin", x, axis=(axis,),
               keepdims=bool(ctx.attrs.int("keepdims", 1)),
               select_last_index=bool(ctx.attrs.int("select_last_index", 0)))
    return call("cast", out, dtype="int64")


# --- softmax ------------------------------------------------------------------------------------


@converter("Softmax", "LogSoftmax", "Hardmax")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    n = rank(x)
    axis = normalize_axis(ctx.attrs.int("axis", -1 if ctx.opset >= 13 else 1), n)
    if ctx.opset >= 13 or axis == n - 1:
        return _normalise(ctx.op_type, x, axis)
    dims = static_shape(x, f"{ctx.op_type} before opset 13 (on an axis other than the last)")
    rows = 1
    for d in dims[:axis]:
        rows *= d
    flat = call("reshape", x, newshape=(rows, -1))
    return call("reshape", _normalise(ctx.op_type, flat, 1), newshape=dims)


def _normalise(op_type: str, x: Expr, axis: int) -> Expr:
    if op_type == "Softmax":
        return call("nn.softmax", x, axis=axis)
    if op_type == "LogSoftmax":
        return call("nn.log_softmax", x, axis=axis)
    depth = shape(x)[axis]
    if not isinstance(depth, int):
        raise NodeError("Hardmax needs a static extent along its axis")
    index = call("argmax", x, axis=(axis,), keepdims=False)
    return call("one_hot", index, scalar(1, x), scalar(0, x), depth=depth, axis=axis, dtype=dtype(x))


# --- TopK ------------------------------------------------------------------------------------------


@converter("TopK")
def _(ctx: NodeContext) -> list[Expr]:
    """`topk` with both results, the indices in int64; `largest=0` sorts ascending.  Equal
    values come lower index first, as ONNX asks; `sorted=0` leaves the order free, so the
    sorted order does too.  k must be known before run time, as every extent the importer
    gives a converter (a run-time k would make dyn.topk, which only the interpreter runs)."""
    x = ctx.input(0)
    axis = normalize_axis(ctx.attrs.int("axis", -1), rank(x))
    if ctx.opset < 10:
        k = ctx.attrs.int("k")
    else:
        given = ctx.value(1, "k").reshape(-1)
        if given.size != 1:
            raise NodeError(f"k (input 1) must hold one value, found {given.size}")
        k = int(given[0])
    if k < 1:
        raise NodeError(f"k={k} is not supported (topk keeps at least one element)")
    found = call("topk", x, k=k, axis=axis, ret_type="both", is_ascend=not ctx.attrs.int("largest", 1),
                 dtype="int64")
    return [item(found, 0), item(found, 1)]
