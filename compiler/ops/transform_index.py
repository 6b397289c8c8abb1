"""Ops of reference §7.6 that pick, replicate or create elements: strided_slice, take,
gather, gather_nd, tile, repeat, reverse, sliding_window, one_hot, full, zeros, ones,
arange, shape_of, ndarray_size.

Indices follow TVM: `take` clips (mode "clip"), wraps ("wrap") or trusts ("fast") them;
`gather`, `gather_nd` and `one_hot` expect them in range.
"""

from __future__ import annotations

import math

from ..lazy_modules import numpy as np
from ..ir.attrs import FloatImm, IntImm
from ..ir.types import ANY, TensorType
from .attrs import ANY as ANY_VALUE
from .attrs import INT, INTS, OPT_INT, OPT_INTS, STR, Attr, AttrError
from .registry import BROADCAST, ELEMWISE, INJECTIVE, OPAQUE, OUT_EWISE_FUSABLE, OpTypeError, define
from .shapes import axis_index, check_dtype, dims, known, mul, tensor, type_text
from .transform_geometry import (
    gather_axis,
    gather_nd_m,
    ints_text,
    one_hot_axis,
    repeat_axis,
    require_attr,
    slice_plan,
    take_plan,
    type_of_array,
    window_check,
)


def _integer_tensor(t: TensorType, what: str, arg: int) -> None:
    if not t.dtype.startswith(("int", "uint")):
        raise OpTypeError(f"{what} must be an integer tensor, found {type_text(t)}", arg)


def _scalar(ty, what: str, arg: int) -> TensorType:
    t = tensor(ty, what, arg)
    if t.ndim:
        raise OpTypeError(f"{what} must be a scalar, found {type_text(t)}", arg)
    return t


# --------------------------------------------------------------------------- strided_slice

strided_slice = define(
    "strided_slice", ("data",), INJECTIVE,
    attrs=(Attr("begin", OPT_INTS, None, "first index per sliced axis (negative counts from the end)"),
           Attr("end", OPT_INTS, None, "end index (exclusive) per sliced axis, or the length in "
                                       "slice_mode \"size\" (-1: to the end)"),
           Attr("strides", OPT_INTS, None, "step per sliced axis (negative walks backwards)"),
           Attr("slice_mode", STR, "end", "\"end\": end holds end indices; \"size\": lengths (strides ignored)"),
           Attr("axes", OPT_INTS, None, "the axes begin/end/strides refer to; None: the leading axes")),
    doc="Slice data with begin, end and strides per axis, NumPy style: negative indices count "
        "from the end and out-of-range bounds are clamped.  Without axes, missing trailing "
        "entries take the whole axis.")


@strided_slice.relation
def _(data, attrs):
    t = tensor(data, "strided_slice: data", 0)
    out = list(dims(t))
    for axis, _, _, length in slice_plan(t, attrs):
        out[axis] = length
    return TensorType(tuple(out), t.dtype)


@strided_slice.reference
def _(x, attrs):
    for axis, first, step, length in slice_plan(type_of_array(x), attrs):
        x = np.take(x, first + step * np.arange(length, dtype=np.int64), axis=axis)
    return x


# --------------------------------------------------------------------------- take, gather, gather_nd

take = define(
    "take", ("data", "indices"), INJECTIVE,
    attrs=(Attr("batch_dims", INT, 0, "leading axes of data and indices that are matched, not indexed"),
           Attr("axis", OPT_INT, None, "the axis to pick along; None: pick from the flattened data"),
           Attr("mode", STR, "clip", "out-of-range indices: \"clip\" to the ends, \"wrap\" around, "
                                     "or \"fast\" (assumed in range)")),
    doc="Pick elements of data along axis at the given indices: the result's shape is "
        "data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis+1:].")


