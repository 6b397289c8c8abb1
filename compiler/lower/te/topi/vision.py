"""vision.roi_align and vision.roi_pool (ops/vision.py) as tensor expressions, one tagged
reduction stage each, in the rois' float dtype and TVM's topi's operation order (the
geometry: ops/roi_geometry.py).  Both layouts, NCHW and NHWC, are read and written
directly.

A roi's extents are data, and loop extents here are static, so each reduction runs over
a bound and masks what lies past the roi's own:

* roi_align with sample_ratio > 0: the sample grid itself (sample_ratio x sample_ratio).
* roi_align with sample_ratio <= 0 (ceil(bin extent) points per axis, per roi): points
  lie less than 1 and more than 0.5 apart, so at most 2*H + 3 of a bin's points fall
  where data can be read ([-1, H]); the reduction covers 2*H + 4 of them from the first
  such point (one before, for rounding), the rest masked (past the grid) or reading 0
  (outside).  The maximum also takes the 0 that a point outside the data reads when the
  bin's grid reaches outside.  This costs (2H+4) x (2W+4) steps per output, however few
  points the roi has: correct, not fast.
* roi_pool: the whole data plane (a clipped bin is at most H x W), positions outside the
  bin masked; an empty bin is 0.

The batch index is clamped into [0, N) before and after its conversion, so every read is
in bounds whatever the rois hold; so are the bilinear neighbours (a neighbour past the
far edge is selected away, not read).
"""

from __future__ import annotations

from ....ops.roi_geometry import GRID_MAX, POOL_EPSILON, pooled
from ...errors import LoweringError
from .. import expr as te
from .pooling import lowest
from .registry import register_compute


def _layout(op: str, layout: str):
    if layout not in ("NCHW", "NHWC"):
        raise LoweringError(f"{op}: layout {layout} is not computed (NCHW or NHWC)")
    nchw = layout == "NCHW"

    def dims(data: te.Tensor) -> tuple[int, int, int, int]:
        s = data.shape
        return (s[0], s[1], s[2], s[3]) if nchw else (s[0], s[3], s[1], s[2])

    def read(data: te.Tensor, n, c, y, x) -> te.PrimExpr:
        return data[n, c, y, x] if nchw else data[n, y, x, c]

    def out_axes(i, j, k, m):  # output axes -> (roi, channel, ph, pw)
        return (i, j, k, m) if nchw else (i, m, j, k)

    return dims, read, out_axes


def _batch(rois: te.Tensor, i, batches: int) -> te.PrimExpr:
    v = te.minimum(te.maximum(rois[i, 0], 0.0), float(batches - 1))
    b = te.cast(v, te.INDEX)
    return te.minimum(te.maximum(b, 0), batches - 1)


_HUGE = float(GRID_MAX)  # bounds a float before its conversion to an index


def _clamp(v: te.PrimExpr, lo, hi) -> te.PrimExpr:
    return te.minimum(te.maximum(v, lo), hi)


# ---- roi_align


