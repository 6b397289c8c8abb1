"""Reductions (reference §7.5): sum, mean, max, min, prod, all, any, argmax, argmin, variance.

Every op reduces `data` over `axis`: None or an empty list means every axis, an integer or
a list of integers names axes (negative ones count from the end; each at most once).
`exclude=True` reduces every axis *not* listed instead.  Reduced axes disappear, or stay
with extent 1 under `keepdims=True`; reducing all of them gives a rank-0 tensor.
Pattern CommReduce for all.

Result dtypes follow TVM: the input dtype, except argmax/argmin, which give int32 indices
(TVM takes the dtype of the first shape dimension, which is int32 unless the shape is
written with `i64` dims).  `mean` of integers sums in the input dtype and divides
truncating toward zero; float16 `mean` and `variance` accumulate in float32.  `all` and
`any` want bool data (TVM's relation does not check, but it cannot build them otherwise).

Two corners where TVM disagrees with itself, settled here as its type relation does:
`axis=[]` reduces every axis, and `exclude=True` with `axis=None` reduces every axis.
"""

from __future__ import annotations

from ..lazy_modules import deferred, numpy as np
from ..ir.types import TensorType
from .attrs import BOOL, OPT_INTS, Attr
from .registry import COMM_REDUCE, OpTypeError, define
from .shapes import axis_index, dims, same_dim, tensor, type_text

AXIS = Attr("axis", OPT_INTS, None, "axes to reduce (None: all)")
KEEPDIMS = Attr("keepdims", BOOL, False, "keep reduced axes with extent 1")
EXCLUDE = Attr("exclude", BOOL, False, "reduce the axes not listed instead")
SELECT_LAST = Attr("select_last_index", BOOL, False, "on ties, the last index instead of the first")
UNBIASED = Attr("unbiased", BOOL, False, "divide by n - 1 instead of n")


def reduce_axes(op: str, ndim: int, axis: tuple[int, ...] | None,
                exclude: bool = False) -> tuple[int, ...]:
    """The sorted, non-negative axes a reduction runs over (shared with nn.l2_normalize)."""
    if not axis:
        return tuple(range(ndim))
    if ndim == 0:
        raise OpTypeError(f"{op}: axis {list(axis)} given for a rank-0 tensor, which has no axes")
    listed: list[int] = []
    for a in axis:
        i = axis_index(a, ndim, f"{op}: axis")
        if i in listed:
            raise OpTypeError(f"{op}: axis {list(axis)} names dimension {i} more than once")
        listed.append(i)
    if exclude:
        return tuple(i for i in range(ndim) if i not in listed)
    return tuple(sorted(listed))


