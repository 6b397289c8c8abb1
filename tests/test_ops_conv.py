"""Convolution, dense and matmul ops (compiler/ops/nn_conv.py): attribute schemas, shape
relations over many attribute combinations, numerics against direct loop implementations
written here, and the error messages with the argument they point at."""

from __future__ import annotations

import glob
import itertools
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.ir.types import ANY, TensorType, TupleType
from relaylens.compiler.ops import AttrError, OpPattern, OpTypeError, get_op

from call_count import calls

T = TensorType
F32 = "float32"


def infer(op: str, dshape, wshape, attrs=None, dtype=F32, wdtype=None) -> TensorType:
    return get_op(op).infer([T(tuple(dshape), dtype), T(tuple(wshape), wdtype or dtype)], attrs or {})


def shape_of(op, dshape, wshape, attrs=None):
    return infer(op, dshape, wshape, attrs).shape


# ---------------------------------------------------------------------------------------
# Reference implementations: plain loops, nothing shared with the library


def ref_conv(x, w, strides, pad_before, pad_after, dilation, groups):
    """Direct convolution in NC<spatial> / OI<spatial>, every product in a Python loop."""
    n = x.ndim - 2
    N, C = x.shape[:2]
    O, Cg = w.shape[:2]
    K = w.shape[2:]
    S = x.shape[2:]
    Og = O // groups
    out_sz = [(S[i] + pad_before[i] + pad_after[i] - dilation[i] * (K[i] - 1) - 1) // strides[i] + 1
              for i in range(n)]
    out = np.zeros([N, O] + out_sz, dtype=np.float64)
    for b in range(N):
        for o in range(O):
            g = o // Og
            for pos in itertools.product(*(range(s) for s in out_sz)):
                acc = 0.0
                for c in range(Cg):
                    for k in itertools.product(*(range(kk) for kk in K)):
                        idx = [pos[i] * strides[i] + k[i] * dilation[i] - pad_before[i] for i in range(n)]
                        if all(0 <= idx[i] < S[i] for i in range(n)):
                            acc += x[(b, g * Cg + c) + tuple(idx)] * w[(o, c) + k]
                out[(b, o) + pos] = acc
    return out


def ref_conv_transpose(x, w, strides, pad_before, pad_after, dilation, output_padding, groups):
    """Direct transposed convolution: x (N, C, *S), w (C, O/groups, *K); every input element
    scatters into out[i*stride + k*dilation - pad_before]."""
    n = x.ndim - 2
    N, C = x.shape[:2]
    S = x.shape[2:]
    Og = w.shape[1]
    K = w.shape[2:]
    Cg = C // groups
    out_sz = [strides[i] * (S[i] - 1) + dilation[i] * (K[i] - 1) + 1 - pad_before[i] - pad_after[i]
              + output_padding[i] for i in range(n)]
    out = np.zeros([N, Og * groups] + out_sz, dtype=np.float64)
    for b in range(N):
        for c in range(C):
            g = c // Cg
            for pos in itertools.product(*(range(s) for s in S)):
                for o in range(Og):
                    for k in itertools.product(*(range(kk) for kk in K)):
                        idx = [pos[i] * strides[i] + k[i] * dilation[i] - pad_before[i] for i in range(n)]
                        if all(0 <= idx[i] < out_sz[i] for i in range(n)):
                            out[(b, g * Og + o) + tuple(idx)] += x[(b, c) + pos] * w[(c, o) + k]
    return out


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------
# Schemas, patterns, docs


