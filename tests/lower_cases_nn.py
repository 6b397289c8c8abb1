"""Lowering cases for the neural-network ops: convolutions and matrix products, pooling,
padding and resizing, reductions, normalisation, and the plumbing ops that compute
(copies, qnn).  Shapes stay small: te_eval materialises output x reduction elements.

Tolerances: a sum of many float32 products comes out in another order than the
reference's BLAS matmul (te_eval folds a materialised array pairwise), so convolutions
and products use atol 1e-5 where single elements cancel to near zero; float16 results
may round one ulp (2^-10) apart after a float32 sum, hence rtol 1e-3 there.
"""

from __future__ import annotations

import numpy as np

from lower_cases import Arr, Case

SUM_ATOL = 1e-5  # see the module doc
F16 = dict(rtol=1e-3, atol=1e-3)


def _scalar(value: float, dtype: str = "float32") -> Arr:
    return Arr((), dtype, value=value)


def _vector(values, dtype: str = "float32") -> Arr:
    return Arr((len(values),), dtype, value=values)


def _conv_cases() -> list[Case]:
    c = []

    def conv(op, data, weight, name, dtype="float32", wdtype=None, **attrs):
        tol = F16 if dtype == "float16" else dict(atol=SUM_ATOL)
        c.append(Case(op, [Arr(data, dtype), Arr(weight, wdtype or dtype)], attrs, name, **tol))

    conv("nn.conv2d", (1, 4, 8, 8), (6, 4, 3, 3), "3x3-pad1", padding=(1, 1))
    conv("nn.conv2d", (2, 3, 7, 7), (4, 3, 3, 3), "no-pad")
    conv("nn.conv2d", (1, 4, 8, 8), (6, 2, 3, 3), "groups-strides-dilation-asym-pad",
         padding=(1, 0, 2, 1), strides=(2, 1), dilation=(1, 2), groups=2)
    conv("nn.conv2d", (1, 4, 8, 8), (4, 1, 3, 3), "depthwise", padding=(1, 1), groups=4)
    conv("nn.conv2d", (1, 4, 6, 6), (4, 3, 3, 3), "depthwise-multiplier", padding=(1, 1), groups=4,
         channels=12, kernel_size=(3, 3))
    conv("nn.conv2d", (1, 8, 8, 4), (3, 3, 4, 6), "NHWC-HWIO", padding=(1, 1), data_layout="NHWC",
         kernel_layout="HWIO")
    conv("nn.conv2d", (1, 8, 8, 4), (3, 3, 4, 1), "NHWC-depthwise-HWOI", padding=(1, 1), groups=4,
         data_layout="NHWC", kernel_layout="HWOI")
    conv("nn.conv2d", (1, 7, 7, 4), (6, 3, 3, 4), "NHWC-OHWI-out-NCHW", strides=(2, 2),
         data_layout="NHWC", kernel_layout="OHWI", out_layout="NCHW")
    conv("nn.conv2d", (1, 4, 6, 6), (6, 4, 1, 1), "1x1-out-dtype-float64", out_dtype="float64")
    conv("nn.conv2d", (1, 4, 8, 8), (6, 4, 3, 3), "int8-to-int32", dtype="int8", padding=(1, 1),
         out_dtype="int32")
    conv("nn.conv2d", (1, 4, 6, 6), (6, 4, 3, 3), "int32-wrapping-to-int8", dtype="int32", out_dtype="int8")
    conv("nn.conv2d", (1, 4, 6, 6), (6, 4, 3, 3), "float16", dtype="float16", padding=(1, 1))
    conv("nn.conv1d", (2, 4, 10), (6, 4, 3), "pad-stride", padding=(2, 1), strides=(2,))
    conv("nn.conv1d", (1, 12, 4), (3, 2, 4), "groups-dilation-NWC", groups=2, dilation=(2,),
         data_layout="NWC", kernel_layout="WIO")
    conv("nn.conv3d", (1, 2, 5, 5, 5), (3, 2, 3, 3, 3), "pad", padding=(1, 1, 1))
    conv("nn.conv3d", (1, 5, 6, 5, 2), (2, 3, 2, 2, 3), "NDHWC-strides", strides=(2, 1, 2),
         padding=(0, 1, 1, 1, 0, 0), data_layout="NDHWC", kernel_layout="DHWIO")
    conv("nn.conv2d_transpose", (1, 4, 5, 5), (4, 3, 3, 3), "stride2-output-padding", padding=(1, 1),
         strides=(2, 2), output_padding=(1, 1))
    conv("nn.conv2d_transpose", (1, 4, 5, 5), (4, 3, 3, 3), "groups-dilation-asym-pad",
         padding=(0, 2, 3, 1), strides=(2, 3), dilation=(2, 1), groups=2)
    conv("nn.conv2d_transpose", (1, 5, 5, 4), (3, 3, 4, 2), "NHWC-HWIO", strides=(2, 2), padding=(1, 1),
         data_layout="NHWC", kernel_layout="HWIO")
    conv("nn.conv1d_transpose", (1, 4, 5), (4, 3, 3), "pad-exceeds-kernel", padding=(4, 1), strides=(2,))
    # by phases (te/topi/conv_transpose.py): dilation 1, a stride above 1
    conv("nn.conv2d_transpose", (1, 16, 7, 9), (16, 8, 2, 2), "phases-2x2-stride2", strides=(2, 2))
    conv("nn.conv2d_transpose", (1, 8, 9, 6), (8, 6, 4, 4), "phases-4x4-stride2-pad1", strides=(2, 2),
         padding=(1, 1))
    conv("nn.conv2d_transpose", (1, 6, 5, 7), (6, 2, 3, 5), "phases-groups-asym", strides=(3, 2),
         padding=(2, 0, 1, 3), output_padding=(1, 1), groups=2)
    conv("nn.conv2d_transpose", (2, 3, 4, 5), (3, 4, 1, 1), "phases-kernel-below-stride", strides=(2, 3))
    conv("nn.conv2d_transpose", (1, 4, 6, 6), (4, 4, 3, 3), "phases-stride-in-one-axis", strides=(1, 2),
         padding=(1, 1))
    conv("nn.conv2d_transpose", (1, 4, 5, 5), (4, 3, 3, 3), "phases-float16", "float16", strides=(2, 2),
         padding=(1, 1))
    conv("nn.conv1d_transpose", (2, 3, 6), (3, 2, 4), "stride3", strides=(3,), output_padding=(2,))
    conv("nn.contrib_conv2d_NCHWc", (1, 2, 6, 6, 4), (3, 2, 3, 3, 4, 2), "NCHW4c-OIHW4i2o",
         padding=(1, 1), data_layout="NCHW4c", kernel_layout="OIHW4i2o", out_layout="NCHW2c")
    conv("nn.contrib_depthwise_conv2d_NCHWc", (1, 2, 6, 6, 4), (2, 1, 3, 3, 1, 4), "NCHW4c-OIHW1i4o",
         padding=(1, 1), groups=8, data_layout="NCHW4c", kernel_layout="OIHW1i4o")
    conv("nn.conv2d", (1, 1, 8, 8, 4), (2, 1, 3, 3, 4, 4), "NCHW4c", padding=(1, 1),
         data_layout="NCHW4c", kernel_layout="OIHW4i4o")
    wino = "nn.contrib_conv2d_winograd_without_weight_transform"
    conv(wino, (2, 5, 7, 6), (4, 4, 3, 5), "F2-NCHW-odd", tile_size=2, padding=(1, 1), channels=3,
         kernel_size=(3, 3))
    conv(wino, (1, 2, 6, 5, 4), (6, 6, 2, 8, 4), "F4-NCHW4c-packed-nopad", tile_size=4, channels=8,
         kernel_size=(3, 3), data_layout="NCHW4c", out_layout="NCHW4c")
    for m in (2, 4):
        c.append(Case("nn.contrib_conv2d_winograd_weight_transform", [Arr((3, 5, 3, 3))], {"tile_size": m},
                      f"F{m}", atol=SUM_ATOL))

    def mm(op, a, b, name, dtype="float32", **attrs):
        tol = F16 if dtype == "float16" else dict(atol=SUM_ATOL)
        c.append(Case(op, [Arr(a, dtype), Arr(b, dtype)], attrs, name, **tol))

    mm("nn.dense", (3, 5), (4, 5), "2d")
    mm("nn.dense", (2, 3, 5), (4, 5), "3d-units", units=4)
    mm("nn.dense", (5,), (4, 5), "1d")
    mm("nn.dense", (3, 5), (4, 5), "int8-to-int32", dtype="int8", out_dtype="int32")
    mm("nn.dense", (3, 8), (4, 8), "float16", dtype="float16")
    mm("nn.contrib_dense_pack", (3, 5), (2, 5, 4), "NC4n", weight_layout="NC4n")
    mm("nn.contrib_dense_pack", (5, 6), (3, 6, 3), "NC3n-out-float32", weight_layout="NC3n", out_dtype="float32")
    mm("nn.contrib_dense_pack", (16, 6), (2, 6, 5), "NC5n-rows-in-vectors", weight_layout="NC5n")
    mm("nn.contrib_dense_pack", (3, 5), (1, 5, 4), "int8-to-int32", dtype="int8", weight_layout="NC4n",
       out_dtype="int32")
    mm("nn.contrib_dense_pack", (3, 8), (2, 8, 2), "float16", dtype="float16", weight_layout="NC2n")
    mm("nn.matmul", (3, 5), (5, 4), "plain")
    mm("nn.matmul", (5, 3), (4, 5), "transpose-both", transpose_a=True, transpose_b=True)
    mm("nn.matmul", (2, 5, 3), (5, 4), "batched-transpose-a", transpose_a=True)
    mm("nn.batch_matmul", (2, 3, 5), (2, 4, 5), "transpose-b", transpose_b=True)
    mm("nn.batch_matmul", (2, 5, 3), (1, 5, 4), "transpose-a-broadcast-b", transpose_a=True)
    mm("nn.batch_matmul", (1, 3, 5), (3, 5, 4), "broadcast-a")
    mm("nn.batch_matmul", (2, 3, 5), (2, 5, 4), "int32", dtype="int32")
    return c