def reduced_shape(shape: tuple, axes: tuple[int, ...], keepdims: bool) -> tuple:
    """`shape` with `axes` removed, or set to 1 with keepdims (other dims kept as written)."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _axes_of(x: np.ndarray, attrs, op: str) -> tuple[int, ...]:
    return reduce_axes(op, x.ndim, attrs.axis, attrs.exclude)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


# ---- sum, max, min, prod, all, any, mean ------------------------------------------------

def _sum(x, axes, keepdims):
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


def _prod(x, axes, keepdims):
    return np.prod(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


def _max(x, axes, keepdims):
    return np.max(x, axis=axes, keepdims=keepdims)


def _min(x, axes, keepdims):
    return np.min(x, axis=axes, keepdims=keepdims)


def _all(x, axes, keepdims):
    return np.all(x, axis=axes, keepdims=keepdims)


def _any(x, axes, keepdims):
    return np.any(x, axis=axes, keepdims=keepdims)


def _mean(x, axes, keepdims):
    count = _count(x.shape, axes)
    if x.dtype.kind in "iu":
        total = np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
        n = np.asarray(count).astype(x.dtype)  # TVM casts the count to the data dtype
        quotient = np.abs(total) // n  # truncating division, done exactly on integers
        return np.asarray(np.where(total < 0, -quotient, quotient)).astype(x.dtype)
    wide = np.float32 if x.dtype == np.float16 else x.dtype
    total = np.sum(x.astype(wide), axis=axes, keepdims=keepdims, dtype=wide)
    return np.asarray(total / np.asarray(count, dtype=wide)).astype(x.dtype)


REDUCERS = {
    "sum": (_sum, "The sum of the elements over the given axes."),
    "mean": (_mean, "The mean of the elements over the given axes (integers: truncated)."),
    "max": (_max, "The largest element over the given axes."),
    "min": (_min, "The smallest element over the given axes."),
    "prod": (_prod, "The product of the elements over the given axes."),
    "all": (_all, "Logical and of bool elements over the given axes."),
    "any": (_any, "Logical or of bool elements over the given axes."),
}


def _reducer(name: str, fn, doc: str) -> None:
    opdef = define(name, ("data",), COMM_REDUCE, attrs=(AXIS, KEEPDIMS, EXCLUDE), doc=doc)
    needs_bool = name in ("all", "any")

    @opdef.relation
    def _(data, attrs):
        d = tensor(data, f"{name}: data", 0)
        if needs_bool and d.dtype != "bool":
            raise OpTypeError(f"{name} expects a bool tensor, found {type_text(d)}", 0)
        axes = reduce_axes(name, d.ndim, attrs.axis, attrs.exclude)
        return TensorType(reduced_shape(d.shape, axes, attrs.keepdims), d.dtype)

    def compute(x, attrs):
        axes = _axes_of(x, attrs, name)
        return np.asarray(fn(x, axes, attrs.keepdims)).astype(x.dtype, copy=False)

    opdef.reference(compute)


for _name, (_fn, _doc) in REDUCERS.items():
    _reducer(_name, _fn, _doc)


# ---- argmax, argmin ---------------------------------------------------------------------

def _arg_reducer(name: str, pick, doc: str) -> None:
    opdef = define(name, ("data",), COMM_REDUCE, attrs=(AXIS, KEEPDIMS, SELECT_LAST, EXCLUDE),
                   doc=doc)

    @opdef.relation
    def _(data, attrs):
        d = tensor(data, f"{name}: data", 0)
        if d.ndim == 0:
            raise OpTypeError(f"{name} needs a tensor of rank 1 or more, found {type_text(d)}", 0)
        axes = reduce_axes(name, d.ndim, attrs.axis, attrs.exclude)
        return TensorType(reduced_shape(d.shape, axes, attrs.keepdims), "int32")

    @opdef.reference
    def _(x, attrs):
        if x.ndim == 0:
            raise OpTypeError(f"{name} needs a tensor of rank 1 or more", 0)
        axes = _axes_of(x, attrs, name)
        kept = [i for i in range(x.ndim) if i not in axes]
        # Several reduced axes act as one, in row-major order: the index is the flat
        # position within the reduced block (as TVM's ravelled index).
        moved = np.transpose(x, kept + list(axes))
        flat = moved.reshape(moved.shape[: len(kept)] + (_count(x.shape, axes),))
        if attrs.select_last_index:
            index = flat.shape[-1] - 1 - pick(flat[..., ::-1], axis=-1)
        else:
            index = pick(flat, axis=-1)
        if attrs.keepdims:
            index = index.reshape(reduced_shape(x.shape, axes, True))
        return np.asarray(index, dtype=np.int32)


_arg_reducer("argmax", deferred(np, "argmax"), "The index of the largest element over the given axes "
                                  "(several axes: the flat index within them).")
_arg_reducer("argmin", deferred(np, "argmin"), "The index of the smallest element over the given axes "
                                  "(several axes: the flat index within them).")


# ---- variance ---------------------------------------------------------------------------

variance = define("variance", ("data", "mean"), COMM_REDUCE,
                  attrs=(AXIS, KEEPDIMS, EXCLUDE, UNBIASED),
                  doc="The mean of (data - mean)^2 over the given axes; `mean` has data's rank "
                      "(the Python API computes it with keepdims=True).  unbiased: divide by "
                      "n - 1.")


@variance.relation
def _(data, mean, attrs):
    d = tensor(data, "variance: data", 0)
    m = tensor(mean, "variance: mean", 1)
    if d.ndim == 0:
        raise OpTypeError(f"variance needs data of rank 1 or more, found {type_text(d)}", 0)
    if m.ndim != d.ndim:
        raise OpTypeError(f"variance: mean has rank {m.ndim} but data has rank {d.ndim} "
                          f"(mean {type_text(m)}, data {type_text(d)})", 1)
    for i, (md, dd) in enumerate(zip(dims(m), dims(d))):
        if md != 1 and not same_dim(md, dd):
            raise OpTypeError(f"variance: mean has extent {md} on axis {i} where data has {dd} "
                              f"(mean {type_text(m)}, data {type_text(d)})", 1)
    if m.dtype != d.dtype:
        raise OpTypeError(f"variance: mean has dtype {m.dtype} but data has {d.dtype} "
                          f"(mean {type_text(m)}, data {type_text(d)})", 1)
    axes = reduce_axes("variance", d.ndim, attrs.axis, attrs.exclude)
    return TensorType(reduced_shape(d.shape, axes, attrs.keepdims), d.dtype)


@variance.reference
def _(x, mean, attrs):
    axes = _axes_of(x, attrs, "variance")
    count = _count(x.shape, axes) - (1 if attrs.unbiased else 0)
    wide = np.float32 if x.dtype == np.float16 else x.dtype
    diff = (x - mean).astype(wide)
    total = np.sum(diff * diff, axis=axes, keepdims=attrs.keepdims, dtype=wide)
    return np.asarray(total / np.asarray(count, dtype=wide)).astype(x.dtype)