SCHEMAS = {
    "nn.conv1d": [("strides", (1,)), ("padding", (0, 0)), ("dilation", (1,)), ("groups", 1),
                  ("channels", None), ("kernel_size", None), ("data_layout", "NCW"),
                  ("kernel_layout", "OIW"), ("out_layout", ""), ("out_dtype", "")],
    "nn.conv2d": [("strides", (1, 1)), ("padding", (0, 0)), ("dilation", (1, 1)), ("groups", 1),
                  ("channels", None), ("kernel_size", None), ("data_layout", "NCHW"),
                  ("kernel_layout", "OIHW"), ("out_layout", ""), ("out_dtype", "")],
    "nn.conv3d": [("strides", (1, 1, 1)), ("padding", (0, 0, 0)), ("dilation", (1, 1, 1)),
                  ("groups", 1), ("channels", None), ("kernel_size", None),
                  ("data_layout", "NCDHW"), ("kernel_layout", "OIDHW"), ("out_layout", ""),
                  ("out_dtype", "")],
    "nn.conv2d_transpose": [("channels", None), ("kernel_size", None), ("strides", (1, 1)),
                            ("output_padding", (0, 0)), ("padding", (0, 0)), ("dilation", (1, 1)),
                            ("groups", 1), ("data_layout", "NCHW"), ("kernel_layout", "IOHW"),
                            ("out_layout", ""), ("out_dtype", "")],
    "nn.conv1d_transpose": [("channels", None), ("kernel_size", None), ("strides", (1,)),
                            ("output_padding", (0,)), ("padding", (0,)), ("dilation", (1,)),
                            ("groups", 1), ("data_layout", "NCW"), ("kernel_layout", "IOW"),
                            ("out_layout", ""), ("out_dtype", "")],
    "nn.contrib_conv2d_NCHWc": [("strides", (1, 1)), ("padding", (0, 0)), ("dilation", (1, 1)),
                                ("groups", 1), ("channels", None), ("kernel_size", None),
                                ("data_layout", "NCHW"), ("kernel_layout", "OIHW"),
                                ("out_layout", ""), ("out_dtype", "")],
    "nn.dense": [("units", None), ("out_dtype", "")],
    "nn.matmul": [("units", None), ("out_dtype", ""), ("transpose_a", False), ("transpose_b", False)],
    "nn.batch_matmul": [("out_dtype", ""), ("transpose_a", False), ("transpose_b", False)],
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_order_defaults_pattern_doc(name):
    op = get_op(name)
    assert [(a.name, a.default) for a in op.attrs] == SCHEMAS[name]
    assert op.pattern == OpPattern.OUT_EWISE_FUSABLE
    assert op.doc and all(a.doc for a in op.attrs)
    assert op.inputs == (("tensor_a", "tensor_b") if "matmul" in name else ("data", "weight"))


def test_signature_shows_defaults():
    assert get_op("nn.dense").signature() == 'nn.dense(data, weight, units=None, out_dtype="")'
    assert get_op("nn.conv2d").signature().startswith(
        "nn.conv2d(data, weight, strides=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1, "
        "channels=None, kernel_size=None, data_layout=\"NCHW\"")


def test_unknown_attribute_is_named():
    with pytest.raises(AttrError) as e:
        infer("nn.conv2d", (1, 3, 8, 8), (4, 3, 3, 3), {"stride": (2, 2)})
    assert "did you mean strides?" in e.value.message


# ---------------------------------------------------------------------------------------
# Shape relations

CONV2D_SHAPES = [
    # (data, weight, attrs, expected)
    ((1, 3, 224, 224), (64, 3, 7, 7), dict(strides=(2, 2), padding=(3, 3, 3, 3), channels=64,
                                           kernel_size=(7, 7)), (1, 64, 112, 112)),
    ((1, 64, 56, 56), (64, 64, 3, 3), dict(padding=(1, 1)), (1, 64, 56, 56)),
    ((1, 64, 56, 56), (64, 64, 3, 3), dict(padding=(1,)), (1, 64, 56, 56)),
    ((1, 64, 56, 56), (64, 64, 3, 3), dict(padding=1), (1, 64, 56, 56)),
    ((1, 64, 56, 56), (64, 64, 3, 3), {}, (1, 64, 54, 54)),
    ((1, 8, 10, 12), (4, 8, 3, 3), dict(padding=(0, 1, 2, 3)), (1, 4, 10, 14)),  # t, l, b, r
    ((1, 8, 10, 12), (4, 8, 3, 3), dict(strides=(2, 3)), (1, 4, 4, 4)),
    ((1, 8, 10, 12), (4, 8, 3, 3), dict(strides=2), (1, 4, 4, 5)),
    ((1, 8, 10, 12), (4, 8, 3, 3), dict(dilation=(2, 2)), (1, 4, 6, 8)),
    ((1, 8, 10, 12), (4, 8, 3, 3), dict(dilation=(2, 1), padding=(2, 1)), (1, 4, 10, 12)),
    ((2, 8, 9, 9), (6, 4, 3, 3), dict(groups=2), (2, 6, 7, 7)),
    ((1, 256, 56, 56), (128, 8, 3, 3), dict(padding=(1, 1, 1, 1), groups=32, channels=128,
                                            kernel_size=(3, 3)), (1, 128, 56, 56)),
    ((1, 32, 112, 112), (32, 1, 3, 3), dict(groups=32, padding=(1, 1)), (1, 32, 112, 112)),  # depthwise
    ((1, 32, 112, 112), (32, 1, 3, 3), dict(groups=32, padding=(1, 1), strides=(2, 2), channels=32,
                                            kernel_size=(3, 3)), (1, 32, 56, 56)),
    ((1, 8, 7, 7), (16, 1, 3, 3), dict(groups=8), (1, 16, 5, 5)),  # multiplier 2, frontends' form
    ((1, 8, 7, 7), (8, 2, 3, 3), dict(groups=8, channels=16, kernel_size=(3, 3)), (1, 16, 5, 5)),  # TVM's form
    ((1, 56, 56, 64), (3, 3, 64, 32), dict(data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1)),
     (1, 56, 56, 32)),
    ((1, 56, 56, 64), (32, 3, 3, 64), dict(data_layout="NHWC", kernel_layout="OHWI"), (1, 54, 54, 32)),
    ((1, 56, 56, 128), (3, 3, 128, 1), dict(data_layout="NHWC", kernel_layout="HWOI", groups=128,
                                            channels=128, kernel_size=(3, 3), padding=(1, 1, 1, 1)),
     (1, 56, 56, 128)),
    ((1, 56, 56, 16), (3, 3, 16, 2), dict(data_layout="NHWC", kernel_layout="HWOI", groups=16,
                                          channels=32, kernel_size=(3, 3)), (1, 54, 54, 32)),
    ((1, 3, 8, 8), (4, 3, 3, 3), dict(out_layout="NHWC"), (1, 6, 6, 4)),
    ((1, 8, 8, 3), (4, 3, 3, 3), dict(data_layout="NHWC"), (1, 6, 6, 4)),  # NHWC data, OIHW weight
    ((1, 4, 8, 8, 4), (8, 16, 3, 3), dict(data_layout="NCHW4c", padding=(1, 1)), (1, 2, 8, 8, 4)),
    ((1, 16, 8, 8), (2, 4, 3, 3, 4, 4), dict(kernel_layout="OIHW4i4o"), (1, 8, 6, 6)),
    # `?` dims
    ((ANY, 3, 224, 224), (64, 3, 7, 7), dict(strides=(2, 2), padding=(3, 3)), (ANY, 64, 112, 112)),
    ((1, 3, ANY, 224), (64, 3, 7, 7), dict(strides=(2, 2), padding=(3, 3)), (1, 64, ANY, 112)),
    ((1, ANY, 32, 32), (16, 3, 3, 3), {}, (1, 16, 30, 30)),
    ((1, 3, 32, 32), (ANY, 3, 3, 3), {}, (1, ANY, 30, 30)),
    ((1, 3, 32, 32), (16, 3, ANY, 3), {}, (1, 16, ANY, 30)),
    ((1, ANY, ANY, 8), (3, 3, 8, 4), dict(data_layout="NHWC", kernel_layout="HWIO"), (1, ANY, ANY, 4)),
]


@pytest.mark.parametrize("dshape,wshape,attrs,expected", CONV2D_SHAPES)
def test_conv2d_shapes(dshape, wshape, attrs, expected):
    t = infer("nn.conv2d", dshape, wshape, attrs)
    assert t.shape == expected
    assert t.dtype == F32


def test_out_dtype():
    t = infer("nn.conv2d", (1, 56, 56, 128), (3, 3, 128, 1),
              dict(padding=(1, 1, 1, 1), groups=128, channels=128, kernel_size=(3, 3),
                   data_layout="NHWC", kernel_layout="HWOI", out_dtype="int32"), dtype="int8")
    assert t == T((1, 56, 56, 128), "int32")
    assert infer("nn.conv2d", (1, 3, 8, 8), (4, 3, 3, 3), dtype="float16").dtype == "float16"
    assert infer("nn.conv2d", (1, 3, 8, 8), (4, 3, 3, 3), {"out_dtype": "float32"},
                 dtype="float16").dtype == "float32"
    assert get_op("nn.dense").infer([T((2, 4), "int8"), T((3, 4), "int8")],
                                    {"out_dtype": "int32"}) == T((2, 3), "int32")
    with pytest.raises(AttrError) as e:
        infer("nn.conv2d", (1, 3, 8, 8), (4, 3, 3, 3), {"out_dtype": "float33"})
    assert e.value.name == "out_dtype" and "float33" in e.value.message


