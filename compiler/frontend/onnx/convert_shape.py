"""Ops that move data without computing on it, and the shape subgraphs around them:
Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Expand, Tile, DepthToSpace,
SpaceToDepth, Shape, Size, Constant, ConstantOfShape, Range.

Relay takes shapes as attributes, so Reshape's shape, Expand's shape and Tile's repeats
must be known before run time: constants, initializers, or a Shape → Gather → Concat
chain over static shapes, which Shape and the folding of fold.py turn into constants.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Expr
from ...ir.types import ANY
from .builder import call, const, dtype, normalize_axis, rank, shape, static_shape
from .context import NodeContext
from .dtypes import relay_dtype
from .errors import NodeError
from .registry import converter


@converter("Reshape")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    if ctx.opset < 5:
        newshape = ctx.attrs.ints("shape")
    else:
        newshape = tuple(int(d) for d in ctx.value(1, "shape"))
    allowzero = bool(ctx.attrs.int("allowzero", 0))
    return call("reshape", x, newshape=newshape, allowzero=allowzero)


@converter("Flatten")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    dims = shape(x)
    axis = ctx.attrs.int("axis", 1)
    axis = axis % len(dims) if axis < 0 else axis
    if axis > len(dims):
        raise NodeError(f"axis {axis} is out of range for rank {len(dims)}")
    outer, inner = _product(dims[:axis]), _product(dims[axis:])
    if outer is ANY and inner is ANY:
        raise NodeError("Flatten needs static extents on one side of its axis; fix them with --shape")
    return call("reshape", x, newshape=(-1 if outer is ANY else outer, -1 if inner is ANY else inner))


def _product(dims) -> int | object:
    out = 1
    for d in dims:
        if d is ANY:
            return ANY
        out *= d
    return out


@converter("Transpose")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    perm = ctx.attrs.ints("perm", tuple(reversed(range(rank(x)))))
    return call("transpose", x, axes=perm)


@converter("Squeeze")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    axes = ctx.axes(1, 13)
    if axes is not None:
        axes = tuple(sorted(normalize_axis(a, rank(x)) for a in axes))
    return call("squeeze", x, axis=axes)


@converter("Unsqueeze")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    axes = ctx.axes(1, 13)
    if not axes:
        raise NodeError("axes is required")
    out_rank = rank(x) + len(axes)
    for axis in sorted(normalize_axis(a, out_rank) for a in axes):
        x = call("expand_dims", x, axis=axis)
    return x


@converter("Expand")
def _(ctx: NodeContext) -> Expr:
    """Bidirectional broadcasting: a 1 in `shape` keeps the input's extent."""
    x = ctx.input(0)
    target = [int(d) for d in ctx.value(1, "shape")]
    dims = list(shape(x))
    n = max(len(dims), len(target))
    dims, target = [1] * (n - len(dims)) + dims, [1] * (n - len(target)) + target
    out = []
    for have, want in zip(dims, target):
        if want == 1:
            out.append(have)
        elif have in (1, want) or have is ANY:
            out.append(want)
        else:
            raise NodeError(f"cannot expand extent {have} to {want}")
    if ANY in out:
        raise NodeError("Expand needs static extents where the shape holds 1; fix them with --shape")
    return call("broadcast_to", x, shape=out)


@converter("Tile", since=6)
def _(ctx: NodeContext) -> Expr:
    return call("tile", ctx.input(0), reps=tuple(int(r) for r in ctx.value(1, "repeats")))


@converter("DepthToSpace", "SpaceToDepth")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    if rank(x) != 4:
        raise NodeError(f"only 4-D inputs are supported, found rank {rank(x)}")
    n, c, h, w = static_shape(x, ctx.op_type)
    b = ctx.attrs.int("blocksize")
    dcr = ctx.attrs.string("mode", "DCR") == "DCR"
    if ctx.op_type == "SpaceToDepth":
        split = call("reshape", x, newshape=(n, c, h // b, b, w // b, b))
        moved = call("transpose", split, axes=(0, 3, 5, 1, 2, 4) if dcr else (0, 1, 3, 5, 2, 4))
        return call("reshape", moved, newshape=(n, c * b * b, h // b, w // b))
    if dcr:
        split = call("reshape", x, newshape=(n, b, b, c // (b * b), h, w))
        moved = call("transpose", split, axes=(0, 3, 4, 1, 5, 2))
    else:
        split = call("reshape", x, newshape=(n, c // (b * b), b, b, h, w))
        moved = call("transpose", split, axes=(0, 1, 4, 2, 5, 3))
    return call("reshape", moved, newshape=(n, c // (b * b), h * b, w * b))


# --- shapes and constants ----------------------------------------------------------------------


@converter("Shape")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    dims = shape(x)
    start, end = ctx.attrs.int("start", 0), ctx.attrs.int("end", len(dims))
    picked = dims[slice(start, end)]
    if ANY not in picked:
        return const(np.array(picked, dtype=np.int64))
    full = call("shape_of", x, dtype="int64")
    if (start, end) == (0, len(dims)):
        return full
    return call("strided_slice", full, begin=(start,), end=(end,), strides=(1,), axes=(0,))


@converter("Size")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    total = _product(shape(x))
    if total is ANY:
        return call("ndarray_size", x, dtype="int64")
    return const(np.array(total, dtype=np.int64))


@converter("Constant")
def _(ctx: NodeContext) -> Expr:
    """A constant in the text if small; weights become a parameter, as initializers do."""
    attrs = ctx.attrs
    if "value" in attrs:
        return ctx.tensor(attrs.tensor("value"))
    if "value_float" in attrs:
        return ctx.tensor(np.array(attrs.float("value_float"), np.float32))
    if "value_floats" in attrs:
        return ctx.tensor(np.array(attrs.floats("value_floats"), np.float32))
    if "value_int" in attrs:
        return ctx.tensor(np.array(attrs.int("value_int"), np.int64))
    if "value_ints" in attrs:
        return ctx.tensor(np.array(attrs.ints("value_ints"), np.int64))
    kind = attrs.names()[0] if attrs.names() else "no value"
    raise NodeError(f"a Constant with {kind} is not supported")


@converter("ConstantOfShape")
def _(ctx: NodeContext) -> Expr:
    value = ctx.attrs.tensor("value", None)
    fill = const(np.zeros((), np.float32) if value is None else value.reshape(()))
    dims = ctx.static(0)
    if dims is None:
        return call("dyn.broadcast_to", fill, ctx.input(0))
    return call("full", fill, shape=tuple(int(d) for d in dims), dtype=dtype(fill))


@converter("Range")
def _(ctx: NodeContext) -> Expr:
    start, limit, delta = ctx.input(0), ctx.input(1), ctx.input(2)
    known = [ctx.static(k) for k in range(3)]
    if all(v is not None for v in known):
        first, stop, step = (v.reshape(()) for v in known)
        return const(np.arange(first, stop, step, dtype=dtype(start)))
    return call("arange", start, limit, delta, dtype=dtype(start))


@converter("EyeLike")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    rows, cols = static_shape(x, "EyeLike")
    target = relay_dtype(ctx.attrs.int("dtype")) if "dtype" in ctx.attrs else dtype(x)
    return const(np.eye(rows, cols, k=ctx.attrs.int("k", 0), dtype=target))
