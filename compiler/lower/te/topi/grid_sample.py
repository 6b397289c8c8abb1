"""image.grid_sample (ops/grid_sample.py says what it means) in two stages:

    T_grid_sample_at[n, 0|1, i, j]  the point's pixel coordinate y | x, in the grid's
                                    dtype, after border clamping or reflection
    T_grid_sample[n, c, i, j]       the four pixels around it weighted (bilinear), or the
                                    one at it rounded (nearest); 0 outside the image

so the coordinates are computed once per point, not once per channel.  Rounding is to
even, as numpy's rint and LLVM's nearbyint: floor(v + 0.5), less one where v was a half
and that is odd.  Pixel reads are clamped into the image and selected away outside it.
"""

from __future__ import annotations

from .. import expr as te
from .registry import register_compute


def _unnormalize(g: te.PrimExpr, size: int, align_corners: bool, dtype: str) -> te.PrimExpr:
    one, two = te.const(1, dtype), te.const(2, dtype)
    if align_corners:
        return (g + one) * te.const(size - 1, dtype) / two
    return te.const(-0.5, dtype) + (g + one) * te.const(size, dtype) / two


def _reflect(x: te.PrimExpr, size: int, align_corners: bool, dtype: str) -> te.PrimExpr:
    lo, span = (0.0, size - 1) if align_corners else (-0.5, size)
    if span == 0:
        return te.const(0, dtype)
    lo_, span_ = te.const(lo, dtype), te.const(span, dtype)
    distance = te.abs(x - lo_)
    times = te.floor(distance / span_)
    extra = distance - times * span_
    even = te.eq(times - te.const(2, dtype) * te.floor(times * te.const(0.5, dtype)), te.const(0, dtype))
    folded = te.select(even, extra + lo_, span_ - extra + lo_)
    return te.select(te.all_of(te.ge(x, lo_), te.le(x, lo_ + span_)), x, folded)


def _rint(v: te.PrimExpr, dtype: str) -> te.PrimExpr:
    r = te.floor(v + te.const(0.5, dtype))
    tie = te.eq(r - v, te.const(0.5, dtype))
    odd = te.ne(r - te.const(2, dtype) * te.floor(r * te.const(0.5, dtype)), te.const(0, dtype))
    return te.select(te.all_of(tie, odd), r - te.const(1, dtype), r)


@register_compute("image.grid_sample")
def _(data: te.Tensor, grid: te.Tensor, attrs, out_type) -> te.Tensor:
    _, _, h, w = data.shape
    gdtype, dtype = grid.dtype, data.dtype

    def at(n, axis, i, j):
        point = [None, None]
        for a, size, k in ((0, h, 1), (1, w, 0)):  # y reads grid channel 1, x channel 0
            p = _unnormalize(grid[n, k, i, j], size, attrs.align_corners, gdtype)
            if attrs.padding_mode == "reflection":
                p = _reflect(p, size, attrs.align_corners, gdtype)
            if attrs.padding_mode != "zeros":
                p = te.minimum(te.maximum(p, te.const(0, gdtype)), te.const(size - 1, gdtype))
            point[a] = p
        return te.select(te.eq(axis, 0), point[0], point[1])

    points = te.compute((grid.shape[0], 2, *grid.shape[2:]), at, "T_grid_sample_at", tag="grid_sample")

    def pixel(n, c, yi: te.PrimExpr, xi: te.PrimExpr) -> te.PrimExpr:
        inside = te.all_of(te.ge(yi, 0), te.lt(yi, h), te.ge(xi, 0), te.lt(xi, w))
        clamped = [te.minimum(te.maximum(v, 0), size - 1) for v, size in ((yi, h), (xi, w))]
        return te.select(inside, data[n, c, clamped[0], clamped[1]], te.const(0, dtype))

    def body(n, c, i, j):
        y, x = points[n, 0, i, j], points[n, 1, i, j]
        if attrs.method == "nearest":
            return pixel(n, c, te.cast(_rint(y, gdtype), te.INDEX), te.cast(_rint(x, gdtype), te.INDEX))
        fy, fx = te.floor(y), te.floor(x)
        dy, dx = te.cast(y - fy, dtype), te.cast(x - fx, dtype)
        y0, x0 = te.cast(fy, te.INDEX), te.cast(fx, te.INDEX)
        one = te.const(1, dtype)
        return (pixel(n, c, y0, x0) * (one - dy) * (one - dx) + pixel(n, c, y0, x0 + 1) * (one - dy) * dx
                + pixel(n, c, y0 + 1, x0) * dy * (one - dx) + pixel(n, c, y0 + 1, x0 + 1) * dy * dx)

    return te.compute(out_type.shape, body, "T_grid_sample", tag="grid_sample")
