"""The ops TVM's layout-pass tests needed: topk (ops/algorithm.py), slice_like
(ops/transform_index.py), image.resize1d (ops/pooling.py) and dyn.nn.upsampling's relation
(ops/dynamic.py): shapes and errors (also at their place in a file), numerics against
hand-worked cases, attributes printed and read back, and the hover text.  Compiled =
reference for all of them is in lower_cases_nn / lower_cases_elemwise (test_lower_compiled)."""

from __future__ import annotations

import numpy as np
import pytest
from test_typing import check

from relaylens.compiler.ir.types import ANY, TensorType, TupleType
from relaylens.compiler.ops import OpPattern, OpTypeError, get_op
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module
from relaylens.server.features.hover import describe_op


def T(shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def infer(name, types, **attrs):
    return get_op(name).infer(types, attrs)


def run(name, args, **attrs):
    return get_op(name).evaluate(args, attrs)


def fails(name, types, message, **attrs):
    with pytest.raises(OpTypeError) as info:
        infer(name, types, **attrs)
    assert info.value.message == message


# ---- topk --------------------------------------------------------------------------------------------


def test_topk_shapes():
    both = infer("topk", [T((2, 5, 3))], k=2, axis=1)
    assert both == TupleType((T((2, 2, 3)), T((2, 2, 3), "int32")))
    assert infer("topk", [T((4, 6))], k=3, ret_type="values") == T((4, 3))
    assert infer("topk", [T((4, 6), "int8")], k=3, ret_type="indices", dtype="int64") == T((4, 3), "int64")
    assert infer("topk", [T((4, 6))], k=0, axis=0, ret_type="values") == T((4, 6))  # k < 1: the whole axis
    assert infer("topk", [T((ANY, 6))], k=2, axis=0, ret_type="values") == T((2, 6))
    assert infer("topk", [T((ANY, 6))], k=-1, axis=0, ret_type="values") == T((ANY, 6))


def test_topk_errors():
    fails("topk", [T((2, 3))], "topk: axis 2 is out of range for a tensor of rank 2 (expected -2 to 1)", axis=2)
    fails("topk", [T((2, 3))], "topk: attribute ret_type is 'all'; expected one of both, values, indices",
          ret_type="all")
    fails("topk", [T((2, 3))], "topk: k=4 is larger than the extent 3 of axis 1 (data Tensor[(2, 3), float32])",
          k=4)
    with pytest.raises(OpTypeError, match="dtype"):
        infer("topk", [T((2, 3))], dtype="int33")


def test_topk_is_opaque_like_tvms():
    assert get_op("topk").pattern is OpPattern.OPAQUE


TIES = np.array([[3, 1, 3, 2, 3], [0, 5, 5, -1, 2]], np.float32)


def test_topk_breaks_ties_by_the_lower_index_both_ways():
    values, indices = run("topk", [TIES], k=3)
    np.testing.assert_array_equal(values, [[3, 3, 3], [5, 5, 2]])
    np.testing.assert_array_equal(indices, [[0, 2, 4], [1, 2, 4]])
    values, indices = run("topk", [TIES], k=3, is_ascend=True)
    np.testing.assert_array_equal(values, [[1, 2, 3], [-1, 0, 2]])
    np.testing.assert_array_equal(indices, [[1, 3, 0], [3, 0, 4]])
    assert indices.dtype == np.int32


def test_topk_along_the_first_axis_and_one_result():
    x = TIES.T  # (5, 2): sort each column
    np.testing.assert_array_equal(run("topk", [x], k=2, axis=0, ret_type="indices", dtype="int64"),
                                  [[0, 1], [2, 2]])
    np.testing.assert_array_equal(run("topk", [np.abs(x).astype(np.uint8)], k=1, axis=0, ret_type="values"), [[3, 5]])


def test_topk_takes_nan_as_the_largest():
    x = np.array([1.0, np.nan, 3.0, np.nan, -0.0, 0.0], np.float32)
    values, indices = run("topk", [x], k=0)
    np.testing.assert_array_equal(indices, [1, 3, 2, 0, 4, 5])  # -0.0 == 0.0: lower index first
    assert np.isnan(values[:2]).all()
    _, indices = run("topk", [x], k=0, is_ascend=True)
    np.testing.assert_array_equal(indices, [4, 5, 0, 2, 1, 3])


# ---- slice_like --------------------------------------------------------------------------------------


def test_slice_like_shapes():
    assert infer("slice_like", [T((4, 5, 6)), T((2, 3), "int8")]) == T((2, 3, 6))
    assert infer("slice_like", [T((4, 5, 6)), T((1, 2, 4))], axes=[1, -1]) == T((4, 2, 4))
    assert infer("slice_like", [T((4, ANY, 6)), T((1, 2, ANY))]) == T((1, 2, ANY))
    assert get_op("slice_like").pattern is OpPattern.INJECTIVE


def test_slice_like_errors():
    fails("slice_like", [T((4, 5)), T((2, 3))], "slice_like: attribute axes cannot be empty", axes=[])
    fails("slice_like", [T((4, 5, 6)), T((2, 3))], "slice_like: axis 2 exceeds the rank 2 of shape_like "
          "Tensor[(2, 3), float32]", axes=[2])
    fails("slice_like", [T((4, 5)), T((2, 3))], "slice_like: axis -3 is out of range for a tensor of rank 2 "
          "(expected -2 to 1)", axes=[-3])
    fails("slice_like", [T((2, 3)), T((3, 3))], "slice_like: the end index of axis 0 exceeds data's extent: 3 vs 2 "
          "(data Tensor[(2, 3), float32], shape_like Tensor[(3, 3), float32])")


def test_slice_like_numerics():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run("slice_like", [x, np.zeros((1, 2), np.float32)]), [[[0, 1, 2, 3], [4, 5, 6, 7]]])
    np.testing.assert_array_equal(run("slice_like", [x, np.zeros((9, 9, 2))], axes=[-1]), x[:, :, :2])


