"""Pooling, padding and resizing (reference §7.2) as tensor expressions.

Sliding-window pooling pads first (`T_pad`: max pooling with the dtype's lowest value,
average pooling with 0, extended to what ceil_mode's last window reads), then reduces
over the window; a window strided along the data's last axis (which the stride divides)
instead reads `T_phases`, that axis cut into the stride's phases (`phases`), with the
padding tested in the window's read.  Average pooling divides the sum by the number of
counted positions, a closed-form expression of the output index (a constant when every
window counts as many), in a stage of its own.  Adaptive (and
global) pooling reduces over the longest cell and masks the positions past a shorter
cell's end.  The reduction stage carries `tag=<op name>`.

Integer averages sum in the data dtype (wrapping, as the reference's wrapped sum) and
divide in int64, truncating.  Resizing computes coordinates and interpolation in
float32 with the reference's operation order, so rounding to the nearest pixel agrees.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....ir.types import TensorType
from ....ops.pooling_geometry import (
    COORDINATE_MODES,
    METHODS,
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
from ...errors import LoweringError
from .. import expr as te
from .registry import register_compute



def lowest(dtype: str) -> te.Const:
    """The identity of max: the dtype's lowest finite value."""
    if te.is_float(dtype):
        return te.const(float(np.finfo(dtype).min), dtype)
    if dtype == "bool":
        return te.const(False, dtype)
    return te.const(int(np.iinfo(dtype).min), dtype)


def pad_axes(data: te.Tensor, axes: Sequence[int], before: Sequence[int], extents: Sequence[int],
             fill: te.PrimExpr) -> te.Tensor:
    """`T_pad`: data with axis `axes[k]` grown to `extents[k]` (`before[k]` in front), the
    new positions `fill`; data itself when nothing grows."""
    if not any(before) and all(e <= data.shape[ax] for ax, e in zip(axes, extents)):
        return data
    shape = list(data.shape)
    for ax, e in zip(axes, extents):
        shape[ax] = e

    def body(*i):
        idx, inside = list(i), []
        for ax, b, e in zip(axes, before, extents):
            idx[ax] = i[ax] - b
            if b:
                inside.append(te.ge(idx[ax], 0))
            if e - b > data.shape[ax]:
                inside.append(te.lt(idx[ax], data.shape[ax]))
        return te.select(te.all_of(*inside), data[tuple(idx)], fill)

    return te.compute(shape, body, "T_pad")


def divide_count(total: te.Tensor, count: Callable[[tuple], te.PrimExpr], dtype: str, name: str) -> te.Tensor:
    """`total / count(i)` in `dtype`: float division, or for integers int64 division
    truncating toward zero (the reference's average)."""
    def body(*i):
        if te.is_float(dtype):
            return total[i] / te.cast(count(i), dtype)
        return te.cast(te.truncdiv(te.cast(total[i], te.INDEX), count(i)), dtype)

    return te.compute(total.shape, body, name)


# ---- sliding-window pooling


