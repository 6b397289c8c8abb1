"""Ops that pick or join parts of tensors: Concat, Split, Slice, Gather, GatherElements,
GatherND, OneHot, and the ones that write into them: ScatterElements (and Scatter, its
name before opset 11), ScatterND.

ONNX indices may be negative (counting from the end); Relay's `gather`, `gather_nd` and
`one_hot` want them in range, so indices known before run time are wrapped here and
others get a `where`.  Gather uses `take` with mode "wrap", which does the same.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Expr
from ...ir.types import ANY
from .builder import call, const, dtype, item, make_tuple, normalize_axis, rank, scalar, shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter

@converter("Concat")
def _(ctx: NodeContext) -> Expr:
    args = ctx.variadic()
    axis = ctx.attrs.int("axis") if ctx.opset >= 4 else ctx.attrs.int("axis", 1)
    axis = normalize_axis(axis, rank(args[0]))
    return call("concatenate", make_tuple(args), axis=axis)


@converter("Split")
def _(ctx: NodeContext) -> list[Expr]:
    """`split` at the cumulative sizes; with an empty piece (which `split` cannot make),
    one `strided_slice` per piece."""
    x = ctx.input(0)
    axis = normalize_axis(ctx.attrs.int("axis", 0), rank(x))
    outputs = ctx.num_outputs
    sizes = ctx.axes(1, 13, "split")
    extent = shape(x)[axis]
    if outputs == 1:
        return [x]
    if sizes is None:
        parts = ctx.attrs.int("num_outputs", outputs)
        if extent is ANY:
            pieces = call("split", x, indices_or_sections=parts, axis=axis)
            return [item(pieces, k) for k in range(outputs)]
        chunk = -(-extent // parts)
        sizes = [chunk] * (parts - 1) + [extent - chunk * (parts - 1)]
    if extent is not ANY and sum(sizes) != extent:
        raise NodeError(f"split sizes {list(sizes)} do not add up to the extent {extent} of axis {axis}")
    ends = [int(e) for e in np.cumsum(sizes)]
    if 0 in sizes:
        starts = [0] + ends[:-1]
        return [call("strided_slice", x, begin=(b,), end=(e,), strides=(1,), axes=(axis,))
                for b, e in zip(starts, ends)]
    pieces = call("split", x, indices_or_sections=tuple(ends[:-1]), axis=axis)
    return [item(pieces, k) for k in range(outputs)]


@converter("Slice")
def _(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    n = rank(x)
    if ctx.opset < 10:
        starts, ends = ctx.attrs.ints("starts"), ctx.attrs.ints("ends")
        axes, steps = ctx.attrs.ints("axes", None), None
    else:
        starts = _ints(ctx.value(1, "starts"))
        ends = _ints(ctx.value(2, "ends"))
        axes = _ints(ctx.maybe_value(3, "axes"))
        steps = _ints(ctx.maybe_value(4, "steps"))
    axes = tuple(range(len(starts))) if axes is None else tuple(normalize_axis(a, n) for a in axes)
    steps = (1,) * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise NodeError("starts, ends, axes and steps must have one length")
    dims = shape(x)
    begin = tuple(_clamp(b, dims[a]) for b, a in zip(starts, axes))
    end = tuple(_clamp(e, dims[a]) for e, a in zip(ends, axes))
    return call("strided_slice", x, begin=begin, end=end, strides=steps, axes=axes)


def _ints(values) -> tuple[int, ...] | None:
    return None if values is None else tuple(int(v) for v in values.reshape(-1))


def _clamp(index: int, extent) -> int:
    """Out-of-range bounds (INT64_MAX for "to the end") pulled in to [-extent-1, extent]."""
    if extent is ANY:
        return index
    return min(max(index, -extent - 1), extent)


@converter("Gather")
def _(ctx: NodeContext) -> Expr:
    data, indices = ctx.input(0), ctx.input(1)
    axis = normalize_axis(ctx.attrs.int("axis", 0), rank(data))
    return call("take", data, indices, axis=axis, mode="wrap")


def _wrapped(ctx: NodeContext, k: int, extent) -> Expr:
    """Input k as indices into an axis of `extent`, negative ones wrapped."""
    indices = ctx.input(k)
    known = ctx.static(k)
    if known is not None and isinstance(extent, int):
        return const(np.where(known < 0, known + extent, known).astype(known.dtype))
    if extent is ANY:
        raise NodeError("indices into an axis of run-time extent are not supported")
    negative = call("less", indices, scalar(0, indices))
    return call("where", negative, call("add", indices, scalar(extent, indices)), indices)


@converter("GatherElements")
def _(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    axis = normalize_axis(ctx.attrs.int("axis", 0), rank(data))
    return call("gather", data, _wrapped(ctx, 1, shape(data)[axis]), axis=axis)


@converter("GatherND")
def _(ctx: NodeContext) -> Expr:
    data, indices = ctx.input(0), ctx.input(1)
    batch_dims = ctx.attrs.int("batch_dims", 0)
    depth = shape(indices)[-1]
    if not isinstance(depth, int):
        raise NodeError("the last axis of indices must be static")
    if ctx.static(1) is not None:
        extents = shape(data)[batch_dims:batch_dims + depth]
        if ANY not in extents:
            known = ctx.static(1)
            indices = const(np.where(known < 0, known + np.array(extents, dtype=known.dtype), known))
    moved = call("transpose", indices, axes=(rank(indices) - 1, *range(rank(indices) - 1)))
    return call("gather_nd", data, moved, batch_dims=batch_dims, index_rank=depth)


def _reduction(ctx: NodeContext) -> str:
    """ONNX's reduction as Relay's: "none" is "update" (of duplicate indices the last
    wins, ops/scatter.py)."""
    reduction = ctx.attrs.string("reduction", "none")
    if reduction not in ("none", "add", "mul", "max", "min"):
        raise NodeError(f"reduction=\"{reduction}\" is not supported (none, add, mul, max or min)")
    return "update" if reduction == "none" else reduction


@converter("ScatterElements", "Scatter")
def _(ctx: NodeContext) -> Expr:
    """`scatter_elements`, which wraps negative indices itself."""
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    axis = normalize_axis(ctx.attrs.int("axis", 0), rank(data))
    return call("scatter_elements", data, indices, updates, axis=axis, reduction=_reduction(ctx))


@converter("ScatterND")
def _(ctx: NodeContext) -> Expr:
    """`scatter_nd` wants the index tuples along the first axis of indices, ONNX has them
    along the last: a transpose moves it (as TVM's frontend does)."""
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    n = rank(indices)
    if n == 0 or not isinstance(shape(indices)[-1], int):
        raise NodeError("indices need a static last axis (the length of an index tuple)")
    moved = indices if n == 1 else call("transpose", indices, axes=(n - 1, *range(n - 1)))
    return call("scatter_nd", data, moved, updates, mode=_reduction(ctx))


@converter("OneHot")
def _(ctx: NodeContext) -> Expr:
    depth = ctx.value(1, "depth").reshape(-1)
    values = ctx.input(2)
    if shape(values) != (2,):
        raise NodeError("values must hold [off_value, on_value]")
    count = int(depth[0])
    indices = _wrapped(ctx, 0, count)
    if not dtype(indices).startswith(("int", "uint")):  # ONNX allows float indices
        indices = call("cast", indices, dtype="int64")
    off, on = _pick(values, 0), _pick(values, 1)
    return call("one_hot", indices, on, off, depth=count, axis=ctx.attrs.int("axis", -1),
                dtype=dtype(values))


def _pick(values: Expr, k: int) -> Expr:
    return call("take", values, const(np.array(k, dtype=np.int64)), axis=0)


@converter("Trilu")
def _(ctx: NodeContext) -> Expr:
    """x where the column minus the row is at least k (upper) or at most k (lower), else 0;
    the mask is a constant of the static matrix shape."""
    x = ctx.input(0)
    rows, cols = shape(x)[-2:]
    if not (isinstance(rows, int) and isinstance(cols, int)):
        raise NodeError("Trilu needs static matrix extents")
    k = ctx.maybe_value(1, "k")
    k = 0 if k is None else int(k.reshape(-1)[0])
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    mask = offset >= k if ctx.attrs.int("upper", 1) else offset <= k
    return call("where", const(mask), x, scalar(0, x))