OTHER_SHAPES = [
    ("nn.conv1d", (1, 4, 10), (8, 4, 3), {}, (1, 8, 8)),
    ("nn.conv1d", (1, 4, 10), (8, 4, 3), dict(padding=(1, 1), strides=(2,)), (1, 8, 5)),
    ("nn.conv1d", (1, 4, 10), (8, 4, 3), dict(padding=(2, 0), dilation=(2,)), (1, 8, 8)),
    ("nn.conv1d", (1, 4, 10), (8, 4, 3), dict(padding=(1,)), (1, 8, 10)),
    ("nn.conv1d", (1, 4, 10), (8, 2, 3), dict(groups=2), (1, 8, 8)),
    ("nn.conv1d", (1, 10, 4), (3, 4, 8), dict(data_layout="NWC", kernel_layout="WIO"), (1, 8, 8)),
    ("nn.conv1d", (ANY, 4, ANY), (8, 4, 3), {}, (ANY, 8, ANY)),
    ("nn.conv3d", (1, 4, 8, 9, 10), (6, 4, 3, 3, 3), {}, (1, 6, 6, 7, 8)),
    ("nn.conv3d", (1, 4, 8, 9, 10), (6, 4, 3, 3, 3), dict(padding=(1, 1, 1)), (1, 6, 8, 9, 10)),
    ("nn.conv3d", (1, 4, 8, 9, 10), (6, 4, 3, 3, 3), dict(padding=(1, 0, 0, 1, 0, 0), strides=(2, 2, 2)),
     (1, 6, 4, 4, 4)),
    ("nn.conv3d", (1, 8, 9, 10, 4), (3, 3, 3, 4, 6), dict(data_layout="NDHWC", kernel_layout="DHWIO"),
     (1, 6, 7, 8, 6)),
    ("nn.conv3d", (1, 4, 8, 8, 8), (4, 1, 3, 3, 3), dict(groups=4, channels=4, kernel_size=(3, 3, 3)),
     (1, 4, 6, 6, 6)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), {}, (1, 4, 7, 7)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), dict(strides=(2, 2)), (1, 4, 11, 11)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 4, 4), dict(strides=(2, 2), padding=(1, 1)), (1, 4, 10, 10)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), dict(strides=(2, 2), padding=(1, 1),
                                                             output_padding=(1, 1)), (1, 4, 10, 10)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), dict(padding=(0, 0, 1, 1)), (1, 4, 6, 6)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), dict(dilation=(2, 2)), (1, 4, 9, 9)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 2, 3, 3), dict(groups=2), (1, 4, 7, 7)),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 2, 3, 3), dict(groups=2, channels=4, kernel_size=(3, 3)),
     (1, 4, 7, 7)),
    ("nn.conv2d_transpose", (1, 5, 5, 8), (3, 3, 4, 8), dict(data_layout="NHWC", kernel_layout="HWOI"),
     (1, 7, 7, 4)),
    ("nn.conv2d_transpose", (1, 8, ANY, 5), (8, 4, 3, 3), {}, (1, 4, ANY, 7)),
    ("nn.conv1d_transpose", (1, 8, 5), (8, 4, 3), {}, (1, 4, 7)),
    ("nn.conv1d_transpose", (1, 8, 5), (8, 4, 3), dict(strides=(2,), padding=(1,), output_padding=(1,)),
     (1, 4, 10)),
    ("nn.conv1d_transpose", (1, 8, 5), (8, 4, 3), dict(padding=(0, 1)), (1, 4, 6)),
    ("nn.contrib_conv2d_NCHWc", (1, 2, 10, 10, 8), (4, 2, 3, 3, 8, 4),
     dict(channels=16, kernel_size=(3, 3), padding=(1, 1), data_layout="NCHW8c",
          kernel_layout="OIHW8i4o", out_layout="NCHW4c"), (1, 4, 10, 10, 4)),
    ("nn.contrib_conv2d_NCHWc", (1, 2, 10, 10, 8), (4, 2, 3, 3, 8, 4),
     dict(data_layout="NCHW8c", kernel_layout="OIHW8i4o", out_layout="NCHW4c", strides=(2, 2)),
     (1, 4, 4, 4, 4)),
    ("nn.contrib_conv2d_NCHWc", (1, 2, 10, 10, 8), (2, 2, 3, 3, 8, 8),
     dict(data_layout="NCHW8c", kernel_layout="OIHW8i8o"), (1, 2, 8, 8, 8)),
    ("nn.contrib_conv2d_NCHWc", (ANY, 2, 10, 10, 8), (2, 2, 3, 3, 8, 8),
     dict(data_layout="NCHW8c", kernel_layout="OIHW8i8o"), (ANY, 2, 8, 8, 8)),
    ("nn.contrib_depthwise_conv2d_NCHWc", (1, 2, 10, 10, 8), (2, 1, 3, 3, 1, 8),
     dict(groups=16, data_layout="NCHW8c", kernel_layout="OIHW1i8o", padding=(1, 1)), (1, 2, 10, 10, 8)),
]


@pytest.mark.parametrize("op,dshape,wshape,attrs,expected", OTHER_SHAPES)
def test_other_conv_shapes(op, dshape, wshape, attrs, expected):
    assert shape_of(op, dshape, wshape, attrs) == expected


DENSE_SHAPES = [
    ("nn.dense", (1, 768), (2304, 768), dict(units=2304), (1, 2304)),
    ("nn.dense", (1, 768), (2304, 768), {}, (1, 2304)),
    ("nn.dense", (4, 50, 768), (3072, 768), dict(units=None), (4, 50, 3072)),
    ("nn.dense", (768,), (10, 768), {}, (10,)),
    ("nn.dense", (ANY, 768), (10, 768), {}, (ANY, 10)),
    ("nn.dense", (2, ANY), (10, 768), {}, (2, 10)),
    ("nn.dense", (2, 768), (ANY, 768), {}, (2, ANY)),
    ("nn.dense", (2, 768), (ANY, 768), dict(units=10), (2, 10)),
    ("nn.matmul", (2, 3), (3, 5), {}, (2, 5)),
    ("nn.matmul", (2, 3), (5, 3), dict(transpose_b=True), (2, 5)),
    ("nn.matmul", (3, 2), (3, 5), dict(transpose_a=True), (2, 5)),
    ("nn.matmul", (3, 2), (5, 3), dict(transpose_a=True, transpose_b=True), (2, 5)),
    ("nn.matmul", (7, 2, 3), (3, 5), dict(units=5), (7, 2, 5)),
    ("nn.matmul", (7, 3, 2), (3, 5), dict(transpose_a=True), (7, 2, 5)),
    ("nn.batch_matmul", (4, 2, 3), (4, 5, 3), dict(transpose_b=True), (4, 2, 5)),
    ("nn.batch_matmul", (4, 2, 3), (4, 3, 5), {}, (4, 2, 5)),
    ("nn.batch_matmul", (4, 3, 2), (4, 3, 5), dict(transpose_a=True), (4, 2, 5)),
    ("nn.batch_matmul", (4, 3, 2), (4, 5, 3), dict(transpose_a=True, transpose_b=True), (4, 2, 5)),
    ("nn.batch_matmul", (1, 2, 3), (4, 5, 3), dict(transpose_b=True), (4, 2, 5)),
    ("nn.batch_matmul", (4, 2, 3), (1, 5, 3), dict(transpose_b=True), (4, 2, 5)),
    ("nn.batch_matmul", (ANY, 2, 3), (4, 5, 3), dict(transpose_b=True), (ANY, 2, 5)),
    ("nn.batch_matmul", (12, ANY, 64), (12, ANY, 64), dict(transpose_b=True), (12, ANY, ANY)),
]


