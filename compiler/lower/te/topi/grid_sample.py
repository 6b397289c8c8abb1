"""image.grid_sample (ops/grid_sample.py says what it means) in two stages:

    T_grid_sample_at[n, 0|1, i, j]  the point's pixel coordinate y | x, in the grid's
                                    dtype, after border clamping or reflection
    T_grid_sample[n, c, i, j]       the four pixels around it weighted (bilinear), the 16
                                    (bicubic), or the one at it rounded (nearest); 0
                                    outside the image

so the coordinates are computed once per point, not once per channel.  Rounding is to
even, as numpy's rint and LLVM's nearbyint: floor(v + 0.5), less one where v was a half
and that is odd.  Pixel reads are clamped into the image and selected away outside it;
a coordinate becomes an index only once held to ops/grid_sample.index_bound (NaN to its
negative): LLVM's conversion of NaN or of a value beyond int64 is poison, and the reads
are addressed with it.
Bicubic leaves the point as it is and pads each of its 16 reads instead (as TVM does):
the index clamped, or reflected as a coordinate and clamped.
"""

from __future__ import annotations

from ....ops.grid_sample import CUBIC_A, index_bound
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


def _index(v: te.PrimExpr, dtype: str) -> te.PrimExpr:
    """ops/grid_sample.as_index: NaN and far values held to the bound first."""
    bound = index_bound(dtype)
    near = te.all_of(te.ge(v, te.const(-bound, dtype)), te.le(v, te.const(bound, dtype)))
    far = te.select(te.gt(v, te.const(0, dtype)), te.const(bound, dtype), te.const(-bound, dtype))
    return te.cast(te.select(near, v, far), te.INDEX)


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
            if attrs.method == "bicubic":  # padded per pixel read (_cubic_index)
                point[a] = p
                continue
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
            return pixel(n, c, _index(_rint(y, gdtype), gdtype), _index(_rint(x, gdtype), gdtype))
        if attrs.method == "bicubic":
            return _bicubic(lambda yi, xi: pixel(n, c, yi, xi), y, x, (h, w), attrs, gdtype, dtype)
        fy, fx = te.floor(y), te.floor(x)
        dy, dx = te.cast(y - fy, dtype), te.cast(x - fx, dtype)
        y0, x0 = _index(fy, gdtype), _index(fx, gdtype)
        one = te.const(1, dtype)
        return (pixel(n, c, y0, x0) * (one - dy) * (one - dx) + pixel(n, c, y0, x0 + 1) * (one - dy) * dx
                + pixel(n, c, y0 + 1, x0) * dy * (one - dx) + pixel(n, c, y0 + 1, x0 + 1) * dy * dx)

    return te.compute(out_type.shape, body, "T_grid_sample", tag="grid_sample")


def _cubic_weights(f: te.PrimExpr, dtype: str) -> list[te.PrimExpr]:
    """ops/grid_sample.cubic_weights, term by term."""
    a = CUBIC_A

    def c(v: float) -> te.Const:
        return te.const(v, dtype)

    def near(t):
        return (c(a + 2) * t - c(a + 3)) * t * t + c(1)

    def far(t):
        return ((c(a) * t - c(5 * a)) * t + c(8 * a)) * t - c(4 * a)

    return [far(f + c(1)), near(f), near(c(1) - f), far(c(2) - f)]


def _cubic_index(i: te.PrimExpr, size: int, attrs, gdtype: str) -> te.PrimExpr:
    if attrs.padding_mode == "reflection":
        i = te.cast(_reflect(te.cast(i, gdtype), size, attrs.align_corners, gdtype), te.INDEX)
    if attrs.padding_mode != "zeros":
        i = te.minimum(te.maximum(i, 0), size - 1)
    return i


def _bicubic(pixel, y: te.PrimExpr, x: te.PrimExpr, sizes: tuple[int, int], attrs, gdtype: str,
             dtype: str) -> te.PrimExpr:
    fy, fx = te.floor(y), te.floor(x)
    wy = [te.cast(v, dtype) for v in _cubic_weights(y - fy, gdtype)]
    wx = [te.cast(v, dtype) for v in _cubic_weights(x - fx, gdtype)]
    y0, x0 = _index(fy, gdtype), _index(fx, gdtype)
    cols = [_cubic_index(x0 + (k - 1), sizes[1], attrs, gdtype) for k in range(4)]
    total = None
    for i in range(4):
        yi = _cubic_index(y0 + (i - 1), sizes[0], attrs, gdtype)
        row = None
        for k in range(4):
            term = pixel(yi, cols[k]) * wx[k]
            row = term if row is None else row + term
        total = row * wy[i] if total is None else total + row * wy[i]
    return total