@take.relation
def _(data, indices, attrs):
    d = tensor(data, "take: data", 0)
    i = tensor(indices, "take: indices", 1)
    _integer_tensor(i, "take: indices", 1)
    axis, batch = take_plan(d, i, attrs)
    if axis is None:
        return TensorType(i.shape, d.dtype)
    ds, is_ = dims(d), dims(i)
    return TensorType(ds[:axis] + is_[batch:] + ds[axis + 1:], d.dtype)


def _fix_indices(idx: np.ndarray, n: int, mode: str) -> np.ndarray:
    idx = idx.astype(np.int64)
    if mode == "clip":
        return np.clip(idx, 0, n - 1)
    if mode == "wrap":
        return np.mod(idx, n)
    if np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"take: an index is out of range for an axis of length {n} (mode \"fast\")")
    return idx


@take.reference
def _(x, indices, attrs):
    axis, batch = take_plan(type_of_array(x), type_of_array(indices), attrs)
    if axis is None:
        flat = x.reshape(-1)
        return flat[_fix_indices(indices, flat.size, attrs.mode)]
    idx = _fix_indices(indices, x.shape[axis], attrs.mode)
    if batch == 0:
        return np.take(x, idx, axis=axis)
    out_shape = x.shape[:axis] + indices.shape[batch:] + x.shape[axis + 1:]
    out = np.empty(out_shape, dtype=x.dtype)
    for b in np.ndindex(*x.shape[:batch]):
        out[b] = np.take(x[b], idx[b], axis=axis - batch)
    return out


gather = define("gather", ("data", "indices"), INJECTIVE,
                attrs=(Attr("axis", OPT_INT, None, "the axis the indices pick along"),),
                doc="out[i][j][k] = data[indices[i][j][k]][j][k] for axis 0 (and so on): indices "
                    "has data's rank and the result has the shape of indices.")


@gather.relation
def _(data, indices, attrs):
    d = tensor(data, "gather: data", 0)
    i = tensor(indices, "gather: indices", 1)
    _integer_tensor(i, "gather: indices", 1)
    gather_axis(d, i, attrs)
    return TensorType(i.shape, d.dtype)


@gather.reference
def _(x, indices, attrs):
    axis = gather_axis(type_of_array(x), type_of_array(indices), attrs)
    return np.take_along_axis(x, indices.astype(np.int64), axis=axis)


gather_nd = define(
    "gather_nd", ("data", "indices"), INJECTIVE,
    attrs=(Attr("batch_dims", INT, 0, "leading axes of data matched with axes 1.. of indices"),
           Attr("index_rank", OPT_INT, None, "the length of an index tuple when indices.shape[0] is "
                                             "known only at run time")),
    doc="Pick slices of data by index tuples along the first axis of indices (M, Y...): "
        "the result has shape Y + data.shape[batch_dims + M:].")


@gather_nd.relation
def _(data, indices, attrs):
    d = tensor(data, "gather_nd: data", 0)
    i = tensor(indices, "gather_nd: indices", 1)
    _integer_tensor(i, "gather_nd: indices", 1)
    m = gather_nd_m(d, i, attrs)
    return TensorType(dims(i)[1:] + dims(d)[m + attrs.batch_dims:], d.dtype)


@gather_nd.reference
def _(x, indices, attrs):
    m = gather_nd_m(type_of_array(x), type_of_array(indices), attrs)
    b = attrs.batch_dims
    out = np.empty(indices.shape[1:] + x.shape[m + b:], dtype=x.dtype)
    for pos in np.ndindex(*indices.shape[1:]):
        where = tuple(pos[:b]) + tuple(int(v) for v in indices[(slice(None),) + pos])
        out[pos] = x[where]
    return out


# --------------------------------------------------------------------------- tile, repeat, reverse, sliding_window

tile = define("tile", ("data",), BROADCAST,
              attrs=(Attr("reps", INTS, doc="how many times to repeat along each axis"),),
              doc="Repeat the whole of data reps[i] times along axis i; the shorter of data's "
                  "shape and reps is padded with 1s on the left.")


