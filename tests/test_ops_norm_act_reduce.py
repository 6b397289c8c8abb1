"""Normalisation, activation and reduction ops: schemas, type relations, numpy semantics.

Expected values are computed here independently of the library: textbook formulas in
numpy, direct loops (lrn, argmax over several axes), and small hand-worked cases.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relaylens.compiler.ir.types import ANY, TensorType, TupleType
from relaylens.compiler.ops import AttrError, OpPattern, OpTypeError, get_op

F32 = "float32"


def T(shape, dtype=F32) -> TensorType:
    return TensorType(tuple(shape), dtype)


def infer(name, *types, **attrs):
    return get_op(name).infer(list(types), attrs)


def run(name, *arrays, **attrs):
    return get_op(name).evaluate(list(arrays), attrs)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def type_error(name, *types, **attrs) -> str:
    with pytest.raises(OpTypeError) as info:
        infer(name, *types, **attrs)
    return info.value.message


def attr_error(name, *types, **attrs) -> str:
    with pytest.raises(AttrError) as info:
        infer(name, *types, **attrs)
    return info.value.message


# ---- schemas: declaration order, defaults, patterns -------------------------------------

REDUCE_ATTRS = [("axis", None), ("keepdims", False), ("exclude", False)]
NORM = [("epsilon", 1e-05), ("center", True), ("scale", True)]
SCHEMAS = {
    "nn.batch_norm": (("data", "gamma", "beta", "moving_mean", "moving_var"),
                      [("axis", 1)] + NORM, OpPattern.OUT_EWISE_FUSABLE),
    "nn.layer_norm": (("data", "gamma", "beta"), [("axis", -1)] + NORM, None),
    "nn.group_norm": (("data", "gamma", "beta"), [("num_groups", 0), ("axis", 1)] + NORM, None),
    "nn.instance_norm": (("data", "gamma", "beta"), [("axis", 1)] + NORM, None),
    "nn.l2_normalize": (("data",), [("eps", "required"), ("axis", None)], None),
    "nn.lrn": (("data",), [("size", 5), ("axis", 1), ("bias", 2.0), ("alpha", 0.0001),
                           ("beta", 0.75)], OpPattern.OPAQUE),
    "nn.dropout": (("data",), [("rate", 0.5)], OpPattern.OPAQUE),
    "nn.relu": (("data",), [], OpPattern.ELEMWISE),
    "nn.leaky_relu": (("data",), [("alpha", 0.25)], OpPattern.ELEMWISE),
    "nn.prelu": (("data", "alpha"), [("axis", 1)], OpPattern.BROADCAST),
    "nn.softmax": (("data",), [("axis", -1)], OpPattern.OUT_EWISE_FUSABLE),
    "nn.log_softmax": (("data",), [("axis", -1)], OpPattern.OUT_EWISE_FUSABLE),
    "nn.fast_softmax": (("data",), [("axis", -1)], OpPattern.OUT_EWISE_FUSABLE),
    **{name: (("data",), REDUCE_ATTRS, OpPattern.COMM_REDUCE)
       for name in ("sum", "mean", "max", "min", "prod", "all", "any")},
    **{name: (("data",), [("axis", None), ("keepdims", False), ("select_last_index", False),
                          ("exclude", False)], OpPattern.COMM_REDUCE)
       for name in ("argmax", "argmin")},
    "variance": (("data", "mean"), REDUCE_ATTRS + [("unbiased", False)], OpPattern.COMM_REDUCE),
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema(name):
    inputs, attrs, pattern = SCHEMAS[name]
    op = get_op(name)
    assert op.inputs == inputs
    assert [(a.name, "required" if a.required else a.default) for a in op.attrs] == attrs
    assert op.pattern == pattern
    assert op.doc


@pytest.mark.parametrize("name", ["nn.gelu", "nn.hardswish", "std", "logsumexp"])
def test_not_relay_ops(name):
    # Python-level helpers or frontend composites in TVM v0.16, not registered Relay ops.
    assert get_op(name) is None


def test_signature_shows_defaults_as_the_text_writes_them():
    assert get_op("nn.lrn").signature() == \
        "nn.lrn(data, size=5, axis=1, bias=2f, alpha=0.0001f, beta=0.75f)"
    assert get_op("argmax").signature() == \
        "argmax(data, axis=None, keepdims=False, select_last_index=False, exclude=False)"


def test_unknown_and_missing_attributes():
    assert "nn.softmax has no attribute 'axes' (did you mean axis?)" in \
        attr_error("nn.softmax", T((2, 3)), axes=1)
    assert attr_error("nn.l2_normalize", T((2, 3)), axis=[1]) == \
        "nn.l2_normalize: attribute eps is required (expected a number)"
    assert "attribute keepdims expects a boolean" in attr_error("sum", T((2, 3)), keepdims="yes")


# ---- reductions: types -------------------------------------------------------------------

X3 = T((2, 3, 4))


@pytest.mark.parametrize("attrs, shape", [
    ({}, ()),
    ({"axis": 1}, (2, 4)),
    ({"axis": [1]}, (2, 4)),
    ({"axis": -1}, (2, 3)),
    ({"axis": [0, 2]}, (3,)),
    ({"axis": [2, 0]}, (3,)),
    ({"axis": [0, 2], "keepdims": True}, (1, 3, 1)),
    ({"axis": [1], "exclude": True}, (3,)),
    ({"axis": [-1, 0], "exclude": True, "keepdims": True}, (2, 1, 4)),
    ({"axis": [0, 1, 2], "exclude": True}, (2, 3, 4)),
    ({"axis": []}, ()),
    ({"keepdims": True}, (1, 1, 1)),
    ({"exclude": True}, ()),  # axis=None: every axis, as TVM's type relation
])
def test_reduce_shapes(attrs, shape):
    for name in ("sum", "mean", "max", "min", "prod"):
        assert infer(name, X3, **attrs) == T(shape)
    assert infer("argmax", X3, **attrs) == T(shape, "int32")
    assert infer("argmin", X3, **attrs) == T(shape, "int32")
    assert infer("all", T((2, 3, 4), "bool"), **attrs) == T(shape, "bool")
    assert infer("variance", X3, T((2, 1, 4)), **attrs) == T(shape)


def test_reduce_keeps_dtype_and_unknown_dims():
    assert infer("sum", T((ANY, 3, ANY), "int8"), axis=1) == T((ANY, ANY), "int8")
    assert infer("max", T((ANY, 3, ANY)), axis=0, keepdims=True) == T((1, 3, ANY))
    assert infer("mean", T((4, 5), "int32"), axis=1) == T((4,), "int32")
    assert infer("prod", T((4, 5), "float16")) == T((), "float16")
    assert infer("argmax", T((ANY, 10), "float16"), axis=-1) == T((ANY,), "int32")
    assert infer("any", T((ANY, 2), "bool"), axis=[0]) == T((2,), "bool")
    assert infer("sum", T((), "float32")) == T(())  # a scalar reduces to itself


def test_reduce_errors():
    assert type_error("sum", X3, axis=3) == \
        "sum: axis 3 is out of range for a tensor of rank 3 (expected -3 to 2)"
    assert type_error("mean", X3, axis=[0, -4]) == \
        "mean: axis -4 is out of range for a tensor of rank 3 (expected -3 to 2)"
    assert type_error("max", X3, axis=[1, -2]) == "max: axis [1, -2] names dimension 1 more than once"
    assert type_error("argmin", X3, axis=[5], exclude=True) == \
        "argmin: axis 5 is out of range for a tensor of rank 3 (expected -3 to 2)"
    assert type_error("sum", T(()), axis=0) == \
        "sum: axis [0] given for a rank-0 tensor, which has no axes"
    assert type_error("argmax", T(())) == "argmax needs a tensor of rank 1 or more, found float32"
    assert type_error("all", T((2, 3))) == "all expects a bool tensor, found Tensor[(2, 3), float32]"
    assert type_error("sum", TupleType((X3,))) == \
        "sum: data must be a tensor, found (Tensor[(2, 3, 4), float32],)"


def test_variance_errors():
    msg = type_error("variance", X3, T((2, 4)), axis=1)
    assert msg == ("variance: mean has rank 2 but data has rank 3 "
                   "(mean Tensor[(2, 4), float32], data Tensor[(2, 3, 4), float32])")
    msg = type_error("variance", X3, T((2, 1, 5)), axis=1)
    assert msg == ("variance: mean has extent 5 on axis 2 where data has 4 "
                   "(mean Tensor[(2, 1, 5), float32], data Tensor[(2, 3, 4), float32])")
    assert type_error("variance", X3, T((2, 1, 4), "float16"), axis=1).startswith(
        "variance: mean has dtype float16 but data has float32")
    assert type_error("variance", T(()), T(())).startswith("variance needs data of rank 1 or more")
    assert infer("variance", T((ANY, 3)), T((ANY, 1)), axis=1, keepdims=True) == T((ANY, 1))


# ---- reductions: numerics ----------------------------------------------------------------

A = rand(2, 3, 4)


@pytest.mark.parametrize("attrs, axes, keep", [
    ({}, (0, 1, 2), False),
    ({"axis": 1}, (1,), False),
    ({"axis": [-1, 0], "keepdims": True}, (0, 2), True),
    ({"axis": [1], "exclude": True}, (0, 2), False),
    ({"axis": [0, 1, 2], "exclude": True}, (), False),
])
def test_reduce_numerics(attrs, axes, keep):
    expected = {
        "sum": np.sum(A, axis=axes, keepdims=keep),
        "max": np.max(A, axis=axes, keepdims=keep),
        "min": np.min(A, axis=axes, keepdims=keep),
        "prod": np.prod(A, axis=axes, keepdims=keep),
        "mean": np.mean(A, axis=axes, keepdims=keep),
    }
    for name, want in expected.items():
        got = run(name, A, **attrs)
        assert got.dtype == np.float32, name
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_integer_reductions_stay_in_their_dtype():
    ones = np.ones(200, np.int8)
    got = run("sum", ones)
    assert got.dtype == np.int8 and int(got) == 200 - 256  # wraps as int8 arithmetic does
    x = np.array([[1, 2], [-3, -4], [7, 8]], np.int32)
    got = run("mean", x, axis=1)
    assert got.dtype == np.int32
    assert got.tolist() == [1, -3, 7]  # 1.5, -3.5, 7.5 truncated toward zero
    assert run("mean", x).tolist() == 1  # 11 / 6
    assert run("prod", x, axis=0).tolist() == [-21, -64]
    assert run("max", x, axis=0, keepdims=True).tolist() == [[7, 8]]


def test_float16_mean_and_variance_accumulate_in_float32():
    x = np.full(4096, 1000, np.float16)  # the float16 sum (4.1e6) would overflow to inf
    got = run("mean", x)
    assert got.dtype == np.float16 and float(got) == 1000.0
    with np.errstate(over="ignore"):
        var = run("variance", x, np.zeros(1, np.float16))
    assert var.dtype == np.float16 and np.isinf(var)  # 1e6 does not fit in float16 either
    var = run("variance", x / np.float16(100), np.zeros(1, np.float16))
    assert float(var) == 100.0


def test_all_any():
    b = np.array([[True, True, False], [True, True, True]])
    assert run("all", b, axis=1).tolist() == [False, True]
    assert run("any", b, axis=0).tolist() == [True, True, True]
    assert run("all", b).tolist() is False
    assert run("any", ~b, axis=[1], keepdims=True).tolist() == [[True], [False]]


def test_argmax_argmin_ties():
    x = np.array([1, 3, 3, 0, 0], np.float32)
    assert run("argmax", x).tolist() == 1
    assert run("argmax", x, select_last_index=True).tolist() == 2
    assert run("argmin", x).tolist() == 3
    assert run("argmin", x, select_last_index=True).tolist() == 4
    got = run("argmax", np.array([[5, 1], [2, 9]], np.float32), axis=1, keepdims=True)
    assert got.dtype == np.int32 and got.tolist() == [[0], [1]]


def _flat_arg_loop(x, pick):
    """argmax/argmin over axes 1 and 2, by a loop, as the flat index j * x.shape[2] + k."""
    out = np.zeros(x.shape[0], np.int64)
    for n in range(x.shape[0]):
        best = None
        for j, k in itertools.product(range(x.shape[1]), range(x.shape[2])):
            if best is None or pick(x[n, j, k], x[n, best[0], best[1]]):
                best = (j, k)
        out[n] = best[0] * x.shape[2] + best[1]
    return out


def test_argmax_over_several_axes_is_the_flat_index():
    x = rand(3, 4, 5, seed=3)
    want_max = _flat_arg_loop(x, lambda a, b: a > b)
    want_min = _flat_arg_loop(x, lambda a, b: a < b)
    assert run("argmax", x, axis=[1, 2]).tolist() == want_max.tolist()
    assert run("argmax", x, axis=[0], exclude=True).tolist() == want_max.tolist()
    assert run("argmin", x, axis=[-1, 1], keepdims=True).tolist() == \
        want_min.reshape(3, 1, 1).tolist()


def test_variance_by_formula():
    x = rand(3, 5, seed=4)
    m = x.mean(axis=1, keepdims=True)
    n = x.shape[1]
    biased = ((x - m) ** 2).sum(axis=1) / n
    unbiased = ((x - m) ** 2).sum(axis=1) / (n - 1)
    np.testing.assert_allclose(run("variance", x, m, axis=1), biased, rtol=1e-5)
    np.testing.assert_allclose(run("variance", x, m, axis=[1], unbiased=True), unbiased, rtol=1e-5)
    got = run("variance", x, m, axis=[0], exclude=True, keepdims=True)
    assert got.shape == (3, 1)
    np.testing.assert_allclose(got[:, 0], biased, rtol=1e-5)


# ---- activations ------------------------------------------------------------------------

def test_relu_family():
    x = np.array([-2.0, -0.5, 0.0, 3.0], np.float32)
    assert run("nn.relu", x).tolist() == [0.0, 0.0, 0.0, 3.0]
    assert run("nn.relu", np.array([-3, 4], np.int32)).dtype == np.int32
    np.testing.assert_allclose(run("nn.leaky_relu", x, alpha=0.1), [-0.2, -0.05, 0.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(run("nn.leaky_relu", x), [-0.5, -0.125, 0.0, 3.0])
    assert infer("nn.relu", T((ANY, 3))) == T((ANY, 3))
    assert infer("nn.leaky_relu", T((1, 2), "float16"), alpha=0.2) == T((1, 2), "float16")
    assert attr_error("nn.leaky_relu", T((2,)), alpha=-0.1) == \
        "nn.leaky_relu: attribute alpha must be at least 0, got -0.1"


def test_prelu():
    data = T((1, 3, 2, 2))
    assert infer("nn.prelu", data, T((3,))) == data
    assert infer("nn.prelu", T((1, 2, 2, 3)), T((3,)), axis=3) == T((1, 2, 2, 3))
    assert infer("nn.prelu", T((1, ANY, 2)), T((5,))) == T((1, ANY, 2))
    assert type_error("nn.prelu", data, T((4,))) == (
        "nn.prelu: alpha has 4 elements but data has 3 along axis 1 "
        "(alpha Tensor[(4), float32], data Tensor[(1, 3, 2, 2), float32])")
    assert type_error("nn.prelu", data, T((1, 3))).startswith("nn.prelu: alpha must be 1-D")
    assert type_error("nn.prelu", data, T((3,), "float16")).startswith(
        "nn.prelu: alpha has dtype float16 but data has float32")
    assert type_error("nn.prelu", data, T((2,)), axis=-1) == (
        "nn.prelu: axis -1 is out of range for a tensor of rank 4 "
        "(expected 0 to 3; negative axes are not accepted)")
    x = rand(2, 3, 2, 2, seed=5)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    want = x.copy()
    for c in range(3):
        neg = want[:, c] < 0
        want[:, c][neg] *= slope[c]
    np.testing.assert_allclose(run("nn.prelu", x, slope), want, rtol=1e-6)


def _softmax_by_formula(x, axis):
    shifted = x.astype(np.float64) - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("name", ["nn.softmax", "nn.fast_softmax", "nn.log_softmax"])
def test_softmax_types(name):
    assert infer(name, T((2, ANY, 5))) == T((2, ANY, 5))
    assert infer(name, T((2, 3, 4, 5), "float16"), axis=1) == T((2, 3, 4, 5), "float16")
    assert type_error(name, T((2, 3, 4, 5)), axis=4) == \
        f"{name}: axis 4 is out of range for a tensor of rank 4 (expected -4 to 3)"
    assert type_error(name, T((2, 3)), axis=-3) == \
        f"{name}: axis -3 is out of range for a tensor of rank 2 (expected -2 to 1)"
    assert type_error(name, T((2, 3), "int32")) == \
        f"{name} expects a floating-point tensor, found Tensor[(2, 3), int32]"


def test_softmax_numerics():
    big = np.array([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 5.0]], np.float32)  # exp overflows unshifted
    for name in ("nn.softmax", "nn.fast_softmax"):
        got = run(name, big)
        assert got.dtype == np.float32 and np.all(np.isfinite(got))
        np.testing.assert_allclose(got, _softmax_by_formula(big, -1), rtol=1e-6)
        np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-6)
    x = rand(2, 3, 4, seed=6)
    np.testing.assert_allclose(run("nn.softmax", x, axis=1), _softmax_by_formula(x, 1), rtol=1e-6)
    got = run("nn.log_softmax", big)
    np.testing.assert_allclose(got, np.log(_softmax_by_formula(big, -1)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(run("nn.log_softmax", x, axis=0),
                               np.log(_softmax_by_formula(x, 0)), rtol=1e-5, atol=1e-6)


# ---- batch_norm ---------------------------------------------------------------------------

def test_batch_norm_types():
    data, vec = T((1, 64, 56, 56)), T((64,))
    assert infer("nn.batch_norm", data, vec, vec, vec, vec) == TupleType((data, vec, vec))
    nhwc = T((1, 7, 7, 32))
    v32 = T((32,))
    for axis in (3, -1):
        assert infer("nn.batch_norm", nhwc, v32, v32, v32, v32, axis=axis) == \
            TupleType((nhwc, v32, v32))
    # unknown channel count: taken from the vectors when they know it
    open_c = T((1, ANY, 4, 4))
    assert infer("nn.batch_norm", open_c, vec, vec, vec, vec) == TupleType((open_c, vec, vec))
    some = T((ANY,))
    assert infer("nn.batch_norm", data, some, vec, some, vec) == TupleType((data, vec, vec))
    half = T((2, 8), "float16")
    h8 = T((8,), "float16")
    assert infer("nn.batch_norm", half, h8, h8, h8, h8) == TupleType((half, h8, h8))


def test_batch_norm_errors():
    data, vec = T((1, 64, 56, 56)), T((64,))
    assert type_error("nn.batch_norm", data, T((32,)), vec, vec, vec) == (
        "nn.batch_norm: gamma has 32 elements but data has 64 channels along axis 1 "
        "(gamma Tensor[(32), float32], data Tensor[(1, 64, 56, 56), float32])")
    with pytest.raises(OpTypeError) as info:
        infer("nn.batch_norm", data, vec, vec, T((1, 64)), vec)
    assert info.value.arg == 3
    assert info.value.message == (
        "nn.batch_norm: moving_mean must be 1-D with the 64 channels of data along axis 1, "
        "found Tensor[(1, 64), float32] (data Tensor[(1, 64, 56, 56), float32])")
    assert type_error("nn.batch_norm", data, vec, vec, vec, T((64,), "float16")) == (
        "nn.batch_norm: moving_var has dtype float16 but data has float32 "
        "(moving_var Tensor[(64), float16], data Tensor[(1, 64, 56, 56), float32])")
    assert type_error("nn.batch_norm", data, vec, vec, vec, vec, axis=-2) == \
        "nn.batch_norm: axis -2 is out of range for a tensor of rank 4 (expected -1 to 3)"
    assert type_error("nn.batch_norm", data, vec, vec, vec, vec, axis=4) == \
        "nn.batch_norm: axis 4 is out of range for a tensor of rank 4 (expected -1 to 3)"
    assert type_error("nn.batch_norm", T((2, 3), "int8"), *[T((3,), "int8")] * 4) == \
        "nn.batch_norm expects a floating-point tensor, found Tensor[(2, 3), int8]"
    assert type_error("nn.batch_norm", data, vec, TupleType(()), vec, vec) == \
        "nn.batch_norm: beta must be a tensor, found ()"


def _bn_params(c, seed):
    rng = np.random.default_rng(seed)
    gamma = rng.uniform(0.5, 2.0, c).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    mean = rng.standard_normal(c).astype(np.float32)
    var = rng.uniform(0.1, 3.0, c).astype(np.float32)
    return gamma, beta, mean, var


@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False), (False, False)])
def test_batch_norm_textbook_formula(center, scale):
    x = rand(2, 3, 4, 5, seed=7)
    gamma, beta, mean, var = _bn_params(3, 8)
    eps = 1e-3
    want = np.empty_like(x)
    for c in range(3):
        y = (x[:, c] - mean[c]) / np.sqrt(var[c] + eps)
        if scale:
            y = y * gamma[c]
        if center:
            y = y + beta[c]
        want[:, c] = y
    out, out_mean, out_var = run("nn.batch_norm", x, gamma, beta, mean, var,
                                 epsilon=eps, center=center, scale=scale)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert out_mean.tolist() == mean.tolist() and out_var.tolist() == var.tolist()


def test_batch_norm_channels_last():
    x = rand(2, 4, 4, 6, seed=9)
    gamma, beta, mean, var = _bn_params(6, 10)
    want = (x - mean) / np.sqrt(var + 1e-5) * gamma + beta  # the last axis broadcasts as is
    out, _, _ = run("nn.batch_norm", x, gamma, beta, mean, var, axis=-1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    out3, _, _ = run("nn.batch_norm", x, gamma, beta, mean, var, axis=3)
    np.testing.assert_allclose(out3, out)


# ---- layer_norm, group_norm, instance_norm -----------------------------------------------

@pytest.mark.parametrize("name", ["nn.layer_norm", "nn.group_norm", "nn.instance_norm"])
def test_norm_types(name):
    extra = {"num_groups": 4} if name == "nn.group_norm" else {}
    axis = {"axis": -1} if name == "nn.layer_norm" else {}
    data = T((2, 8, 5, 8))
    v = T((8,))
    assert infer(name, data, v, v, **extra, **axis) == data
    assert infer(name, T((ANY, 8, ANY, 8)), v, v, **extra, **axis) == T((ANY, 8, ANY, 8))
    nhwc = T((2, 5, 5, 12))
    v12 = T((12,))
    assert infer(name, nhwc, v12, v12, axis=3, **extra) == nhwc
    assert infer(name, nhwc, v12, v12, axis=-1, **extra) == nhwc
    msg = type_error(name, data, v, T((5,)), axis=1, **extra)
    assert msg == (f"{name}: beta has 5 elements but data has 8 channels along axis 1 "
                   "(beta Tensor[(5), float32], data Tensor[(2, 8, 5, 8), float32])")
    assert type_error(name, data, v, v, axis=4, **extra) == \
        f"{name}: axis 4 is out of range for a tensor of rank 4 (expected -4 to 3)"


def test_layer_norm_gamma_runs_along_axis():
    assert infer("nn.layer_norm", T((2, 7, 16)), T((16,)), T((16,))) == T((2, 7, 16))
    assert type_error("nn.layer_norm", T((2, 7, 16)), T((7,)), T((16,))).startswith(
        "nn.layer_norm: gamma has 7 elements but data has 16 channels along axis -1")
    assert infer("nn.layer_norm", T((2, 7, 16)), T((7,)), T((7,)), axis=1) == T((2, 7, 16))


def test_group_and_instance_norm_errors():
    data, v = T((2, 64, 4, 4)), T((64,))
    assert attr_error("nn.group_norm", data, v, v) == \
        "nn.group_norm: attribute num_groups must be at least 1, got 0"
    assert type_error("nn.group_norm", data, v, v, num_groups=3) == (
        "nn.group_norm: num_groups 3 does not divide the 64 channels of data along axis 1 "
        "(data Tensor[(2, 64, 4, 4), float32])")
    assert infer("nn.group_norm", T((2, ANY, 4)), T((ANY,)), T((ANY,)), num_groups=3) == \
        T((2, ANY, 4))
    assert type_error("nn.instance_norm", T((2, 3)), T((3,)), T((3,))) == \
        "nn.instance_norm needs data of rank 3 or more, found Tensor[(2, 3), float32]"


def test_layer_norm_by_formula():
    x = rand(2, 3, 6, seed=11)
    gamma, beta, _, _ = _bn_params(6, 12)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * gamma + beta
    np.testing.assert_allclose(run("nn.layer_norm", x, gamma, beta), want, rtol=1e-5, atol=1e-5)
    # along the middle axis, without the affine part
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-2)
    got = run("nn.layer_norm", x, np.zeros(3, np.float32), np.ones(3, np.float32), axis=1,
              epsilon=1e-2, center=False, scale=False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_group_norm_by_reshaping():
    n, c, h, w, groups = 2, 6, 3, 4, 3
    x = rand(n, c, h, w, seed=13)
    gamma, beta, _, _ = _bn_params(c, 14)
    g = x.reshape(n, groups, c // groups, h, w)
    mu = g.mean(axis=(2, 3, 4), keepdims=True)
    var = g.var(axis=(2, 3, 4), keepdims=True)
    normed = ((g - mu) / np.sqrt(var + 1e-5)).reshape(n, c, h, w)
    want = normed * gamma[None, :, None, None] + beta[None, :, None, None]
    got = run("nn.group_norm", x, gamma, beta, num_groups=groups)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # one group is layer normalisation over (C, H, W); C groups is instance normalisation
    one = run("nn.group_norm", x, gamma, beta, num_groups=1, center=False, scale=False)
    flat = x.reshape(n, -1)
    want_one = ((flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(one, want_one.reshape(x.shape), rtol=1e-5, atol=1e-5)
    per_channel = run("nn.group_norm", x, gamma, beta, num_groups=c)
    np.testing.assert_allclose(per_channel, run("nn.instance_norm", x, gamma, beta),
                               rtol=1e-5, atol=1e-5)


def test_instance_norm_by_formula():
    x = rand(2, 3, 4, 5, seed=15)
    gamma, beta, _, _ = _bn_params(3, 16)
    want = np.empty_like(x)
    for i in range(2):
        for c in range(3):
            plane = x[i, c]
            want[i, c] = (plane - plane.mean()) / np.sqrt(plane.var() + 1e-5) * gamma[c] + beta[c]
    np.testing.assert_allclose(run("nn.instance_norm", x, gamma, beta), want, rtol=1e-5, atol=1e-5)
    # channels last: statistics over H and W of each (sample, channel)
    xl = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    got = run("nn.instance_norm", xl, gamma, beta, axis=-1)
    np.testing.assert_allclose(got, np.moveaxis(want, 1, -1), rtol=1e-5, atol=1e-5)


# ---- l2_normalize, lrn, dropout -----------------------------------------------------------

def test_l2_normalize():
    assert infer("nn.l2_normalize", T((ANY, 3, 4)), eps=1e-12, axis=[1]) == T((ANY, 3, 4))
    assert type_error("nn.l2_normalize", T((2, 3)), eps=1e-12, axis=[2]) == \
        "nn.l2_normalize: axis 2 is out of range for a tensor of rank 2 (expected -2 to 1)"
    x = rand(2, 3, 4, seed=17)
    want = x / np.sqrt(np.sum(x * x, axis=1, keepdims=True))
    np.testing.assert_allclose(run("nn.l2_normalize", x, eps=1e-12, axis=[1]), want, rtol=1e-5)
    want = x / np.sqrt(np.sum(x * x))
    np.testing.assert_allclose(run("nn.l2_normalize", x, eps=1e-12), want, rtol=1e-5)
    small = np.array([[0.0, 0.0], [0.003, 0.004]], np.float32)  # sums of squares 0 and 2.5e-5
    got = run("nn.l2_normalize", small, eps=1e-4, axis=1)
    np.testing.assert_allclose(got, [[0.0, 0.0], [0.3, 0.4]], rtol=1e-5)


def _lrn_loop(x, size, axis, bias, alpha, beta):
    out = np.empty_like(x, dtype=np.float64)
    half = size // 2
    channels = x.shape[axis]
    for idx in itertools.product(*map(range, x.shape)):
        c = idx[axis]
        total = 0.0
        for j in range(max(0, c - half), min(channels, c + half + 1)):
            other = list(idx)
            other[axis] = j
            total += float(x[tuple(other)]) ** 2
        out[idx] = x[idx] / (bias + alpha * total / size) ** beta
    return out


@pytest.mark.parametrize("attrs", [
    {},
    {"bias": 1.0},
    {"size": 3, "alpha": 0.5, "beta": 0.5, "bias": 1.0},
    {"size": 1, "alpha": 1.0},
    {"axis": 3, "size": 3, "alpha": 0.2},
])
def test_lrn_by_loop(attrs):
    x = rand(2, 6, 3, 6, seed=18) * 3
    full = {"size": 5, "axis": 1, "bias": 2.0, "alpha": 0.0001, "beta": 0.75, **attrs}
    got = run("nn.lrn", x, **attrs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _lrn_loop(x, **full), rtol=1e-5, atol=1e-6)


def test_lrn_types():
    data = T((1, 3, 2, 2))
    assert infer("nn.lrn", data, bias=1.0) == data
    assert infer("nn.lrn", T((ANY, 4, 4, 16)), axis=3) == T((ANY, 4, 4, 16))
    assert type_error("nn.lrn", T((3, 2, 2))) == \
        "nn.lrn needs a 4-D tensor (NCHW or NHWC), found Tensor[(3, 2, 2), float32]"
    assert attr_error("nn.lrn", data, axis=2) == \
        "nn.lrn: attribute axis must be 1 (NCHW) or 3 (NHWC), got 2"
    assert attr_error("nn.lrn", data, size=4) == \
        "nn.lrn: attribute size must be a positive odd number, got 4"
    assert type_error("nn.lrn", T((1, 3, 2, 2), "int32")).startswith("nn.lrn expects a floating-point")


def test_dropout():
    data = T((ANY, 10), "float16")
    assert infer("nn.dropout", data, rate=0.2) == TupleType((data, data))
    x = rand(3, 4, seed=19)
    out, mask = run("nn.dropout", x, rate=0.9)
    assert out.tolist() == x.tolist() and out is not x
    assert mask.dtype == np.float32 and mask.tolist() == np.ones((3, 4)).tolist()


# ---- attributes as the parser reads them -------------------------------------------------

@pytest.mark.parametrize("param, call, want", [
    ("Tensor[(1, 3, 2, 2), float32]", "nn.lrn(%x, bias=1f)", T((1, 3, 2, 2))),
    ("Tensor[(1, 8, 4), float32]", "mean(%x, axis=[-1], keepdims=True)", T((1, 8, 1))),
    ("Tensor[(1, 8, 4), float32]", "sum(%x, axis=1, exclude=True)", T((8,))),
    ("Tensor[(?, 5), float16]", "argmax(%x, axis=[1], select_last_index=True)", T((ANY,), "int32")),
    ("Tensor[(1, 2, 3, 4), float32]", "nn.softmax(%x, axis=3)", T((1, 2, 3, 4))),
    ("Tensor[(2, 2), float32]", "nn.leaky_relu(%x, alpha=0.1f)", T((2, 2))),
    ("Tensor[(2, 2), float32]", "nn.l2_normalize(%x, eps=1e-10f, axis=None)", T((2, 2))),
    ("Tensor[(2, 4), float32]", "nn.dropout(%x)", TupleType((T((2, 4)), T((2, 4))))),
])
def test_parsed_attributes(parse_ok, param, call, want):
    module = parse_ok(f'#[version = "0.0.5"]\ndef @main(%x: {param}) {{\n  {call}\n}}\n')
    fn = module["main"]
    body = fn.body
    assert get_op(body.op.name).infer([fn.params[0].type_annotation], body.attrs) == want


def test_corpus_attributes_fit_the_schemas(corpus_dir):
    """Every call to these ops in the real corpus has attributes the schemas accept."""
    from relaylens.compiler.ir.expr import Op
    from relaylens.compiler.ir.functor import ExprVisitor
    from relaylens.compiler.parser import parse

    seen: dict[str, int] = {}

    class Calls(ExprVisitor):
        def visit_call(self, call):
            if isinstance(call.op, Op) and call.op.name in SCHEMAS:
                get_op(call.op.name).normalize_attrs(call.attrs)  # raises AttrError
                seen[call.op.name] = seen.get(call.op.name, 0) + 1

    for path in sorted(corpus_dir.glob("*.relay")):
        module = parse(path.read_text(), path.name).module
        for gv in module:
            Calls().visit(module[gv])
    # the corpus does use these (so this test checks something)
    assert {"nn.batch_norm", "nn.relu", "nn.softmax", "mean", "nn.lrn"} <= set(seen)
