"""Region-of-interest pooling for detection networks (TVM's src/relay/op/vision/rcnn_op.cc,
python/tvm/topi/vision/rcnn/): `vision.roi_align` and `vision.roi_pool`, both
OutEWiseFusable.

    data  (N, C, H, W) in NCHW, (N, H, W, C) in NHWC
    rois  (R, 5): [batch_index, w_start, h_start, w_end, h_end] in input-image coordinates
    ->    (R, C, PH, PW) in NCHW, (R, PH, PW, C) in NHWC; the dtype of data

Numerics, as TVM's topi computes them, in the rois' dtype (float32 arithmetic for float32):

* roi_align: the roi scaled by spatial_scale (no half-pixel shift: TVM has no `aligned`),
  its height and width at least 1, cut into PH x PW bins; each bin averages (mode "avg")
  or takes the largest (mode "max") of a grid of sample_ratio x sample_ratio points
  (sample_ratio <= 0: ceil(bin extent) points per axis, per roi) placed at the centres of
  the grid's cells (a grid longer than 2*H + 4 is cut to the points that can be read,
  roi_geometry.align_sample_points).  A point is read bilinearly: a point beyond -1 or the far edge reads 0
  (and counts, in the average and in the maximum); one inside is clamped to
  [0, H-1] x [0, W-1] and the four neighbours weighted.
* roi_pool: the roi's corners scaled and rounded (halves away from zero), its extent
  + 1 (at least 1) cut into PH x PW bins, bin ph covering
  [floor(ph * bin + 1e-5), ceil((ph + 1) * bin - 1e-5)) shifted by the roi's start and
  clipped to the data; the maximum over the bin, 0 for an empty one.

The batch index is truncated to an integer; one outside [0, N) reads the nearest batch
(TVM reads out of bounds).  The geometry both the reference and the compute rule use is
in roi_geometry.py.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType
from .attrs import FLOAT, INT, INTS, STR, Attr, AttrError
from .registry import OUT_EWISE_FUSABLE, OpTypeError, define
from .roi_geometry import (
    align_bins,
    align_sample_points,
    batch_of,
    bilinear_corners,
    pool_bins,
    pooled,
)
from .shapes import dims, known, tensor, type_text

_LAYOUTS = ("NCHW", "NHWC")


def _roi_relation(op: str, data, rois, attrs) -> TensorType:
    """TVM's ROIAlignRel / ROIPoolRel, with the checks it leaves to ICHECK."""
    d = tensor(data, f"{op}: data", 0)
    r = tensor(rois, f"{op}: rois", 1)
    if attrs.layout not in _LAYOUTS:
        raise AttrError(f"{op}: layout must be \"NCHW\" or \"NHWC\", got \"{attrs.layout}\"", "layout")
    ph, pw = pooled(op, attrs.pooled_size)
    if d.ndim != 4:
        raise OpTypeError(f"{op}: data must be 4-D ({attrs.layout}), found {type_text(d)}", 0)
    if r.ndim != 2:
        raise OpTypeError(f"{op}: rois must be 2-D (num_roi, 5), found {type_text(r)}", 1)
    if not r.dtype.startswith("float"):
        raise OpTypeError(f"{op}: rois must be floating point, found {type_text(r)}", 1)
    rshape, dshape = dims(r), dims(d)
    if known(rshape[1]) and rshape[1] != 5:
        raise OpTypeError(f"{op}: each roi must have 5 values [batch_index, w_start, h_start, w_end, "
                          f"h_end], found {type_text(r)}", 1)
    if attrs.layout == "NCHW":
        return TensorType((rshape[0], dshape[1], ph, pw), d.dtype)
    return TensorType((rshape[0], ph, pw, dshape[3]), d.dtype)


def _nchw(data: np.ndarray, layout: str) -> np.ndarray:
    return data if layout == "NCHW" else data.transpose(0, 3, 1, 2)


def _back(out: np.ndarray, layout: str) -> np.ndarray:
    return out if layout == "NCHW" else np.ascontiguousarray(out.transpose(0, 2, 3, 1))


_POOLED = Attr("pooled_size", INTS, doc="the output's height and width [PH, PW]")
_SCALE = Attr("spatial_scale", FLOAT, doc="the feature map's size over the input image's "
              "(1 / the total stride before it), applied to the rois")
_LAYOUT = Attr("layout", STR, "NCHW", "the layout of data and of the result: NCHW or NHWC")


# ---- roi_align ---------------------------------------------------------------------------

