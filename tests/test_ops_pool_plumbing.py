"""Pooling, padding, resizing (compiler/ops/pooling.py) and the plumbing ops
(compiler/ops/plumbing.py, qnn.py): shape inference, errors, and numerics checked against
independent implementations written here (direct loops, np.pad, hand-worked cases,
the quantization formulas)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.ir.types import ANY, UNIT, FuncType, GlobalTypeVar, TensorType, TupleType, TypeCall
from relaylens.compiler.ops import AttrError, OpPattern, OpTypeError, get_op
from relaylens.compiler.ops.qnn import fixed_point_multiplier


def T(shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def infer(name, types, **attrs):
    return get_op(name).infer(types, attrs)


def run(name, args, **attrs):
    return get_op(name).evaluate(args, attrs)


def fails(name, types, match, exc=OpTypeError, **attrs):
    with pytest.raises(exc, match=match):
        infer(name, types, **attrs)


RNG = np.random.default_rng(7)


# ---- a direct pooling loop (channels-first, any number of spatial axes) ---------------------------

def ref_pool(x, kind, kernel, strides, dilation, before, after, ceil_mode=False, count_include_pad=False):
    nd = len(kernel)
    spatial = x.shape[2:]
    outs = []
    for size, k, s, d, b, a in zip(spatial, kernel, strides, dilation, before, after):
        span = size + b + a - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
        outs.append(span // s + 1)
    out = np.zeros(x.shape[:2] + tuple(outs), dtype=np.float64)
    lowest = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(v) for v in outs)):
            values, declared = [], 0
            for kk in itertools.product(*(range(k) for k in kernel)):
                pos = [o[i] * strides[i] - before[i] + kk[i] * dilation[i] for i in range(nd)]
                if all(0 <= pos[i] < spatial[i] for i in range(nd)):
                    values.append(float(x[(n, c, *pos)]))
                if all(-before[i] <= pos[i] < spatial[i] + after[i] for i in range(nd)):
                    declared += 1
            if kind == "max":
                out[(n, c, *o)] = max(values) if values else lowest
            else:
                count = declared if count_include_pad else len(values)
                out[(n, c, *o)] = sum(values) / max(count, 1)
    return out


POOL_CASES = [
    # nd, data shape (channels first), attrs
    (2, (1, 2, 6, 7), dict(pool_size=[2, 2], strides=[2, 2])),
    (2, (2, 1, 7, 7), dict(pool_size=[3, 3], strides=[2, 2], padding=[1, 1])),
    (2, (1, 2, 7, 6), dict(pool_size=[3, 2], strides=[2, 1], padding=[1, 0, 2, 1])),
    (2, (1, 1, 9, 9), dict(pool_size=[3, 3], dilation=[2, 2], padding=[2, 2])),
    (2, (1, 2, 5, 5), dict(pool_size=[2, 2], strides=[2, 2], ceil_mode=True)),
    (2, (1, 1, 6, 8), dict(pool_size=[3, 3], strides=[2, 3], padding=[1, 1, 0, 2], ceil_mode=True)),
    (1, (1, 3, 11), dict(pool_size=[3], strides=[2], padding=[2, 1], ceil_mode=True)),
    (1, (2, 1, 8), dict(pool_size=[2], dilation=[3], padding=[1])),
    (3, (1, 1, 4, 5, 5), dict(pool_size=[2, 2, 2], strides=[2, 2, 2], padding=[1, 0, 1, 0, 1, 1], ceil_mode=True)),
]


def _expand(padding, nd):
    if len(padding) == 1:
        return padding * nd, padding * nd
    if len(padding) == nd:
        return list(padding), list(padding)
    return list(padding[:nd]), list(padding[nd:])


@pytest.mark.parametrize("kind,include", [("max", False), ("avg", False), ("avg", True)])
@pytest.mark.parametrize("nd,shape,attrs", POOL_CASES)
def test_pooling_matches_direct_loops(kind, include, nd, shape, attrs):
    name = f"nn.{kind}_pool{nd}d"
    x = RNG.standard_normal(shape).astype(np.float32)
    extra = {"count_include_pad": True} if include else {}
    got = run(name, [x], **attrs, **extra)
    before, after = _expand(attrs.get("padding", [0]), nd)
    expected = ref_pool(x, kind, attrs["pool_size"], attrs.get("strides", [1] * nd),
                        attrs.get("dilation", [1] * nd), before, after, attrs.get("ceil_mode", False), include)
    assert got.dtype == np.float32
    assert got.shape == expected.shape
    assert infer(name, [T(shape)], **attrs, **extra) == T(expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_pooling_nhwc_equals_nchw_transposed():
    x = RNG.standard_normal((1, 7, 6, 3)).astype(np.float32)
    attrs = dict(pool_size=[3, 3], strides=[2, 2], padding=[0, 0, 1, 1])
    for kind in ("max", "avg"):
        nhwc = run(f"nn.{kind}_pool2d", [x], layout="NHWC", **attrs)
        nchw = run(f"nn.{kind}_pool2d", [x.transpose(0, 3, 1, 2)], **attrs)
        np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1), rtol=1e-6)


def test_avg_pool_ceil_tail_is_not_counted_with_count_include_pad():
    # width 5, window 2, stride 2, ceil_mode: the last window is [4, 5) plus the ceil tail
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    out = run("nn.avg_pool1d", [x], pool_size=[2], strides=[2], ceil_mode=True, count_include_pad=True)
    np.testing.assert_allclose(out.reshape(-1), [0.5, 2.5, 4.0])
    out = run("nn.avg_pool1d", [x], pool_size=[2], strides=[2], padding=[1], count_include_pad=True)
    np.testing.assert_allclose(out.reshape(-1), [0.0, 1.5, 3.5])  # [pad, 0], [1, 2], [3, 4]
    out = run("nn.avg_pool1d", [x], pool_size=[2], strides=[2], padding=[1], count_include_pad=False)
    np.testing.assert_allclose(out.reshape(-1), [0.0, 1.5, 3.5])


def test_integer_average_pool_truncates_toward_zero():
    x = np.array([[[[-3, -4], [5, 6]]]], dtype=np.int8)
    out = run("nn.avg_pool2d", [x], pool_size=[1, 2], strides=[1, 2])
    assert out.dtype == np.int8
    assert out.reshape(-1).tolist() == [-3, 5]  # -7/2 -> -3, 11/2 -> 5
    assert run("nn.max_pool2d", [x], pool_size=[2, 2]).reshape(-1).tolist() == [6]


@pytest.mark.parametrize("name,data,attrs,expected", [
    ("nn.max_pool2d", (1, 3, 8, 8), dict(pool_size=[2, 2], strides=[2, 2]), (1, 3, 4, 4)),
    ("nn.max_pool2d", (1, 112, 112, 64), dict(pool_size=[3, 3], strides=[2, 2], padding=[0, 0, 1, 1],
                                             layout="NHWC"), (1, 56, 56, 64)),
    ("nn.max_pool2d", (1, 1, 5, 5), dict(pool_size=[2, 2], strides=[2, 2]), (1, 1, 2, 2)),
    ("nn.max_pool2d", (1, 1, 5, 5), dict(pool_size=[2, 2], strides=[2, 2], ceil_mode=True), (1, 1, 3, 3)),
    ("nn.avg_pool2d", (1, 1, 7, 7), dict(pool_size=[3, 3], dilation=[2, 2]), (1, 1, 3, 3)),
    ("nn.avg_pool2d", (ANY, 3, ANY, 8), dict(pool_size=[2, 2], strides=[2, 2]), (ANY, 3, ANY, 4)),
    ("nn.avg_pool2d", (1, 2, 8, 8, 4), dict(pool_size=[2], layout="NCHW4c"), (1, 2, 7, 7, 4)),
    ("nn.max_pool1d", (1, 4, 10), dict(pool_size=[3], padding=[2, 0]), (1, 4, 10)),
    ("nn.avg_pool1d", (2, 10, 4), dict(pool_size=[2], strides=[2], layout="NWC"), (2, 5, 4)),
    ("nn.max_pool3d", (1, 2, 4, 6, 6), dict(pool_size=[2, 2, 2], strides=[2, 2, 2]), (1, 2, 2, 3, 3)),
    ("nn.avg_pool3d", (1, 2, 4, 6, 6), dict(pool_size=[3, 3, 3], padding=[1, 1, 1, 0, 0, 0]), (1, 2, 3, 5, 5)),
    ("nn.max_pool3d", (1, 4, 6, 6, 2), dict(pool_size=[2, 2, 2], layout="NDHWC"), (1, 3, 5, 5, 2)),
])
def test_pool_shapes(name, data, attrs, expected):
    assert infer(name, [T(data)], **attrs) == T(expected)


@pytest.mark.parametrize("name,data,attrs,exc,match", [
    ("nn.max_pool2d", (1, 1, 2, 2), dict(pool_size=[3, 3]), OpTypeError,
     "nn.max_pool2d: the pooling window spans 3 along height but the padded input has only 2"),
    ("nn.max_pool2d", (1, 1, 8, 8), dict(pool_size=[2, 2], padding=[1, 1, 1]), OpTypeError,
     r"nn.max_pool2d: attribute padding expects 1, 2 or 4 values, got 3 \(\[1, 1, 1\]\)"),
    ("nn.max_pool2d", (1, 1, 8, 8), dict(pool_size=[2, 2], layout="NCDW"), OpTypeError,
     r"nn.max_pool2d: layout NCDW has no H \(height\) axis"),
    ("nn.max_pool2d", (1, 8, 8), dict(pool_size=[2, 2]), OpTypeError,
     r"layout NCHW has 4 axes but data has rank 3 \(data Tensor\[\(1, 8, 8\), float32\]\)"),
    ("nn.max_pool2d", (1, 1, 8, 8, 4), dict(pool_size=[2, 2], layout="NCHW4w"), OpTypeError,
     "splits the W axis"),
    ("nn.avg_pool2d", (1, 1, 8, 8), dict(pool_size=[2, 2], strides=[0, 1]), OpTypeError,
     r"attribute strides must be positive, got \[0, 1\]"),
    ("nn.avg_pool2d", (1, 1, 8, 8), dict(pool_size=[2, 2, 2]), OpTypeError,
     r"attribute pool_size expects 2 values, got 3"),
    ("nn.avg_pool2d", (1, 1, 8, 8), dict(), AttrError, "attribute pool_size is required"),
    ("nn.max_pool2d", (1, 1, 8, 8), dict(pool_size=[2, 2], count_include_pad=True), AttrError,
     "nn.max_pool2d has no attribute 'count_include_pad'"),
    ("nn.avg_pool1d", (1, 1, 8), dict(pool_size=[2], layout="N C W"), OpTypeError, "is not a layout"),
])
def test_pool_errors(name, data, attrs, exc, match):
    fails(name, [T(data)], match, exc, **attrs)


def test_pool_data_must_be_a_tensor_and_ops_are_out_ewise_fusable():
    with pytest.raises(OpTypeError, match=r"nn.max_pool2d: data must be a tensor, found \(Tensor") as err:
        infer("nn.max_pool2d", [TupleType((T((1, 1, 2, 2)),))], pool_size=[1, 1])
    assert err.value.arg == 0
    for name in ("nn.max_pool2d", "nn.avg_pool1d", "nn.global_avg_pool2d", "nn.adaptive_avg_pool2d"):
        assert get_op(name).pattern is OpPattern.OUT_EWISE_FUSABLE
    for name in ("nn.pad", "nn.upsampling", "image.resize2d"):
        assert get_op(name).pattern is OpPattern.INJECTIVE
    sig = get_op("nn.avg_pool2d").signature()
    assert sig.startswith("nn.avg_pool2d(data, pool_size=required, strides=[1, 1], dilation=[1, 1], "
                          "padding=[0, 0], layout=\"NCHW\", out_layout=\"\", ceil_mode=False, "
                          "count_include_pad=False")


# ---- global and adaptive pooling ---------------------------------------------------------------

def ref_adaptive(x, out_sizes, kind):
    """Channels-first reference: cell i covers [floor(i*n/o), ceil((i+1)*n/o))."""
    spatial = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for cell in itertools.product(*(range(o) for o in out_sizes)):
            sl = tuple(slice(math.floor(i * s / o), math.ceil((i + 1) * s / o))
                       for i, s, o in zip(cell, spatial, out_sizes))
            window = x[(n, c, *sl)]
            out[(n, c, *cell)] = window.max() if kind == "max" else window.mean()
    return out


@pytest.mark.parametrize("nd,shape,size", [(1, (1, 2, 7), [3]), (2, (2, 2, 5, 7), [3, 2]),
                                            (2, (1, 3, 6, 6), [4]), (3, (1, 1, 4, 5, 3), [2, 3, 2])])
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_adaptive_pooling(nd, shape, size, kind):
    x = RNG.standard_normal(shape).astype(np.float32)
    out_sizes = size * nd if len(size) == 1 else size
    got = run(f"nn.adaptive_{kind}_pool{nd}d", [x], output_size=size)
    np.testing.assert_allclose(got, ref_adaptive(x, out_sizes, kind), rtol=1e-5)
    assert infer(f"nn.adaptive_{kind}_pool{nd}d", [T(shape)], output_size=size) == T(shape[:2] + tuple(out_sizes))


def test_adaptive_and_global_shapes_and_errors():
    assert infer("nn.adaptive_avg_pool2d", [T((1, 3, 9, 9))]) == T((1, 3, 9, 9))  # empty: keep
    assert infer("nn.adaptive_avg_pool2d", [T((1, 9, ANY, 3))], output_size=[1], layout="NHWC") == T((1, 1, 1, 3))
    assert infer("nn.global_avg_pool2d", [T((ANY, 64, 7, ANY))]) == T((ANY, 64, 1, 1))
    assert infer("nn.global_max_pool2d", [T((1, 7, 7, 64))], layout="NHWC") == T((1, 1, 1, 64))
    fails("nn.adaptive_max_pool2d", [T((1, 3, 9, 9))], r"output_size expects 0, 1 or 2 values, got 3",
          output_size=[1, 2, 3])
    fails("nn.adaptive_avg_pool1d", [T((1, 3, 9))], r"output_size must be positive, got \[0\]", output_size=[0])
    fails("nn.global_avg_pool2d", [T((1, 3, 9))], "has 4 axes but data has rank 3")


def test_global_pooling_numerics():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(run("nn.global_avg_pool2d", [x]), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(run("nn.global_max_pool2d", [x.transpose(0, 2, 3, 1)], layout="NHWC"),
                                  x.max(axis=(2, 3), keepdims=True).transpose(0, 2, 3, 1))
    ints = np.array([[[[1, 2], [3, 5]]]], dtype=np.int32)
    assert run("nn.global_avg_pool2d", [ints]).reshape(-1).tolist() == [2]  # 11 / 4 truncated


# ---- nn.pad --------------------------------------------------------------------------------

def test_pad_shapes():
    assert infer("nn.pad", [T((1, 1, 28, 28)), T(())], pad_width=[[0, 0], [0, 0], [2, 2], [2, 2]]) == \
        T((1, 1, 32, 32))
    # the corpus writes an int32 pad value for a float16 tensor
    assert infer("nn.pad", [T((1, 383, 128), "float16"), T((), "int32")],
                 pad_width=[[0, 0], [1, 0], [0, 0]]) == T((1, 384, 128), "float16")
    assert infer("nn.pad", [T((ANY, 4)), T(())], pad_width=[[1, 1], [-1, 2]]) == T((ANY, 5))
    assert infer("nn.pad", [T((3, 4)), T(())], pad_width=[[2, 2], [3, 3]], pad_mode="reflect") == T((7, 10))


@pytest.mark.parametrize("types,attrs,match", [
    ([T((2, 3)), T(())], dict(pad_width=[[1, 1]]), r"nn.pad: pad_width has 1 pairs but data has rank 2"),
    ([T((2, 3)), T(())], dict(pad_width=[[1, 1], [1]]), r"pad_width\[1\] must be a pair \[before, after\], got \[1\]"),
    ([T((2, 3)), T(())], dict(pad_width=[[0, 0], [1, 1]], pad_mode="wrap"),
     "attribute pad_mode is 'wrap'; expected one of constant, edge, reflect"),
    ([T((2, 3)), T(())], dict(pad_width=[[0, 0], [3, 0]], pad_mode="reflect"),
     r"reflect padding of \[3, 0\] on axis 1 needs an extent above 3, found 3"),
    ([T((2, 3)), T(())], dict(pad_width=[[-2, -1], [0, 0]]),
     r"axis 0 of extent 2 padded by \[-2, -1\] would have extent -1"),
    ([T((2, 3)), T((2,))], dict(pad_width=[[0, 0], [1, 1]]),
     r"pad_value must be a scalar, found Tensor\[\(2\), float32\]"),
])
def test_pad_errors(types, attrs, match):
    fails("nn.pad", types, match, **attrs)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_modes_match_np_pad(mode):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    width = [[0, 1], [2, 1], [3, 2]]
    got = run("nn.pad", [x, np.array(1.5, dtype=np.float32)], pad_width=width, pad_mode=mode)
    kwargs = {"constant_values": 1.5} if mode == "constant" else {}
    np.testing.assert_array_equal(got, np.pad(x, width, mode=mode, **kwargs))


def test_pad_value_is_cast_and_negative_widths_crop():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = run("nn.pad", [x, np.array(2.7, dtype=np.float32)], pad_width=[[1, 0], [0, 1]])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [[2, 2, 2, 2], [0, 1, 2, 2], [3, 4, 5, 2]])
    got = run("nn.pad", [x, np.array(0, dtype=np.int32)], pad_width=[[0, 0], [-1, 2]])
    np.testing.assert_array_equal(got, [[1, 2, 0, 0], [4, 5, 0, 0]])


# ---- resize ---------------------------------------------------------------------------------

SQUARE = np.array([[0, 1], [2, 3]], dtype=np.float32).reshape(1, 1, 2, 2)


def test_resize_linear_half_pixel_hand_case():
    # half_pixel, 2 -> 4: source coordinates -0.25, 0.25, 0.75, 1.25; clamped neighbours give
    # per-axis weights 0, 0.25, 0.75, 1 on the second sample; the data is 2*y + x.
    got = run("image.resize2d", [SQUARE], size=[4, 4])
    r = np.array([0, 0.25, 0.75, 1.0])
    np.testing.assert_allclose(got[0, 0], 2 * r[:, None] + r[None, :], atol=1e-6)
    # align_corners, 2 -> 3: 0, 0.5, 1 on both axes
    got = run("image.resize2d", [SQUARE], size=[3, 3], coordinate_transformation_mode="align_corners")
    r = np.array([0, 0.5, 1.0])
    np.testing.assert_allclose(got[0, 0], 2 * r[:, None] + r[None, :], atol=1e-6)


def test_resize_nearest_cases():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    # asymmetric floor, 4 -> 2: rows/cols 0 and 2
    got = run("image.resize2d", [x], size=[2, 2], method="nearest_neighbor",
              coordinate_transformation_mode="asymmetric", rounding_method="floor")
    np.testing.assert_array_equal(got[0, 0], [[0, 2], [8, 10]])
    # half_pixel "round", 4 -> 3: coordinates 1/6, 3/2, 17/6 -> 0, 2 (half away from zero), 3
    got = run("image.resize2d", [x], size=[3, 3], method="nearest_neighbor")
    np.testing.assert_array_equal(got[0, 0], x[0, 0][np.ix_([0, 2, 3], [0, 2, 3])])
    # floor (the default "" for half_pixel): 0, 1, 2
    got = run("image.resize2d", [x], size=[3, 3], method="nearest_neighbor", rounding_method="")
    np.testing.assert_array_equal(got[0, 0], x[0, 0][np.ix_([0, 1, 2], [0, 1, 2])])
    # round_prefer_floor takes the half down: 1.5 -> 1
    got = run("image.resize2d", [x], size=[3, 3], method="nearest_neighbor", rounding_method="round_prefer_floor")
    np.testing.assert_array_equal(got[0, 0], x[0, 0][np.ix_([0, 1, 3], [0, 1, 3])])
    # half_pixel 2 -> 3 samples -1/6, 1/2, 7/6: "" means floor (0, 0, 1), round gives 0, 1, 1,
    # ceil gives 0, 1, 2 -> clamped to 1
    for rounding, picks in (("", [0, 0, 1]), ("floor", [0, 0, 1]), ("round", [0, 1, 1]), ("ceil", [0, 1, 1])):
        got = run("image.resize2d", [SQUARE], size=[3, 3], method="nearest_neighbor", rounding_method=rounding)
        np.testing.assert_array_equal(got[0, 0], SQUARE[0, 0][np.ix_(picks, picks)], err_msg=rounding)
    # align_corners with the default "" rounding: 2 -> 4 samples 0, 1/3, 2/3, 1 -> 0, 0, 1, 1
    got = run("image.resize2d", [SQUARE], size=[4, 4], method="nearest_neighbor",
              coordinate_transformation_mode="align_corners", rounding_method="")
    np.testing.assert_array_equal(got[0, 0], np.repeat(np.repeat(SQUARE[0, 0], 2, 0), 2, 1))


def test_resize_nearest_asymmetric_integer_upscale_ignores_rounding():
    # TVM divides indices for an integer upscale: x // 2, even with rounding "round" (which
    # would give index 1 for x = 1 by coordinates alone).
    got = run("image.resize2d", [SQUARE], size=[4, 4], method="nearest_neighbor",
              coordinate_transformation_mode="asymmetric", rounding_method="round")
    np.testing.assert_array_equal(got[0, 0], np.repeat(np.repeat(SQUARE[0, 0], 2, 0), 2, 1))
    # a non-integer ratio uses the coordinates: 2 -> 3 asymmetric round: 0, 2/3, 4/3 -> 0, 1, 1
    got = run("image.resize2d", [SQUARE], size=[3, 3], method="nearest_neighbor",
              coordinate_transformation_mode="asymmetric", rounding_method="round")
    np.testing.assert_array_equal(got[0, 0], SQUARE[0, 0][np.ix_([0, 1, 1], [0, 1, 1])])


def _keys(t, a=-0.5):
    t = abs(t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    if t < 2:
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
    return 0.0


def test_resize_cubic_matches_keys_kernel():
    x = RNG.standard_normal((1, 1, 5, 6)).astype(np.float32)
    got = run("image.resize2d", [x], size=[7, 4], method="cubic")
    expected = np.zeros((7, 4))
    for oy, ox in itertools.product(range(7), range(4)):
        cy, cx = (oy + 0.5) * 5 / 7 - 0.5, (ox + 0.5) * 6 / 4 - 0.5
        for iy, ix in itertools.product(range(math.floor(cy) - 1, math.floor(cy) + 3),
                                        range(math.floor(cx) - 1, math.floor(cx) + 3)):
            w = _keys(cy - iy) * _keys(cx - ix)
            expected[oy, ox] += w * x[0, 0, min(max(iy, 0), 4), min(max(ix, 0), 5)]
    np.testing.assert_allclose(got[0, 0], expected, rtol=1e-4, atol=1e-5)
    # same size, half_pixel: every coordinate is a pixel centre, so cubic is the identity
    np.testing.assert_allclose(run("image.resize2d", [x], size=[5, 6], method="cubic"), x, atol=1e-6)


def test_resize_cubic_exclude_renormalises_weights():
    x = np.ones((1, 1, 3, 3), dtype=np.float32)
    got = run("image.resize2d", [x], size=[5, 5], method="cubic", cubic_exclude=1, cubic_alpha=-0.75)
    np.testing.assert_allclose(got, np.ones((1, 1, 5, 5)), atol=1e-6)


def test_resize_crop_and_resize_extrapolates_outside_the_roi():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    got = run("image.resize2d", [x], size=[2, 2], roi=[0.0, 0.0, 1.0, 2.0], layout="NHWC",
              coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)
    # rows sample 0 and 3; columns sample 0 and 6 (outside the image)
    np.testing.assert_allclose(got[0, :, :, 0], [[0, -1], [12, -1]])


def test_resize_nhwc_and_out_dtype():
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    nhwc = run("image.resize2d", [x.transpose(0, 2, 3, 1)], size=[5, 4], layout="NHWC")
    nchw = run("image.resize2d", [x], size=[5, 4])
    np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1), rtol=1e-6)
    ints = np.array([[[[0, 10], [20, 30]]]], dtype=np.uint8)
    got = run("image.resize2d", [ints], size=[1, 4], coordinate_transformation_mode="align_corners")
    assert got.dtype == np.uint8
    assert got.reshape(-1).tolist() == [0, 3, 6, 10]  # 3.33 and 6.67 truncate


def test_resize_shapes_and_errors():
    corpus = dict(size=[600, 600], roi=[0.0, 0.0, 0.0, 0.0], layout="NHWC",
                  coordinate_transformation_mode="asymmetric", rounding_method="")
    assert infer("image.resize2d", [T((1, 512, 512, 3))], **corpus) == T((1, 600, 600, 3))
    assert infer("image.resize2d", [T((ANY, 3, ANY, ANY))], size=[8, 9], out_dtype="float16") == \
        T((ANY, 3, 8, 9), "float16")
    assert infer("image.resize2d", [T((1, 2, 5, 5, 4))], size=[3, 3], layout="NCHW4c") == T((1, 2, 3, 3, 4))
    fails("image.resize2d", [T((1, 3, 4, 4))], r"attribute size must be \[height, width\], got none")
    fails("image.resize2d", [T((1, 3, 4, 4))], "attribute method is 'area'; expected one of nearest_neighbor, "
                                                "linear, cubic", size=[2, 2], method="area")
    fails("image.resize2d", [T((1, 3, 4, 4))], "coordinate_transformation_mode is 'corner'",
          size=[2, 2], coordinate_transformation_mode="corner")
    fails("image.resize2d", [T((1, 3, 4, 4))], "rounding_method is 'nearest'", size=[2, 2],
          rounding_method="nearest")
    fails("image.resize2d", [T((1, 3, 4, 4))], r"roi must have 4 values, got \[0.0, 1.0\]", size=[2, 2],
          roi=[0.0, 1.0])
    fails("image.resize2d", [T((1, 3, 4))], "has 4 axes but data has rank 3", size=[2, 2])


def test_upsampling_shapes_round_half_to_even():
    assert infer("nn.upsampling", [T((1, 3, 3, 5))], scale_h=1.5, scale_w=1.5) == T((1, 3, 4, 8))  # 4.5, 7.5
    assert infer("nn.upsampling", [T((1, 4, 4, 8))], scale_h=2.0, scale_w=0.5, layout="NHWC") == T((1, 8, 2, 8))
    assert infer("nn.upsampling", [T((1, 3, ANY, 4))], scale_h=2.0, scale_w=2.0) == T((1, 3, ANY, 8))
    fails("nn.upsampling", [T((1, 3, 4, 4))], "attribute method is 'area'; expected one of nearest_neighbor, "
                                              "bilinear, bicubic", scale_h=2.0, scale_w=2.0, method="area")
    fails("nn.upsampling", [T((1, 3, 4, 4))], "attribute scale_w must be positive, got 0.0",
          scale_h=2.0, scale_w=0.0)
    fails("nn.upsampling", [T((1, 3, 4, 4))], "attribute scale_h is required", AttrError, scale_w=1.0)


def test_upsampling_numerics():
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    got = run("nn.upsampling", [x], scale_h=2.0, scale_w=3.0)
    np.testing.assert_array_equal(got, np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))
    got = run("nn.upsampling", [SQUARE], scale_h=1.5, scale_w=1.5, method="bilinear", align_corners=True)
    r = np.array([0, 0.5, 1.0])
    np.testing.assert_allclose(got[0, 0], 2 * r[:, None] + r[None, :], atol=1e-6)


# ---- plumbing: annotations, devices, lowered calls ----------------------------------------------------

def test_pass_through_ops_keep_any_type_and_open_attributes():
    pair = TupleType((T((2,)), T((), "int32")))
    assert infer("annotation.stop_fusion", [pair]) == pair
    assert infer("on_device", [T((5, 7))], virtual_device=None, constrain_result=True) == T((5, 7))
    assert infer("on_device", [T((5, 7))], se_scope=None, is_fixed=True) == T((5, 7))  # v0.8 spelling
    assert infer("device_copy", [pair], src_se_scope=None, dst_se_scope=None) == pair
    fn = FuncType((T((1,)),), T((1,)))
    assert infer("on_device", [fn]) == fn
    attrs = get_op("on_device").normalize_attrs({"is_fixed": True})
    assert (attrs.constrain_body, attrs.constrain_result, attrs["is_fixed"]) == (True, False, True)
    with pytest.raises(AttrError, match="attribute constrain_result expects a boolean"):
        infer("on_device", [T((1,))], constrain_result="yes")
    x = np.ones(3)
    assert run("on_device", [x]) is x and run("device_copy", [x]) is x and run("annotation.stop_fusion", [x]) is x
    for name in ("on_device", "device_copy", "annotation.stop_fusion", "call_lowered", "memory.kill"):
        assert get_op(name).pattern is OpPattern.OPAQUE


def test_call_lowered():
    a = T((5, 7))
    fn = FuncType((a, a), TupleType((a, a)))
    assert get_op("call_lowered").inputs is None
    assert infer("call_lowered", [fn, TupleType((a, a))]) == TupleType((a, a))
    assert infer("call_lowered", [FuncType((T((ANY, 7)),), a), TupleType((a,))]) == a
    fails("call_lowered", [fn], r"call_lowered takes 2 arguments \(the lowered function and a tuple of its "
                               r"arguments\), 1 given")
    fails("call_lowered", [a, TupleType((a,))], r"call_lowered: the callee must be a function, found Tensor\[")
    fails("call_lowered", [fn, a], r"call_lowered: the second argument must be a tuple, found Tensor\[")
    fails("call_lowered", [fn, TupleType((a,))], r"the callee takes 2 arguments \(fn .*\) but the argument tuple has 1")
    fails("call_lowered", [fn, TupleType((a, T((5, 7), "int8")))],
          r"argument 1 of the callee expects Tensor\[\(5, 7\), float32\], the argument tuple gives "
          r"Tensor\[\(5, 7\), int8\]")
    assert run("call_lowered", [lambda x, y: x + y, (np.ones(2), np.ones(2))]).tolist() == [2, 2]


# ---- memory and the VM -----------------------------------------------------------------------------

def test_memory_ops():
    i64 = T((), "int64")
    storage = infer("memory.alloc_storage", [i64, T((1,), "int64"), i64], virtual_device=None)
    assert isinstance(storage, TypeCall) and storage.func.name == "Storage" and storage.args == ()
    fails("memory.alloc_storage", [T((), "int32"), T((1,), "int64"), i64],
          r"memory.alloc_storage: size must be an int64 scalar, found int32")
    fails("memory.alloc_storage", [i64, T((1,), "int64"), T((2,), "int64")], "alignment must be an int64 scalar")
    # alloc_tensor: the result type comes from const_shape, else assert_shape, else the rank
    module_storage = TypeCall(GlobalTypeVar("Storage"))
    args = [module_storage, T((), "int64"), T((2,), "int64")]
    assert infer("memory.alloc_tensor", args, const_shape=np.array([3, 4]), dtype="int8") == T((3, 4), "int8")
    assert infer("memory.alloc_tensor", args, assert_shape=[ANY, 4]) == T((ANY, 4))
    from relaylens.compiler.ir.attrs import MetaRef
    assert infer("memory.alloc_tensor", args, const_shape=MetaRef("relay.Constant", 0), assert_shape=[]) == \
        T((ANY, ANY))
    assert infer("memory.alloc_tensor", [module_storage, T((), "int64"), T((), "int64")],
                 const_shape=np.zeros(0, dtype=np.int64)) == T(())
    fails("memory.alloc_tensor", args, r"const_shape has 3 values but shape has 2", const_shape=np.array([1, 2, 3]))
    fails("memory.alloc_tensor", [T((4,)), T((), "int64"), T((2,), "int64")],
          r"memory.alloc_tensor: storage must be Storage, found Tensor\[\(4\), float32\]")
    assert infer("memory.kill", [storage]) == UNIT
    assert run("memory.kill", [np.ones(2)]) == ()
    with pytest.raises(NotImplementedError, match="memory.alloc_storage has no reference semantics"):
        run("memory.alloc_storage", [np.int64(8), np.array([8]), np.int64(64)])
    with pytest.raises(NotImplementedError, match="memory.alloc_tensor has no reference semantics"):
        run("memory.alloc_tensor", [None, np.int64(0), np.array([2])], const_shape=np.array([2]))


def test_vm_ops():
    assert infer("vm.shape_of", [T((ANY, ANY))], dtype="int64") == T((2,), "int64")
    assert infer("vm.shape_of", [T((1, 2, 3))]) == T((3,), "int64")
    assert run("vm.shape_of", [np.zeros((2, 5))], dtype="int32").tolist() == [2, 5]
    a = T((5, 7))
    fn = FuncType((a, a), a)
    assert infer("vm.invoke_tvm_op", [fn, TupleType((a, a)), TupleType((a,))]) == UNIT
    fails("vm.invoke_tvm_op", [fn, TupleType((a, a)), TupleType((a, a))],
          r"vm.invoke_tvm_op: the callee returns Tensor\[\(5, 7\), float32\] but outs is")
    fails("vm.invoke_tvm_op", [fn, TupleType((a,)), TupleType((a,))], "but ins has 1")
    out = np.zeros(2)
    assert run("vm.invoke_tvm_op", [lambda x: x * 2, (np.ones(2),), (out,)]) == ()
    assert out.tolist() == [2, 2]
    shape_fn = FuncType((T((ANY, 3)), T((3,))), T((ANY, 3)))
    ins = TupleType((T((2,), "int64"), T((3,))))
    outs = TupleType((T((2,), "int64"),))
    assert infer("vm.shape_func", [shape_fn, ins, outs], is_input=[0, 1]) == UNIT
    fails("vm.shape_func", [shape_fn, ins, outs], r"ins should be \(Tensor\[\(2\), int64\], Tensor\[\(1\), int64\]\)",
          is_input=[0, 0])
    assert infer("vm.reshape_tensor", [T((2, 6)), T((2,), "int64")], newshape=[3, 4]) == T((3, 4))


def test_dyn_broadcast_to():
    assert infer("dyn.broadcast_to", [T((ANY, ANY)), T((2,), "int64")], shape=None) == T((ANY, ANY))
    assert infer("dyn.broadcast_to", [T((1,), "int8"), T((3,), "int64")]) == T((ANY, ANY, ANY), "int8")
    fails("dyn.broadcast_to", [T((1,)), T((ANY,), "int64")], r"shape must be a 1-D tensor of static length, "
                                                            r"found Tensor\[\(\?\), int64\]")
    got = run("dyn.broadcast_to", [np.arange(3), np.array([2, 3])])
    np.testing.assert_array_equal(got, [[0, 1, 2], [0, 1, 2]])
    assert get_op("dyn.broadcast_to").pattern is OpPattern.BROADCAST


# ---- qnn ----------------------------------------------------------------------------------------

F32, I32 = T(()), T((), "int32")


def test_quantize_and_dequantize_formulas():
    x = np.array([-1.0, -0.01, 0.0, 0.03, 0.05, 1.0, 10.0], dtype=np.float32)
    q = run("qnn.quantize", [x, np.float32(0.02), np.int32(64)], out_dtype="int8")
    # round(x / 0.02) + 64, halves away from zero (0.05 / 0.02 = 2.5 -> 3), then clip to int8
    assert q.dtype == np.int8
    assert q.tolist() == [14, 63, 64, 66, 67, 114, 127]
    d = run("qnn.dequantize", [q, np.float32(0.02), np.int32(64)])
    assert d.dtype == np.float32
    np.testing.assert_allclose(d, (q.astype(np.int32) - 64) * np.float32(0.02), rtol=1e-6)
    # per channel along axis 1
    data = RNG.standard_normal((2, 3)).astype(np.float32)
    scales = np.array([0.1, 0.2, 0.05], dtype=np.float32)
    zps = np.array([0, 10, -5], dtype=np.int32)
    q = run("qnn.quantize", [data, scales, zps], axis=1, out_dtype="int16")
    expected = np.clip(np.sign(data / scales) * np.floor(np.abs(data / scales) + 0.5) + zps, -32768, 32767)
    np.testing.assert_array_equal(q, expected.astype(np.int16))
    d = run("qnn.dequantize", [q, scales, zps], axis=1, out_dtype="float16")
    assert d.dtype == np.float16
    np.testing.assert_allclose(d, ((q.astype(np.int32) - zps) * scales).astype(np.float16))


def test_quantize_dequantize_relations():
    x = T((1, 16, 16, 3))
    assert infer("qnn.quantize", [x, F32, I32], out_dtype="int8") == T((1, 16, 16, 3), "int8")
    assert infer("qnn.dequantize", [T((1, 16, 16, 3), "int8"), F32, I32]) == x  # the corpus omits out_dtype
    assert infer("qnn.quantize", [x, T((3,)), T((3,), "int32")], out_dtype="uint8") == T((1, 16, 16, 3), "uint8")
    assert infer("qnn.dequantize", [T((2, 4), "uint8"), T((4,)), I32]) == T((2, 4))
    fails("qnn.quantize", [T((2,), "int8"), F32, I32],
          r"qnn.quantize: data must be float32, found Tensor\[\(2\), int8\]")
    fails("qnn.quantize", [x, T((4,)), I32],
          r"output_scale must be a scalar or a vector of 3 values \(one per channel\), found Tensor\[\(4\), float32\]")
    fails("qnn.quantize", [x, F32, F32], r"output_zero_point must be int32, found float32")
    fails("qnn.quantize", [x, F32, I32], "out_dtype must be one of int8, uint8, int16, uint16, int32, got 'float32'",
          out_dtype="float32")
    fails("qnn.quantize", [x, T((3,)), I32], "axis 4 is out of range for data of rank 4", axis=4)
    fails("qnn.dequantize", [T((2,), "float32"), F32, I32], "data must be one of int8, uint8, int16, uint16, int32")
    fails("qnn.dequantize", [T((2,), "int8"), F32, I32], "out_dtype must be float16 or float32, got 'int32'",
          out_dtype="int32")
    assert get_op("qnn.quantize").pattern is None and get_op("qnn.requantize").pattern is None


def test_fixed_point_multiplier():
    assert fixed_point_multiplier(0.5) == (1 << 30, 0)
    assert fixed_point_multiplier(1.0) == (1 << 30, 1)
    assert fixed_point_multiplier(0.0) == (0, 0)
    sig, shift = fixed_point_multiplier(0.123456)
    assert abs(sig * 2.0 ** (shift - 31) - 0.123456) < 1e-9
    assert fixed_point_multiplier(1 - 2 ** -40) == (1 << 30, 1)  # rounds up to 2**31: halved


def _requantize_formula(q, in_scale, in_zp, out_scale, out_zp, lo, hi, upward=True):
    real = (np.float32(in_scale).astype(np.float64) / np.float64(np.float32(out_scale))) * (q.astype(np.int64) - in_zp)
    rounded = np.floor(real + 0.5) if upward else np.sign(real) * np.floor(np.abs(real) + 0.5)
    return np.clip(rounded + out_zp, lo, hi)


@pytest.mark.parametrize("compute_dtype", ["None", "int64", "float32", "float64"])
def test_requantize_matches_formula(compute_dtype):
    q = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    got = run("qnn.requantize", [q, np.float32(0.37), np.int32(3), np.float32(0.25), np.int32(-10)],
              out_dtype="int8", compute_dtype=compute_dtype)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, _requantize_formula(q, 0.37, 3, 0.25, -10, -128, 127))
    got = run("qnn.requantize", [q.astype(np.int32) * 1000, np.float32(0.002), np.int32(0), np.float32(0.5),
                                 np.int32(7)], out_dtype="int32", compute_dtype=compute_dtype)
    np.testing.assert_array_equal(got, _requantize_formula(q.astype(np.int32) * 1000, 0.002, 0, 0.5, 7,
                                                           -2 ** 31, 2 ** 31 - 1))


@pytest.mark.parametrize("compute_dtype", ["int64", "float32"])
def test_requantize_rounding_at_midpoints(compute_dtype):
    q = np.array([-3, -1, 1, 3], dtype=np.int32)  # * 0.5 = -1.5, -0.5, 0.5, 1.5
    args = [q, np.float32(0.5), np.int32(0), np.float32(1.0), np.int32(0)]
    up = run("qnn.requantize", args, rounding="UPWARD", compute_dtype=compute_dtype, out_dtype="int32")
    near = run("qnn.requantize", args, rounding="TONEAREST", compute_dtype=compute_dtype, out_dtype="int32")
    assert up.tolist() == [-1, 0, 1, 2]
    assert near.tolist() == [-2, -1, 1, 2]


def test_requantize_per_channel_and_same_scale():
    q = np.array([[10, -20, 30], [-40, 50, -60]], dtype=np.int32)
    scales = np.array([0.5, 0.25, 2.0], dtype=np.float32)
    zps = np.array([1, 0, -2], dtype=np.int32)
    got = run("qnn.requantize", [q, scales, zps, np.float32(1.0), np.int32(0)], axis=1, out_dtype="int16")
    expected = np.floor((q - zps) * scales.astype(np.float64) + 0.5)
    np.testing.assert_array_equal(got, expected)
    same = run("qnn.requantize", [q, np.float32(0.3), np.int32(5), np.float32(0.3), np.int32(2)], out_dtype="int8")
    np.testing.assert_array_equal(same, np.clip(q - 5 + 2, -128, 127))


def test_requantize_relation():
    data = T((1, 298, 298, 32), "int32")
    assert infer("qnn.requantize", [data, T((32,)), I32, F32, I32], out_dtype="int8") == \
        T((1, 298, 298, 32), "int8")
    fails("qnn.requantize", [data, F32, I32, T((32,)), I32], r"output_scale must be a scalar, found Tensor\[\(32\)")
    fails("qnn.requantize", [data, T((16,)), I32, F32, I32], r"input_scale must be a scalar or a vector of 32 values")
    fails("qnn.requantize", [data, F32, I32, F32, I32], "rounding is 'DOWN'; expected UPWARD or TONEAREST",
          rounding="DOWN")
    fails("qnn.requantize", [data, F32, I32, F32, I32], "compute_dtype is 'int32'", compute_dtype="int32")
    fails("qnn.requantize", [T((2,), "float32"), F32, I32, F32, I32], "data must be one of int8, uint8, int16")
    fails("qnn.requantize", [data, F32, I32, F32, I32], "out_dtype must be one of int8, uint8, int16, int32, "
                                                        "got 'uint16'", out_dtype="uint16")


def ref_qconv2d_nchw(x, w, zx, zw, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=zx)
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), dtype=np.int64)
    for b, k, y, xx in itertools.product(range(n), range(o), range(oh), range(ow)):
        for ci, ky, kx in itertools.product(range(c), range(kh), range(kw)):
            out[b, k, y, xx] += (xp[b, ci, y * stride + ky, xx * stride + kx] - zx) * (int(w[k, ci, ky, kx]) - zw)
    return out


def test_qnn_conv2d():
    x = RNG.integers(-128, 128, (1, 3, 6, 5)).astype(np.int8)
    w = RNG.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    qargs = [np.int32(-26), np.int32(3), np.float32(0.5), np.float32(0.1)]
    got = run("qnn.conv2d", [x, w, *qargs], strides=[2, 2], padding=[1, 1], kernel_size=[3, 3], channels=4)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref_qconv2d_nchw(x, w, -26, 3, 2, 1))
    nhwc = run("qnn.conv2d", [x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), *qargs], strides=[2, 2],
               padding=[1, 1], data_layout="NHWC", kernel_layout="HWIO", out_dtype="int64")
    assert nhwc.dtype == np.int64
    np.testing.assert_array_equal(nhwc, got.transpose(0, 2, 3, 1))
    # depthwise NHWC / HWOI with a zero point per output channel
    xd = RNG.integers(0, 256, (1, 5, 5, 3)).astype(np.uint8)
    wd = RNG.integers(0, 256, (3, 3, 3, 1)).astype(np.uint8)
    zws = np.array([1, 2, 3], dtype=np.int32)
    got = run("qnn.conv2d", [xd, wd, np.int32(128), zws, np.float32(1), np.full(3, 0.5, np.float32)], groups=3,
              data_layout="NHWC", kernel_layout="HWOI")
    for ch in range(3):
        channel_data = xd[..., ch:ch + 1].transpose(0, 3, 1, 2)
        channel_weight = wd[:, :, ch:ch + 1, :].transpose(2, 3, 0, 1)
        expected = ref_qconv2d_nchw(channel_data, channel_weight, 128, int(zws[ch]), 1, 0)
        np.testing.assert_array_equal(got[0, :, :, ch], expected[0, 0])


def test_qnn_conv2d_relation():
    qs = [I32, I32, F32, F32]
    assert infer("qnn.conv2d", [T((1, 300, 300, 3), "int8"), T((3, 3, 3, 32), "int8"), *qs], data_layout="NHWC",
                 kernel_layout="HWIO") == T((1, 298, 298, 32), "int32")
    assert infer("qnn.conv2d", [T((ANY, 3, 8, 8), "uint8"), T((16, 3, 3, 3), "uint8"), I32, T((16,), "int32"), F32,
                                T((16,))], padding=[1, 1, 1, 1], out_dtype="int16") == T((ANY, 16, 8, 8), "int16")
    fails("qnn.conv2d", [T((1, 4, 8, 8), "int8"), T((16, 3, 3, 3), "int8"), *qs],
          r"qnn.conv2d: data has 4 channels but weight expects 3 x groups 1 = 3 "
          r"\(weight Tensor\[\(16, 3, 3, 3\), int8\]\)")
    fails("qnn.conv2d", [T((1, 3, 8, 8), "float32"), T((16, 3, 3, 3), "int8"), *qs],
          r"data must be one of int8, uint8, int16, found Tensor\[\(1, 3, 8, 8\), float32\]")
    fails("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((16, 3, 3, 3), "int8"), I32, I32, F32, T((8,))],
          r"kernel_scale must be a scalar or a vector of 16 values")
    fails("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((16, 3, 3, 3), "int8"), *qs], r"unsupported data_layout NCHW8c",
          data_layout="NCHW8c")
    fails("qnn.conv2d", [T((1, 3, 8, 8), "int8"), T((16, 3, 3, 3), "int8"), *qs],
          "out_dtype must be int16, int32 or int64, got 'int8'", out_dtype="int8")
    fails("qnn.conv2d", [T((1, 3, 2, 2), "int8"), T((16, 3, 3, 3), "int8"), *qs], "the kernel .* is larger than the "
                                                                                 "padded input")
    assert get_op("qnn.conv2d").pattern is OpPattern.OUT_EWISE_FUSABLE


def test_qnn_dense():
    x = RNG.integers(0, 256, (2, 3, 5)).astype(np.uint8)
    w = RNG.integers(-128, 128, (4, 5)).astype(np.int8)
    zw = np.array([0, 1, -1, 2], dtype=np.int32)
    got = run("qnn.dense", [x, w, np.int32(128), zw, np.float32(0.1), np.full(4, 0.2, np.float32)], units=4)
    expected = np.einsum("abk,uk->abu", x.astype(np.int64) - 128, w.astype(np.int64) - zw[:, None])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
    assert infer("qnn.dense", [T((ANY, 5), "int8"), T((4, 5), "int8"), I32, I32, F32, F32], units=None) == \
        T((ANY, 4), "int32")
    fails("qnn.dense", [T((2, 6), "int8"), T((4, 5), "int8"), I32, I32, F32, F32],
          r"qnn.dense: data has 6 features but weight expects 5")
    fails("qnn.dense", [T((2, 5), "int8"), T((4, 5), "int8"), I32, I32, F32, F32], "units=3 but weight has 4 rows",
          units=3)
    fails("qnn.dense", [T((2, 5), "int8"), T((4, 5), "int16"), I32, I32, F32, F32],
          "weight must be one of int8, uint8, found")
    fails("qnn.dense", [T((2, 5), "int8"), T((4, 5), "int8"), F32, I32, F32, F32], "input_zero_point must be int32")


# ---- the corpus: every call to these ops whose arguments are known typechecks ------------------------

from conftest import CORPUS


@pytest.mark.parametrize("name,op,expected", [
    ("010", "on_device", "Tensor[(5, 7), float32]"),
    ("011", "device_copy", "Tensor[(5, 7), float32]"),
    ("012", "vm.shape_of", "Tensor[(2), int64]"),
    ("019", "on_device", "List[Tensor[(5, 7), float32]]"),
    ("035", "memory.kill", "()"),
    ("066", "nn.pad", "Tensor[(1, 384, 128), float16]"),
    ("093", "call_lowered", "Tensor[(5, 7), float32]"),
    ("094", "call_lowered", "(Tensor[(5, 7), float32], Tensor[(5, 7), float32])"),
    ("131", "nn.max_pool2d", "Tensor[(1, 56, 56, 64), float32]"),
    ("132", "image.resize2d", "Tensor[(1, 600, 600, 3), float32]"),
    ("143", "qnn.quantize", "Tensor[(1, 16, 16, 3), int8]"),
    ("143", "qnn.dequantize", "Tensor[(1, 16, 16, 3), float32]"),
    ("146", "device_copy", "Tensor[(5, 7), float32]"),
])
def test_corpus_calls_typecheck(name, op, expected):
    path = CORPUS / f"{name}.relay"
    if not path.exists():
        pytest.skip("corpus not available")
    typing = pytest.importorskip("relaylens.compiler.typing")
    from relaylens.compiler.ir import expr as E
    from relaylens.compiler.parser import parse
    from relaylens.compiler.printer.types import print_type

    module = parse(path.read_text(), str(path)).module
    diagnostics = typing.infer_types(module)
    assert not [d for d in diagnostics if op in d.message and d.severity.name == "ERROR"]
    found = []
    for func in module.functions.values():
        stack = [func]
        while stack:
            node = stack.pop()
            if isinstance(node, E.Call) and isinstance(node.op, E.Op) and node.op.name == op:
                found.append(print_type(node.ty) if node.ty is not None else None)
            for child in (getattr(node, s, None) for s in getattr(node, "__slots__", ())):
                if isinstance(child, E.Expr):
                    stack.append(child)
                elif isinstance(child, tuple):
                    stack.extend(c for c in child if isinstance(c, E.Expr))
    assert expected in found