@register_compute("vision.roi_align")
def _(data: te.Tensor, rois: te.Tensor, attrs, out_type):
    op = "vision.roi_align"
    dims, read, out_axes = _layout(op, attrs.layout)
    N, C, H, W = dims(data)
    ph_n, pw_n = pooled(op, attrs.pooled_size)
    ft = rois.dtype
    scale = te.const(attrs.spatial_scale, ft)
    avg = attrs.mode == "avg"
    ratio = attrs.sample_ratio

    def bilinear(b, c, y, x) -> te.PrimExpr:
        """TVM's bilinear read (0 outside [-1, H] x [-1, W]), in the data's dtype."""
        outside = te.logical_or(te.logical_or(te.lt(y, -1.0), te.lt(x, -1.0)),
                                te.logical_or(te.gt(y, float(H)), te.gt(x, float(W))))
        y = _clamp(y, 0.0, float(H - 1))
        x = _clamp(x, 0.0, float(W - 1))
        ylo = te.cast(te.floor(y), te.INDEX)
        xlo = te.cast(te.floor(x), te.INDEX)
        wyh = y - te.cast(ylo, ft)
        wxh = x - te.cast(xlo, ft)
        wyl, wxl = 1.0 - wyh, 1.0 - wxh
        val: te.PrimExpr = te.const(0, ft)
        for wx, xi, x_edge in ((wxl, xlo, False), (wxh, xlo + 1, True)):
            for wy, yi, y_edge in ((wyl, ylo, False), (wyh, ylo + 1, True)):
                term = (wx * wy) * te.cast(read(data, b, c, te.minimum(yi, H - 1), te.minimum(xi, W - 1)), ft)
                inside = [te.le(yi, H - 1)] if y_edge else []
                inside += [te.le(xi, W - 1)] if x_edge else []
                val = val + (te.select(te.all_of(*inside), term, te.const(0, ft)) if inside else term)
        return te.select(outside, te.const(0, ft), val)

    def geometry(i):
        start_w, start_h = rois[i, 1] * scale, rois[i, 2] * scale
        end_w, end_h = rois[i, 3] * scale, rois[i, 4] * scale
        roi_h = te.maximum(end_h - start_h, 1.0)
        roi_w = te.maximum(end_w - start_w, 1.0)
        return start_h, start_w, roi_h / float(ph_n), roi_w / float(pw_n), roi_h, roi_w

    if ratio > 0:
        rh, rw = te.reduce_axis(ratio, "rh"), te.reduce_axis(ratio, "rw")

        def body(*axes):
            i, c, p, q = out_axes(*axes)
            start_h, start_w, bin_h, bin_w, _, _ = geometry(i)
            y = (start_h + te.cast(p, ft) * bin_h) + ((te.cast(rh, ft) + 0.5) * bin_h) / float(ratio)
            x = (start_w + te.cast(q, ft) * bin_w) + ((te.cast(rw, ft) + 0.5) * bin_w) / float(ratio)
            v = bilinear(_batch(rois, i, N), c, y, x)
            if avg:
                return te.sum(v / float(ratio * ratio), [rh, rw])
            return te.max(v, [rh, rw])

        out = te.compute(out_type.shape, body, "T_roi_align", tag=op)
        return _cast_out(out, data.dtype)

    kh, kw = 2 * H + 4, 2 * W + 4
    rh, rw = te.reduce_axis(kh, "rh"), te.reduce_axis(kw, "rw")

    def axis_points(start, bin_size, extent, p, r, bins: int, size: int):
        """(the point's index, its coordinate, the grid, whether any point of the grid
        lies outside [-1, size]) for step r of the window."""
        grid = te.cast(_clamp(te.ceil(extent / float(bins)), 1.0, _HUGE), te.INDEX)
        gf = te.cast(grid, ft)
        base = start + te.cast(p, ft) * bin_size
        step = bin_size / gf
        first = te.cast(_clamp(te.ceil((-1.0 - base) / step - 0.5), 0.0, _HUGE), te.INDEX) - 1
        first = _clamp(first, 0, grid)
        k = first + r
        coord = base + ((te.cast(k, ft) + 0.5) * bin_size) / gf
        low = base + (0.5 * bin_size) / gf
        high = base + ((te.cast(grid - 1, ft) + 0.5) * bin_size) / gf
        out_of = te.logical_or(te.lt(low, -1.0), te.gt(high, float(size)))
        return k, coord, grid, out_of

    def adaptive(*axes):
        i, c, p, q = out_axes(*axes)
        start_h, start_w, bin_h, bin_w, roi_h, roi_w = geometry(i)
        ky, y, gh, out_y = axis_points(start_h, bin_h, roi_h, p, rh, ph_n, H)
        kx, x, gw, out_x = axis_points(start_w, bin_w, roi_w, q, rw, pw_n, W)
        inside = te.logical_and(te.lt(ky, gh), te.lt(kx, gw))
        v = bilinear(_batch(rois, i, N), c, y, x)
        if avg:
            count = te.cast(gh * gw, ft)
            return te.sum(te.select(inside, v / count, te.const(0, ft)), [rh, rw])
        return te.max(te.select(inside, v, lowest(ft)), [rh, rw])

    out = te.compute(out_type.shape, adaptive, "T_roi_align", tag=op)
    if not avg:  # the 0 a point outside the data reads, when the bin's grid has one
        best = out

        def with_outside(*axes):
            i, c, p, q = out_axes(*axes)
            start_h, start_w, bin_h, bin_w, roi_h, roi_w = geometry(i)
            *_, out_y = axis_points(start_h, bin_h, roi_h, p, 0, ph_n, H)
            *_, out_x = axis_points(start_w, bin_w, roi_w, q, 0, pw_n, W)
            return te.select(te.logical_or(out_y, out_x), te.maximum(best[axes], 0.0), best[axes])

        out = te.compute(out_type.shape, with_outside, "T_roi_align_edge")
    return _cast_out(out, data.dtype)