def _pool_cases() -> list[Case]:
    c = []
    x2 = Arr((1, 3, 7, 7))
    for kind in ("max", "avg"):
        op2 = f"nn.{kind}_pool2d"
        c += [
            Case(op2, [x2], {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)}, "3x3-s2-pad1"),
            Case(op2, [x2], {"pool_size": (2, 2)}, "2x2"),
            Case(op2, [x2], {"pool_size": (3, 2), "strides": (2, 2), "padding": (1, 0, 0, 1),
                             "ceil_mode": True, "dilation": (1, 2)}, "ceil-dilation-asym-pad"),
            Case(op2, [Arr((1, 7, 7, 3))], {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1),
                                             "layout": "NHWC"}, "NHWC"),
            Case(op2, [Arr((1, 1, 6, 6, 4))], {"pool_size": (2, 2), "strides": (2, 2), "layout": "NCHW4c"},
                 "NCHW4c"),
            Case(op2, [Arr((1, 2, 7, 7), "int32")], {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1),
                                                     "ceil_mode": True}, "int32"),
            Case(f"nn.{kind}_pool1d", [Arr((2, 3, 9))], {"pool_size": (4,), "strides": (3,), "padding": (2,),
                                                        "ceil_mode": True}, "ceil"),
            Case(f"nn.{kind}_pool1d", [Arr((1, 9, 2), "int8")], {"pool_size": (3,), "padding": (1, 2),
                                                                 "layout": "NWC"}, "int8-NWC"),
            Case(f"nn.{kind}_pool3d", [Arr((1, 2, 5, 5, 5))], {"pool_size": (2, 2, 2), "strides": (2, 2, 2),
                                                              "ceil_mode": True}, "ceil"),
            Case(f"nn.{kind}_pool3d", [Arr((1, 5, 4, 5, 2))], {"pool_size": (3, 2, 3), "padding": (1, 0, 1),
                                                              "layout": "NDHWC"}, "NDHWC-pad"),
        ]
    c += [
        Case("nn.avg_pool2d", [x2], {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 2),
                                     "ceil_mode": True, "count_include_pad": True, "dilation": (2, 1)},
             "count-include-pad-ceil-dilation"),
        Case("nn.avg_pool2d", [Arr((1, 2, 5, 5), "int8")], {"pool_size": (3, 3), "padding": (1, 1),
                                                            "count_include_pad": True}, "int8-count-include-pad"),
        Case("nn.avg_pool1d", [Arr((1, 3, 9))], {"pool_size": (4,), "strides": (3,), "padding": (2,),
                                                  "ceil_mode": True, "count_include_pad": True}, "count-include-pad"),
        Case("nn.max_pool2d", [Arr((1, 2, 6, 6), "float16")], {"pool_size": (2, 2), "padding": (1, 1)}, "float16"),
    ]
    # windows strided along an even last axis read it by phases (pooling.py `phases`)
    x8 = Arr((1, 3, 8, 40))
    for kind in ("max", "avg"):
        op2 = f"nn.{kind}_pool2d"
        c += [
            Case(op2, [x8], {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)}, "phases-3x3-s2-pad1"),
            Case(op2, [x8], {"pool_size": (3, 3), "strides": (2, 2), "padding": (0, 1, 1, 2), "ceil_mode": True,
                             "dilation": (1, 2), **({"count_include_pad": True} if kind == "avg" else {})},
                 "phases-ceil-dilation-asym-pad"),
            Case(op2, [Arr((1, 2, 5, 36), "int32")], {"pool_size": (2, 4), "strides": (1, 4), "padding": (0, 3)},
                 "phases-stride4-int32"),
            Case(f"nn.{kind}_pool1d", [Arr((2, 3, 34))], {"pool_size": (3,), "strides": (2,), "padding": (1,)},
                 "phases"),
        ]
    for kind in ("avg", "max"):
        c += [
            Case(f"nn.global_{kind}_pool2d", [Arr((2, 3, 5, 6))], {}, "NCHW"),
            Case(f"nn.global_{kind}_pool2d", [Arr((2, 5, 6, 3), "int32")], {"layout": "NHWC"}, "NHWC-int32"),
            Case(f"nn.adaptive_{kind}_pool1d", [Arr((1, 3, 7))], {"output_size": (3,)}, "uneven"),
            Case(f"nn.adaptive_{kind}_pool1d", [Arr((1, 3, 8), "int32")], {"output_size": (4,)}, "even-int32"),
            Case(f"nn.adaptive_{kind}_pool2d", [Arr((1, 3, 7, 9))], {"output_size": (3, 4)}, "uneven"),
            Case(f"nn.adaptive_{kind}_pool2d", [Arr((1, 6, 6, 2))], {"output_size": (4,), "layout": "NHWC"},
                 "NHWC-one-size"),
            Case(f"nn.adaptive_{kind}_pool2d", [Arr((1, 2, 5, 5))], {}, "keep-size"),
            Case(f"nn.adaptive_{kind}_pool3d", [Arr((1, 2, 4, 6, 5))], {"output_size": (2, 3, 2)}, "mixed"),
        ]
    return c