# ---- image.resize1d ----------------------------------------------------------------------------------


def test_resize1d_shapes_and_errors():
    assert infer("image.resize1d", [T((2, 3, 4))], size=[7]) == T((2, 3, 7))
    assert infer("image.resize1d", [T((2, 4, 3), "int8")], size=[5], layout="NWC", out_dtype="float32") == \
        T((2, 5, 3), "float32")
    assert infer("image.resize1d", [T((1, 2, 4, 8))], size=[3], layout="NCWc") == T((1, 2, 3, 8))
    assert get_op("image.resize1d").pattern is OpPattern.INJECTIVE
    fails("image.resize1d", [T((2, 3, 4))], "image.resize1d: attribute size must be [width], got [2, 3]", size=[2, 3])
    fails("image.resize1d", [T((2, 3, 4))], "image.resize1d: attribute roi must have 2 values, got [0.0, 0.0, 1.0, 1.0]",
          size=[2], roi=[0, 0, 1, 1])
    fails("image.resize1d", [T((2, 3, 4, 4))], "image.resize1d: layout NCW has 3 axes but data has rank 4 "
          "(data Tensor[(2, 3, 4, 4), float32])", size=[2])
    fails("image.resize1d", [T((2, 3, 4))], "image.resize1d: layout NCH has no W (width) axis", size=[2], layout="NCH")
    fails("image.resize1d", [T((2, 3, 4))], "image.resize1d: attribute method is 'area'; expected one of "
          "nearest_neighbor, linear, cubic", size=[2], method="area")


def test_resize1d_linear_half_pixel_hand_case():
    # 2 -> 4: source coordinates -0.25, 0.25, 0.75, 1.25, clamped at the ends
    x = np.array([[[0.0, 1.0]]], np.float32)
    np.testing.assert_allclose(run("image.resize1d", [x], size=[4])[0, 0], [0, 0.25, 0.75, 1.0], atol=1e-7)
    # align_corners 2 -> 3: 0, 0.5, 1; NWC reads the middle axis
    np.testing.assert_allclose(run("image.resize1d", [x.reshape(1, 2, 1)], size=[3], layout="NWC",
                                   coordinate_transformation_mode="align_corners")[0, :, 0], [0, 0.5, 1.0])


