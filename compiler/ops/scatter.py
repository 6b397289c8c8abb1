"""Writing updates into a copy of data (TVM's `scatter_elements` and `scatter_nd`):

    scatter_elements(%data, %indices, %updates, axis=1, reduction="add")
        out[i, indices[i, j]] = out[i, indices[i, j]] + updates[i, j]        (rank 2)
    scatter_nd(%data, %indices, %updates, mode="update")
        out[indices[0, y], .., indices[M-1, y], x..] = updates[y, x..]

scatter_elements: indices and updates have one shape, of data's rank and no larger than
data on any axis but `axis`.  scatter_nd takes TVM's layout, the index tuples along the
FIRST axis of indices (M, Y..): updates are (Y.., X_M..X_{N-1}), data (X_0..X_{N-1}).

The updates apply in the row-major order of their positions, each combined with what the
output holds (`reduction`/`mode`): "update" replaces it, so of several updates of one
element the last wins (as onnxruntime's loop and TVM's kernel write them; ONNX leaves it
undefined); "add", "mul", "min" and "max" combine all of them with data's element.
TVM's "mean" ((out + u) / 2 in turn: the result depends on the order) is refused.
Negative indices count from the end of their axis; an index outside [-n, n) writes
nothing, in the reference and the compiled code alike (TVM does not check either).
Both ops are Opaque, as TVM registers them.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType
from .attrs import INT, STR, Attr
from .registry import OPAQUE, OpTypeError, define
from .shapes import axis_index, dims, known, tensor, type_text

REDUCTIONS = ("update", "add", "mul", "min", "max")


def check_reduction(value: str, op: str, attr: str) -> str:
    if value not in REDUCTIONS:
        raise OpTypeError(f"{op}: {attr} \"{value}\" is not supported (expected one of "
                          f"{', '.join(REDUCTIONS)})")
    return value


def _operands(op: str, data, indices, updates) -> tuple[TensorType, TensorType, TensorType]:
    d = tensor(data, f"{op}: data", 0)
    i = tensor(indices, f"{op}: indices", 1)
    u = tensor(updates, f"{op}: updates", 2)
    if not i.dtype.startswith(("int", "uint")):
        raise OpTypeError(f"{op}: indices must be an integer tensor, found {type_text(i)}", 1)
    if u.dtype != d.dtype:
        raise OpTypeError(f"{op}: updates have dtype {u.dtype} but data {type_text(d)}", 2)
    return d, i, u


def _mismatch(a, b) -> bool:
    return known(a, b) and a != b


# --------------------------------------------------------------------------- scatter_elements

scatter_elements = define(
    "scatter_elements", ("data", "indices", "updates"), OPAQUE,
    attrs=(Attr("axis", INT, 0, "the axis indices point along"),
           Attr("reduction", STR, "update", "how an update combines with the output: "
                                            "\"update\", \"add\", \"mul\", \"min\" or \"max\"")),
    doc="A copy of data with each element of updates written (or added, multiplied, min'ed, "
        "max'ed) at its own position but along axis at the position indices holds there.")


def scatter_elements_axis(d: TensorType, i: TensorType, u: TensorType, attrs) -> int:
    """The scattered axis as an index, the shapes checked."""
    check_reduction(attrs.reduction, "scatter_elements", "reduction")
    if i.ndim != d.ndim:
        raise OpTypeError(f"scatter_elements: indices have rank {i.ndim} but data {type_text(d)} "
                          f"has rank {d.ndim}", 1)
    if any(_mismatch(a, b) for a, b in zip(dims(i), dims(u))) or u.ndim != i.ndim:
        raise OpTypeError(f"scatter_elements: updates {type_text(u)} and indices {type_text(i)} "
                          "must have one shape", 2)
    axis = axis_index(attrs.axis, d.ndim, "scatter_elements: axis")
    for k, (a, b) in enumerate(zip(dims(i), dims(d))):
        if k != axis and known(a, b) and a > b:
            raise OpTypeError(f"scatter_elements: indices have extent {a} on axis {k}, more than "
                              f"data {type_text(d)}", 1)
    return axis


@scatter_elements.relation
def _(data, indices, updates, attrs):
    d, i, u = _operands("scatter_elements", data, indices, updates)
    scatter_elements_axis(d, i, u, attrs)
    return d


def _combine(out: np.ndarray, where: tuple, values: np.ndarray, flat: np.ndarray, reduction: str) -> None:
    """out[where] combined with values, in order; `flat` numbers the targets (one number
    for one element) so that of repeated targets "update" keeps the last."""
    if reduction == "update":
        last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]
        out[tuple(w[last] for w in where)] = values[last]
        return
    ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[reduction]
    ufunc.at(out, where, values)


@scatter_elements.reference
def _(data, indices, updates, attrs):
    axis = scatter_elements_axis(*(TensorType(a.shape, str(a.dtype)) for a in (data, indices, updates)), attrs)
    n = data.shape[axis]
    grid = list(np.indices(indices.shape).reshape(indices.ndim, -1))
    target = indices.reshape(-1).astype(np.int64)
    target = np.where(target < 0, target + n, target)
    keep = (target >= 0) & (target < n)
    grid[axis] = target
    where = tuple(g[keep] for g in grid)
    out = data.copy()
    flat = np.ravel_multi_index(where, data.shape) if where[0].size else np.zeros(0, np.int64)
    _combine(out, where, updates.reshape(-1)[keep], flat, attrs.reduction)
    return out


# --------------------------------------------------------------------------- scatter_nd

scatter_nd = define(
    "scatter_nd", ("data", "indices", "updates"), OPAQUE,
    attrs=(Attr("mode", STR, "update", "how an update combines with the output: "
                                       "\"update\", \"add\", \"mul\", \"min\" or \"max\""),),
    doc="A copy of data with the slices of updates written (or added, multiplied, min'ed, "
        "max'ed) at the index tuples along the first axis of indices (M, Y..): updates are "
        "(Y.., X_M..), data (X_0..).")


def scatter_nd_m(d: TensorType, i: TensorType, u: TensorType, attrs) -> int:
    """M, the length of an index tuple, the shapes checked as TVM's ScatterNDRel does."""
    check_reduction(attrs.mode, "scatter_nd", "mode")
    if i.ndim == 0:
        raise OpTypeError(f"scatter_nd: indices must have an axis of index tuples, found a scalar {type_text(i)}", 1)
    m = dims(i)[0]
    if not known(m):
        raise OpTypeError(f"scatter_nd: the first axis of indices {type_text(i)} must be static", 1)
    if m == 0:
        raise OpTypeError(f"scatter_nd: indices {type_text(i)} hold index tuples of no axes", 1)
    if m > d.ndim:
        raise OpTypeError(f"scatter_nd: index tuples of {m} axes for data {type_text(d)} of rank {d.ndim}", 1)
    y = dims(i)[1:]
    want = (*y, *dims(d)[m:])
    if u.ndim != len(want) or any(_mismatch(a, b) for a, b in zip(dims(u), want)):
        shown = ", ".join("?" if not known(w) else str(w) for w in want)
        raise OpTypeError(f"scatter_nd: updates {type_text(u)} must have shape ({shown}): indices' "
                          f"{type_text(i)} axes after the first, then data's {type_text(d)} from axis {m}", 2)
    return m


@scatter_nd.relation
def _(data, indices, updates, attrs):
    d, i, u = _operands("scatter_nd", data, indices, updates)
    scatter_nd_m(d, i, u, attrs)
    return d


@scatter_nd.reference
def _(data, indices, updates, attrs):
    m = scatter_nd_m(*(TensorType(a.shape, str(a.dtype)) for a in (data, indices, updates)), attrs)
    tuples = indices.reshape(m, -1).astype(np.int64)
    extents = np.array(data.shape[:m], np.int64).reshape(m, 1)
    tuples = np.where(tuples < 0, tuples + extents, tuples)
    keep = np.all((tuples >= 0) & (tuples < extents), axis=0)
    where = tuple(tuples[:, keep])
    values = updates.reshape(tuples.shape[1], *data.shape[m:])[keep]
    out = data.copy()
    flat = np.ravel_multi_index(where, data.shape[:m]) if m else np.zeros(int(keep.sum()), np.int64)
    _combine(out, where, values, flat, attrs.mode)
    return out