@tile.relation
def _(data, attrs):
    t = tensor(data, "tile: data", 0)
    reps = attrs.reps
    for r in reps:
        if r <= 0:
            raise AttrError(f"tile: attribute reps {ints_text(reps)} must hold positive counts", "reps")
    n = max(t.ndim, len(reps))
    ds = (1,) * (n - t.ndim) + dims(t)
    rs = (1,) * (n - len(reps)) + tuple(reps)
    return TensorType(tuple(mul(d, r) for d, r in zip(ds, rs)), t.dtype)


@tile.reference
def _(x, attrs):
    return np.tile(x, attrs.reps)


repeat = define("repeat", ("data",), BROADCAST,
                attrs=(Attr("repeats", INT, doc="how many times to repeat each element"),
                       Attr("axis", OPT_INT, None, "the axis to repeat along")),
                doc="Repeat each element of data repeats times along axis.")


@repeat.relation
def _(data, attrs):
    t = tensor(data, "repeat: data", 0)
    axis = repeat_axis(t, attrs)
    ds = dims(t)
    return TensorType(ds[:axis] + (mul(ds[axis], attrs.repeats),) + ds[axis + 1:], t.dtype)


@repeat.reference
def _(x, attrs):
    return np.repeat(x, attrs.repeats, axis=repeat_axis(type_of_array(x), attrs))


reverse = define("reverse", ("data",), INJECTIVE,
                 attrs=(Attr("axis", OPT_INT, None, "the axis to reverse"),),
                 doc="Reverse the order of the elements along axis.")


@reverse.relation
def _(data, attrs):
    t = tensor(data, "reverse: data", 0)
    axis_index(require_attr("reverse", attrs, "axis"), t.ndim, "reverse: axis")
    return t


@reverse.reference
def _(x, attrs):
    return np.flip(x, axis=attrs.axis).copy()


sliding_window = define(
    "sliding_window", ("data",), OPAQUE,
    attrs=(Attr("axis", INT, doc="the first axis the window slides over (it slides over all later ones too)"),
           Attr("window_shape", INTS, doc="the window's extent on each axis from axis on"),
           Attr("strides", INTS, doc="the window's step on each axis from axis on")),
    doc="Every window of data: axes before axis stay, then one axis per windowed axis counting "
        "the window positions, then the window itself.")


@sliding_window.relation
def _(data, attrs):
    t = tensor(data, "sliding_window: data", 0)
    axis = window_check(t, attrs)
    ds = dims(t)
    positions = tuple((d - w) // s + 1 if known(d) else ANY
                      for d, w, s in zip(ds[axis:], attrs.window_shape, attrs.strides))
    return TensorType(ds[:axis] + positions + tuple(attrs.window_shape), t.dtype)


@sliding_window.reference
def _(x, attrs):
    axis = window_check(type_of_array(x), attrs)
    view = np.lib.stride_tricks.sliding_window_view(x, attrs.window_shape, axis=tuple(range(axis, x.ndim)))
    step = (slice(None),) * axis + tuple(slice(None, None, s) for s in attrs.strides)
    return np.ascontiguousarray(view[step])


# --------------------------------------------------------------------------- one_hot

one_hot = define(
    "one_hot", ("indices", "on_value", "off_value"), OUT_EWISE_FUSABLE,
    attrs=(Attr("depth", INT, 1, "the length of the new axis"),
           Attr("axis", INT, -1, "where the new axis goes (-1: last)"),
           Attr("dtype", STR, "", "the result dtype (empty: that of on_value)")),
    doc="A new axis of length depth: on_value where its position equals the index, off_value "
        "elsewhere.")


@one_hot.relation
def _(indices, on_value, off_value, attrs):
    i = tensor(indices, "one_hot: indices", 0)
    _integer_tensor(i, "one_hot: indices", 0)
    on = _scalar(on_value, "one_hot: on_value", 1)
    off = _scalar(off_value, "one_hot: off_value", 2)
    if on.dtype != off.dtype:
        raise OpTypeError(f"one_hot: on_value {type_text(on)} and off_value {type_text(off)} have "
                          "different dtypes", 2)
    p = one_hot_axis(i, attrs)
    ds = dims(i)
    return TensorType(ds[:p] + (attrs.depth,) + ds[p:], check_dtype(attrs.dtype) if attrs.dtype else on.dtype)