def _counted(i: te.PrimExpr | int, size: int, k: int, s: int, d: int, before: int, after: int,
             include_pad: bool) -> te.PrimExpr:
    """How many of the window positions i*s - before + j*d (j < k) lie inside the data
    (or data and declared padding): an expression of the output index i, or a number
    for a given i."""
    lo, hi = (-before, size + after - 1) if include_pad else (0, size - 1)
    start = i * s - before
    if isinstance(i, int):
        return max(min((hi - start) // d, k - 1) - max((lo - start + (d - 1)) // d, 0) + 1, 0)
    first = te.maximum((lo - start + (d - 1)) // d, 0)  # ceil((lo - start) / d)
    last = te.minimum((hi - start) // d, k - 1)
    return te.maximum(last - first + 1, 0)


def _pool_rule(nd: int, kind: str) -> None:
    op = f"nn.{kind}_pool{nd}d"

    @register_compute(op)
    def rule(data: te.Tensor, attrs, out_type) -> te.Tensor:
        w = pool_window(op, nd, TensorType(data.shape, data.dtype), attrs)
        outs = [out_type.shape[ax] for ax in w.axes]
        reads = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(outs, w.strides, w.dilation, w.kernel)]
        fill = lowest(data.dtype) if kind == "max" else te.const(0, data.dtype)
        rks = [te.reduce_axis(k, f"rv{n}") for n, k in enumerate(w.kernel)]
        if _phased(data, w):
            window = _phased_window(data, w, reads, rks, fill)
        else:
            padded = pad_axes(data, w.axes, w.before, reads, fill)

            def window(*i):
                idx = list(i)
                for n, ax in enumerate(w.axes):
                    idx[ax] = i[ax] * w.strides[n] + rks[n] * w.dilation[n]
                return padded[tuple(idx)]

        name = f"T_{kind}_pool{nd}d"
        if kind == "max":
            return te.compute(out_type.shape, lambda *i: te.max(window(*i), rks), name, tag=op)
        total = te.compute(out_type.shape, lambda *i: te.sum(window(*i), rks), f"{name}_sum", tag=op)
        include = attrs.count_include_pad

        def count(i):
            result, constant = None, 1
            for n, ax in enumerate(w.axes):
                args = (data.shape[ax], w.kernel[n], w.strides[n], w.dilation[n], w.before[n], w.after[n], include)
                same = {_counted(o, *args) for o in range(out_type.shape[ax])}
                if len(same) == 1:  # every window counts as many (the usual case): no arithmetic per element
                    constant *= same.pop()
                    continue
                c = _counted(i[ax], *args)
                result = c if result is None else result * c
            if result is None:
                return te.const(max(constant, 1), te.INDEX)
            return te.maximum(result * constant if constant != 1 else result, 1)

        return divide_count(total, count, data.dtype, name)


for _nd in (1, 2, 3):
    for _kind in ("max", "avg"):
        _pool_rule(_nd, _kind)


def _phased(data: te.Tensor, w) -> bool:
    """Whether the window strides along the data's last (contiguous) axis, which divides
    by the stride: then its positions are read from `T_phases` (see `phases`)."""
    last = data.ndim - 1
    if not w.axes or w.axes[-1] != last:
        return False
    s = w.strides[-1]
    return s > 1 and data.shape[last] % s == 0


def phases(data: te.Tensor, stride: int) -> te.Tensor:
    """`T_phases`: the last axis (W) cut into `stride` phases laid side by side,
    (..., W) -> (..., stride, W / stride), element [..., p, j] = data[..., j * stride + p].
    A window strided along W reads each phase at consecutive positions, where it would
    read data one in `stride`: vector loads instead of gathers."""
    *lead, width = data.shape
    return te.compute((*lead, stride, width // stride),
                      lambda *i: data[(*i[:-2], i[-1] * stride + i[-2])], PHASES, tag=PHASES)


PHASES = "T_phases"


def _phased_window(data: te.Tensor, w, reads: Sequence[int], rks: Sequence[te.IterVar],
                   fill: te.PrimExpr) -> Callable:
    """The window read of a sliding-window pool whose last pooled axis is the data's last
    and `_phased`: positions before the data or past its end (padding, ceil_mode) read
    `fill`, the last axis from `T_phases`."""
    split = phases(data, w.strides[-1])

    def window(*i):
        idx, inside = list(i), []
        for n, ax in enumerate(w.axes):
            offset = rks[n] * w.dilation[n] - w.before[n]
            position = i[ax] * w.strides[n] + offset
            if w.before[n]:
                inside.append(te.ge(position, 0))
            if reads[n] - w.before[n] > data.shape[ax]:
                inside.append(te.lt(position, data.shape[ax]))
            idx[ax] = position
        s = w.strides[-1]
        offset = rks[-1] * w.dilation[-1] - w.before[-1]
        idx[-1:] = [offset % s, i[-1] + offset // s]  # position = s * (i + offset // s) + offset % s
        value = split[tuple(idx)]
        return te.select(te.all_of(*inside), value, fill) if inside else value

    return window


# ---- adaptive and global pooling


def _cells(n: int, o: int) -> tuple[Callable, Callable, int]:
    """Cell i of o over n: its start and end as expressions of i, and the longest cell."""
    def start(i):
        return adaptive_cell(i, n, o)[0]

    def end(i):
        return adaptive_cell(i, n, o)[1]

    longest = max(hi - lo for lo, hi in (adaptive_cell(i, n, o) for i in range(o)))
    return start, end, longest


def adaptive_pool(op: str, data: te.Tensor, axes: Sequence[int], sizes: Sequence[int], kind: str,
                  out_shape: Sequence[int]) -> te.Tensor:
    """Max or average of data over `axes`, cut into `sizes` cells each (a reduction over
    the longest cell, shorter cells masked: `fill` is the identity of the combiner)."""
    cells = [_cells(data.shape[ax], o) for ax, o in zip(axes, sizes)]
    rks = [te.reduce_axis(longest, f"rv{n}") for n, (_, _, longest) in enumerate(cells)]
    fill = lowest(data.dtype) if kind == "max" else te.const(0, data.dtype)

    def source(*i):
        idx, inside = list(i), []
        for n, ax in enumerate(axes):
            start, end, _ = cells[n]
            idx[ax] = start(i[ax]) + rks[n]
            if data.shape[ax] % sizes[n]:  # cells differ in length
                inside.append(te.lt(idx[ax], end(i[ax])))
        value = data[tuple(idx)]
        return te.select(te.all_of(*inside), value, fill) if inside else value

    name = f"T_adaptive_{kind}_pool"
    if kind == "max":
        return te.compute(out_shape, lambda *i: te.max(source(*i), rks), name, tag=op)
    total = te.compute(out_shape, lambda *i: te.sum(source(*i), rks), f"{name}_sum", tag=op)

    def count(i):
        result = None
        for n, ax in enumerate(axes):
            start, end, _ = cells[n]
            c = end(i[ax]) - start(i[ax])
            result = c if result is None else result * c
        return result

    return divide_count(total, count, data.dtype, name)


def _adaptive_rule(nd: int, kind: str) -> None:
    op = f"nn.adaptive_{kind}_pool{nd}d"

    @register_compute(op)
    def rule(data: te.Tensor, attrs, out_type) -> te.Tensor:
        axes, sizes = adaptive_sizes(op, nd, TensorType(data.shape, data.dtype), attrs)
        return adaptive_pool(op, data, axes, [int(s) for s in sizes], kind, out_type.shape)


for _nd in (1, 2, 3):
    for _kind in ("max", "avg"):
        _adaptive_rule(_nd, _kind)


def _global_rule(kind: str) -> None:
    op = f"nn.global_{kind}_pool2d"

    @register_compute(op)
    def rule(data: te.Tensor, attrs, out_type) -> te.Tensor:
        axes = spatial_axes(op, attrs.layout, "HW", TensorType(data.shape, data.dtype))
        return adaptive_pool(op, data, axes, (1, 1), kind, out_type.shape)


_global_rule("avg")
_global_rule("max")


# ---- nn.pad


def _reflect(j: te.PrimExpr, n: int) -> te.PrimExpr:
    """Mirror j into [0, n) without repeating the edge (|j| and 2(n-1) - j)."""
    j = te.abs(j)
    return te.minimum(j, 2 * (n - 1) - j)


@register_compute("nn.pad")
def _(data: te.Tensor, pad_value: te.Tensor, attrs, out_type) -> te.Tensor:
    """Negative widths crop first; then constant, edge or reflect padding."""
    widths = pad_widths(TensorType(data.shape, data.dtype), attrs)
    mode = attrs.pad_mode
    fill = te.cast(pad_value[(0,) * pad_value.ndim], data.dtype)

    def body(*i):
        idx, inside = [], []
        for ax, (lo, hi) in enumerate(widths):
            crop = max(-lo, 0)
            n = data.shape[ax] - crop - max(-hi, 0)  # the extent left after cropping
            j = i[ax] - max(lo, 0)  # position in the cropped data
            if mode == "constant":
                if lo > 0:
                    inside.append(te.ge(j, 0))
                if hi > 0:
                    inside.append(te.lt(j, n))
            elif mode == "edge" and (lo > 0 or hi > 0):
                j = te.minimum(te.maximum(j, 0), n - 1)
            elif mode == "reflect" and (lo > 0 or hi > 0):
                j = _reflect(j, n)
            idx.append(j + crop)
        value = data[tuple(idx)]
        return te.select(te.all_of(*inside), value, fill) if inside else value

    return te.compute(out_type.shape, body, "T_pad")


# ---- image.resize1d, image.resize2d, nn.upsampling


def _f32(value: float) -> te.Const:
    return te.const(float(np.float32(value)), "float32")


def _nearest(c: te.PrimExpr, rounding: str) -> te.PrimExpr:
    if rounding == "round":
        r = te.intrinsic("round", c)
    elif rounding == "round_prefer_floor":
        r = te.ceil(c - _f32(0.5))
    elif rounding == "round_prefer_ceil":
        r = te.floor(c + _f32(0.5))
    elif rounding == "floor":
        r = te.floor(c + _f32(1e-5))
    else:
        r = te.ceil(c - _f32(1e-5))
    return te.cast(r, te.INDEX)


def _excluded(weights: list[te.PrimExpr], i0: te.PrimExpr, size: int) -> list[te.PrimExpr]:
    """cubic_exclude: samples outside the image get no weight; the rest are renormalised."""
    zero = _f32(0)
    kept = [te.select(te.logical_or(te.lt(i0 - 1 + k, 0), te.gt(i0 + k, size)), zero, w)
            for k, w in enumerate(weights)]
    total = kept[0] + kept[1] + kept[2] + kept[3]
    return [w / total for w in kept]


def _interpolate(pixel, coords: list[te.PrimExpr], method: str, alpha: float, exclude: int,
                 sizes_in: list[int]) -> te.PrimExpr:
    """Linear or cubic interpolation at `coords` (one per resized axis), separable, the
    first axis outermost as the reference nests them; pixel(indices) reads clamped float32."""
    base, weights = [], []
    for c, n_in in zip(coords, sizes_in):
        i0 = te.cast(te.floor(c), te.INDEX)
        if method == "linear":
            t = c - te.cast(i0, "float32")
            base.append(i0)
            weights.append([_f32(1) - t, t])
            continue
        w = cubic_weights(c - te.floor(c), alpha, _f32)
        if exclude:
            w = _excluded(w, i0, n_in)
        base.append(i0 - 1)
        weights.append(w)

    def blend(a: int, index: list[te.PrimExpr]) -> te.PrimExpr:
        if a == len(coords):
            return pixel(index)
        value = None
        for k, w in enumerate(weights[a]):
            term = blend(a + 1, index + [base[a] + k]) * w
            value = term if value is None else value + term
        return value

    return blend(0, [])


def resize(data: te.Tensor, axes: Sequence[int], out_shape: Sequence[int], method: str, mode: str,
           rounding: str, alpha: float = -0.5, exclude: int = 0, extrapolation: float = 0.0,
           roi: Sequence[float] = (), out_dtype: str | None = None, int_div: bool = True,
           op: str = "image.resize2d") -> te.Tensor:
    """Resample `axes` of data to out_shape's extents (the reference's `resample`: float32
    coordinates and interpolation, then a cast); `roi` holds the starts, then the ends;
    `int_div`: a nearest asymmetric integer upscale divides indices (resize2d's shortcut)."""
    if method not in METHODS:
        raise LoweringError(f"{op}: method {method} is not supported")
    if mode not in COORDINATE_MODES:
        raise LoweringError(f"{op}: coordinate_transformation_mode {mode} is not supported")
    nd = len(axes)
    roi = tuple(roi) or (0.0,) * (2 * nd)
    sizes_in = [data.shape[a] for a in axes]
    sizes_out = [out_shape[a] for a in axes]

    def body(*i):
        coords = [source_coord(te.cast(i[ax], "float32"), n_out, n_in, mode, roi[k], roi[nd + k], _f32)
                  for k, (ax, n_in, n_out) in enumerate(zip(axes, sizes_in, sizes_out))]

        def pixel(index):
            idx = list(i)
            for ax, j, n_in in zip(axes, index, sizes_in):
                idx[ax] = te.minimum(te.maximum(j, 0), n_in - 1)
            return te.cast(data[tuple(idx)], "float32")

        if method == "nearest_neighbor":
            chosen = rounding or ("round" if mode == "align_corners" else "floor")
            index = []
            for c, ax, n_in, n_out in zip(coords, axes, sizes_in, sizes_out):
                if mode == "asymmetric" and int_div and int_div_shortcut(n_in, n_out):
                    index.append(i[ax] // (n_out // n_in))
                else:
                    index.append(_nearest(c, chosen))
            value = pixel(index)
        else:
            value = _interpolate(pixel, coords, method, alpha, exclude, sizes_in)
        if mode == "tf_crop_and_resize":
            outside = None
            for c, n_in in zip(coords, sizes_in):
                out_here = te.logical_or(te.lt(c, _f32(0)), te.gt(c, _f32(n_in - 1)))
                outside = out_here if outside is None else te.logical_or(outside, out_here)
            value = te.select(outside, _f32(extrapolation), value)
        return te.cast(value, out_dtype or data.dtype)

    return te.compute(out_shape, body, "T_resize")


@register_compute("image.resize2d")
def _(data: te.Tensor, attrs, out_type) -> te.Tensor:
    axes = resize_check("image.resize2d", TensorType(data.shape, data.dtype), attrs.layout, attrs.method)
    resize_size(attrs)
    return resize(data, axes, out_type.shape, attrs.method.lower(), attrs.coordinate_transformation_mode,
                  attrs.rounding_method, attrs.cubic_alpha, attrs.cubic_exclude,
                  attrs.extrapolation_value, tuple(attrs.roi) if attrs.roi is not None else (),
                  attrs.out_dtype or None)


@register_compute("image.resize1d")
def _(data: te.Tensor, attrs, out_type) -> te.Tensor:
    axes = resize_check("image.resize1d", TensorType(data.shape, data.dtype), attrs.layout, attrs.method,
                        letters="W")
    resize_size(attrs, "image.resize1d", 1)
    return resize(data, axes, out_type.shape, attrs.method.lower(), attrs.coordinate_transformation_mode,
                  attrs.rounding_method, attrs.cubic_alpha, attrs.cubic_exclude,
                  attrs.extrapolation_value, tuple(attrs.roi) if attrs.roi is not None else (),
                  attrs.out_dtype or None, int_div=False, op="image.resize1d")


@register_compute("nn.upsampling")
def _(data: te.Tensor, attrs, out_type) -> te.Tensor:
    h, w, _ = upsampled("nn.upsampling", TensorType(data.shape, data.dtype), attrs)
    mode = "align_corners" if attrs.align_corners else "asymmetric"
    return resize(data, (h, w), out_type.shape, attrs.method.removeprefix("bi"), mode, "", op="nn.upsampling")