def test_resize1d_has_no_integer_shortcut_unlike_resize2d():
    # asymmetric "round", 3 -> 9: coordinates i/3, rounded half away from zero (2/3 -> 1);
    # resize2d divides indices for an integer upscale instead (i // 3), as topi does
    x = np.array([[[10.0, 20.0, 30.0]]], np.float32)
    attrs = dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="round")
    one = run("image.resize1d", [x], size=[9], **attrs)[0, 0]
    np.testing.assert_array_equal(one, np.array([0, 0, 1, 1, 1, 2, 2, 2, 2]) * 10 + 10)
    two = run("image.resize2d", [x[:, :, None, :]], size=[1, 9], **attrs)[0, 0, 0]
    np.testing.assert_array_equal(two, np.array([0, 0, 0, 1, 1, 1, 2, 2, 2]) * 10 + 10)


def test_resize1d_extrapolates_outside_the_roi():
    # roi [-0.5, 1.5] of 3 samples, 3 outputs: coordinates -1, 1, 3
    x = np.array([[[0.0, 1.0, 2.0]]], np.float32)
    got = run("image.resize1d", [x], size=[3], coordinate_transformation_mode="tf_crop_and_resize",
              roi=[-0.5, 1.5], extrapolation_value=7.0)
    np.testing.assert_allclose(got[0, 0], [7.0, 1.0, 7.0])


@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_resize1d_equals_resize2d_on_one_row(method):
    # a height of 1 resized to 1 samples row 0 with weight 1 in every mode used here
    x = np.random.default_rng(2).standard_normal((2, 3, 7)).astype(np.float32)
    one = run("image.resize1d", [x], size=[11], method=method)
    two = run("image.resize2d", [x[:, :, None, :]], size=[1, 11], method=method)
    np.testing.assert_array_equal(one, two[:, :, 0, :])


# ---- dyn.nn.upsampling -------------------------------------------------------------------------------


def test_dyn_upsampling_relation_keeps_what_the_scales_do_not_touch():
    scale = T((), "float64")
    assert infer("dyn.nn.upsampling", [T((1, 32, 28, 28)), scale, scale]) == T((1, 32, ANY, ANY))
    assert infer("dyn.nn.upsampling", [T((1, 2, 28, 28, 16)), scale, scale], layout="NCHW16c") == \
        T((1, 2, ANY, ANY, 16))
    assert infer("dyn.nn.upsampling", [T((1, 5, 6, 3), "int8"), T((), "int32"), scale], layout="NHWC") == \
        T((1, ANY, ANY, 3), "int8")
    assert get_op("dyn.nn.upsampling").pattern is OpPattern.INJECTIVE
    fails("dyn.nn.upsampling", [T((1, 3, 4, 4)), T((1,)), scale], "dyn.nn.upsampling: scale_h must be a scalar, "
          "found Tensor[(1), float32]")
    fails("dyn.nn.upsampling", [T((1, 3, 4, 4)), scale, scale], "dyn.nn.upsampling: attribute method is 'area'; "
          "expected one of nearest_neighbor, bilinear, bicubic", method="area")
    fails("dyn.nn.upsampling", [T((1, 3, 4, 4)), scale, scale], "dyn.nn.upsampling: layout NCHW4w splits the W "
          "axis; dyn.nn.upsampling needs it whole", layout="NCHW4w")


def test_dyn_upsampling_computes_what_nn_upsampling_does():
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 4)).astype(np.float32)
    got = run("dyn.nn.upsampling", [x, np.array(2.0), np.array(1.5)], method="bilinear", align_corners=True)
    want = run("nn.upsampling", [x], scale_h=2.0, scale_w=1.5, method="bilinear", align_corners=True)
    np.testing.assert_array_equal(got, want)


# ---- dyn.topk -------------------------------------------------------------------------------------------