@pytest.mark.parametrize("op,ashape,bshape,attrs,expected", DENSE_SHAPES)
def test_dense_matmul_shapes(op, ashape, bshape, attrs, expected):
    t = infer(op, ashape, bshape, attrs)
    assert t.shape == expected and t.dtype == F32


def test_batch_matmul_out_dtype_from_corpus():
    t = infer("nn.batch_matmul", (12, 10, 64), (12, 10, 64), dict(out_dtype="float16", transpose_b=True),
              dtype="float16")
    assert t == T((12, 10, 10), "float16")


# ---------------------------------------------------------------------------------------
# Errors: message text and the argument pointed at

ERRORS = [
    # (op, data, weight, attrs, [substrings], arg)
    ("nn.conv2d", (1, 3, 8, 8), (64, 4, 3, 3), {},
     ["nn.conv2d: data has 3 channels but weight expects 4",
      "data Tensor[(1, 3, 8, 8), float32]", "weight Tensor[(64, 4, 3, 3), float32]"], 1),
    ("nn.conv2d", (1, 8, 8, 8), (6, 3, 3, 3), dict(groups=2),
     ["data has 8 channels, 4 per group with groups=2, but weight expects 3 per group",
      "weight Tensor[(6, 3, 3, 3), float32]"], 1),
    ("nn.conv2d", (1, 8, 8, 3), (3, 3, 4, 16), dict(data_layout="NHWC", kernel_layout="HWIO"),
     ["data has 3 channels but weight expects 4", "data Tensor[(1, 8, 8, 3), float32] in NHWC",
      "weight Tensor[(3, 3, 4, 16), float32] in HWIO"], 1),
    ("nn.conv2d", (1, 3, 8, 8), (64, 3, 3, 3), dict(kernel_size=(5, 5)),
     ["nn.conv2d: kernel_size=[5, 5] but weight has a 3x3 kernel", "Tensor[(64, 3, 3, 3), float32]"], 1),
    ("nn.conv2d", (1, 3, 8, 8), (64, 3, 3, 3), dict(channels=32),
     ["nn.conv2d: channels=32 but weight has 64 output channels"], 1),
    ("nn.conv2d", (1, 3, 8, 8), (64, 3, 3, 3), dict(channels=32, kernel_size=(3, 3)),
     ["channels=32 but weight has 64 output channels"], 1),
    ("nn.conv2d", (1, 3, 8, 8), (64, 2, 3, 3), dict(channels=64, kernel_size=(3, 3)),
     ["data has 3 channels but weight expects 2"], 1),
    ("nn.conv2d", (1, 6, 8, 8), (6, 1, 3, 3), dict(groups=4),
     ["data has 6 channels, which groups=4 does not divide"], 0),
    ("nn.conv2d", (1, 8, 8, 8), (6, 2, 3, 3), dict(groups=4),
     ["weight has 6 output channels, which groups=4 does not divide"], 1),
    ("nn.conv2d", (1, 8, 7, 7), (8, 2, 3, 3), dict(groups=8),
     ["data has 8 channels, 1 per group with groups=8, but weight expects 2 per group"], 1),
    ("nn.conv2d", (1, 8, 7, 7), (8, 2, 3, 3), dict(groups=8, channels=24, kernel_size=(3, 3)),
     ["channels=24 makes a channel multiplier of 3 but weight has 2"], 1),
    ("nn.conv2d", (1, 3, 8), (64, 3, 3, 3), {},
     ["nn.conv2d: data must have 4 dimensions for layout NCHW, found Tensor[(1, 3, 8), float32]"], 0),
    ("nn.conv2d", (1, 3, 8, 8), (64, 3, 3), {},
     ["nn.conv2d: weight must have 4 dimensions for layout OIHW"], 1),
    ("nn.conv2d", (1, 2, 8, 8, 4), (8, 8, 3, 3), dict(data_layout="NCHW8c"),
     ["data axis 4 ('8c' of layout NCHW8c) must have extent 8"], 0),
    ("nn.conv2d", (1, 3, 2, 2), (4, 3, 3, 3), {},
     ["kernel does not fit along H: input 2 with padding 0+0 is smaller than the kernel extent 3"], None),
    ("nn.conv2d", (1, 3, 5, 5), (4, 3, 3, 3), dict(dilation=(3, 3)),
     ["kernel extent 3 dilated to 7"], None),
    ("nn.conv1d", (1, 4, 10), (8, 3, 3), {}, ["nn.conv1d: data has 4 channels but weight expects 3"], 1),
    ("nn.conv3d", (1, 4, 8, 8, 8), (8, 3, 3, 3, 3), {},
     ["nn.conv3d: data has 4 channels but weight expects 3"], 1),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (4, 4, 3, 3), {},
     ["nn.conv2d_transpose: data has 8 channels but weight expects 4",
      "weight Tensor[(4, 4, 3, 3), float32]"], 1),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), dict(channels=6),
     ["channels=6 but weight has 4 output channels"], 1),
    ("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), dict(channels=6, groups=2),
     ["channels=6 (3 per group with groups=2) but weight has 4 output channels per group"], 1),
    ("nn.conv2d_transpose", (1, 8, 1, 1), (8, 4, 3, 3), dict(padding=(2, 2)),
     ["output H would be -1"], None),
    ("nn.conv1d_transpose", (1, 8, 5), (4, 4, 3), {}, ["data has 8 channels but weight expects 4"], 1),
    ("nn.contrib_conv2d_NCHWc", (1, 2, 10, 10, 8), (2, 1, 3, 3, 8, 8),
     dict(data_layout="NCHW8c", kernel_layout="OIHW8i8o"),
     ["data has 16 channels but weight expects 8", "in NCHW8c", "in OIHW8i8o"], 1),
    ("nn.dense", (2, 4), (3, 5), {},
     ["nn.dense: data has 4 input features (last dimension) but weight expects 5",
      "data Tensor[(2, 4), float32]", "weight Tensor[(3, 5), float32]"], 1),
    ("nn.dense", (2, 4), (3, 4), dict(units=8), ["nn.dense: units=8 but weight has 3 output features"], 1),
    ("nn.dense", (2, 4), (3, 4, 1), {},
     ["nn.dense: weight must be 2-D, found Tensor[(3, 4, 1), float32]"], 1),
    ("nn.dense", (), (3, 4), {}, ["nn.dense: data must have at least 1 dimension"], 0),
    ("nn.matmul", (2, 4), (5, 3), {},
     ["nn.matmul: tensor_a has 4 input features (last dimension) but tensor_b expects 5"], 1),
    ("nn.matmul", (4, 2), (4, 3), dict(transpose_a=True, transpose_b=True),
     ["tensor_a has 4 input features (second-to-last dimension) but tensor_b expects 3"], 1),
    ("nn.matmul", (4,), (4, 3), dict(transpose_a=True),
     ["tensor_a must have at least 2 dimensions with transpose_a"], 0),
    ("nn.batch_matmul", (4, 2, 3), (4, 5, 4), dict(transpose_b=True),
     ["nn.batch_matmul: tensor_a has 3 columns to reduce but tensor_b has 4",
      "tensor_a Tensor[(4, 2, 3), float32]", "tensor_b Tensor[(4, 5, 4), float32]"], 1),
    ("nn.batch_matmul", (4, 2, 3), (2, 5, 3), dict(transpose_b=True),
     ["batch dimensions differ: tensor_a has 4 and tensor_b has 2"], 1),
    ("nn.batch_matmul", (2, 3), (4, 5, 3), {}, ["tensor_a must be 3-D, found Tensor[(2, 3), float32]"], 0),
    ("nn.batch_matmul", (4, 2, 3), (5, 3), {}, ["tensor_b must be 3-D"], 1),
]