@one_hot.reference
def _(indices, on, off, attrs):
    p = one_hot_axis(type_of_array(indices), attrs)
    positions = np.arange(attrs.depth).reshape((attrs.depth,) + (1,) * (indices.ndim - p))
    hot = np.expand_dims(indices, p) == positions
    return np.where(hot, on, off).astype(attrs.dtype or on.dtype)


# --------------------------------------------------------------------------- full, zeros, ones, arange

_INIT_ATTRS = (Attr("shape", OPT_INTS, None, "the result shape"),
               Attr("dtype", STR, "", "the result dtype"))


def _init_shape(op: str, attrs) -> tuple[int, ...]:
    shape = tuple(require_attr(op, attrs, "shape"))
    if any(d < 0 for d in shape):
        raise AttrError(f"{op}: attribute shape {ints_text(shape)} has a negative dimension", "shape")
    return shape


full = define("full", ("fill_value",), ELEMWISE, attrs=_INIT_ATTRS,
              doc="A tensor of the given shape with every element fill_value (dtype empty: that "
                  "of fill_value).")


@full.relation
def _(fill_value, attrs):
    f = _scalar(fill_value, "full: fill_value", 0)
    return TensorType(_init_shape("full", attrs), check_dtype(attrs.dtype) if attrs.dtype else f.dtype)


@full.reference
def _(fill, attrs):
    return np.full(_init_shape("full", attrs), fill, dtype=attrs.dtype or fill.dtype)


def _constant(name: str, value: int) -> None:
    opdef = define(name, (), ELEMWISE, attrs=_INIT_ATTRS,
                   doc=f"A tensor of the given shape filled with {value}s (dtype empty: float32).")

    @opdef.relation
    def _(attrs):
        return TensorType(_init_shape(name, attrs), check_dtype(attrs.dtype or "float32"))

    @opdef.reference
    def _(attrs):
        return np.full(_init_shape(name, attrs), value, dtype=attrs.dtype or "float32")


_constant("zeros", 0)
_constant("ones", 1)


arange = define(
    "arange", ("start", "stop", "step"), OPAQUE,
    attrs=(Attr("start", ANY_VALUE, None, "the start as a constant, when known"),
           Attr("stop", ANY_VALUE, None, "the stop as a constant, when known"),
           Attr("step", ANY_VALUE, None, "the step as a constant, when known"),
           Attr("dtype", STR, doc="the dtype of the arguments and the result")),
    doc="start, start + step, ... up to (not including) stop: ceil((stop - start) / step) "
        "elements.  The length is known when the start, stop and step attributes are constants; "
        "otherwise it is ?.")


