"""Sorting ops (TVM's relay/op/algorithm): topk.

    topk(%x, k=2, axis=1)            -> (values, indices), both of extent 2 on axis 1
    topk(%x, k=2, ret_type="values") -> values only

The order is TVM's CPU kernel's (tvm.contrib.sort.topk: a heap of (value, index) pairs
compared with the index breaking ties, then a stable sort): largest first (smallest
with is_ascend), and of equal values the lower index first, whichever the direction.
NaN, which TVM's comparisons leave unordered, is taken as larger than every number (as
numpy sorts it), so a descending topk puts NaNs first and an ascending one last; the
compute rule (lower/te/topi/algorithm.py) follows the same order.  k < 1 keeps the whole
axis.  Indices come out in `dtype` (int32 unless written).
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType, TupleType
from .attrs import BOOL, INT, STR, Attr
from .registry import OPAQUE, OpTypeError, define
from .shapes import axis_index, check_dtype, dims, known, tensor, type_text

RET_TYPES = ("both", "values", "indices")

topk = define(
    "topk", ("data",), OPAQUE,
    attrs=(Attr("k", INT, 1, "how many elements to keep along axis (k < 1: all of them)"),
           Attr("axis", INT, -1, "the axis to sort along"),
           Attr("ret_type", STR, "both", "\"both\" (a tuple of values and indices), \"values\" or \"indices\""),
           Attr("is_ascend", BOOL, False, "smallest first instead of largest first"),
           Attr("dtype", STR, "int32", "the dtype of the indices")),
    doc="The k largest (or smallest, is_ascend) elements of data along axis, in order, and their "
        "indices; equal values keep their order (lower index first), as TVM's CPU kernel does.")


def topk_plan(data: TensorType, attrs) -> tuple[int, int | None]:
    """The sorted axis (as an index) and the kept extent (None when the axis is `?` and k < 1)."""
    axis = axis_index(attrs.axis, data.ndim, "topk: axis")
    if attrs.ret_type not in RET_TYPES:
        raise OpTypeError(f"topk: attribute ret_type is '{attrs.ret_type}'; expected one of {', '.join(RET_TYPES)}")
    extent = dims(data)[axis]
    if attrs.k < 1:
        return axis, extent if known(extent) else None
    if known(extent) and attrs.k > extent:
        raise OpTypeError(f"topk: k={attrs.k} is larger than the extent {extent} of axis {axis} "
                          f"(data {type_text(data)})", 0)
    return axis, attrs.k


@topk.relation
def _(data, attrs):
    d = tensor(data, "topk: data", 0)
    axis, kept = topk_plan(d, attrs)
    shape = list(dims(d))
    shape[axis] = kept if kept is not None else shape[axis]
    values = TensorType(tuple(shape), d.dtype)
    indices = TensorType(tuple(shape), check_dtype(attrs.dtype))
    if attrs.ret_type == "both":
        return TupleType((values, indices))
    return values if attrs.ret_type == "values" else indices


def sorted_positions(x: np.ndarray, axis: int, ascend: bool) -> np.ndarray:
    """The positions along `axis` in topk's order (NaN largest; ties lower index first)."""
    if ascend:
        return np.argsort(x, axis=axis, kind="stable")
    # Stable ascending on the reversed axis puts equal values higher index first; reversing
    # that gives descending values, equal ones lower index first.
    n = x.shape[axis]
    backwards = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return n - 1 - np.flip(backwards, axis)


@topk.reference
def _(x, attrs):
    axis, kept = topk_plan(TensorType(x.shape, str(x.dtype)), attrs)
    order = np.take(sorted_positions(x, axis, attrs.is_ascend), np.arange(kept), axis=axis)
    values = np.take_along_axis(x, order, axis=axis)
    indices = order.astype(attrs.dtype)
    if attrs.ret_type == "both":
        return values, indices
    return values if attrs.ret_type == "values" else indices
