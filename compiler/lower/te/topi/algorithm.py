"""topk as tensor expressions, without a sort (TVM calls an external C++ sort here; a
compute rule has only index arithmetic and reductions):

    T_topk_rank[.., j, ..]  = the number of positions i of the axis that come before j in
                              topk's order (ops/algorithm.py: larger first, or smaller with
                              is_ascend; NaN largest; equal values lower index first)
    T_topk_pos[.., r, ..]   = the j whose rank is r, for r < k (ranks are a permutation, so
                              exactly one j matches: a sum of select(rank == r, j, 0))
    T_topk_values           = data at those positions;  T_topk_indices = them in dtype

The rank costs n^2 comparisons per sorted row (n the axis' extent) and the positions n*k:
fine for the rows of a layer's output, slow for a row of a million elements.
"""

from __future__ import annotations

from ....ops.algorithm import topk_plan
from .. import expr as te
from .registry import register_compute
from .transform import type_of


def _before(a: te.PrimExpr, ia: te.PrimExpr, b: te.PrimExpr, ib: te.PrimExpr, ascend: bool) -> te.PrimExpr:
    """Whether the element a (at ia) comes before b (at ib) in topk's order."""
    first, second = (b, a) if ascend else (a, b)  # `first` must be the larger one
    larger = te.gt(first, second)
    equal = te.eq(a, b)
    if te.is_float(a.dtype):
        nan_a, nan_b = te.intrinsic("isnan", first), te.intrinsic("isnan", second)
        larger = te.logical_or(larger, te.logical_and(nan_a, te.intrinsic("not", nan_b)))
        equal = te.logical_or(equal, te.logical_and(nan_a, nan_b))
    return te.logical_or(larger, te.logical_and(equal, te.lt(ia, ib)))


@register_compute("topk")
def _(data: te.Tensor, attrs, out_type) -> te.Tensor | tuple[te.Tensor, te.Tensor]:
    axis, kept = topk_plan(type_of(data), attrs)
    n = data.shape[axis]
    ascend = bool(attrs.is_ascend)

    def rank(*j):
        i = te.reduce_axis(n, "i")
        other = j[:axis] + (i,) + j[axis + 1:]
        ahead = _before(data[other], i, data[j], j[axis], ascend)
        return te.sum(te.select(ahead, te.const(1, te.INDEX), te.const(0, te.INDEX)), [i])

    ranks = te.compute(data.shape, rank, "T_topk_rank", tag="topk")
    shape = data.shape[:axis] + (kept,) + data.shape[axis + 1:]

    def position(*r):
        j = te.reduce_axis(n, "j")
        at = r[:axis] + (j,) + r[axis + 1:]
        return te.sum(te.select(te.eq(ranks[at], r[axis]), te.cast(j, te.INDEX), te.const(0, te.INDEX)), [j])

    positions = te.compute(shape, position, "T_topk_pos", tag="topk")
    values = te.compute(shape, lambda *r: data[r[:axis] + (positions[r],) + r[axis + 1:]], "T_topk_values")
    indices = te.compute(shape, lambda *r: te.cast(positions[r], attrs.dtype), "T_topk_indices")
    if attrs.ret_type == "both":
        return values, indices
    return values if attrs.ret_type == "values" else indices