@pytest.mark.parametrize("op,dshape,wshape,attrs,needles,arg", ERRORS)
def test_type_errors(op, dshape, wshape, attrs, needles, arg):
    with pytest.raises(OpTypeError) as e:
        infer(op, dshape, wshape, attrs)
    for needle in needles:
        assert needle in e.value.message, e.value.message
    assert e.value.message.startswith(op + ":")
    assert e.value.arg == arg


ATTR_ERRORS = [
    ("nn.conv2d", dict(strides=(1, 1, 1)), "strides", "nn.conv2d: strides expects 2 values, got 3"),
    ("nn.conv2d", dict(strides=(0, 1)), "strides", "strides must be positive, got strides=[0, 1]"),
    ("nn.conv2d", dict(dilation=(1, 2, 3)), "dilation", "dilation expects 2 values, got 3"),
    ("nn.conv2d", dict(padding=(1, 1, 1)), "padding", "nn.conv2d: padding expects 1, 2 or 4 values, got 3"),
    ("nn.conv2d", dict(padding=(-1, 0)), "padding", "padding must not be negative"),
    ("nn.conv2d", dict(groups=0), "groups", "groups must be positive, got groups=0"),
    ("nn.conv2d", dict(kernel_size=(3, 3, 3)), "kernel_size", "kernel_size expects 2 values, got 3"),
    ("nn.conv2d", dict(channels=0), "channels", "channels must be positive"),
    ("nn.conv2d", dict(data_layout="NCDHW"), "data_layout",
     'nn.conv2d: unsupported layout data_layout="NCDHW" (expected a layout of the axes N, C, H, W'),
    ("nn.conv2d", dict(kernel_layout="OIHH"), "kernel_layout", 'unsupported layout kernel_layout="OIHH"'),
    ("nn.conv2d", dict(kernel_layout="GOIHW", groups=2), "kernel_layout", "unsupported layout"),
    ("nn.conv2d", dict(out_layout="NCH"), "out_layout", 'unsupported layout out_layout="NCH"'),
    ("nn.conv2d", dict(data_layout="NCHWc"), "data_layout", "unsupported layout"),
    ("nn.conv2d", dict(data_layout="NCHW8d"), "data_layout", "unsupported layout"),
    ("nn.conv1d", dict(padding=(1, 1, 1)), "padding", "nn.conv1d: padding expects 1 or 2 values, got 3"),
    ("nn.conv2d", dict(strides="2"), "strides", "nn.conv2d: attribute strides expects a list of integers"),
]


@pytest.mark.parametrize("op,attrs,name,needle", ATTR_ERRORS)
def test_attribute_errors(op, attrs, name, needle):
    with pytest.raises(AttrError) as e:
        if op == "nn.conv2d":
            infer(op, (1, 4, 8, 8), (4, 4, 3, 3), attrs)
        else:
            infer(op, (1, 4, 8), (4, 4, 3), attrs)
    assert needle in e.value.message, e.value.message
    assert e.value.name == name


def test_transpose_errors():
    with pytest.raises(AttrError) as e:
        infer("nn.conv2d_transpose", (1, 8, 5, 5), (8, 4, 3, 3), dict(output_padding=(-1, 0)))
    assert e.value.name == "output_padding"
    with pytest.raises(AttrError) as e:
        infer("nn.conv2d_transpose", (1, 8, 5, 5), (8, 2, 3, 3), dict(channels=5, groups=2))
    assert "channels=5 is not divisible by groups=2" in e.value.message


def test_non_tensor_arguments():
    with pytest.raises(OpTypeError) as e:
        get_op("nn.conv2d").infer([TupleType(()), T((4, 3, 3, 3), F32)], {})
    assert e.value.arg == 0 and "nn.conv2d: data must be a tensor" in e.value.message
    with pytest.raises(OpTypeError) as e:
        get_op("nn.dense").infer([T((2, 3), F32), TupleType(())], {})
    assert e.value.arg == 1 and "nn.dense: weight must be a tensor" in e.value.message


# ---------------------------------------------------------------------------------------
# Numerics against the loop references

CONV2D_CASES = [
    # (C, O, H, W, kh, kw, attrs)
    (3, 4, 6, 7, 3, 3, {}),
    (3, 4, 6, 7, 3, 2, dict(strides=(2, 1))),
    (3, 4, 7, 7, 3, 3, dict(strides=(2, 2), padding=(1, 1))),
    (2, 3, 6, 6, 3, 3, dict(padding=(0, 1, 2, 1))),
    (2, 3, 7, 8, 3, 3, dict(dilation=(2, 1), padding=(2,))),
    (2, 2, 9, 9, 2, 3, dict(dilation=(2, 3), strides=(2, 2), padding=(1, 2, 0, 1))),
    (4, 6, 5, 5, 3, 3, dict(groups=2, padding=(1, 1))),
    (6, 6, 5, 6, 3, 3, dict(groups=3, strides=(2, 1))),
    (4, 4, 6, 6, 3, 3, dict(groups=4, padding=(1, 1))),  # depthwise
    (3, 6, 5, 5, 3, 3, dict(groups=3)),  # depthwise, multiplier 2 (weight (6, 1, 3, 3))
    (3, 4, 4, 4, 1, 1, {}),  # 1x1
    (3, 4, 6, 7, 3, 3, dict(channels=4, kernel_size=(3, 3), padding=(1, 1))),
]