def test_dyn_topk_relation_and_reference():
    k = T((), "int32")
    assert infer("dyn.topk", [T((20, 100)), k], axis=0) == TupleType((T((ANY, 100)), T((ANY, 100), "int32")))
    assert infer("dyn.topk", [T((20, 100)), T((1,), "int64")], ret_type="indices", dtype="int64") == \
        T((20, ANY), "int64")
    assert get_op("dyn.topk").pattern is OpPattern.OPAQUE
    fails("dyn.topk", [T((2, 3)), T((2,), "int32")], "dyn.topk: k must be a scalar or a tensor of shape (1), "
          "found Tensor[(2), int32]")
    fails("dyn.topk", [T((2, 3)), T(())], "dyn.topk: k must be an integer, found float32")
    fails("dyn.topk", [T((2, 3)), k], "dyn.topk: attribute ret_type is 'all'; expected one of both, values, indices",
          ret_type="all")
    values = run("dyn.topk", [TIES, np.array(2, np.int32)], ret_type="values", is_ascend=True)
    np.testing.assert_array_equal(values, run("topk", [TIES], k=2, ret_type="values", is_ascend=True))


# ---- in a file: errors at the call, attributes printed and read back, hover ----------------------------


@pytest.mark.parametrize("body, message", [
    ("topk(%x, k=4, axis=1)", "topk: k=4 is larger than the extent 3 of axis 1 (data Tensor[(2, 3), float32])"),
    ("slice_like(%x, %y)", "slice_like: the end index of axis 0 exceeds data's extent: 3 vs 2 "
                           "(data Tensor[(2, 3), float32], shape_like Tensor[(3, 3), float32])"),
    ("image.resize1d(%x, size=[2, 3], layout=\"NCW\")", "image.resize1d: layout NCW has 3 axes but data has rank 2 "
                                                         "(data Tensor[(2, 3), float32])"),
    ("dyn.nn.upsampling(%x, %y, 2f)", "dyn.nn.upsampling: scale_h must be a scalar, found Tensor[(3, 3), float32]"),
])
def test_type_errors_are_reported_at_the_call(body, message):
    _, found = check("def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3, 3), float32]) {\n"
                     f"  {body}\n}}")
    assert found == [(2, 3, "error", message)]


ROUND_TRIP = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6), float32], %y: Tensor[(1, 2, 3), float32], %s: float64) {
  %0 = topk(%x, k=2, axis=-1, ret_type="both", is_ascend=True, dtype="int64");
  %1 = %0.0;
  %2 = slice_like(%1, %y, axes=[1]);
  %3 = image.resize1d(%2, size=[5], roi=[0.1f, 0.9f], layout="NCW", method="cubic", coordinate_transformation_mode="tf_crop_and_resize", rounding_method="", cubic_alpha=-0.75f, cubic_exclude=1, extrapolation_value=2f, out_dtype="float64");
  %4 = expand_dims(%3, axis=2);
  %5 = dyn.nn.upsampling(%4, %s, %s, layout="NCHW", method="bilinear", align_corners=True);
  (%5, %0.1)
}
"""


def test_attributes_print_and_parse_back():
    first = parse(ROUND_TRIP, "r.relay")
    assert not [d for d in first.diagnostics if d.is_error]
    text = print_module(first.module)
    assert print_module(parse(text, "again.relay").module) == text
    for written in ('k=2, axis=-1, ret_type="both", is_ascend=True, dtype="int64"', "axes=[1]",
                    "roi=[0.1f, 0.9f]", "cubic_exclude=1", 'method="bilinear", align_corners=True'):
        assert written in text
    _, found = check(ROUND_TRIP.removeprefix('#[version = "0.0.5"]\n'))
    assert found == []


def test_hover_shows_the_docs_of_the_new_ops():
    module = parse(ROUND_TRIP, "r.relay").module
    body = module["main"].body
    upsampling = body.fields[0]
    resize = upsampling.args[0].args[0]
    slice_call = resize.args[0]
    topk_call = slice_call.args[0].tuple_value
    text = describe_op(topk_call)
    assert "topk(data, k=1, axis=-1, ret_type=\"both\", is_ascend=False, dtype=\"int32\")" in text
    assert "lower index first" in text and "Fusion pattern: Opaque" in text
    assert "| `is_ascend` | `True` | False |" in text
    assert "slice_like(data, shape_like, axes=None)" in describe_op(slice_call)
    assert "Resize W to `size`" in describe_op(resize)
    assert "nn.upsampling with scale_h, scale_w given as tensor arguments" in describe_op(upsampling)
