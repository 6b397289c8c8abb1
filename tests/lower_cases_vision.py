"""Lowering cases of issue 14's ops (vision.roi_align, vision.roi_pool,
nn.deformable_conv2d), run by the compute-rule and compiled tests with the rest of
lower_cases_nn's cases.  The rois cover a roi inside the data, one reaching past its
edges (points outside read 0), one smaller than a pixel (forced to 1x1), one wider than
the data, and (roi_pool) one wholly outside (empty bins are 0)."""

from __future__ import annotations

from lower_cases import Arr, Case

ROIS = [[0, 1.0, 0.5, 9.0, 7.5],
        [1, -3.0, -2.0, 4.0, 3.0],
        [1, 2.2, 2.6, 2.9, 3.1],
        [0, 0.0, 0.0, 17.0, 13.0]]
# sums of up to 54 products in float32, in another order (and with FMA) when compiled
SUM_TOL = {"rtol": 1e-4, "atol": 1e-5}
POOL_ROIS = ROIS + [[1, 30.0, 30.0, 40.0, 36.0]]


def _rois(rows, dtype="float32") -> Arr:
    return Arr((len(rows), 5), dtype, value=rows)


def vision_cases() -> list[Case]:
    nchw, nhwc = Arr((2, 3, 6, 7)), Arr((2, 6, 7, 3))
    align = {"pooled_size": (2, 3), "spatial_scale": 0.5}
    cases = [
        Case("vision.roi_align", [nchw, _rois(ROIS)], {**align, "sample_ratio": 2}, "avg-nchw"),
        Case("vision.roi_align", [nhwc, _rois(ROIS)], {**align, "sample_ratio": 3, "mode": "max",
                                                       "layout": "NHWC"}, "max-nhwc"),
        Case("vision.roi_align", [nchw, _rois(ROIS)], {**align, "sample_ratio": 0}, "adaptive-avg"),
        Case("vision.roi_align", [nhwc, _rois(ROIS)], {**align, "mode": "max", "layout": "NHWC"},
             "adaptive-max-nhwc"),
        Case("vision.roi_align", [Arr((1, 2, 5, 5)), _rois([[0, 0.0, 0.0, 9.0, 9.0]])],
             {"pooled_size": (1, 1), "spatial_scale": 1.0}, "adaptive-one-bin"),
        # grids of 2,000 points per bin, cut to the 14 that can be read
        Case("vision.roi_align", [Arr((1, 2, 5, 5)), _rois([[0, -2000.0, -3.0, 2000.0, 6.0],
                                                           [0, -1.0, -4000.0, 3.0, 0.0]])],
             {"pooled_size": (1, 2), "spatial_scale": 1.0}, "adaptive-huge-grid-avg", rtol=1e-4),
        Case("vision.roi_align", [Arr((1, 2, 5, 5)), _rois([[0, -2000.0, -3.0, 2000.0, 6.0],
                                                           [0, -1.0, -4000.0, 3.0, 0.0]])],
             {"pooled_size": (1, 2), "spatial_scale": 1.0, "mode": "max"}, "adaptive-huge-grid-max"),
        Case("vision.roi_pool", [nchw, _rois(POOL_ROIS)], {"pooled_size": (2, 3), "spatial_scale": 0.5}, "nchw"),
        Case("vision.roi_pool", [nhwc, _rois(POOL_ROIS)], {"pooled_size": (3, 2), "spatial_scale": 1.0,
                                                           "layout": "NHWC"}, "nhwc"),
        Case("vision.roi_pool", [Arr((2, 3, 6, 7), "int32"), _rois(POOL_ROIS)],
             {"pooled_size": (2, 2), "spatial_scale": 0.5}, "int32"),
    ]
    deform = "nn.deformable_conv2d"
    cases += [
        Case(deform, [Arr((1, 4, 6, 5)), Arr((1, 18, 4, 3)), Arr((6, 4, 3, 3))], {}, "nchw", **SUM_TOL),
        Case(deform, [Arr((2, 5, 4, 6)), Arr((2, 5, 4, 36)), Arr((3, 3, 6, 4))],
             {"data_layout": "NHWC", "kernel_layout": "HWIO", "padding": (1, 1), "deformable_groups": 2},
             "nhwc-dg2", **SUM_TOL),
        Case(deform, [Arr((1, 4, 7, 7)), Arr((1, 16, 3, 3)), Arr((6, 2, 2, 2))],
             {"strides": (2, 2), "padding": (1, 0, 0, 1), "dilation": (2, 2), "groups": 2,
              "deformable_groups": 2}, "groups-strided-dilated", **SUM_TOL),
    ]
    return cases