@pytest.mark.parametrize("C,O,H,W,kh,kw,attrs", CONV2D_CASES)
def test_conv2d_matches_loops(C, O, H, W, kh, kw, attrs):
    groups = attrs.get("groups", 1)
    x = rand(2, C, H, W)
    w = rand(O, C // groups, kh, kw, seed=1)
    got = get_op("nn.conv2d").evaluate([x, w], attrs)
    pad = attrs.get("padding", (0, 0))
    pad = pad * 2 if len(pad) == 1 else pad
    before, after = (pad[:2], pad[2:]) if len(pad) == 4 else (pad, pad)
    want = ref_conv(x, w, attrs.get("strides", (1, 1)), before, after, attrs.get("dilation", (1, 1)), groups)
    assert got.dtype == np.float32
    assert got.shape == infer("nn.conv2d", x.shape, w.shape, attrs).shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("data_layout,kernel_layout", [
    ("NHWC", "HWIO"), ("NHWC", "OHWI"), ("NHWC", "OIHW"), ("NCHW", "HWIO"), ("NHWC", "IOHW")])
def test_conv2d_layouts(data_layout, kernel_layout):
    x = rand(1, 4, 6, 5)
    w = rand(6, 2, 3, 3, seed=2)
    attrs = dict(groups=2, padding=(1, 0), strides=(1, 2))
    want = ref_conv(x, w, (1, 2), (1, 0), (1, 0), (1, 1), 2)
    xl = x.transpose([ "NCHW".index(a) for a in data_layout])
    wl = w.transpose(["OIHW".index(a) for a in kernel_layout])
    got = get_op("nn.conv2d").evaluate([xl, wl], dict(attrs, data_layout=data_layout,
                                                         kernel_layout=kernel_layout))
    np.testing.assert_allclose(got, want.transpose(["NCHW".index(a) for a in data_layout]),
                               rtol=1e-4, atol=1e-4)
    shape = infer("nn.conv2d", xl.shape, wl.shape, dict(attrs, data_layout=data_layout,
                                                         kernel_layout=kernel_layout)).shape
    assert shape == got.shape


def test_conv2d_out_layout():
    x, w = rand(1, 3, 5, 5), rand(4, 3, 3, 3)
    got = get_op("nn.conv2d").evaluate([x, w], dict(out_layout="NHWC"))
    np.testing.assert_allclose(got, ref_conv(x, w, (1, 1), (0, 0), (0, 0), (1, 1), 1).transpose(0, 2, 3, 1),
                               rtol=1e-4, atol=1e-4)


def test_depthwise_nhwc_hwoi_with_multiplier():
    """TVM's depthwise form: HWOI weight (kh, kw, C, m); output channel c*m + j reads input
    channel c with weight[..., c, j]."""
    C, m = 3, 2
    x = rand(1, 5, 5, C)
    w = rand(3, 3, C, m, seed=3)
    attrs = dict(groups=C, channels=C * m, kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWOI",
                 padding=(1, 1))
    got = get_op("nn.conv2d").evaluate([x, w], attrs)
    assert got.shape == infer("nn.conv2d", x.shape, w.shape, attrs).shape == (1, 5, 5, C * m)
    xc = x.transpose(0, 3, 1, 2)
    want = np.zeros((1, C * m, 5, 5))
    for c in range(C):
        for j in range(m):
            wc = w[:, :, c, j][None, None]  # (1, 1, 3, 3)
            want[:, c * m + j] = ref_conv(xc[:, c:c + 1], wc, (1, 1), (1, 1), (1, 1), (1, 1), 1)[:, 0]
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def to_blocked_data(x, b):  # NCHW -> NCHW[b]c
    n, c, h, w = x.shape
    return x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2)


def to_blocked_kernel(w, bi, bo):  # OIHW -> OIHW[bi]i[bo]o
    o, i, kh, kw = w.shape
    return w.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1)


def test_conv2d_NCHWc_matches_loops():
    x = rand(1, 8, 6, 6)
    w = rand(8, 8, 3, 3, seed=4)
    attrs = dict(channels=8, kernel_size=(3, 3), padding=(1, 1), strides=(2, 2), data_layout="NCHW4c",
                 kernel_layout="OIHW4i2o", out_layout="NCHW2c")
    xb, wb = to_blocked_data(x, 4), to_blocked_kernel(w, 4, 2)
    got = get_op("nn.contrib_conv2d_NCHWc").evaluate([xb, wb], attrs)
    want = to_blocked_data(ref_conv(x, w, (2, 2), (1, 1), (1, 1), (1, 1), 1), 2)
    assert got.shape == infer("nn.contrib_conv2d_NCHWc", xb.shape, wb.shape, attrs).shape == (1, 4, 3, 3, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_depthwise_NCHWc_matches_loops():
    x = rand(1, 8, 5, 5)
    w = rand(8, 1, 3, 3, seed=5)
    attrs = dict(groups=8, padding=(1, 1), data_layout="NCHW4c", kernel_layout="OIHW1i4o")
    xb, wb = to_blocked_data(x, 4), to_blocked_kernel(w, 1, 4)
    got = get_op("nn.contrib_depthwise_conv2d_NCHWc").evaluate([xb, wb], attrs)
    want = to_blocked_data(ref_conv(x, w, (1, 1), (1, 1), (1, 1), (1, 1), 8), 4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs", [{}, dict(strides=(2,), padding=(1, 2)), dict(dilation=(2,), groups=2),
                                   dict(data_layout="NWC", kernel_layout="WIO", padding=(1,))])
def test_conv1d_matches_loops(attrs):
    groups = attrs.get("groups", 1)
    x, w = rand(2, 4, 9), rand(6, 4 // groups, 3, seed=6)
    pad = attrs.get("padding", (0, 0))
    pad = pad * 2 if len(pad) == 1 else pad
    want = ref_conv(x, w, attrs.get("strides", (1,)), pad[:1], pad[1:], attrs.get("dilation", (1,)), groups)
    if attrs.get("data_layout") == "NWC":
        x, w, want = x.transpose(0, 2, 1), w.transpose(2, 1, 0), want.transpose(0, 2, 1)
    got = get_op("nn.conv1d").evaluate([x, w], attrs)
    assert got.shape == infer("nn.conv1d", x.shape, w.shape, attrs).shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs", [{}, dict(strides=(2, 1, 2), padding=(1, 0, 1, 0, 1, 1)), dict(groups=2),
                                   dict(data_layout="NDHWC", kernel_layout="DHWIO", dilation=(1, 2, 1))])
