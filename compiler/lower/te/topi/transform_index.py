"""Ops that pick, replicate or create elements (reference §7.6): strided_slice, take,
gather, gather_nd, tile, repeat, reverse, sliding_window, one_hot, full, zeros, ones,
arange, shape_of, ndarray_size.

An index read from a tensor (take, gather, gather_nd, one_hot) is a Load cast to int64
and used in another Load.  `take` fixes indices as the reference does: "clip" clamps,
"wrap" takes them modulo the extent, "fast" only wraps negative ones (as numpy indexing);
`gather` and `gather_nd` expect them in range.
"""

from __future__ import annotations

import math

from ....ops.transform_geometry import (
    gather_axis,
    gather_nd_m,
    one_hot_axis,
    repeat_axis,
    slice_plan,
    take_plan,
    window_check,
)
from ...errors import LoweringError
from .. import expr as te
from .registry import register_compute
from .transform import type_of, unravel


def _index(value: te.PrimExpr) -> te.PrimExpr:
    return te.cast(value, te.INDEX)


@register_compute("strided_slice")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    plan = slice_plan(type_of(x), attrs)

    def body(*i):
        idx = list(i)
        for axis, first, step, _ in plan:
            moved = i[axis] if step == 1 else i[axis] * step
            idx[axis] = moved + first if first else moved
        return x[tuple(idx)]

    return te.compute(out_type.shape, body, "T_strided_slice")


def _fix(index: te.PrimExpr, n: int, mode: str) -> te.PrimExpr:
    """An index read from a tensor, made an in-range int64 index by take's mode."""
    v = _index(index)
    if mode == "clip":
        return te.minimum(te.maximum(v, 0), n - 1)
    if mode == "wrap":
        return v % n
    return te.select(te.lt(v, 0), v + n, v)


@register_compute("take")
def _(x: te.Tensor, indices: te.Tensor, attrs, out_type) -> te.Tensor:
    """Result index = data's axes before axis (the first batch_dims of them shared with
    indices), then indices' own axes, then data's axes after axis."""
    axis, batch = take_plan(type_of(x), type_of(indices), attrs)
    if axis is None:
        size = math.prod(x.shape)
        return te.compute(out_type.shape, lambda *i: x[unravel(_fix(indices[i], size, attrs.mode), x.shape)],
                          "T_take")
    m = indices.ndim - batch

    def body(*o):
        k = _fix(indices[o[:batch] + o[axis:axis + m]], x.shape[axis], attrs.mode)
        return x[o[:axis] + (k,) + o[axis + m:]]

    return te.compute(out_type.shape, body, "T_take")


@register_compute("gather")
def _(x: te.Tensor, indices: te.Tensor, attrs, out_type) -> te.Tensor:
    axis = gather_axis(type_of(x), type_of(indices), attrs)
    return te.compute(out_type.shape, lambda *i: x[i[:axis] + (_index(indices[i]),) + i[axis + 1:]],
                      "T_gather")


@register_compute("gather_nd")
def _(x: te.Tensor, indices: te.Tensor, attrs, out_type) -> te.Tensor:
    """out[y..., rest...] = data[y[:batch_dims]..., indices[0, y...], ..., indices[m-1, y...], rest...]."""
    m = gather_nd_m(type_of(x), type_of(indices), attrs)
    b, n = attrs.batch_dims, indices.ndim - 1

    def body(*o):
        y, rest = o[:n], o[n:]
        picked = tuple(_index(indices[(j,) + y]) for j in range(m))
        return x[y[:b] + picked + rest]

    return te.compute(out_type.shape, body, "T_gather_nd")


@register_compute("tile")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """Data aligns with the trailing result axes; a repeated axis reads modulo its length."""
    n = len(out_type.shape)
    lead = n - x.ndim
    reps = (1,) * (n - len(attrs.reps)) + tuple(attrs.reps)

    def read(o: te.PrimExpr, d: int, rep: int) -> te.PrimExpr:
        return te.const(0, te.INDEX) if d == 1 else o % d if rep > 1 else o

    def body(*o):
        return x[tuple(read(o[lead + k], d, reps[lead + k]) for k, d in enumerate(x.shape))]

    return te.compute(out_type.shape, body, "T_tile")


@register_compute("repeat")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    axis = repeat_axis(type_of(x), attrs)
    return te.compute(out_type.shape, lambda *i: x[i[:axis] + (i[axis] // attrs.repeats,) + i[axis + 1:]],
                      "T_repeat")


@register_compute("reverse")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    axis = attrs.axis % x.ndim
    last = x.shape[axis] - 1
    return te.compute(out_type.shape, lambda *i: x[i[:axis] + (last - i[axis],) + i[axis + 1:]], "T_reverse")


@register_compute("sliding_window")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """Result index = data's axes before axis, the window's position per windowed axis,
    then the offset inside the window."""
    axis = window_check(type_of(x), attrs)
    n = x.ndim - axis

    def body(*o):
        where, inside = o[axis:axis + n], o[axis + n:]
        return x[o[:axis] + tuple(p * s + w for p, s, w in zip(where, attrs.strides, inside))]

    return te.compute(out_type.shape, body, "T_sliding_window")


@register_compute("one_hot")
def _(indices: te.Tensor, on: te.Tensor, off: te.Tensor, attrs, out_type) -> te.Tensor:
    p = one_hot_axis(type_of(indices), attrs)

    def body(*o):
        hot = te.eq(_index(indices[o[:p] + o[p + 1:]]), o[p])
        return te.cast(te.select(hot, on[()], off[()]), out_type.dtype)

    return te.compute(out_type.shape, body, "T_one_hot")


@register_compute("full")
def _(fill: te.Tensor, attrs, out_type) -> te.Tensor:
    return te.compute(out_type.shape, lambda *i: te.cast(fill[()], out_type.dtype), "T_full")


def _constant(name: str, value: int) -> None:
    @register_compute(name)
    def _(attrs, out_type) -> te.Tensor:
        return te.compute(out_type.shape, lambda *i: te.const(value, out_type.dtype), f"T_{name}")


_constant("zeros", 0)
_constant("ones", 1)


@register_compute("arange")
def _(start: te.Tensor, stop: te.Tensor, step: te.Tensor, attrs, out_type) -> te.Tensor:
    """start + step * i; the length must be known (start, stop and step given as attributes)."""
    if not out_type.is_static:
        raise LoweringError("arange: the length is known only at run time; give start, stop "
                               "and step as constant attributes")
    return te.compute(out_type.shape, lambda i: start[()] + step[()] * te.cast(i, out_type.dtype), "T_arange")


@register_compute("shape_of")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """A select chain over the position (a scalar data gives 0, as the reference)."""
    if not x.shape:
        return te.compute((), lambda: te.const(0, out_type.dtype), "T_shape_of")

    def body(i):
        value = te.const(x.shape[-1], out_type.dtype)
        for k in range(x.ndim - 2, -1, -1):
            value = te.select(te.eq(i, k), te.const(x.shape[k], out_type.dtype), value)
        return value

    return te.compute(out_type.shape, body, "T_shape_of")


@register_compute("ndarray_size")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return te.compute((), lambda: te.const(math.prod(x.shape), out_type.dtype), "T_ndarray_size")


@register_compute("slice_like")
def _(x: te.Tensor, like: te.Tensor, attrs, out_type) -> te.Tensor:
    """Every axis starts at 0: the result reads data at its own position."""
    return te.compute(out_type.shape, lambda *i: x[i], "T_slice_like")
