"""Issue 14's ops: vision.roi_align, vision.roi_pool (compiler/ops/vision.py) and
nn.deformable_conv2d (compiler/ops/nn_deformable.py): schemas with TVM v0.16's
defaults, type relations (shapes, errors at the argument at fault, errors at file:line:col
in a document), the numpy references against hand-worked values and direct loops written
here from TVM's topi, printing and parsing, and compiled code equal to the interpreter on
a whole module (`relaylens run --check`).  The compute rules are checked case by case in
tests/test_lower_compute_nn.py and test_lower_compiled.py (tests/lower_cases_vision.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.ir.types import ANY, TensorType
from relaylens.compiler.ops import AttrError, OpPattern, OpTypeError, get_op
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module

F32 = "float32"
RNG = np.random.default_rng(14)


def T(shape, dtype=F32):
    return TensorType(tuple(shape), dtype)


def infer(name, types, **attrs):
    return get_op(name).infer(types, attrs)


def run(name, args, **attrs):
    return get_op(name).evaluate(args, attrs)


# ---- schemas ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, inputs, defaults", [
    ("vision.roi_align", ("data", "rois"),
     {"sample_ratio": -1, "layout": "NCHW", "mode": "avg"}),
    ("vision.roi_pool", ("data", "rois"), {"layout": "NCHW"}),
    ("nn.deformable_conv2d", ("data", "offset", "weight"),
     {"strides": (1, 1), "padding": (0, 0), "dilation": (1, 1), "deformable_groups": 1, "groups": 1,
      "channels": None, "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "OIHW",
      "out_layout": "", "out_dtype": ""}),
])
def test_schema_defaults_pattern_doc(name, inputs, defaults):
    op = get_op(name)
    assert op.inputs == inputs
    assert op.pattern is OpPattern.OUT_EWISE_FUSABLE  # TVM: kOutEWiseFusable for all three
    assert {a.name: a.default for a in op.attrs if not a.required} == defaults
    assert op.doc and all(a.doc for a in op.attrs)


def test_roi_ops_require_pooled_size_and_scale():
    for name in ("vision.roi_align", "vision.roi_pool"):
        assert {a.name for a in get_op(name).attrs if a.required} == {"pooled_size", "spatial_scale"}
        with pytest.raises(AttrError, match="pooled_size"):
            infer(name, [T((1, 3, 8, 8)), T((2, 5))], spatial_scale=1.0)


# ---- type relations -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["vision.roi_align", "vision.roi_pool"])
def test_roi_shapes(name):
    assert infer(name, [T((1, 64, 56, 56)), T((32, 5))], pooled_size=(14, 14), spatial_scale=0.0625) \
        == T((32, 64, 14, 14))
    assert infer(name, [T((2, 56, 56, 64), "float16"), T((ANY, 5))], pooled_size=(7, 3), spatial_scale=0.5,
                 layout="NHWC") == T((ANY, 7, 3, 64), "float16")


@pytest.mark.parametrize("name", ["vision.roi_align", "vision.roi_pool"])
@pytest.mark.parametrize("types, attrs, needle, arg", [
    ([T((1, 64, 56)), T((3, 5))], {}, "data must be 4-D", 0),
    ([T((1, 64, 8, 8)), T((3, 5, 1))], {}, "rois must be 2-D", 1),
    ([T((1, 64, 8, 8)), T((3, 4))], {}, r"5 values .*found Tensor\[\(3, 4\)", 1),
    ([T((1, 64, 8, 8)), T((3, 5), "int32")], {}, "rois must be floating point", 1),
])
def test_roi_type_errors(name, types, attrs, needle, arg):
    with pytest.raises(OpTypeError, match=needle) as err:
        infer(name, types, pooled_size=(2, 2), spatial_scale=1.0, **attrs)
    assert err.value.arg == arg


def test_roi_attribute_errors():
    with pytest.raises(AttrError, match="layout must be") as err:
        infer("vision.roi_pool", [T((1, 3, 8, 8)), T((2, 5))], pooled_size=(2, 2), spatial_scale=1.0,
              layout="NCHW4c")
    assert err.value.name == "layout"
    with pytest.raises(AttrError, match="mode must be"):
        infer("vision.roi_align", [T((1, 3, 8, 8)), T((2, 5))], pooled_size=(2, 2), spatial_scale=1.0,
              mode="sum")
    with pytest.raises(AttrError, match="two positive integers"):
        infer("vision.roi_align", [T((1, 3, 8, 8)), T((2, 5))], pooled_size=(2, 0), spatial_scale=1.0)


DC = "nn.deformable_conv2d"


@pytest.mark.parametrize("types, attrs, expected", [
    # TVM's test_deformable_conv_bias_pool_convert_layout shapes
    ([T((1, 3, 224, 224)), T((1, 18, 222, 222)), T((32, 3, 3, 3))], {"channels": 32, "kernel_size": (3, 3)},
     T((1, 32, 222, 222))),
    ([T((1, 224, 224, 3)), T((1, 222, 222, 18)), T((3, 3, 3, 32))],
     {"data_layout": "NHWC", "kernel_layout": "HWIO"}, T((1, 222, 222, 32))),
    # strides, asymmetric padding, dilation, 2 deformable groups, 2 groups, out_dtype
    ([T((2, 4, 9, 8)), T((2, 36, 3, 3)), T((6, 2, 3, 3))],
     {"strides": (2, 2), "padding": (1, 0, 0, 1), "dilation": (2, 2), "deformable_groups": 2, "groups": 2,
      "out_dtype": "float64"}, T((2, 6, 3, 3), "float64")),
    # out_layout
    ([T((1, 4, 5, 5)), T((1, 8, 4, 4)), T((3, 4, 2, 2))], {"out_layout": "NHWC"}, T((1, 4, 4, 3))),
])
def test_deformable_shapes(types, attrs, expected):
    assert infer(DC, types, **attrs) == expected


@pytest.mark.parametrize("types, attrs, needle, arg", [
    ([T((1, 4, 5, 5)), T((1, 16, 3, 3)), T((3, 4, 3, 3))], {},
     r"offset must be Tensor\[\(1, 18, 3, 3\), float32\].*found Tensor\[\(1, 16, 3, 3\)", 1),
    ([T((1, 4, 5, 5)), T((1, 18, 4, 3)), T((3, 4, 3, 3))], {}, r"output's 3x3", 1),
    ([T((1, 4, 5, 5)), T((1, 18, 3, 3), "float16"), T((3, 4, 3, 3))], {}, "offset must be float32", 1),
    ([T((1, 4, 5, 5)), T((1, 18, 3, 3)), T((3, 2, 3, 3))], {}, "weight expects 2", 2),
    ([T((1, 4, 5, 5)), T((1, 18, 3, 3)), T((3, 4, 3, 3))], {"channels": 8}, "channels=8", 2),
    ([T((1, 6, 5, 5)), T((1, 72, 3, 3)), T((3, 6, 3, 3))], {"deformable_groups": 4},
     "deformable_groups=4 does not divide", 0),
    ([T((1, 4, 5, 5), "int8"), T((1, 18, 3, 3), "int8"), T((3, 4, 3, 3), "int8")], {}, "floating point", 0),
    ([T((1, 4, 5)), T((1, 18, 3, 3)), T((3, 4, 3, 3))], {}, "data must have 4 dimensions", 0),
])
def test_deformable_type_errors(types, attrs, needle, arg):
    with pytest.raises(OpTypeError, match=needle) as err:
        infer(DC, types, **attrs)
    assert err.value.arg == arg


def test_errors_are_reported_at_the_call_in_a_document():
    text = ('def @main(%x: Tensor[(1, 4, 5, 5), float32], %off: Tensor[(1, 16, 3, 3), float32],\n'
            '          %w: Tensor[(3, 4, 3, 3), float32], %rois: Tensor[(2, 4), float32]) {\n'
            '  %0 = nn.deformable_conv2d(%x, %off, %w);\n'
            '  vision.roi_align(%0, %rois, pooled_size=[2, 2], spatial_scale=1f)\n'
            '}\n')
    found = {(d.location()[1], d.location()[2]): d.message for d in check_text(text, "m.relay").diagnostics
             if d.is_error}
    assert (3, 8) in found and "offset must be Tensor[(1, 18, 3, 3), float32]" in found[(3, 8)]
    assert len(found) == 1  # roi_align waits for its data's type, then sees the error upstream


def test_roi_error_in_a_document_is_at_the_call():
    text = ('def @main(%x: Tensor[(1, 4, 5, 5), float32], %rois: Tensor[(2, 4), float32]) {\n'
            '  vision.roi_pool(%x, %rois, pooled_size=[2, 2], spatial_scale=1f)\n'
            '}\n')
    (d,) = [d for d in check_text(text, "m.relay").diagnostics if d.is_error]
    assert d.location()[1:] == (2, 3) and "5 values" in d.message


# ---- numpy references ---------------------------------------------------------------------

def test_roi_align_hand_worked():
    # a 4x4 ramp x[h, w] = 4h + w is linear: bilinear reads give 4y + x exactly
    x = (4 * np.arange(4)[:, None] + np.arange(4)[None, :]).astype(F32).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0.0, 0.0, 2.0, 2.0]], F32)
    # one bin of 2x2 points at (0.5, 0.5), (0.5, 1.5), (1.5, 0.5), (1.5, 1.5): mean 4*1 + 1 = 5
    assert run("vision.roi_align", [x, rois], pooled_size=(1, 1), spatial_scale=1.0,
               sample_ratio=2)[0, 0, 0, 0] == pytest.approx(5.0)
    # max of the same points: 4*1.5 + 1.5
    assert run("vision.roi_align", [x, rois], pooled_size=(1, 1), spatial_scale=1.0, sample_ratio=2,
               mode="max")[0, 0, 0, 0] == pytest.approx(7.5)
    # 2x2 bins of one point each (adaptive: ceil(1) = 1) at the bins' centres
    got = run("vision.roi_align", [x, rois], pooled_size=(2, 2), spatial_scale=1.0)
    np.testing.assert_allclose(got[0, 0], [[2.5, 3.5], [6.5, 7.5]])
    # spatial_scale halves the roi: (0,0)-(4,4) in image coordinates is the same
    got2 = run("vision.roi_align", [x, np.array([[0, 0.0, 0.0, 4.0, 4.0]], F32)], pooled_size=(2, 2),
               spatial_scale=0.5)
    np.testing.assert_allclose(got2, got)


def test_roi_align_outside_points_read_zero_and_tiny_rois_grow():
    x = np.ones((1, 1, 4, 4), F32)
    # a roi from -3 to -1.5 (scaled 1): forced to 1 pixel tall/wide from -3; its one point at
    # -2.5 is beyond -1 and reads 0
    assert run("vision.roi_align", [x, np.array([[0, -3.0, -3.0, -2.9, -2.9]], F32)], pooled_size=(1, 1),
               spatial_scale=1.0)[0, 0, 0, 0] == 0.0
    # a point at -0.5 is clamped to 0 and reads the edge
    assert run("vision.roi_align", [x, np.array([[0, -1.0, -1.0, 0.0, 0.0]], F32)], pooled_size=(1, 1),
               spatial_scale=1.0)[0, 0, 0, 0] == 1.0
    # max mode counts the 0 of a point outside
    x2 = -np.ones((1, 1, 4, 4), F32)
    rois = np.array([[0, -4.0, 0.0, 2.0, 2.0]], F32)
    assert run("vision.roi_align", [x2, rois], pooled_size=(1, 1), spatial_scale=1.0, sample_ratio=3,
               mode="max")[0, 0, 0, 0] == 0.0


def _bilinear(a, n, c, y, x, H, W):
    if y < -1 or y > H or x < -1 or x > W:
        return 0.0
    y, x = min(max(y, 0), H - 1), min(max(x, 0), W - 1)
    yl, xl = math.floor(y), math.floor(x)
    total = 0.0
    for wx, xp in ((1 - (x - xl), xl), (x - xl, xl + 1)):
        for wy, yp in ((1 - (y - yl), yl), (y - yl, yl + 1)):
            if 0 <= yp < H and 0 <= xp < W:
                total += wx * wy * a[n, c, yp, xp]
    return total


def loop_roi_align(a, rois, ph, pw, scale, ratio, mode):
    N, C, H, W = a.shape
    out = np.zeros((len(rois), C, ph, pw))
    for i, r in enumerate(rois):
        b = int(r[0])
        sw, sh, ew, eh = (float(v) * scale for v in r[1:])
        rh, rw = max(eh - sh, 1.0), max(ew - sw, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        for c in range(C):
            for p in range(ph):
                for q in range(pw):
                    vals = [_bilinear(a, b, c, sh + p * bh + (iy + 0.5) * bh / gh,
                                      sw + q * bw + (ix + 0.5) * bw / gw, H, W)
                            for iy in range(gh) for ix in range(gw)]
                    out[i, c, p, q] = sum(vals) / len(vals) if mode == "avg" else max(vals)
    return out


ROIS = np.array([[0, 1.0, 0.5, 9.0, 7.5], [1, -3.0, -2.0, 4.0, 3.0], [1, 2.2, 2.6, 2.9, 3.1],
                 [0, 0.0, 0.0, 17.0, 13.0], [1, 5.5, 1.0, 6.0, 20.0]], F32)


@pytest.mark.parametrize("ratio", [2, 0, -1])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_roi_align_matches_loops(ratio, mode, layout):
    a = RNG.standard_normal((2, 3, 6, 7)).astype(F32)
    want = loop_roi_align(a, ROIS, 2, 3, 0.5, ratio, mode)
    data = a if layout == "NCHW" else a.transpose(0, 2, 3, 1)
    got = run("vision.roi_align", [data, ROIS], pooled_size=(2, 3), spatial_scale=0.5, sample_ratio=ratio,
              mode=mode, layout=layout)
    if layout == "NHWC":
        got = got.transpose(0, 3, 1, 2)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def loop_roi_pool(a, rois, ph, pw, scale):
    N, C, H, W = a.shape
    out = np.zeros((len(rois), C, ph, pw), a.dtype)

    def rnd(v):  # C's round: halves away from zero
        return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)

    for i, r in enumerate(rois):
        b = int(r[0])
        sw, sh, ew, eh = (rnd(float(np.float32(v) * np.float32(scale))) for v in r[1:])
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        for p in range(ph):
            for q in range(pw):
                hs = min(max(math.floor(p * rh / ph + 1e-5) + sh, 0), H)
                he = min(max(math.ceil((p + 1) * rh / ph - 1e-5) + sh, 0), H)
                ws = min(max(math.floor(q * rw / pw + 1e-5) + sw, 0), W)
                we = min(max(math.ceil((q + 1) * rw / pw - 1e-5) + sw, 0), W)
                if hs < he and ws < we:
                    out[i, :, p, q] = a[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [F32, "int32"])
def test_roi_pool_matches_loops(layout, dtype):
    a = (RNG.standard_normal((2, 3, 6, 7)) * 10).astype(dtype)
    rois = np.concatenate([ROIS, np.array([[1, 30.0, 30.0, 40.0, 36.0], [0, 3.0, 3.0, 5.0, 5.0]], F32)])
    want = loop_roi_pool(a, rois, 3, 2, 0.5)
    data = a if layout == "NCHW" else a.transpose(0, 2, 3, 1)
    got = run("vision.roi_pool", [data, rois], pooled_size=(3, 2), spatial_scale=0.5, layout=layout)
    if layout == "NHWC":
        got = got.transpose(0, 3, 1, 2)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    assert (got[5] == 0).all()  # the roi outside the data: every bin empty


def test_roi_pool_hand_worked():
    x = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    # corners 0.5 * (1, 1, 5, 5) = (0.5, 2.5): rounded away from zero to 1 and 3, a 3x3 roi
    # from (1, 1); 2x2 bins: rows [1, 3) and [2, 4), columns likewise
    got = run("vision.roi_pool", [x, np.array([[0, 1.0, 1.0, 5.0, 5.0]], F32)], pooled_size=(2, 2),
              spatial_scale=0.5)
    np.testing.assert_array_equal(got[0, 0], [[10, 11], [14, 15]])


def loop_deformable(x, off, w, stride, pad, dil, dg, groups):
    N, C, H, W = x.shape
    O, Cg, KH, KW = w.shape
    OH, OW = off.shape[2:]

    def read(n, c, y, xx):  # TVM's deformable read: 0 when y or x is outside [0, size)
        if y < 0 or xx < 0 or y >= H or xx >= W:
            return 0.0
        yl, xl = math.floor(y), math.floor(xx)
        total = 0.0
        for wx, xp in ((1 - (xx - xl), xl), (xx - xl, xl + 1)):
            for wy, yp in ((1 - (y - yl), yl), (y - yl, yl + 1)):
                if yp < H and xp < W:
                    total += wx * wy * x[n, c, yp, xp]
        return total

    out = np.zeros((N, O, OH, OW))
    for n in range(N):
        for o in range(O):
            g = o // (O // groups)
            for oy in range(OH):
                for ox in range(OW):
                    s = 0.0
                    for ci in range(Cg):
                        c = g * Cg + ci
                        base = (c // (C // dg)) * 2 * KH * KW
                        for kh in range(KH):
                            for kw in range(KW):
                                ch = base + 2 * (kh * KW + kw)
                                y = oy * stride - pad + kh * dil + off[n, ch, oy, ox]
                                xx = ox * stride - pad + kw * dil + off[n, ch + 1, oy, ox]
                                s += read(n, c, y, xx) * w[o, ci, kh, kw]
                    out[n, o, oy, ox] = s
    return out


@pytest.mark.parametrize("C, O, dg, groups, stride, pad, dil", [
    (4, 6, 1, 1, 1, 0, 1), (4, 6, 2, 2, 2, 1, 1), (4, 4, 4, 1, 1, 1, 2), (6, 3, 3, 3, 1, 2, 1)])
def test_deformable_matches_loops(C, O, dg, groups, stride, pad, dil):
    x = RNG.standard_normal((2, C, 7, 6)).astype(F32)
    w = RNG.standard_normal((O, C // groups, 3, 3)).astype(F32)
    OH = (7 + 2 * pad - dil * 2 - 1) // stride + 1
    OW = (6 + 2 * pad - dil * 2 - 1) // stride + 1
    off = (RNG.standard_normal((2, 2 * dg * 9, OH, OW)) * 1.5).astype(F32)
    attrs = dict(strides=(stride, stride), padding=(pad, pad), dilation=(dil, dil), deformable_groups=dg,
                 groups=groups)
    got = run(DC, [x, off, w], **attrs)
    np.testing.assert_allclose(got, loop_deformable(x, off, w, stride, pad, dil, dg, groups), rtol=1e-4,
                               atol=1e-5)
    nhwc = run(DC, [x.transpose(0, 2, 3, 1), off.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)],
               data_layout="NHWC", kernel_layout="HWIO", **attrs)
    np.testing.assert_allclose(nhwc.transpose(0, 3, 1, 2), got, rtol=1e-6, atol=1e-6)


def test_deformable_hand_worked():
    x = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 1, 1), F32)
    # a 1x1 kernel: each output is x read at its own place moved by (dy, dx)
    off = np.zeros((1, 2, 4, 4), F32)
    np.testing.assert_array_equal(run(DC, [x, off, w])[0, 0], x[0, 0])
    off[0, 0] = 0.5  # half a row down: the mean of two rows, the last row's lower neighbour is 0
    got = run(DC, [x, off, w])[0, 0]
    np.testing.assert_allclose(got[:3], (x[0, 0, :3] + x[0, 0, 1:]) / 2)
    np.testing.assert_allclose(got[3], x[0, 0, 3] / 2)
    off[0, 0] = -0.5  # above the first row reads 0 (TVM: y < 0 is outside)
    assert (run(DC, [x, off, w])[0, 0, 0] == 0).all()


def test_zero_offsets_are_a_convolution():
    x = RNG.standard_normal((1, 4, 8, 8)).astype(F32)
    w = RNG.standard_normal((6, 2, 3, 3)).astype(F32)
    off = np.zeros((1, 18 * 2, 4, 4), F32)
    attrs = dict(strides=(2, 2), padding=(1, 1), groups=2)
    got = run(DC, [x, off, w], deformable_groups=2, **attrs)
    want = run("nn.conv2d", [x, w], **attrs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---- text, and compiled = interpreter on a module ---------------------------------------------

MODULE = '''def @main(%data: Tensor[(1, 4, 9, 8), float32], %offset: Tensor[(1, 18, 7, 6), float32],
          %weight: Tensor[(8, 4, 3, 3), float32], %rois: Tensor[(3, 5), float32]) {
  %0 = nn.deformable_conv2d(%data, %offset, %weight, channels=8, kernel_size=[3, 3]);
  %1 = nn.relu(%0);
  %2 = vision.roi_align(%1, %rois, pooled_size=[2, 2], spatial_scale=0.5f, sample_ratio=2, mode="max");
  %3 = vision.roi_pool(%1, %rois, pooled_size=[3, 2], spatial_scale=0.5f);
  (%2, %3)
}
'''


def test_print_parse_round_trip():
    mod = parse(MODULE, "m.relay").module
    text = print_module(mod)
    assert 'vision.roi_align(%1, %rois, pooled_size=[2, 2], spatial_scale=0.5f, sample_ratio=2, mode="max")' in text
    assert print_module(parse(text, "again.relay").module) == text
    assert not [d for d in check_text(text, "again.relay").diagnostics if d.is_error]


def test_fuse_ops_keeps_the_relu_with_the_deformable_conv():
    from relaylens.compiler.build import build_module

    built = build_module(parse(MODULE, "m.relay").module, name="m")
    assert built.ok
    functions = print_module(built.module).split("fn (")[1:]
    bodies = [f.split("}")[0] for f in functions]
    # OutEWiseFusable: the relu joins the convolution's function; each roi op, whose input
    # is that function's result, starts its own
    assert len(bodies) == 3
    assert "nn.deformable_conv2d" in bodies[0] and "nn.relu" in bodies[0]
    assert "vision.roi_align" in bodies[1] and "vision.roi_pool" in bodies[2]


def test_run_check_compiled_equals_interpreter(tmp_path, capsys):
    from relaylens.compiler.cli import main

    path = tmp_path / "m.relay"
    path.write_text(MODULE)
    inputs = {"rois": np.array([[0, 1.0, 0.5, 12.0, 14.0], [0, -3.0, -2.0, 6.0, 5.0], [0, 4.0, 4.0, 4.5, 4.2]], F32),
              "data": RNG.standard_normal((1, 4, 9, 8)).astype(F32),
              "offset": RNG.standard_normal((1, 18, 7, 6)).astype(F32),
              "weight": RNG.standard_normal((8, 4, 3, 3)).astype(F32)}
    args = ["run", str(path), "--check"]
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / name}.npy"]
    assert main(args) == 0
    report = capsys.readouterr().err
    assert report.count("check output.") == 2 and "differ" not in report


def test_hover_describes_the_ops():
    from relaylens.compiler.ir.expr import Call
    from relaylens.compiler.ir.functor import post_order
    from relaylens.server.features.hover import describe_op

    found = {n.op.name: describe_op(n) for n in post_order(parse(MODULE, "m.relay").module["main"])
             if isinstance(n, Call) and hasattr(n.op, "name")}
    align = found["vision.roi_align"]
    assert align.startswith("```relay\nvision.roi_align(data, rois, pooled_size=required, spatial_scale=required, "
                            "sample_ratio=-1, "
                            'layout="NCHW", mode="avg")\n```')
    assert "Fusion pattern: OutEWiseFusable" in align and '| `mode` | `"max"` | "avg" |' in align
    assert "at their defaults: `layout`" in align
    assert "ROI Pool" in found["vision.roi_pool"]
    assert "`deformable_groups`" in found["nn.deformable_conv2d"] and "offset" in found["nn.deformable_conv2d"]


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_grid_far_larger_than_the_data(mode):
    """An adaptive grid of 20,000 points per bin: the reference reads only the points that
    can be read (the rest read 0), and agrees with the whole grid's loop."""
    a = RNG.standard_normal((1, 2, 5, 4)).astype(F32)
    rois = np.array([[0, -20000.0, -3.0, 20000.0, 6.0], [0, -1.0, -40000.0, 3.0, 0.0]], F32)
    got = run("vision.roi_align", [a, rois], pooled_size=(1, 2), spatial_scale=1.0, mode=mode)
    np.testing.assert_allclose(got, loop_roi_align(a, rois, 1, 2, 1.0, 0, mode), rtol=1e-4, atol=1e-6)


def test_random_rois_are_boxes_inside_the_image():
    from relaylens.compiler.random_data import draw, find_roles
    from relaylens.compiler.typing import infer_types

    mod = parse(MODULE, "m.relay").module
    assert not [d for d in infer_types(mod) if d.is_error]
    roles = find_roles(mod)
    rois_var = mod["main"].params[3]
    role = roles[rois_var]
    assert role.name == "rois" and role.bound == 1 and role.image == (14.0, 12.0)  # its data, the 7x6 conv result, over 0.5
    boxes = draw(np.random.default_rng(0), T((50, 5)), role)
    assert boxes.dtype == np.float32 and (boxes[:, 0] == 0).all()
    assert (boxes[:, 1] >= 0).all() and (boxes[:, 3] <= 12.0).all() and (boxes[:, 3] > boxes[:, 1]).all()
    assert (boxes[:, 2] >= 0).all() and (boxes[:, 4] <= 14.0).all() and (boxes[:, 4] > boxes[:, 2]).all()