def test_conv3d_matches_loops(attrs):
    groups = attrs.get("groups", 1)
    x, w = rand(1, 4, 4, 5, 6), rand(4, 4 // groups, 2, 3, 2, seed=7)
    pad = attrs.get("padding", (0, 0, 0))
    before, after = (pad[:3], pad[3:]) if len(pad) == 6 else (pad, pad)
    want = ref_conv(x, w, attrs.get("strides", (1, 1, 1)), before, after, attrs.get("dilation", (1, 1, 1)),
                    groups)
    if attrs.get("data_layout") == "NDHWC":
        x, w, want = x.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0), want.transpose(0, 2, 3, 4, 1)
    got = get_op("nn.conv3d").evaluate([x, w], attrs)
    assert got.shape == infer("nn.conv3d", x.shape, w.shape, attrs).shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs", [
    {}, dict(strides=(2, 2)), dict(strides=(2, 2), padding=(1, 1), output_padding=(1, 1)),
    dict(strides=(3, 2), padding=(0, 1, 2, 0), output_padding=(2, 1)), dict(dilation=(2, 1)),
    dict(groups=2, strides=(2, 1)), dict(data_layout="NHWC", kernel_layout="HWOI", strides=(2, 2)),
])
def test_conv2d_transpose_matches_loops(attrs):
    groups = attrs.get("groups", 1)
    x, w = rand(1, 4, 3, 4), rand(4, 6 // groups, 3, 2, seed=8)
    pad = attrs.get("padding", (0, 0))
    before, after = (pad[:2], pad[2:]) if len(pad) == 4 else (pad, pad)
    want = ref_conv_transpose(x, w, attrs.get("strides", (1, 1)), before, after,
                              attrs.get("dilation", (1, 1)), attrs.get("output_padding", (0, 0)), groups)
    if attrs.get("data_layout") == "NHWC":
        x, w, want = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), want.transpose(0, 2, 3, 1)
    got = get_op("nn.conv2d_transpose").evaluate([x, w], attrs)
    assert got.shape == infer("nn.conv2d_transpose", x.shape, w.shape, attrs).shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_hand_worked():
    # 1 channel, 2x2 input, 2x2 kernel of ones, stride 2: each input value fills a 2x2 block.
    x = np.array([[[[1, 2], [3, 4]]]], dtype=np.float32)
    w = np.ones((1, 1, 2, 2), dtype=np.float32)
    got = get_op("nn.conv2d_transpose").evaluate([x, w], dict(strides=(2, 2)))
    assert got.tolist() == [[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]]]


@pytest.mark.parametrize("attrs", [{}, dict(strides=(2,), padding=(1,), output_padding=(1,)),
                                   dict(groups=2, dilation=(2,))])
def test_conv1d_transpose_matches_loops(attrs):
    groups = attrs.get("groups", 1)
    x, w = rand(2, 4, 5), rand(4, 2, 3, seed=9)
    pad = attrs.get("padding", (0,))
    pad = pad * 2 if len(pad) == 1 else pad
    want = ref_conv_transpose(x, w, attrs.get("strides", (1,)), pad[:1], pad[1:], attrs.get("dilation", (1,)),
                              attrs.get("output_padding", (0,)), groups)
    got = get_op("nn.conv1d_transpose").evaluate([x, w], attrs)
    assert got.shape == infer("nn.conv1d_transpose", x.shape, w.shape, attrs).shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_hand_worked():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.array([[[[1, 0], [0, -1]]]], dtype=np.float32)  # x[i, j] - x[i+1, j+1] = -5 everywhere
    got = get_op("nn.conv2d").evaluate([x, w], {})
    assert got.tolist() == [[[[-5.0] * 3] * 3]]
    one = np.ones((1, 1, 1, 1), np.float32)
    got = get_op("nn.conv2d").evaluate([x, one], dict(padding=(1, 1), strides=(3, 3)))
    assert got.tolist() == [[[[0, 0], [0, 10]]]]  # padded rows/cols 0 and 3: x[-1] and x[2]


def test_integer_conv_accumulates_exactly_and_wraps():
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, size=(1, 16, 5, 5), dtype=np.int8)
    w = rng.integers(-128, 128, size=(8, 16, 3, 3), dtype=np.int8)
    got = get_op("nn.conv2d").evaluate([x, w], dict(out_dtype="int32", padding=(1, 1)))
    want = ref_conv(x.astype(np.int64), w.astype(np.int64), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    assert got.dtype == np.int32
    assert np.array_equal(got, want.astype(np.int64))
    # int8 out_dtype keeps int8 arithmetic: the sums wrap around
    small = get_op("nn.conv2d").evaluate([x, w], dict(padding=(1, 1)))
    assert small.dtype == np.int8
    assert np.array_equal(small, want.astype(np.int64).astype(np.int8))
    # large values: int64 path, still exact
    big = np.full((1, 1, 2, 2), 2 ** 40, dtype=np.int64)
    out = get_op("nn.conv2d").evaluate([big, np.full((1, 1, 2, 2), 2 ** 20, dtype=np.int64)], {})
    assert out.tolist() == [[[[4 * 2 ** 60]]]]


def test_float16_conv():
    x, w = rand(1, 3, 5, 5).astype(np.float16), rand(2, 3, 3, 3, seed=12).astype(np.float16)
    got = get_op("nn.conv2d").evaluate([x, w], {})
    assert got.dtype == np.float16
    want = ref_conv(x.astype(np.float64), w.astype(np.float64), (1, 1), (0, 0), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-2, atol=2e-2)


def test_resnet_sized_conv_is_numpys_work():
    """ResNet-50 runs through the interpreter: its convolutions must be numpy's work, not a
    Python loop over pixels.  Counted, not timed: the Python calls of a 56x56 convolution
    are those of a 28x28 one."""
    op = get_op("nn.conv2d")
    attrs = dict(padding=(1, 1, 1, 1), channels=64, kernel_size=(3, 3))
    w = rand(64, 64, 3, 3, seed=13)
    op.evaluate([rand(1, 64, 28, 28), w], attrs)  # warm up (first-call caches)
    x = rand(1, 64, 56, 56)
    assert calls(op.evaluate, [x, w], attrs) == calls(op.evaluate, [rand(1, 64, 28, 28), w], attrs)
    y = op.evaluate([x, w], attrs)
    assert y.shape == (1, 64, 56, 56)
    # spot-check a few outputs against the definition
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.float64)
    for o, i, j in [(0, 0, 0), (17, 55, 3), (63, 28, 55)]:
        want = float((xp[0, :, i:i + 3, j:j + 3] * w[o]).sum())
        assert abs(y[0, o, i, j] - want) < 1e-3


@pytest.mark.parametrize("groups, per_group", [(128, 1), (32, 4)], ids=["depthwise", "grouped"])
def test_depthwise_and_grouped_large_are_numpys_work(groups, per_group):
    op = get_op("nn.conv2d")
    attrs = dict(groups=groups, padding=(1, 1))
    w = rand(128, per_group, 3, 3)
    op.evaluate([rand(1, 128, 28, 28), w], attrs)  # warm up
    assert calls(op.evaluate, [rand(1, 128, 56, 56), w], attrs) == calls(op.evaluate, [rand(1, 128, 28, 28), w], attrs)


