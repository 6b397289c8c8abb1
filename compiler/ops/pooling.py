"""Pooling, padding and resizing (reference §7.2).

Layouts name axes by letters (`NCHW`, `NHWC`, `NCHW16c`).  An op finds its spatial axes
(D, H, W) by letter, so any layout that keeps them whole works; a split spatial axis
(`NCHW4w`) or a layout whose length is not the data's rank is an error.  A pooled extent
follows TVM's rule

    (size + pad_before + pad_after - dilation*(kernel-1) - 1 [+ stride-1 if ceil_mode]) // stride + 1

and a `?` extent stays `?`.  Padding is written as one value (all sides), one per spatial
axis (both sides), or all befores then all afters (2-D: top, left, bottom, right).

Numerics follow TVM's topi:
* max pooling pads with the dtype's lowest finite value; average pooling sums in the
  dtype and divides by the number of window positions inside the data
  (count_include_pad=False) or inside data plus the declared padding (True); the extra
  tail ceil_mode adds never counts.  Integer averages truncate toward zero.
* adaptive pooling: output cell i covers [floor(i*n/o), ceil((i+1)*n/o)).
* resize computes source coordinates and interpolation in float32 and casts the result
  (float to integer truncates).  Nearest neighbour rounds with `rounding_method`; "" means
  round for align_corners and floor otherwise; "round" rounds halves away from zero (the
  LLVM intrinsic TVM emits); asymmetric nearest with an integer upscale divides indices
  exactly instead (TVM's integer shortcut, which ignores the rounding method).
  image.resize1d is the same arithmetic on the W axis alone (one function, `resample`,
  for any number of axes), without that shortcut, as topi's resize1d has none.
* nn.upsampling is resize2d with asymmetric (or align_corners) coordinates; its output
  extent rounds size*scale halves to even (TVM folds the constant with nearbyint).

The geometry these ops share with their compute rules (layout letters, the window, pad
widths, resize checks, source coordinates and cubic weights) is in pooling_geometry.py.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..lazy_modules import numpy as np
from ..ir.types import ANY, TensorType
from .attrs import BOOL, FLOAT, INT, INT_LISTS, INTS, OPT_FLOATS, OPT_INTS, STR, Attr
from .registry import INJECTIVE, OUT_EWISE_FUSABLE, OpTypeError, define
from .pooling_geometry import (
    AXIS_NAMES,
    SPATIAL_LETTERS,
    Window,
    adaptive_cell,
    adaptive_sizes,
    cubic_weights,
    int_div_shortcut,
    pad_widths,
    pool_window,
    resize_check,
    resize_size,
    source_coord,
    spatial_axes,
    upsampled,
)
from .shapes import check_dtype, conv_out, dims, known, tensor, type_text

_DEFAULT_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _lowest(dtype: np.dtype):
    if dtype.kind == "f":
        return np.finfo(dtype).min
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return False


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C and TVM), b > 0."""
    return np.sign(a) * (np.abs(a) // b)


def _mean(total: np.ndarray, count: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """TVM's average: a sum kept in the data dtype (integers wrap) divided by a count."""
    if dtype.kind == "f":
        return (total / count.astype(dtype)).astype(dtype)
    wrapped = total.astype(dtype).astype(np.int64)
    return _trunc_div(wrapped, count).astype(dtype)


# ---- sliding-window pooling -------------------------------------------------------------


def _pooled_shape(op: str, data: TensorType, w: Window) -> tuple:
    shape = list(data.shape)
    sizes = dims(data)
    for i, ax in enumerate(w.axes):
        size = sizes[ax]
        if not known(size):
            shape[ax] = ANY
            continue
        out = conv_out(size, w.kernel[i], w.before[i], w.after[i], w.strides[i], w.dilation[i], w.ceil_mode)
        if out < 1:
            letter = SPATIAL_LETTERS[len(w.axes)][i]
            extent = w.dilation[i] * (w.kernel[i] - 1) + 1
            raise OpTypeError(f"{op}: the pooling window spans {extent} along {AXIS_NAMES[letter]} but the padded "
                              f"input has only {size + w.before[i] + w.after[i]} (data {type_text(data)})", 0)
        shape[ax] = out
    return tuple(shape)


def _pool(x: np.ndarray, w: Window, kind: str, count_include_pad: bool = False) -> np.ndarray:
    """Max or average pooling of x along w.axes, as TVM's topi pool_impl_nd."""
    outs, pad_width = [], [(0, 0)] * x.ndim
    for i, ax in enumerate(w.axes):
        outs.append(conv_out(x.shape[ax], w.kernel[i], w.before[i], w.after[i], w.strides[i], w.dilation[i],
                             w.ceil_mode))
        extra = w.strides[i] - 1 if w.ceil_mode else 0
        pad_width[ax] = (w.before[i], w.after[i] + extra)
    fill = _lowest(x.dtype) if kind == "max" else 0
    padded = np.pad(x, pad_width, constant_values=fill)
    acc_dtype = x.dtype if x.dtype.kind == "f" or kind == "max" else np.int64
    acc = None
    for offsets in itertools.product(*(range(k) for k in w.kernel)):
        index = [slice(None)] * x.ndim
        for i, ax in enumerate(w.axes):
            start = offsets[i] * w.dilation[i]
            index[ax] = slice(start, start + w.strides[i] * (outs[i] - 1) + 1, w.strides[i])
        part = padded[tuple(index)].astype(acc_dtype)
        if acc is None:
            acc = part.copy()
        elif kind == "max":
            np.maximum(acc, part, out=acc)
        else:
            acc += part
    if kind == "max":
        return acc.astype(x.dtype)
    count = np.ones((1,) * x.ndim, dtype=np.int64)
    for i, ax in enumerate(w.axes):
        size = x.shape[ax]
        starts = np.arange(outs[i]) * w.strides[i] - w.before[i]
        positions = starts[:, None] + np.arange(w.kernel[i]) * w.dilation[i]
        lo, hi = (-w.before[i], size + w.after[i] - 1) if count_include_pad else (0, size - 1)
        per_axis = ((positions >= lo) & (positions <= hi)).sum(axis=1)
        shape = [1] * x.ndim
        shape[ax] = outs[i]
        count = count * per_axis.reshape(shape)
    # a window wholly in padding sums to 0; any positive divisor keeps it 0 (TVM: max(n, 1))
    return _mean(acc, np.maximum(count, 1), x.dtype)


_POOL_DOC = {
    "max": "{n}-D max pooling over a sliding window (padding never wins: it is the dtype's lowest value).",
    "avg": "{n}-D average pooling over a sliding window; count_include_pad counts the declared padding "
           "in the divisor.",
}


def _pool_op(nd: int, kind: str) -> None:
    name = f"nn.{kind}_pool{nd}d"
    attrs = [
        Attr("pool_size", INTS, doc="window extent per spatial axis"),
        Attr("strides", INTS, (1,) * nd, "step per spatial axis"),
        Attr("dilation", INTS, (1,) * nd, "spacing of window elements"),
        Attr("padding", INTS, (0,) * nd, "one value, one per axis, or befores then afters"),
        Attr("layout", STR, _DEFAULT_LAYOUT[nd], "data layout"),
        Attr("out_layout", STR, "", "output layout (empty: as layout)"),
        Attr("ceil_mode", BOOL, False, "round the output extent up"),
    ]
    if kind == "avg":
        attrs.append(Attr("count_include_pad", BOOL, False, "count padding in the divisor"))
    opdef = define(name, ("data",), OUT_EWISE_FUSABLE, attrs=tuple(attrs), doc=_POOL_DOC[kind].format(n=nd))

    @opdef.relation
    def _(data, attrs):
        d = tensor(data, f"{name}: data", 0)
        return TensorType(_pooled_shape(name, d, pool_window(name, nd, d, attrs)), d.dtype)

    @opdef.reference
    def _(x, attrs):
        t = TensorType(x.shape, str(x.dtype))
        w = pool_window(name, nd, t, attrs)
        _pooled_shape(name, t, w)  # the relation's checks
        return _pool(x, w, kind, kind == "avg" and attrs.count_include_pad)


for _nd in (1, 2, 3):
    for _kind in ("max", "avg"):
        _pool_op(_nd, _kind)


# ---- global and adaptive pooling -------------------------------------------------------------

def _adaptive_pool(x: np.ndarray, axes: tuple[int, ...], sizes: tuple[int, ...], kind: str) -> np.ndarray:
    """Each output cell reduces the input cell adaptive_cell gives it."""
    spans = [[adaptive_cell(i, x.shape[ax], o) for i in range(o)] for ax, o in zip(axes, sizes)]
    shape = list(x.shape)
    for ax, o in zip(axes, sizes):
        shape[ax] = o
    out = np.empty(shape, dtype=x.dtype)
    for cell in itertools.product(*(range(o) for o in sizes)):
        src = [slice(None)] * x.ndim
        dst: list = [slice(None)] * x.ndim
        count = 1
        for i, ax in enumerate(axes):
            lo, hi = spans[i][cell[i]]
            src[ax], dst[ax] = slice(lo, hi), cell[i]
            count *= hi - lo
        window = x[tuple(src)]
        if kind == "max":
            out[tuple(dst)] = window.max(axis=axes)
        else:
            acc_dtype = x.dtype if x.dtype.kind == "f" else np.int64
            total = window.sum(axis=axes, dtype=acc_dtype)
            out[tuple(dst)] = _mean(np.asarray(total), np.asarray(count), x.dtype)
    return out


def _global_op(kind: str) -> None:
    name = f"nn.global_{kind}_pool2d"
    opdef = define(name, ("data",), OUT_EWISE_FUSABLE,
                   attrs=(Attr("layout", STR, "NCHW", "data layout"),
                          Attr("out_layout", STR, "", "output layout (empty: as layout)")),
                   doc=f"{'Average' if kind == 'avg' else 'Maximum'} over all of H and W; both become 1.")

    @opdef.relation
    def _(data, attrs):
        d = tensor(data, f"{name}: data", 0)
        shape = list(d.shape)
        for ax in spatial_axes(name, attrs.layout, "HW", d):
            shape[ax] = 1
        return TensorType(tuple(shape), d.dtype)

    @opdef.reference
    def _(x, attrs):
        axes = spatial_axes(name, attrs.layout, "HW", TensorType(x.shape, str(x.dtype)))
        return _adaptive_pool(x, axes, (1, 1), kind)


_global_op("avg")
_global_op("max")


def _adaptive_op(nd: int, kind: str) -> None:
    name = f"nn.adaptive_{kind}_pool{nd}d"
    opdef = define(name, ("data",), OUT_EWISE_FUSABLE,
                   attrs=(Attr("output_size", INTS, (), "output extent per spatial axis (empty: keep)"),
                          Attr("layout", STR, _DEFAULT_LAYOUT[nd], "data layout"),
                          Attr("out_layout", STR, "", "output layout (empty: as layout)")),
                   doc=f"{nd}-D adaptive {'average' if kind == 'avg' else 'max'} pooling to a given output "
                       "size; cell i covers [floor(i*n/o), ceil((i+1)*n/o)).")

    @opdef.relation
    def _(data, attrs):
        d = tensor(data, f"{name}: data", 0)
        axes, out = adaptive_sizes(name, nd, d, attrs)
        shape = list(d.shape)
        for ax, o in zip(axes, out):
            shape[ax] = o
        return TensorType(tuple(shape), d.dtype)

    @opdef.reference
    def _(x, attrs):
        axes, out = adaptive_sizes(name, nd, TensorType(x.shape, str(x.dtype)), attrs)
        return _adaptive_pool(x, axes, tuple(int(o) for o in out), kind)


for _nd in (1, 2, 3):
    for _kind in ("avg", "max"):
        _adaptive_op(_nd, _kind)


# ---- nn.pad ---------------------------------------------------------------------------------


pad = define("nn.pad", ("data", "pad_value"), INJECTIVE,
             attrs=(Attr("pad_width", INT_LISTS, doc="[before, after] for every axis"),
                    Attr("pad_mode", STR, "constant", "constant, edge or reflect")),
             doc="Pad every axis by [before, after]: with pad_value (constant), the edge element (edge), "
                 "or the mirror image without the edge (reflect).  A negative width crops.")


@pad.relation
def _(data, pad_value, attrs):
    d = tensor(data, "nn.pad: data", 0)
    v = tensor(pad_value, "nn.pad: pad_value", 1)
    if not all(x == 1 for x in dims(v)):
        raise OpTypeError(f"nn.pad: pad_value must be a scalar, found {type_text(v)}", 1)
    shape = []
    for axis, (size, (lo, hi)) in enumerate(zip(dims(d), pad_widths(d, attrs))):
        if not known(size):
            shape.append(ANY)
            continue
        out = size + lo + hi
        if out < 0:
            raise OpTypeError(f"nn.pad: axis {axis} of extent {size} padded by [{lo}, {hi}] would have extent {out}")
        if attrs.pad_mode == "reflect" and max(lo, hi) > size - 1:
            raise OpTypeError(f"nn.pad: reflect padding of [{lo}, {hi}] on axis {axis} needs an extent above "
                              f"{max(lo, hi)}, found {size} (data {type_text(d)})", 0)
        if attrs.pad_mode == "edge" and size == 0 and (lo > 0 or hi > 0):
            raise OpTypeError(f"nn.pad: edge padding of an empty axis {axis} (data {type_text(d)})", 0)
        shape.append(out)
    return TensorType(tuple(shape), d.dtype)


@pad.reference
def _(x, pad_value, attrs):
    widths = pad_widths(TensorType(x.shape, str(x.dtype)), attrs)
    crop = tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(widths))
    x = x[crop]
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    if attrs.pad_mode == "constant":
        fill = np.asarray(pad_value).reshape(-1)[0].astype(x.dtype)
        return np.pad(x, grow, mode="constant", constant_values=fill)
    return np.pad(x, grow, mode=attrs.pad_mode)


# ---- resize ------------------------------------------------------------------------------


def _nearest(coords: np.ndarray, rounding: str) -> np.ndarray:
    if rounding == "round":  # llvm.round: halves away from zero
        return np.sign(coords) * np.floor(np.abs(coords) + np.float32(0.5))
    if rounding == "round_prefer_floor":
        return np.ceil(coords - np.float32(0.5))
    if rounding == "round_prefer_ceil":
        return np.floor(coords + np.float32(0.5))
    if rounding == "floor":
        return np.floor(coords + np.float32(1e-5))
    return np.ceil(coords - np.float32(1e-5))


@dataclass(frozen=True)
class _Resize:
    method: str
    mode: str
    rounding: str = ""
    alpha: float = -0.5
    exclude: int = 0
    extrapolation: float = 0.0
    roi: tuple[float, ...] = ()  # the starts, then the ends, one per resized axis; () for zeros
    int_div: bool = True  # nearest asymmetric integer upscales divide indices (resize2d, not 1d)


def resample(x: np.ndarray, axes: tuple[int, ...], size: tuple[int, ...], r: _Resize,
             out_dtype: str | None = None) -> np.ndarray:
    """topi's resize1d/resize2d on numpy: resample `axes` of x to the extents `size`.

    Interpolation is separable and nests the axes in order, the first outermost: for
    2-D linear, each row pair is blended along W first, then the two along H (topi's
    order, so float32 rounding agrees with the compiled kernel)."""
    nd = len(axes)
    tail = tuple(range(x.ndim - nd, x.ndim))
    data = np.moveaxis(x, axes, tail).astype(np.float32)
    sizes_in = data.shape[x.ndim - nd:]
    roi = r.roi or (0.0,) * (2 * nd)
    coords = [np.broadcast_to(source_coord(np.arange(n_out, dtype=np.float32), n_out, n_in, r.mode, roi[a], roi[nd + a],
                                           np.float32), (n_out,))
              for a, (n_out, n_in) in enumerate(zip(size, sizes_in))]

    def along(a: int, v: np.ndarray) -> np.ndarray:
        """v (one value per output position of resized axis a) shaped to broadcast there."""
        return v.reshape((-1,) + (1,) * (nd - 1 - a))

    def pixels(index: list[np.ndarray]) -> np.ndarray:
        clipped = [np.clip(i, 0, n - 1) for i, n in zip(index, sizes_in)]
        return data[(Ellipsis, *np.ix_(*clipped))]

    if r.method == "nearest_neighbor":
        rounding = r.rounding or ("round" if r.mode == "align_corners" else "floor")
        index = []
        for c, n_in, n_out in zip(coords, sizes_in, size):
            if r.mode == "asymmetric" and r.int_div and int_div_shortcut(n_in, n_out):
                index.append(np.arange(n_out) // (n_out // n_in))
            else:
                index.append(_nearest(c, rounding).astype(np.int64))
        value = pixels(index)
    else:
        base, weights = [], []
        for c, n_in in zip(coords, sizes_in):
            floor = np.floor(c).astype(np.int64)
            t = c - np.floor(c) if r.method == "cubic" else c - floor.astype(np.float32)
            if r.method == "linear":
                base.append(floor)
                weights.append([np.float32(1) - t, t])
                continue
            w = cubic_weights(t, r.alpha, np.float32)
            if r.exclude:
                w = [np.where((floor - 1 + i < 0) | (floor + i > n_in), np.float32(0), w[i]) for i in range(4)]
                total = w[0] + w[1] + w[2] + w[3]
                w = [wi / total for wi in w]
            base.append(floor - 1)
            weights.append(w)

        def blend(a: int, index: list[np.ndarray]) -> np.ndarray:
            if a == nd:
                return pixels(index)
            value = None
            for k, w in enumerate(weights[a]):
                term = blend(a + 1, index + [base[a] + k]) * along(a, w)
                value = term if value is None else value + term
            return value

        value = blend(0, [])
    if r.mode == "tf_crop_and_resize":
        outside = np.zeros(tuple(size), dtype=bool)
        for a, (c, n_in) in enumerate(zip(coords, sizes_in)):
            outside = outside | along(a, (c < 0) | (c > n_in - 1))
        value = np.where(outside, np.float32(r.extrapolation), value)
    value = value.astype(out_dtype or x.dtype)
    return np.moveaxis(value, tail, axes)


def _resize_of(attrs, int_div: bool) -> _Resize:
    return _Resize(attrs.method.lower(), attrs.coordinate_transformation_mode, attrs.rounding_method,
                   attrs.cubic_alpha, attrs.cubic_exclude, attrs.extrapolation_value,
                   tuple(attrs.roi) if attrs.roi is not None else (), int_div)


def _resize_attrs(n: int, layout: str, roi: str) -> tuple[Attr, ...]:
    size = "[width]" if n == 1 else "[height, width]"
    return (Attr("size", OPT_INTS, None, f"output {size}"),
            Attr("roi", OPT_FLOATS, None, f"{roi} for tf_crop_and_resize"),
            Attr("layout", STR, layout, "data layout"),
            Attr("method", STR, "linear", "nearest_neighbor, linear or cubic"),
            Attr("coordinate_transformation_mode", STR, "half_pixel",
                 "how an output index maps to an input coordinate"),
            Attr("rounding_method", STR, "round", "nearest_neighbor rounding: round, floor, ceil, ..."),
            Attr("cubic_alpha", FLOAT, -0.5, "cubic spline coefficient"),
            Attr("cubic_exclude", INT, 0, "1: give samples outside the image no weight"),
            Attr("extrapolation_value", FLOAT, 0.0, "value outside the roi (tf_crop_and_resize)"),
            Attr("out_dtype", STR, "", "result dtype (empty: as data)"))


resize = define("image.resize2d", ("data",), INJECTIVE,
                attrs=_resize_attrs(2, "NCHW", "[start_h, start_w, end_h, end_w]"),
                doc="Resize H and W to `size` by nearest-neighbour, bilinear or bicubic interpolation "
                    "(TVM's topi semantics, computed in float32).")


@resize.relation
def _(data, attrs):
    d = tensor(data, "image.resize2d: data", 0)
    h, w = resize_check("image.resize2d", d, attrs.layout, attrs.method, attrs.coordinate_transformation_mode,
                        attrs.rounding_method)
    size = resize_size(attrs)
    shape = list(d.shape)
    shape[h], shape[w] = size
    out_dtype = check_dtype(attrs.out_dtype, "out_dtype") if attrs.out_dtype else d.dtype
    return TensorType(tuple(shape), out_dtype)


@resize.reference
def _(x, attrs):
    axes = resize_check("image.resize2d", TensorType(x.shape, str(x.dtype)), attrs.layout, attrs.method)
    return resample(x, axes, resize_size(attrs), _resize_of(attrs, int_div=True), attrs.out_dtype or None)


# ---- image.resize1d ------------------------------------------------------------------------

resize1d = define("image.resize1d", ("data",), INJECTIVE,
                  attrs=_resize_attrs(1, "NCW", "[start_w, end_w]"),
                  doc="Resize W to `size` by nearest-neighbour, linear or cubic interpolation (TVM's topi "
                      "semantics, computed in float32; image.resize2d on one axis, except that a nearest "
                      "asymmetric integer upscale rounds coordinates instead of dividing indices).")


@resize1d.relation
def _(data, attrs):
    d = tensor(data, "image.resize1d: data", 0)
    (w,) = resize_check("image.resize1d", d, attrs.layout, attrs.method, attrs.coordinate_transformation_mode,
                        attrs.rounding_method, letters="W")
    shape = list(d.shape)
    (shape[w],) = resize_size(attrs, "image.resize1d", 1)
    out_dtype = check_dtype(attrs.out_dtype, "out_dtype") if attrs.out_dtype else d.dtype
    return TensorType(tuple(shape), out_dtype)


@resize1d.reference
def _(x, attrs):
    axes = resize_check("image.resize1d", TensorType(x.shape, str(x.dtype)), attrs.layout, attrs.method,
                        letters="W")
    return resample(x, axes, resize_size(attrs, "image.resize1d", 1), _resize_of(attrs, int_div=False),
                    attrs.out_dtype or None)


upsampling = define("nn.upsampling", ("data",), INJECTIVE,
                    attrs=(Attr("scale_h", FLOAT, doc="height factor"),
                           Attr("scale_w", FLOAT, doc="width factor"),
                           Attr("layout", STR, "NCHW", "data layout"),
                           Attr("method", STR, "nearest_neighbor", "nearest_neighbor, bilinear or bicubic"),
                           Attr("align_corners", BOOL, False, "align_corners instead of asymmetric coordinates")),
                    doc="Scale H and W by scale_h and scale_w (extents round half to even): image.resize2d "
                        "with asymmetric or align_corners coordinates.")


@upsampling.relation
def _(data, attrs):
    d = tensor(data, "nn.upsampling: data", 0)
    return TensorType(tuple(upsampled("nn.upsampling", d, attrs)[2]), d.dtype)


@upsampling.reference
def _(x, attrs):
    h, w, shape = upsampled("nn.upsampling", TensorType(x.shape, str(x.dtype)), attrs)
    r = _Resize(attrs.method.removeprefix("bi"), "align_corners" if attrs.align_corners else "asymmetric")
    return resample(x, (h, w), (shape[h], shape[w]), r)