def _pad_resize_cases() -> list[Case]:
    c = [
        Case("nn.pad", [Arr((2, 3, 4)), _scalar(1.5)], {"pad_width": ((1, 2), (0, 0), (-1, 3))},
             "constant-crop"),
        Case("nn.pad", [Arr((1, 2, 3, 3), "int8"), Arr((1,), "int8", value=[7])],
             {"pad_width": ((0, 0), (0, 0), (1, 1), (2, 0))}, "int8-vector-value"),
        Case("nn.pad", [Arr((2, 3, 4)), _scalar(0.0)], {"pad_width": ((1, 1), (2, 0), (-1, 3)),
                                                        "pad_mode": "edge"}, "edge"),
        Case("nn.pad", [Arr((3, 4, 5)), _scalar(0.0)], {"pad_width": ((1, 2), (2, 0), (-1, 3)),
                                                        "pad_mode": "reflect"}, "reflect"),
        Case("nn.pad", [Arr((3, 4)), _scalar(0.0)], {"pad_width": ((0, 0), (-1, -2))}, "crop-only"),
    ]
    for method in ("nearest_neighbor", "linear", "cubic"):
        for mode in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                     "tf_crop_and_resize"):
            for size in ((7, 10), (3, 2), (8, 12)):
                c.append(Case("image.resize2d", [Arr((1, 2, 4, 6))],
                              {"size": size, "method": method, "coordinate_transformation_mode": mode,
                               "roi": (0.1, 0.2, 0.8, 0.9)}, f"{method}-{mode}-{size[0]}x{size[1]}"))
    for rounding in ("", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"):
        c.append(Case("image.resize2d", [Arr((1, 2, 5, 4))],
                      {"size": (7, 9), "method": "nearest_neighbor", "coordinate_transformation_mode": "half_pixel",
                       "rounding_method": rounding}, f"nearest-{rounding or 'default'}"))
    c += [
        Case("image.resize2d", [Arr((1, 4, 6, 2))], {"size": (7, 9), "method": "cubic", "cubic_exclude": 1,
                                                     "cubic_alpha": -0.75, "layout": "NHWC"}, "cubic-exclude-NHWC"),
        Case("image.resize2d", [Arr((1, 2, 4, 6), "int32")], {"size": (7, 9), "out_dtype": "float32"},
             "int32-to-float32"),
        Case("image.resize2d", [Arr((1, 2, 4, 6))], {"size": (5, 5), "method": "linear", "out_dtype": "int32"},
             "float-to-int32"),
        Case("image.resize2d", [Arr((1, 2, 4, 6))], {"size": (6, 8), "method": "linear",
                                                     "coordinate_transformation_mode": "tf_crop_and_resize",
                                                     "roi": (-0.2, 0.1, 1.3, 0.7), "extrapolation_value": 3.5},
             "extrapolation"),
        Case("nn.upsampling", [Arr((1, 2, 4, 6))], {"scale_h": 2.0, "scale_w": 3.0}, "nearest-integer-scale"),
        Case("nn.upsampling", [Arr((1, 2, 4, 6))], {"scale_h": 1.5, "scale_w": 2.5}, "nearest-fractional"),
        Case("nn.upsampling", [Arr((1, 2, 4, 6))], {"scale_h": 2.0, "scale_w": 1.5, "method": "bilinear"},
             "bilinear"),
        Case("nn.upsampling", [Arr((1, 4, 6, 2))], {"scale_h": 2.0, "scale_w": 2.0, "method": "bicubic",
                                                    "align_corners": True, "layout": "NHWC"}, "bicubic-align-NHWC"),
        Case("nn.upsampling", [Arr((1, 2, 3, 3))], {"scale_h": 2.0, "scale_w": 2.0, "align_corners": True},
             "nearest-align"),
    ]
    return c


def _reduce_cases() -> list[Case]:
    c = []
    axes_variants = [
        ("all", {}),
        ("axis1", {"axis": (1,)}),
        ("negative-keepdims", {"axis": (-1, 0), "keepdims": True}),
        ("exclude", {"axis": (1,), "exclude": True}),
        ("exclude-everything", {"axis": (0, 1, 2), "exclude": True}),
        ("exclude-keepdims", {"axis": (0, 2), "keepdims": True, "exclude": True}),
    ]
    for op in ("sum", "max", "min", "prod", "mean"):
        fill = "unit" if op == "prod" else "normal"
        for name, attrs in axes_variants:
            c.append(Case(op, [Arr((3, 4, 5), fill=fill)], attrs, name, atol=SUM_ATOL))
        c += [
            Case(op, [Arr((3, 4, 5), "int32")], {"axis": (0, 2)}, "int32"),
            Case(op, [Arr((4, 6), "int8")], {"axis": (1,)}, "int8-wrapping"),
            Case(op, [Arr((3, 4), "float16", fill)], {"axis": (1,), "keepdims": True}, "float16", **F16),
            Case(op, [Arr((), "float32")], {}, "rank0"),
        ]
    nan_row = np.arange(3 * 48, dtype=np.float32).reshape(3, 48) / 7
    nan_row[1, 37] = np.nan  # a NaN in one lane of one row: that row's max and min are NaN
    for op in ("sum", "max", "min", "mean"):  # rows of 3 vectors: split into lanes (schedule/row_reduce.py)
        c += [Case(op, [Arr((2, 5, 48))], {"axis": (-1,)}, "rows-in-lanes", atol=SUM_ATOL),
              Case(op, [Arr((3, 48), value=nan_row)], {"axis": (1,), "keepdims": True}, "rows-in-lanes-nan")]
    for op in ("all", "any"):
        for name, attrs in axes_variants[:4]:
            c.append(Case(op, [Arr((3, 4, 5), "bool")], attrs, name))
        c.append(Case(op, [Arr((2, 3), "bool", value=[[1, 1, 1], [1, 0, 1]])], {"axis": (1,)}, "fixed"))
    for op in ("argmax", "argmin"):
        for name, attrs in axes_variants:
            c.append(Case(op, [Arr((3, 4, 5))], attrs, name))
        c += [
            Case(op, [Arr((3, 4, 5), "int8")], {"axis": (1,)}, "ties-first"),
            Case(op, [Arr((3, 4, 5), "int8")], {"axis": (1,), "select_last_index": True}, "ties-last"),
            Case(op, [Arr((3, 4, 5), "int8")], {"axis": (0, 2), "select_last_index": True, "keepdims": True},
                 "ties-last-two-axes"),
        ]
    c += [
        Case("variance", [Arr((3, 4, 5)), Arr((1, 4, 1))], {"axis": (0, 2), "keepdims": False}, "axes-0-2"),
        Case("variance", [Arr((3, 4, 5)), Arr((1, 1, 1))], {}, "all"),
        Case("variance", [Arr((3, 4, 5)), Arr((3, 4, 1))], {"axis": (-1,), "keepdims": True, "unbiased": True},
             "unbiased-keepdims"),
        Case("variance", [Arr((3, 4, 5)), Arr((3, 1, 5))], {"axis": (1,), "exclude": True}, "exclude"),
        Case("variance", [Arr((3, 4, 5), "float16"), Arr((3, 1, 1), "float16")], {"axis": (1, 2)}, "float16",
             **F16),
    ]
    return c


def _norm_cases() -> list[Case]:
    c = []

    def vec(n, dtype, fill="normal"):
        return Arr((n,), dtype, fill)

    for dtype in ("float32", "float16", "float64"):
        tol = F16 if dtype == "float16" else dict(atol=SUM_ATOL)
        d = dtype
        c += [
            Case("nn.batch_norm", [Arr((2, 3, 4, 5), d), vec(3, d), vec(3, d), vec(3, d), vec(3, d, "positive")],
                 {}, f"{d}-NCHW", **tol),
            Case("nn.layer_norm", [Arr((2, 3, 8), d), vec(8, d), vec(8, d)], {}, f"{d}-last", **tol),
            Case("nn.instance_norm", [Arr((2, 3, 4, 5), d), vec(3, d), vec(3, d)], {}, f"{d}-NCHW", **tol),
            Case("nn.group_norm", [Arr((2, 6, 4, 5), d), vec(6, d), vec(6, d)], {"num_groups": 3}, f"{d}-NCHW",
                 **tol),
            Case("nn.l2_normalize", [Arr((2, 3, 4), d)], {"eps": 1e-3}, f"{d}-all", **tol),
            Case("nn.lrn", [Arr((2, 7, 3, 3), d)], {"size": 5}, f"{d}-NCHW", **tol),
        ]
    tol = dict(atol=SUM_ATOL)
    c += [
        Case("nn.batch_norm", [Arr((2, 4, 5, 3)), vec(3, "float32"), vec(3, "float32"), vec(3, "float32"),
                               vec(3, "float32", "positive")], {"axis": -1, "center": False, "epsilon": 1e-3},
             "NHWC-no-center", **tol),
        Case("nn.batch_norm", [Arr((4, 3)), vec(3, "float32"), vec(3, "float32"), vec(3, "float32"),
                               vec(3, "float32", "positive")], {"scale": False}, "2d-no-scale", **tol),
        Case("nn.layer_norm", [Arr((2, 3, 8)), vec(3, "float32"), vec(3, "float32")],
             {"axis": 1, "scale": False}, "axis1-no-scale", **tol),
        Case("nn.layer_norm", [Arr((4, 6)), vec(6, "float32"), vec(6, "float32")], {"axis": -1, "center": False},
             "2d-no-center", **tol),
        Case("nn.layer_norm", [Arr((3, 5, 64)), vec(64, "float32"), vec(64, "float32")], {"epsilon": 1e-5},
             "rows-in-lanes", **tol),
        Case("nn.instance_norm", [Arr((2, 4, 5, 3)), vec(3, "float32"), vec(3, "float32")], {"axis": 3},
             "NHWC", **tol),
        Case("nn.instance_norm", [Arr((2, 3, 6)), vec(3, "float32"), vec(3, "float32")], {"epsilon": 0.1},
             "NCW-epsilon", **tol),
        Case("nn.group_norm", [Arr((2, 4, 5, 6)), vec(6, "float32"), vec(6, "float32")],
             {"num_groups": 2, "axis": -1}, "NHWC", **tol),
        Case("nn.group_norm", [Arr((2, 4, 3)), vec(4, "float32"), vec(4, "float32")], {"num_groups": 4},
             "one-channel-per-group", **tol),
        Case("nn.l2_normalize", [Arr((2, 3, 4))], {"eps": 1e-3, "axis": (1, -1)}, "two-axes", **tol),
        Case("nn.l2_normalize", [Arr((2, 3), value=[[1e-3, 0, 0], [1, 2, 3]])], {"eps": 0.5, "axis": (1,)},
             "eps-wins", **tol),
        Case("nn.lrn", [Arr((2, 3, 3, 6))], {"size": 3, "axis": 3, "alpha": 0.5, "beta": 0.6, "bias": 1.0},
             "NHWC", **tol),
        Case("nn.lrn", [Arr((1, 4, 2, 2))], {"size": 9}, "window-wider-than-channels", **tol),
        Case("nn.dropout", [Arr((2, 3))], {}, "float32"),
        Case("nn.dropout", [Arr((4,), "float16")], {"rate": 0.1}, "float16"),
    ]
    return c


def _plumbing_cases() -> list[Case]:
    s, z = _scalar, (lambda v: _scalar(v, "int32"))
    wide = Arr((2, 3, 4), "int32", value=np.arange(-1200, 1200, 100))
    c = [
        Case("annotation.stop_fusion", [Arr((2, 3))], {}, "tensor"),
        Case("on_device", [Arr((2, 3), "int8")], {}, "tensor"),
        Case("device_copy", [Arr((4,))], {}, "tensor"),
        Case("device_copy", [(Arr((4,)), Arr((2, 3), "int32"))], {}, "tuple"),
        Case("qnn.quantize", [Arr((2, 3, 4)), s(0.05), z(3)], {"out_dtype": "int8"}, "int8"),
        Case("qnn.quantize", [Arr((2, 3, 4), value=np.arange(-12, 12) * 0.125), s(0.25), z(0)], {"out_dtype": "int8"},
             "halves-away-from-zero"),
        Case("qnn.quantize", [Arr((2, 3, 4)), _vector([0.1, 0.02, 0.5]), _vector([1, 2, 3], "int32")],
             {"out_dtype": "uint8", "axis": 1}, "per-channel-uint8"),
        Case("qnn.quantize", [Arr((3,)), s(0.001), z(0)], {"out_dtype": "int16"}, "int16"),
        Case("qnn.dequantize", [Arr((2, 3, 4), "int8"), s(0.05), z(3)], {}, "int8"),
        Case("qnn.dequantize", [Arr((2, 3, 4), "uint8"), _vector([0.1, 0.02, 0.5, 3.0]),
                                _vector([1, 2, 3, 4], "int32")], {"out_dtype": "float16"}, "per-channel-float16",
             **F16),
        Case("qnn.dequantize", [Arr((3,), "int32", value=[2 ** 30, -5, 7]), s(1e5), z(0)], {"out_dtype": "float16"},
             "float16-clipped"),
        Case("qnn.dense", [Arr((3, 5), "int8"), Arr((4, 5), "int8"), z(2), z(-1), s(0.1), s(0.2)], {}, "int8"),
        Case("qnn.dense", [Arr((3, 5), "uint8"), Arr((4, 5), "int8"), z(2), _vector([1, 2, 3, 4], "int32"),
                           s(0.1), _vector([0.1, 0.2, 0.3, 0.4])], {"out_dtype": "int64"}, "per-channel-int64"),
        Case("qnn.conv2d", [Arr((1, 4, 6, 6), "int8"), Arr((6, 4, 3, 3), "int8"), z(2), z(-1), s(0.1), s(0.2)],
             {"padding": (1, 1)}, "pad"),
        Case("qnn.conv2d", [Arr((1, 6, 6, 4), "uint8"), Arr((3, 3, 2, 6), "int8"), z(2),
                            _vector([1, 2, 3, 4, 5, 6], "int32"), s(0.1), _vector([0.1] * 6)],
             {"padding": (1, 0, 2, 1), "strides": (2, 1), "groups": 2, "data_layout": "NHWC",
              "kernel_layout": "HWIO"}, "NHWC-groups-per-channel"),
        Case("qnn.conv2d", [Arr((1, 2, 5, 5), "int8"), Arr((2, 2, 2, 2), "int8"), z(0), z(0), s(1.0), s(1.0)],
             {"out_dtype": "int16"}, "no-pad-int16"),
    ]
    for rounding in ("UPWARD", "TONEAREST"):
        for compute in ("None", "float32", "float64"):
            for out in ("int8", "uint8", "int32"):
                tag = f"{rounding}-{compute}-{out}"
                attrs = {"rounding": rounding, "compute_dtype": compute, "out_dtype": out}
                c += [
                    Case("qnn.requantize", [wide, s(0.37), z(2), s(0.011), z(-3)], attrs, f"{tag}"),
                    Case("qnn.requantize", [Arr((2, 3, 4), "int8"), _vector([0.25, 0.02, 1.5]),
                                            _vector([1, 2, 3], "int32"), s(0.5), z(4)], {**attrs, "axis": 1},
                         f"{tag}-per-channel"),
                ]
        attrs = {"rounding": rounding}
        c += [
            Case("qnn.requantize", [wide, s(0.5), z(0), s(0.5), z(0)], attrs, f"{rounding}-same-scale"),
            Case("qnn.requantize", [wide, s(0.25), z(1), s(1.0), z(0)], {**attrs, "out_dtype": "int32"},
                 f"{rounding}-power-of-two-ties"),
            Case("qnn.requantize", [wide, s(3.0), z(0), s(0.75), z(0)], {**attrs, "out_dtype": "int16"},
                 f"{rounding}-multiplier-4"),
        ]
    return c


# ---- the quantization toolkit's simulated_quantize ----------------------------------------------


def _simulated_quantize_cases() -> list[Case]:
    op, s = "relay.op.annotation.simulated_quantize", _scalar
    halves = Arr((2, 6), value=np.arange(-6, 6) * 0.25)
    return [
        Case(op, [Arr((2, 3, 4)), s(0.05), s(-20.0), s(20.0)], {"kind": 1}, "input-clipped"),
        Case(op, [halves, s(0.5), s(-127.0), s(127.0)], {"kind": 3}, "halves-away-from-zero"),
        Case(op, [Arr((3, 4)), s(0.05), s(-1.0), s(1.0)], {"kind": 0}, "identity"),
    ]


# ---- image.resize1d and topk ------------------------------------------------------------


def _resize1d_cases() -> list[Case]:
    c = []
    for method in ("nearest_neighbor", "linear", "cubic"):
        for mode in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                     "tf_crop_and_resize"):
            for size in (11, 3, 12):
                c.append(Case("image.resize1d", [Arr((1, 2, 6))],
                              {"size": (size,), "method": method, "coordinate_transformation_mode": mode,
                               "roi": (0.2, 0.9)}, f"{method}-{mode}-{size}"))
    for rounding in ("", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"):
        c.append(Case("image.resize1d", [Arr((2, 3, 4))],
                      {"size": (9,), "method": "nearest_neighbor", "rounding_method": rounding},
                      f"nearest-{rounding or 'default'}"))
    c += [
        Case("image.resize1d", [Arr((1, 6, 3))], {"size": (9,), "method": "cubic", "cubic_exclude": 1,
                                                  "cubic_alpha": -0.75, "layout": "NWC"}, "cubic-exclude-NWC"),
        Case("image.resize1d", [Arr((1, 2, 4), "int32")], {"size": (7,), "out_dtype": "float32"}, "int32-to-float32"),
        Case("image.resize1d", [Arr((1, 2, 6))], {"size": (8,), "method": "linear",
                                                  "coordinate_transformation_mode": "tf_crop_and_resize",
                                                  "roi": (-0.2, 1.3), "extrapolation_value": 3.5}, "extrapolation"),
        Case("image.resize1d", [Arr((1, 2, 3))], {"size": (9,), "method": "nearest_neighbor",
                                                  "coordinate_transformation_mode": "asymmetric",
                                                  "rounding_method": "round"}, "nearest-asymmetric-upscale"),
    ]
    return c


def _topk_cases() -> list[Case]:
    ties = Arr((2, 7), value=[[3, 1, 3, 2, 3, 0, 1], [0, 5, 5, -1, 2, 5, -1]])
    nans = Arr((6,), value=[1.0, np.nan, 3.0, np.nan, -0.0, 0.0])
    c = [
        Case("topk", [Arr((2, 5, 3))], {"k": 2, "axis": 1}, "both-axis1"),
        Case("topk", [Arr((4, 6))], {"k": 3, "is_ascend": True, "ret_type": "values"}, "ascend-values"),
        Case("topk", [Arr((3, 6), "int32")], {"k": 4, "ret_type": "indices", "dtype": "int64"}, "int32-indices"),
        Case("topk", [Arr((3, 5), "int8")], {"k": 0, "axis": 0}, "all-axis0"),
        Case("topk", [Arr((1, 4, 3, 3))], {"k": 2, "axis": -1, "dtype": "float32"}, "float-indices"),
        Case("topk", [Arr((5, 4), "float16")], {"k": 2, "axis": 0}, "float16"),
        # past SELECT_MAX (32), and 64-bit data: by ranks instead of repeated maxima of keys
        Case("topk", [Arr((2, 40))], {"k": 33, "is_ascend": True}, "by-ranks-k33"),
        Case("topk", [Arr((3, 7), "float64")], {"k": 3}, "by-ranks-float64"),
        Case("topk", [Arr((3, 7), "int64")], {"k": 2, "is_ascend": True}, "by-ranks-int64"),
        Case("topk", [Arr((4, 9), "uint8")], {"k": 4, "is_ascend": True, "axis": 1}, "uint8-ascend"),
        Case("topk", [Arr((6,), value=[np.inf, -np.inf, 0.0, -np.inf, np.inf, -1.0])], {"k": 6, "is_ascend": True},
             "infinities"),
    ]
    for ascend in (False, True):
        tag = "ascend" if ascend else "descend"
        c += [Case("topk", [ties], {"k": 5, "is_ascend": ascend}, f"ties-{tag}"),
              Case("topk", [nans], {"k": 0, "is_ascend": ascend}, f"nan-{tag}"),
              Case("topk", [Arr((2, 24), "int32")], {"k": 0, "is_ascend": ascend}, f"ties-by-keys-{tag}"),
              Case("topk", [Arr((2, 40), "int32")], {"k": 0, "is_ascend": ascend}, f"ties-by-ranks-{tag}")]
    return c


# ---- einsum ----------------------------------------------------------------------------


def _einsum_cases() -> list[Case]:
    def e(equation, shapes, name, dtype="float32", **tol):
        return Case("einsum", [tuple(Arr(s, dtype) for s in shapes)], {"equation": equation}, name,
                    **(tol or dict(atol=SUM_ATOL)))

    return [
        e("bqhd,bkhd->bhqk", [(1, 5, 2, 4), (1, 6, 2, 4)], "attention-scores"),
        e("bhqk,bkhd->bqhd", [(1, 2, 5, 6), (1, 6, 2, 4)], "attention-values"),
        # the schedules of products (defaults.py): lane sums over k = 64, a register tile over d = 32
        e("bqhd,bkhd->bhqk", [(1, 6, 2, 64), (1, 5, 2, 64)], "scores-lane-sums"),
        e("bhqk,bkhd->bqhd", [(1, 2, 6, 5), (1, 5, 2, 32)], "values-register-tile"),
        e("ij,jk", [(3, 4), (4, 5)], "implicit-matmul"),
        e("ab,bC", [(2, 3), (3, 4)], "implicit-upper-case-first"),
        e("ii", [(4, 4)], "trace"),
        e("ii->i", [(4, 4)], "diagonal"),
        e("i,j->ij", [(3,), (4,)], "outer-no-sum"),
        e("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], "ellipsis-broadcast"),
        e("ij,jk->ik", [(3, 1), (4, 5)], "label-extent-1-broadcast"),
        e("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], "three-operands"),
        e(" ij , kj -> ik ", [(3, 5), (4, 5)], "spaces"),
        e("ij->", [(3, 4)], "sum-all"),
        e("ij,ij->ij", [(3, 4), (3, 4)], "int32", dtype="int32"),
        e("ik,jk->ij", [(3, 8), (2, 8)], "float16", dtype="float16", **F16),
    ]


# ---- cumsum, cumprod ---------------------------------------------------------------------


def _scan_cases() -> list[Case]:
    cases = []
    for op in ("cumsum", "cumprod"):
        fill = "unit" if op == "cumprod" else "normal"  # products of small factors stay small
        cases += [
            Case(op, [Arr((2, 5, 3), "float32", fill)], {"axis": 1}, "axis1"),
            Case(op, [Arr((2, 5, 3), "float32", fill)], {"axis": -1, "exclusive": True}, "exclusive-last"),
            Case(op, [Arr((2, 3), "float32", fill)], {}, "flattened"),
            Case(op, [Arr((4, 6), "int32")], {"axis": 0, "exclusive": True}, "i32-exclusive"),
            Case(op, [Arr((3, 4), "int8")], {"axis": 1, "dtype": "int64"}, "i8-to-i64"),
            Case(op, [Arr((3, 4), "float16", fill)], {"axis": 1}, "float16", **F16),
        ]
    return cases


# ---- scatter_elements, scatter_nd -----------------------------------------------------------


def _scatter_cases() -> list[Case]:
    def idx(values, shape, dtype="int64"):
        return Arr(shape, dtype, value=values)

    # rows of 3 along axis 1 of (2, 5): duplicates (1, 1), a negative (-1 = 4), one out of range (7)
    rows = idx([1, 1, -1, 7, 0, 3], (2, 3))
    cases = []
    for reduction in ("update", "add", "mul", "min", "max"):
        cases += [
            Case("scatter_elements", [Arr((2, 5)), rows, Arr((2, 3))], {"axis": 1, "reduction": reduction},
                 f"{reduction}-axis1"),
            # indices smaller than data off the axis: data's other rows stay as they are
            Case("scatter_elements", [Arr((4, 3), "int32"), idx([2, 0, 2, 3, -4, 1], (2, 3), "int32"),
                                      Arr((2, 3), "int32")], {"axis": 0, "reduction": reduction},
                 f"{reduction}-axis0-i32"),
            # (4, 3) by index pairs (1, 0) (1, 2) (-3 = 1, 0) (4, 2): a duplicate, one out of range
            Case("scatter_nd", [Arr((4, 3)), idx([1, 1, -3, 4, 0, 2, 0, 2], (2, 2, 2)), Arr((2, 2))],
                 {"mode": reduction}, f"{reduction}-elements"),
            # rows of (5, 4) by single indices: slices
            Case("scatter_nd", [Arr((5, 4)), idx([3, 0, 3], (1, 3)), Arr((3, 4))], {"mode": reduction},
                 f"{reduction}-slices"),
        ]
    cases += [
        Case("scatter_nd", [Arr((3, 4)), idx([2, 1], (2,)), Arr(())], {"mode": "add"}, "one-tuple"),
        Case("scatter_nd", [Arr((3, 4)), idx([2, 1], (2,)), Arr(())], {}, "one-tuple-update"),
        Case("scatter_elements", [Arr((3, 4), "float16"), idx([0, 2, 2, 1], (1, 4)), Arr((1, 4), "float16")],
             {"axis": 0, "reduction": "add"}, "float16", **F16),
        Case("scatter_elements", [Arr((2, 3), value=[-np.inf, 1, 2, 3, 4, np.inf]), idx([0, 0], (1, 2)),
                                  Arr((1, 2))], {"axis": 1, "reduction": "max"}, "infinities-stay"),
    ]
    return cases


# ---- image.grid_sample --------------------------------------------------------------------


def _grid_sample_cases() -> list[Case]:
    # points beyond the image on both sides (reflected more than once), and exact halves
    grid = Arr((2, 2, 3, 4), value=np.concatenate([np.linspace(-2.6, 2.6, 24), np.linspace(-1, 1, 24)])
               .astype(np.float32))
    cases = []
    for method in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                cases.append(Case("image.grid_sample", [Arr((2, 3, 4, 5)), grid],
                                  {"method": method, "padding_mode": padding, "align_corners": align},
                                  f"{method}-{padding}-{'align' if align else 'edges'}"))
    cases.append(Case("image.grid_sample", [Arr((1, 2, 1, 3)), Arr((1, 2, 2, 2), "float32", "unit")],
                      {"padding_mode": "reflection"}, "height-1-reflection"))
    # x at pixel coordinates 0.5, 1.5, 2.5, 3.5 (W = 5, align_corners): halves round to even
    halves = Arr((1, 2, 1, 4), value=[-0.75, -0.25, 0.25, 0.75, 0, 0, 0, 0])
    cases.append(Case("image.grid_sample", [Arr((1, 1, 3, 5)), halves], {"method": "nearest"}, "halves-to-even"))
    # points far beyond int64 are held to a bound before they become indices (no poison reads)
    far = Arr((1, 2, 1, 4), value=[1e30, -1e30, 0.5, 1e30, 0.2, 0.2, -1e30, -1e30])
    for method, padding in (("bilinear", "zeros"), ("nearest", "zeros"), ("bicubic", "border")):
        cases.append(Case("image.grid_sample", [Arr((1, 2, 3, 5)), far], {"method": method, "padding_mode": padding},
                          f"far-{method}-{padding}"))
    return cases


CASES: list[Case] = (_conv_cases() + _pool_cases() + _pad_resize_cases() + _reduce_cases() + _norm_cases()
                     + _plumbing_cases() + _simulated_quantize_cases() + _resize1d_cases() + _topk_cases()
                     + _einsum_cases() + _scan_cases() + _scatter_cases()
                     + _grid_sample_cases())

# ROI pooling and deformable convolution
from lower_cases_vision import vision_cases  # noqa: E402

CASES += vision_cases()