def _number(value) -> float | None:
    """A constant attribute's value, or None when it is not written as a number."""
    if isinstance(value, (IntImm, FloatImm)):
        return float(value.value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    data = getattr(value, "data", None)  # a Constant expression
    if isinstance(data, np.ndarray) and data.size == 1:
        return float(data.reshape(()))
    return None


def _arange_length(start: float, stop: float, step: float) -> int:
    if step == 0:
        raise OpTypeError("arange: step is 0")
    n = math.ceil((stop - start) / step)
    if n <= 0:
        raise OpTypeError(f"arange: start {start:g}, stop {stop:g} and step {step:g} give no elements")
    return n


@arange.relation
def _(start, stop, step, attrs):
    dtype = check_dtype(attrs.dtype)
    for k, (ty, name) in enumerate(((start, "start"), (stop, "stop"), (step, "step"))):
        t = _scalar(ty, f"arange: {name}", k)
        if t.dtype != dtype:
            raise OpTypeError(f"arange: {name} has dtype {t.dtype} but attribute dtype is {dtype}", k)
    values = [_number(attrs[n]) for n in ("start", "stop", "step")]
    if any(v is None for v in values):
        return TensorType((ANY,), dtype)
    return TensorType((_arange_length(*values),), dtype)  # type: ignore[arg-type]


@arange.reference
def _(start, stop, step, attrs):
    n = _arange_length(float(start), float(stop), float(step))
    start, step = np.asarray(start, dtype=attrs.dtype), np.asarray(step, dtype=attrs.dtype)
    return (start + step * np.arange(n, dtype=attrs.dtype)).astype(attrs.dtype)


# --------------------------------------------------------------------------- shape_of, ndarray_size

shape_of = define("shape_of", ("data",), OPAQUE,
                  attrs=(Attr("dtype", STR, "", "the result dtype (empty: int32)"),),
                  doc="The shape of data as a 1-D tensor.  As in TVM, a scalar data gives a scalar "
                      "(holding 0 here).")


@shape_of.relation
def _(data, attrs):
    t = tensor(data, "shape_of: data", 0)
    return TensorType((t.ndim,) if t.ndim else (), check_dtype(attrs.dtype or "int32"))


@shape_of.reference
def _(x, attrs):
    if x.ndim == 0:
        return np.zeros((), dtype=attrs.dtype or "int32")
    return np.array(x.shape, dtype=attrs.dtype or "int32")


ndarray_size = define("ndarray_size", ("data",), INJECTIVE,
                      attrs=(Attr("dtype", STR, "", "the result dtype (empty: int32)"),),
                      doc="The number of elements of data, as a scalar.")


@ndarray_size.relation
def _(data, attrs):
    tensor(data, "ndarray_size: data", 0)
    return TensorType((), check_dtype(attrs.dtype or "int32"))


@ndarray_size.reference
def _(x, attrs):
    return np.array(x.size, dtype=attrs.dtype or "int32")


# --------------------------------------------------------------------------- slice_like

slice_like = define(
    "slice_like", ("data", "shape_like"), INJECTIVE,
    attrs=(Attr("axes", OPT_INTS, None, "the axes to slice (negative counts from the end); None: every "
                                        "axis shape_like has"),),
    doc="Slice data from the start of each axis to the extent shape_like has there, on the given "
        "axes (all of shape_like's axes when none are given); each must be at most data's extent.")


def slice_like_shape(data: TensorType, like: TensorType, attrs) -> tuple:
    """The result's shape: data's, with the sliced axes' extents taken from shape_like."""
    out = list(dims(data))
    if attrs.axes is None:
        axes = list(range(min(data.ndim, like.ndim)))
    else:
        if not attrs.axes:
            raise OpTypeError("slice_like: attribute axes cannot be empty")
        axes = []
        for a in attrs.axes:
            axis = axis_index(a, data.ndim, "slice_like: axis")
            if axis >= like.ndim:
                raise OpTypeError(f"slice_like: axis {a} exceeds the rank {like.ndim} of shape_like "
                                  f"{type_text(like)}", 1)
            axes.append(axis)
    for axis in axes:
        end = dims(like)[axis]
        if known(end, out[axis]) and end > out[axis]:
            raise OpTypeError(f"slice_like: the end index of axis {axis} exceeds data's extent: {end} vs "
                              f"{out[axis]} (data {type_text(data)}, shape_like {type_text(like)})", 1)
        out[axis] = end
    return tuple(out)


@slice_like.relation
def _(data, shape_like, attrs):
    d = tensor(data, "slice_like: data", 0)
    like = tensor(shape_like, "slice_like: shape_like", 1)
    return TensorType(slice_like_shape(d, like, attrs), d.dtype)


@slice_like.reference
def _(x, like, attrs):
    shape = slice_like_shape(type_of_array(x), type_of_array(like), attrs)
    return x[tuple(slice(0, n) for n in shape)]
