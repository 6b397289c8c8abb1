"""Sampling an image at the points of a grid (TVM's `image.grid_sample`, 2-D):

    image.grid_sample(%data, %grid, method="bilinear", padding_mode="zeros", align_corners=False)
        data (N, C, H, W), grid (N, 2, Ho, Wo) -> (N, C, Ho, Wo)

grid[n, 0] holds x (along W), grid[n, 1] y (along H), normalised: -1 and 1 are the centres
of the corner pixels with align_corners, their outer edges without.  A point becomes a
pixel coordinate (`unnormalize`); "border" clamps it to [0, size - 1], "reflection"
reflects it at the edges (those same centres or outer edges) until it lies between them,
then clamps; "zeros" leaves it and reads 0 outside the image.  "bilinear" weights the four
pixels around the point, "nearest" reads the one at the coordinate rounded (halves to
even), "bicubic" weights the 4 x 4 around it by cubic convolution (a = -0.75), padding
each of those reads instead of the point (an index clamped, or reflected and clamped).
That is TVM's topi (python/tvm/topi/image/grid_sample.py), and onnxruntime's.

TVM's 3-D form (NCDHW) is refused; so is any layout but NCHW, as TVM's kernel does.
Coordinates are computed in the grid's dtype, values in data's; the op is Injective, as
TVM registers it.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType
from .attrs import BOOL, STR, Attr
from .registry import INJECTIVE, OpTypeError, define
from .shapes import dims, same_dim, tensor, type_text

METHODS = ("bilinear", "nearest", "bicubic")
CUBIC_A = -0.75  # the cubic convolution's coefficient: TVM's, PyTorch's and onnxruntime's
PADDING = ("zeros", "border", "reflection")

grid_sample = define(
    "image.grid_sample", ("data", "grid"), INJECTIVE,
    attrs=(Attr("method", STR, "bilinear", "\"bilinear\", \"nearest\" or \"bicubic\""),
           Attr("layout", STR, "NCHW", "data's layout; only NCHW"),
           Attr("padding_mode", STR, "zeros", "points outside the image: \"zeros\", \"border\" or \"reflection\""),
           Attr("align_corners", BOOL, True, "-1 and 1 are the corner pixels' centres (else their outer edges)")),
    doc="Sample data (N, C, H, W) at the normalised (x, y) points of grid (N, 2, Ho, Wo), "
        "bilinearly, bicubically or at the nearest pixel, with zeros, border or reflection outside.")


def _check(d: TensorType, g: TensorType, attrs) -> None:
    op = "image.grid_sample"
    if attrs.method not in METHODS:
        raise OpTypeError(f"{op}: method \"{attrs.method}\" is not supported (bilinear, nearest or bicubic)")
    if attrs.padding_mode not in PADDING:
        raise OpTypeError(f"{op}: padding_mode \"{attrs.padding_mode}\" is not supported "
                          f"(zeros, border or reflection)")
    if attrs.layout != "NCHW":
        raise OpTypeError(f"{op}: layout \"{attrs.layout}\" is not supported (NCHW only)")
    if d.ndim != 4:
        raise OpTypeError(f"{op}: data must be 4-D (N, C, H, W), found {type_text(d)}"
                          + (" (the 3-D form is not supported)" if d.ndim == 5 else ""), 0)
    if not d.dtype.startswith("float"):
        raise OpTypeError(f"{op}: data must be a float tensor, found {type_text(d)}", 0)
    if g.ndim != 4 or not same_dim(dims(g)[1], 2) or not g.dtype.startswith("float"):
        raise OpTypeError(f"{op}: grid must be a float tensor (N, 2, Ho, Wo), found {type_text(g)}", 1)
    if not same_dim(dims(g)[0], dims(d)[0]):
        raise OpTypeError(f"{op}: grid {type_text(g)} and data {type_text(d)} differ in batch", 1)


@grid_sample.relation
def _(data, grid, attrs):
    d = tensor(data, "image.grid_sample: data", 0)
    g = tensor(grid, "image.grid_sample: grid", 1)
    _check(d, g, attrs)
    return TensorType((*dims(d)[:2], *dims(g)[2:]), d.dtype)


def unnormalize(g: np.ndarray, size: int, align_corners: bool) -> np.ndarray:
    """A normalised coordinate as a pixel coordinate (TVM's expression, term by term)."""
    if align_corners:
        return (g + 1) * (size - 1) / 2
    return -0.5 + (g + 1) * size / 2


def reflect(x: np.ndarray, size: int, align_corners: bool) -> np.ndarray:
    """x reflected at the edges lo and lo + span until it lies between them."""
    lo, span = (0.0, size - 1) if align_corners else (-0.5, size)
    if span == 0:
        return np.zeros_like(x)
    distance = np.abs(x - lo)
    times = np.floor(distance / span)
    extra = distance - times * span
    folded = np.where(times % 2 == 0, extra + lo, span - extra + lo)
    return np.where((x >= lo) & (x <= lo + span), x, folded).astype(x.dtype)


def index_bound(dtype: str) -> float:
    """How far a coordinate may lie before it becomes an index: beyond any image, within
    int64 (converting NaN or a value beyond int64 is undefined, in numpy as in LLVM)."""
    return 2.0 ** (40 if np.dtype(dtype).itemsize > 2 else 14)


def as_index(v: np.ndarray) -> np.ndarray:
    """A whole-valued coordinate as an index, NaN and far values held to the bound."""
    bound = index_bound(str(v.dtype))
    near = (v >= -bound) & (v <= bound)
    return np.where(near, v, np.where(v > 0, bound, -bound)).astype(np.int64)


def cubic_weights(f):
    """The weights of the four pixels at -1, 0, 1, 2 from the floor, f the fraction past it."""
    a = CUBIC_A

    def near(t):  # |t| <= 1
        return ((a + 2) * t - (a + 3)) * t * t + 1

    def far(t):  # 1 < |t| < 2
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a

    return far(f + 1), near(f), near(1 - f), far(2 - f)


@grid_sample.reference
def _(data, grid, attrs):
    _check(TensorType(data.shape, str(data.dtype)), TensorType(grid.shape, str(grid.dtype)), attrs)
    _, _, h, w = data.shape
    points = []
    for g, size in ((grid[:, 1], h), (grid[:, 0], w)):  # y, x: (N, Ho, Wo)
        p = unnormalize(g, size, attrs.align_corners).astype(grid.dtype)
        if attrs.method == "bicubic":  # its padding applies to each pixel read (below)
            points.append(p)
            continue
        if attrs.padding_mode == "reflection":
            p = reflect(p, size, attrs.align_corners)
        if attrs.padding_mode != "zeros":
            p = np.clip(p, 0, size - 1)
        points.append(p)
    y, x = points
    batch = np.arange(data.shape[0])[:, None, None]

    def pixel(yi: np.ndarray, xi: np.ndarray) -> np.ndarray:
        """data at integer coordinates, (N, C, Ho, Wo); 0 outside."""
        inside = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        read = data[batch, :, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]  # (N, Ho, Wo, C)
        return np.moveaxis(np.where(inside[..., None], read, 0), -1, 1)

    if attrs.method == "nearest":
        return pixel(as_index(np.rint(y)), as_index(np.rint(x))).astype(data.dtype)
    if attrs.method == "bicubic":
        return _bicubic(pixel, y, x, (h, w), attrs).astype(data.dtype)
    y0, x0 = np.floor(y), np.floor(x)
    dy, dx = (y - y0)[:, None], (x - x0)[:, None]
    y0, x0 = as_index(y0), as_index(x0)
    out = (pixel(y0, x0) * (1 - dy) * (1 - dx) + pixel(y0, x0 + 1) * (1 - dy) * dx
           + pixel(y0 + 1, x0) * dy * (1 - dx) + pixel(y0 + 1, x0 + 1) * dy * dx)
    return out.astype(data.dtype)


def cubic_index(i: np.ndarray, size: int, attrs) -> np.ndarray:
    """A pixel index of the bicubic 4 x 4 under the padding mode: clamped ("border"),
    reflected then clamped ("reflection"), or left for pixel() to read 0 ("zeros")."""
    if attrs.padding_mode == "reflection":
        i = reflect(i.astype(np.float32), size, attrs.align_corners)
    if attrs.padding_mode != "zeros":
        i = np.clip(i, 0, size - 1)
    return i.astype(np.int64)


def _bicubic(pixel, y: np.ndarray, x: np.ndarray, sizes: tuple[int, int], attrs) -> np.ndarray:
    y0, x0 = np.floor(y), np.floor(x)
    wy = [wk[:, None] for wk in cubic_weights(y - y0)]
    wx = [wk[:, None] for wk in cubic_weights(x - x0)]
    y0, x0 = as_index(y0), as_index(x0)
    cols = [cubic_index(x0 - 1 + k, sizes[1], attrs) for k in range(4)]
    rows = []
    for i in range(4):
        yi = cubic_index(y0 - 1 + i, sizes[0], attrs)
        rows.append(sum(pixel(yi, cols[k]) * wx[k] for k in range(4)))
    return sum(rows[i] * wy[i] for i in range(4))