def _cast_out(out: te.Tensor, dtype: str) -> te.Tensor:
    if out.dtype == dtype:
        return out
    return te.compute(out.shape, lambda *i: te.cast(out[i], dtype), "T_cast")


# ---- roi_pool


@register_compute("vision.roi_pool")
def _(data: te.Tensor, rois: te.Tensor, attrs, out_type):
    op = "vision.roi_pool"
    dims, read, out_axes = _layout(op, attrs.layout)
    N, C, H, W = dims(data)
    ph_n, pw_n = pooled(op, attrs.pooled_size)
    ft = rois.dtype
    scale = te.const(attrs.spatial_scale, ft)
    eps = te.const(POOL_EPSILON, ft)
    rh, rw = te.reduce_axis(H, "rh"), te.reduce_axis(W, "rw")

    def corner(v: te.PrimExpr) -> te.PrimExpr:
        # rounded (halves away from zero), bounded by 2^40 before the conversion (a NaN
        # or absurd corner stays a defined integer; reads are clamped after)
        r = te.intrinsic("round", v * scale)
        return te.cast(_clamp(r, -_HUGE, _HUGE), te.INDEX)

    def bin_range(start, end, p, bins: int, size: int):
        extent = te.maximum(end - start + 1, 1)
        bin_size = te.cast(extent, ft) / float(bins)
        lo = te.cast(te.floor(te.cast(p, ft) * bin_size + eps), te.INDEX)
        hi = te.cast(te.ceil(te.cast(p + 1, ft) * bin_size - eps), te.INDEX)
        return _clamp(lo + start, 0, size), _clamp(hi + start, 0, size)

    def window(i, p, q):
        start_w, start_h = corner(rois[i, 1]), corner(rois[i, 2])
        end_w, end_h = corner(rois[i, 3]), corner(rois[i, 4])
        hs, he = bin_range(start_h, end_h, p, ph_n, H)
        ws, we = bin_range(start_w, end_w, q, pw_n, W)
        return hs, he, ws, we

    def body(*axes):
        i, c, p, q = out_axes(*axes)
        hs, he, ws, we = window(i, p, q)
        y, x = hs + rh, ws + rw
        inside = te.logical_and(te.lt(y, he), te.lt(x, we))
        v = read(data, _batch(rois, i, N), c, te.minimum(y, H - 1), te.minimum(x, W - 1))
        return te.max(te.select(inside, v, lowest(data.dtype)), [rh, rw])

    best = te.compute(out_type.shape, body, "T_roi_pool", tag=op)

    def empty_is_zero(*axes):
        i, _, p, q = out_axes(*axes)
        hs, he, ws, we = window(i, p, q)
        full = te.logical_and(te.lt(hs, he), te.lt(ws, we))
        return te.select(full, best[axes], te.const(0, data.dtype))

    return te.compute(out_type.shape, empty_is_zero, "T_roi_pool_empty")
