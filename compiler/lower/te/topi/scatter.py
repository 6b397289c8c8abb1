"""scatter_elements and scatter_nd as gathers (TVM writes them as sequential loops over
the updates; a compute rule has only index arithmetic and reductions): each output
element reduces over the updates that could land on it, testing which do.

scatter_elements: the output element p can only be hit by the updates at p's position
with any k along the axis (the other coordinates are p's own), so

    T_scatter_elements[p] = data[p] (+ * min max) reduce over k of
                            select(hits(k), updates[p with k], identity)
    hits(k) = wrap(indices[p with k]) == p[axis]     (p inside indices' shape too)

costs out x (indices' extent along the axis) reads, not out x updates.  scatter_nd has no
such axis: its element reduces over every index tuple y (indices' axes after the first),
hits(y) = all m: wrap(indices[m, y]) == p[m], reading updates[y, p[M:]]: out x Y.

"update" keeps the last update that hits (ops/scatter.py): T_scatter_last = the largest
row-major number of a hitting position (-1 for none), then the element is that update
or data's.  Negative indices wrap once; one out of range hits nothing.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....ops.scatter import scatter_elements_axis, scatter_nd_m
from .. import expr as te
from ..arith import flat_index
from .registry import register_compute
from .transform import type_of, unravel

Coords = tuple[te.PrimExpr, ...]


def _identity(reduction: str, dtype: str) -> te.Const:
    """What an update that misses contributes: 0, 1, or the dtype's extreme (inf for
    floats, so that data's own -inf or inf survives min and max)."""
    if reduction in ("add", "mul"):
        return te.const(0 if reduction == "add" else 1, dtype)
    largest = reduction == "min"
    if te.is_float(dtype):
        return te.const(float("inf") if largest else float("-inf"), dtype)
    if dtype == "bool":
        return te.const(largest, dtype)
    info = np.iinfo(dtype)
    return te.const(int(info.max if largest else info.min), dtype)


def _wrap(index: te.PrimExpr, extent: int) -> te.PrimExpr:
    i = te.cast(index, te.INDEX)
    return te.select(te.lt(i, 0), i + extent, i)


def _scatter(name: str, data: te.Tensor, reduction: str, extents: Sequence[int],
             hits: Callable[[Coords, Coords], te.PrimExpr], update_at: Callable[[Coords, Coords], te.PrimExpr]
             ) -> te.Tensor:
    """The output: data's element p combined with the updates at the positions r (of
    `extents`; none: one candidate update per element) that `hits(p, r)`; `update_at(p, r)`
    reads one."""
    if 0 in extents:  # no updates at all
        return te.compute(data.shape, lambda *p: data[p], f"T_{name}", tag=name)
    if reduction == "update":
        if not extents:
            return te.compute(data.shape, lambda *p: te.select(hits(p, ()), update_at(p, ()), data[p]),
                              f"T_{name}", tag=name)

        def last(*p):
            r = tuple(te.reduce_axis(n, f"r{k}") for k, n in enumerate(extents))
            number = flat_index(tuple(extents), r)
            return te.max(te.select(hits(p, r), number, te.const(-1, te.INDEX)), list(r))

        found = te.compute(data.shape, last, "T_scatter_last", tag=name)

        def pick(*p):
            r = unravel(te.maximum(found[p], 0), extents)
            return te.select(te.ge(found[p], 0), update_at(p, r), data[p])

        return te.compute(data.shape, pick, f"T_{name}", tag=name)

    reduce = {"add": te.sum, "mul": te.prod, "min": te.min, "max": te.max}[reduction]
    pair = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "min": te.minimum, "max": te.maximum}[reduction]
    identity = _identity(reduction, data.dtype)

    def body(*p):
        if not extents:
            return pair(data[p], te.select(hits(p, ()), update_at(p, ()), identity))
        r = tuple(te.reduce_axis(n, f"r{k}") for k, n in enumerate(extents))
        return reduce(te.select(hits(p, r), update_at(p, r), identity), list(r))

    if not extents:
        return te.compute(data.shape, body, f"T_{name}", tag=name)
    combined = te.compute(data.shape, body, "T_scatter_combined", tag=name)
    return te.compute(data.shape, lambda *p: pair(data[p], combined[p]), f"T_{name}", tag=name)


@register_compute("scatter_elements")
def _(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, attrs, out_type) -> te.Tensor:
    axis = scatter_elements_axis(type_of(data), type_of(indices), type_of(updates), attrs)
    n = data.shape[axis]
    short = [d for d in range(data.ndim) if d != axis and indices.shape[d] < data.shape[d]]

    def at(p: Coords, r: Coords) -> Coords:
        """p with r's k on the axis, clamped into indices' shape (hits() tells if p is)."""
        q = [te.minimum(c, indices.shape[d] - 1) if d in short else c for d, c in enumerate(p)]
        q[axis] = r[0]
        return tuple(q)

    def hits(p: Coords, r: Coords) -> te.PrimExpr:
        inside = [te.lt(p[d], indices.shape[d]) for d in short]
        return te.all_of(*inside, te.eq(_wrap(indices[at(p, r)], n), p[axis]))

    return _scatter("scatter_elements", data, attrs.reduction, (indices.shape[axis],), hits,
                    lambda p, r: updates[at(p, r)])


@register_compute("scatter_nd")
def _(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, attrs, out_type) -> te.Tensor:
    m = scatter_nd_m(type_of(data), type_of(indices), type_of(updates), attrs)

    def hits(p: Coords, y: Coords) -> te.PrimExpr:
        return te.all_of(*(te.eq(_wrap(indices[(k, *y)], data.shape[k]), p[k]) for k in range(m)))

    return _scatter("scatter_nd", data, attrs.mode, tuple(indices.shape[1:]), hits,
                    lambda p, y: updates[(*y, *p[m:])])
