"""The geometry of vision.roi_align and vision.roi_pool (vision.py), shared by their numpy
reference and their compute rule: the pooled size, the batch a roi reads, its bins and
sample points, all in the rois' floating dtype (`ft`), in TVM's topi's operation order so
that compiled code and the reference round alike."""

from __future__ import annotations

from dataclasses import dataclass

from ..lazy_modules import numpy as np
from .attrs import AttrError

POOL_EPSILON = 1e-5  # roi_pool's guard against floor/ceil of a product that rounds up or down


def pooled(op: str, pooled_size) -> tuple[int, int]:
    """(PH, PW) from the attribute, or an AttrError."""
    if len(pooled_size) != 2 or any(p < 1 for p in pooled_size):
        raise AttrError(f"{op}: pooled_size must be two positive integers [PH, PW], got "
                        f"{list(pooled_size)}", "pooled_size")
    return int(pooled_size[0]), int(pooled_size[1])


def batch_of(value, batches: int) -> int:
    """The batch a roi reads: its first value truncated, clamped into [0, batches) (NaN: 0)."""
    value = float(value)
    if value != value:
        return 0
    return int(min(max(np.trunc(value), 0.0), batches - 1.0))


def round_half_away(x):
    """C's round (TVM's `round`, LLVM's llvm.round): halves away from zero."""
    return np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))


GRID_MAX = 2 ** 40  # an adaptive grid's bound (a float is bounded so before its conversion)


def _grid(bin_size) -> int:
    """ceil(bin extent) points, at least 1 (a NaN extent: 1)."""
    value = float(np.ceil(bin_size))
    return int(min(max(value, 1.0), GRID_MAX)) if value == value else 1


@dataclass(frozen=True)
class AlignBins:
    start_h: np.floating
    start_w: np.floating
    bin_h: np.floating
    bin_w: np.floating
    grid_h: int
    grid_w: int


def align_bins(roi: np.ndarray, ph: int, pw: int, spatial_scale: float, sample_ratio: int, ft) -> AlignBins:
    """roi_align's bins of one roi: start, bin extent and sample grid per axis."""
    scale = ft(spatial_scale)
    start_w, start_h, end_w, end_h = (ft(v) * scale for v in roi[1:5])
    roi_h = max(end_h - start_h, ft(1))
    roi_w = max(end_w - start_w, ft(1))
    bin_h, bin_w = roi_h / ft(ph), roi_w / ft(pw)
    if sample_ratio > 0:
        grid_h = grid_w = int(sample_ratio)
    else:
        grid_h, grid_w = _grid(roi_h / ft(ph)), _grid(roi_w / ft(pw))
    return AlignBins(start_h, start_w, bin_h, bin_w, grid_h, grid_w)


def align_sample_points(start, bin_size, bins: int, grid: int, size: int, ft) -> np.ndarray:
    """The sample coordinates along an axis of `size`, (bins, points): bin p's point k at
    (start + p * bin) + (k + 0.5) * bin / grid.

    A grid longer than 2*size + 4 (an adaptive grid of a roi far larger than the data) is
    cut to the 2*size + 4 points from the one before the first inside [-1, size]: points
    lie more than 0.5 apart, so no more than 2*size + 3 are inside, and those past the
    grid's end are placed outside (-2), where they read 0, as the grid's own outside
    points do (such a grid has some).  The compute rule reduces over the same window."""
    p = np.arange(bins, dtype=ft)[:, None]
    base = start + p * bin_size
    window = 2 * size + 4
    if grid <= window:
        k = np.arange(grid, dtype=ft)[None, :]
        return base + ((k + ft(0.5)) * bin_size) / ft(grid)
    step = bin_size / ft(grid)
    with np.errstate(all="ignore"):
        first = np.ceil((ft(-1) - base) / step - ft(0.5))
    first = np.clip(np.nan_to_num(first), 0, grid).astype(np.int64) - 1
    k = np.clip(first, 0, grid) + np.arange(window)[None, :]
    coords = base + ((k.astype(ft) + ft(0.5)) * bin_size) / ft(grid)
    return np.where(k < grid, coords, ft(-2)).astype(ft)


def bilinear_corners(coords: np.ndarray, size: int, ft):
    """Bilinear reading of `coords` along an axis of `size`: (low index, high index, low
    weight, high weight, outside).  A point past -1 or `size` is outside (reads 0); one
    inside is clamped to [0, size-1]; the high index may be `size` (weight counted, value 0)."""
    outside = (coords < ft(-1)) | (coords > ft(size))
    c = np.nan_to_num(np.minimum(np.maximum(coords, ft(0)), ft(size - 1)))  # a NaN point reads index 0
    lo = np.floor(c).astype(np.int64)
    high_w = (c - lo.astype(ft)).astype(ft)
    return lo, lo + 1, (ft(1) - high_w).astype(ft), high_w, outside


def pool_bins(roi: np.ndarray, ph: int, pw: int, spatial_scale: float, height: int, width: int, ft):
    """roi_pool's bins of one roi: (h starts, h ends, w starts, w ends), clipped to the data."""
    scale = ft(spatial_scale)
    corners = round_half_away(np.asarray([ft(v) * scale for v in roi[1:5]], dtype=ft)).astype(np.int64)
    start_w, start_h, end_w, end_h = (int(v) for v in corners)
    roi_h = max(end_h - start_h + 1, 1)
    roi_w = max(end_w - start_w + 1, 1)
    eps = ft(POOL_EPSILON)

    def axis(extent: int, bins: int, start: int, size: int):
        bin_size = ft(extent) / ft(bins)
        p = np.arange(bins, dtype=ft)
        lo = np.floor(p * bin_size + eps).astype(np.int64)
        hi = np.ceil((p + ft(1)) * bin_size - eps).astype(np.int64)
        return np.clip(lo + start, 0, size), np.clip(hi + start, 0, size)

    hs, he = axis(roi_h, ph, start_h, height)
    ws, we = axis(roi_w, pw, start_w, width)
    return hs, he, ws, we