# ---------------------------------------------------------------------------------------
# dense, matmul, batch_matmul numerics


def test_dense_numerics():
    x, w = rand(3, 5), rand(4, 5, seed=1)
    got = get_op("nn.dense").evaluate([x, w], dict(units=4))
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-5, atol=1e-5)
    x3 = rand(2, 3, 5)
    got = get_op("nn.dense").evaluate([x3, w], {})
    assert got.shape == (2, 3, 4)
    np.testing.assert_allclose(got, np.einsum("abk,uk->abu", x3, w), rtol=1e-5, atol=1e-5)
    got = get_op("nn.dense").evaluate([rand(5), w], {})
    assert got.shape == (4,)


def test_dense_integer_out_dtype():
    x = np.array([[100, -100, 127]], dtype=np.int8)
    w = np.array([[127, 127, 127], [-128, 1, 2]], dtype=np.int8)
    got = get_op("nn.dense").evaluate([x, w], dict(out_dtype="int32"))
    assert got.dtype == np.int32
    assert got.tolist() == [[127 * 127, -12800 - 100 + 254]]


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_numerics(ta, tb):
    a = rand(2, 3, 4) if not ta else rand(2, 4, 3)
    b = rand(4, 5, seed=1) if not tb else rand(5, 4, seed=1)
    attrs = dict(transpose_a=ta, transpose_b=tb)
    got = get_op("nn.matmul").evaluate([a, b], attrs)
    want = (np.swapaxes(a, -1, -2) if ta else a) @ (b.T if tb else b)
    assert got.shape == (2, 3, 5) == infer("nn.matmul", a.shape, b.shape, attrs).shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("ba,bb", [(3, 3), (1, 3), (3, 1)])
def test_batch_matmul_numerics(ta, tb, ba, bb):
    a = rand(ba, 2, 4) if not ta else rand(ba, 4, 2)
    b = rand(bb, 4, 5, seed=1) if not tb else rand(bb, 5, 4, seed=1)
    attrs = dict(transpose_a=ta, transpose_b=tb)
    got = get_op("nn.batch_matmul").evaluate([a, b], attrs)
    a_ = np.swapaxes(a, 1, 2) if ta else a
    b_ = np.swapaxes(b, 1, 2) if tb else b
    want = np.stack([a_[i % ba] @ b_[i % bb] for i in range(max(ba, bb))])
    assert got.shape == (max(ba, bb), 2, 5) == infer("nn.batch_matmul", a.shape, b.shape, attrs).shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_float16_out_dtype():
    a, b = rand(2, 3, 4).astype(np.float16), rand(2, 5, 4).astype(np.float16)
    got = get_op("nn.batch_matmul").evaluate([a, b], dict(transpose_b=True, out_dtype="float32"))
    assert got.dtype == np.float32
    want = np.einsum("bmk,bnk->bmn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------------------
# The corpus: every call with written types agrees with the relation

from conftest import CORPUS
MY_OPS = ("nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv2d_transpose", "nn.conv1d_transpose",
          "nn.contrib_conv2d_NCHWc", "nn.dense", "nn.matmul", "nn.batch_matmul")


def _annotated_calls():
    from relaylens.compiler.ir import expr as E
    from relaylens.compiler.ir.functor import post_order
    from relaylens.compiler.parser import parse

    def ty_of(a):
        if isinstance(a, E.Var):
            return a.ty or a.type_annotation
        if a.ty is None and isinstance(a, E.Constant) and a.data is not None:
            return T(tuple(a.data.shape), str(a.data.dtype))
        return a.ty

    for path in sorted(glob.glob(str(CORPUS / "*.relay"))):
        text = Path(path).read_text()
        if not any(op + "(" in text for op in MY_OPS) or "ty=" not in text:
            continue
        module = parse(text, Path(path).name).module
        for fn in module.functions.values():
            for node in post_order(fn):
                if isinstance(node, E.Call) and isinstance(node.op, E.Op) and node.op.name in MY_OPS:
                    types = [ty_of(a) for a in node.args]
                    if node.ty is not None and all(isinstance(t, TensorType) for t in types):
                        yield Path(path).name, node, types


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_corpus_calls_agree_with_written_types():
    seen = 0
    for name, call, types in _annotated_calls():
        got = get_op(call.op.name).infer(types, call.attrs)
        assert got == call.ty, (name, call.op.name, got, call.ty)
        seen += 1
    assert seen >= 5


def test_weight_type_from_attributes():
    from relaylens.compiler.ops.nn_conv import weight_type

    data = T((1, 3, 224, 224), F32)
    assert weight_type("nn.conv2d", data, {"channels": 64, "kernel_size": (7, 7)}) == T((64, 3, 7, 7), F32)
    nhwc = T((1, 56, 56, 64), "float16")
    assert weight_type("nn.conv2d", nhwc, {"channels": 32, "kernel_size": (3, 3), "data_layout": "NHWC",
                                           "kernel_layout": "HWIO"}) == T((3, 3, 64, 32), "float16")
    assert weight_type("nn.conv2d_transpose", T((1, 8, 5, 5), F32),
                       {"channels": 4, "kernel_size": (3, 3)}) == T((8, 4, 3, 3), F32)
    assert weight_type("nn.conv1d", T((1, 4, 10), F32),
                       {"channels": 8, "kernel_size": (3,)}) == T((8, 4, 3), F32)
    assert weight_type("nn.conv2d", data, {"channels": 64}) is None
    assert weight_type("nn.conv2d", T((1, 32, 8, 8), F32),
                       {"channels": 32, "kernel_size": (3, 3), "groups": 32}) is None
    assert weight_type("nn.dense", T((4, 768), F32), {"units": 2304}) == T((2304, 768), F32)
    assert weight_type("nn.dense", T((4, 768), F32), {"units": None}) is None
    assert weight_type("nn.matmul", T((4, 768), F32), {"units": 10}) == T((768, 10), F32)
    assert weight_type("nn.matmul", T((768, 4), F32), {"units": 10, "transpose_a": True,
                                                        "transpose_b": True}) == T((10, 768), F32)
    assert weight_type("nn.batch_matmul", T((2, 3, 4), F32), {}) is None
    # what it derives, the relation accepts
    w = weight_type("nn.conv2d", data, {"channels": 64, "kernel_size": (7, 7), "strides": (2, 2)})
    assert infer("nn.conv2d", data.shape, w.shape, {"channels": 64, "kernel_size": (7, 7),
                                                    "strides": (2, 2)}).shape == (1, 64, 109, 109)