roi_align = define(
    "vision.roi_align", ("data", "rois"), OUT_EWISE_FUSABLE,
    attrs=(_POOLED, _SCALE,
           Attr("sample_ratio", INT, -1, "sample points per bin along each axis (<= 0: "
                "ceil(bin extent), per roi)"),
           _LAYOUT,
           Attr("mode", STR, "avg", "\"avg\" or \"max\" of a bin's sample points")),
    doc="ROI Align (Mask R-CNN): data (N, C, H, W), rois (R, 5) [batch_index, w_start, h_start, "
        "w_end, h_end] -> (R, C, PH, PW); each bin the average (or maximum) of bilinearly "
        "sampled points, the roi scaled by spatial_scale.  NHWC: data (N, H, W, C) -> "
        "(R, PH, PW, C).")


@roi_align.relation
def _(data, rois, attrs):
    if attrs.mode not in ("avg", "max"):
        raise AttrError(f"vision.roi_align: mode must be \"avg\" or \"max\", got \"{attrs.mode}\"", "mode")
    return _roi_relation("vision.roi_align", data, rois, attrs)


@roi_align.reference
def _(data, rois, attrs):
    x = _nchw(data, attrs.layout)
    N, C, H, W = x.shape
    ph, pw = pooled("vision.roi_align", attrs.pooled_size)
    ft = rois.dtype.type
    out = np.zeros((rois.shape[0], C, ph, pw), dtype=data.dtype)
    for i, roi in enumerate(rois):
        b = batch_of(roi[0], N)
        bins = align_bins(roi, ph, pw, attrs.spatial_scale, attrs.sample_ratio, ft)
        ys = align_sample_points(bins.start_h, bins.bin_h, ph, bins.grid_h, H, ft)  # (PH, gh)
        xs = align_sample_points(bins.start_w, bins.bin_w, pw, bins.grid_w, W, ft)  # (PW, gw)
        ylo, yhi, wyl, wyh, yout = bilinear_corners(ys, H, ft)
        xlo, xhi, wxl, wxh, xout = bilinear_corners(xs, W, ft)
        plane = x[b].astype(ft, copy=False)  # (C, H, W)

        def read(yi, xi):  # (C, PH, gh, PW, gw)
            return plane[:, yi[:, :, None, None], xi[None, None, :, :]]

        # TVM's order: x-low (y-low, y-high), then x-high (y-low, y-high); a corner past
        # the far edge weighs 0
        val = ft(0)
        for wx, xi in ((wxl, xlo), (wxh, xhi)):
            for wy, yi in ((wyl, ylo), (wyh, yhi)):
                ok = (yi < H)[:, :, None, None] & (xi < W)[None, None, :, :]
                w = (wx[None, None, :, :] * wy[:, :, None, None]).astype(ft)
                term = w * read(np.minimum(yi, H - 1), np.minimum(xi, W - 1))
                val = val + np.where(ok, term, ft(0))
        outside = yout[:, :, None, None] | xout[None, None, :, :]
        val = np.where(outside, ft(0), val)  # (C, PH, gh, PW, gw)
        if attrs.mode == "avg":
            count = ft(bins.grid_h * bins.grid_w)
            out[i] = (val / count).sum(axis=(2, 4), dtype=ft).astype(data.dtype)
        else:
            out[i] = val.max(axis=(2, 4)).astype(data.dtype)
    return _back(out, attrs.layout)


# ---- roi_pool ----------------------------------------------------------------------------

roi_pool = define(
    "vision.roi_pool", ("data", "rois"), OUT_EWISE_FUSABLE,
    attrs=(_POOLED, _SCALE, _LAYOUT),
    doc="ROI Pool (Fast R-CNN): data (N, C, H, W), rois (R, 5) [batch_index, w_start, h_start, "
        "w_end, h_end] -> (R, C, PH, PW); each bin the maximum of the data under it (0 when "
        "empty), the roi's corners scaled by spatial_scale and rounded.  NHWC: data "
        "(N, H, W, C) -> (R, PH, PW, C).")


@roi_pool.relation
def _(data, rois, attrs):
    return _roi_relation("vision.roi_pool", data, rois, attrs)


@roi_pool.reference
def _(data, rois, attrs):
    x = _nchw(data, attrs.layout)
    N, C, H, W = x.shape
    ph, pw = pooled("vision.roi_pool", attrs.pooled_size)
    out = np.zeros((rois.shape[0], C, ph, pw), dtype=data.dtype)
    ft = rois.dtype.type
    for i, roi in enumerate(rois):
        b = batch_of(roi[0], N)
        hs, he, ws, we = pool_bins(roi, ph, pw, attrs.spatial_scale, H, W, ft)
        for p in range(ph):
            for q in range(pw):
                if hs[p] < he[p] and ws[q] < we[q]:
                    out[i, :, p, q] = x[b, :, hs[p]:he[p], ws[q]:we[q]].max(axis=(1, 2))
    return _back(out, attrs.layout)
