"""Element-wise unary ops: math functions, clip, cast, and the `*_like` constructors.

Reference §7.3.  Every op here maps each element on its own (pattern ElemWise) and keeps
the shape; all but `cast` and `logical_not` keep the dtype too.
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..lazy_modules import deferred, numpy as np
from ..ir.types import TensorType
from .attrs import FLOAT, INT, STR, Attr
from .registry import ELEMWISE, OpTypeError, define
from .shapes import check_dtype, tensor, type_text

@lru_cache(maxsize=1)
def _erf():
    """math.erf as a numpy ufunc (of objects), made at its first use."""
    return np.frompyfunc(math.erf, 1, 1)


def _erf_array(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf()(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def _round(x: np.ndarray) -> np.ndarray:
    """Halves away from zero, as LLVM's `llvm.round` (numpy rounds halves to even)."""
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (1 / np.sqrt(x)).astype(x.dtype)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


FLOAT_FUNCS = {
    "sigmoid": (_sigmoid, "The logistic function 1 / (1 + exp(-x))."),
    "tanh": (deferred(np, "tanh"), "Hyperbolic tangent."),
    "exp": (deferred(np, "exp"), "e to the power x."),
    "log": (deferred(np, "log"), "Natural logarithm."),
    "log2": (deferred(np, "log2"), "Base-2 logarithm."),
    "log10": (deferred(np, "log10"), "Base-10 logarithm."),
    "sqrt": (deferred(np, "sqrt"), "Square root."),
    "rsqrt": (_rsqrt, "Reciprocal square root, 1 / sqrt(x)."),
    "erf": (_erf_array, "The Gauss error function."),
    "sin": (deferred(np, "sin"), "Sine."),
    "cos": (deferred(np, "cos"), "Cosine."),
    "tan": (deferred(np, "tan"), "Tangent."),
    "atan": (deferred(np, "arctan"), "Arc tangent."),
    # FastMath's ops: the reference is the exact function; compiled float32 code uses an
    # approximation within the relative error stated (lower/te/mathfuncs.py)
    "fast_exp": (deferred(np, "exp"), "exp by a fast approximation (relative error at most 5e-6 in float32; "
                         "0 below -87.33)."),
    "fast_tanh": (deferred(np, "tanh"), "tanh by a fast rational approximation (relative error at most 4e-7 "
                           "in float32)."),
    "fast_erf": (_erf_array, "erf by a fast rational approximation (relative error at most 4e-7 "
                             "in float32)."),
}

ANY_FUNCS = {
    "negative": (deferred(np, "negative"), "-x."),
    "abs": (deferred(np, "abs"), "Absolute value."),
    "sign": (deferred(np, "sign"), "-1, 0 or 1 by the sign of x."),
    "round": (_round, "Round to the nearest integer, halves away from zero."),
    "floor": (deferred(np, "floor"), "Largest integer not greater than x."),
    "ceil": (deferred(np, "ceil"), "Smallest integer not less than x."),
    "trunc": (deferred(np, "trunc"), "x rounded toward zero."),
    "copy": (deferred(np, "copy"), "A copy of x."),
}


def _same_type(name: str, floats_only: bool):
    def relation(data, attrs):
        t = tensor(data, f"{name}: data", 0)
        if floats_only and not t.dtype.startswith(("float", "bfloat")):
            raise OpTypeError(f"{name} expects a floating-point tensor, found {type_text(t)}", 0)
        return t

    return relation


def _keep_dtype(fn):
    def compute(x, attrs):
        if x.dtype.kind in "iub" and fn in (np.floor, np.ceil, np.trunc, _round):
            return np.copy(x)
        return np.asarray(fn(x)).astype(x.dtype, copy=False)

    return compute


for _name, (_fn, _doc) in {**FLOAT_FUNCS, **ANY_FUNCS}.items():
    _op = define(_name, ("data",), ELEMWISE, doc=_doc)
    _op.relation(_same_type(_name, _name in FLOAT_FUNCS))
    _op.reference(_keep_dtype(_fn))


def _bool_relation(name: str):
    def relation(data, attrs):
        t = tensor(data, f"{name}: data", 0)
        if t.dtype != "bool":
            raise OpTypeError(f"{name} expects a bool tensor, found {type_text(t)}", 0)
        return t

    return relation


logical_not = define("logical_not", ("data",), ELEMWISE, doc="Element-wise boolean not.")
logical_not.relation(_bool_relation("logical_not"))
logical_not.reference(lambda x, attrs: np.logical_not(x))

bitwise_not = define("bitwise_not", ("data",), ELEMWISE,
                     doc="Element-wise not of the bits of an integer (of bool: logical not).")


@bitwise_not.relation
def _(data, attrs):
    t = tensor(data, "bitwise_not: data", 0)
    if not (t.dtype == "bool" or t.dtype.startswith(("int", "uint"))):
        raise OpTypeError(f"bitwise_not expects an integer or bool tensor, found {type_text(t)}", 0)
    return t


bitwise_not.reference(lambda x, attrs: np.invert(x))


def _float_predicate(name: str, fn, doc: str) -> None:
    opdef = define(name, ("data",), ELEMWISE, doc=doc)

    @opdef.relation
    def _(data, attrs):
        return TensorType(tensor(data, f"{name}: data", 0).shape, "bool")

    opdef.reference(lambda x, attrs: fn(x))


_float_predicate("isnan", deferred(np, "isnan"), "True where x is NaN.")
_float_predicate("isinf", deferred(np, "isinf"), "True where x is infinite.")
_float_predicate("isfinite", deferred(np, "isfinite"), "True where x is finite.")


clip = define("clip", ("data",), ELEMWISE, doc="Limit every element to [a_min, a_max].",
              attrs=(Attr("a_min", FLOAT, doc="lower bound"), Attr("a_max", FLOAT, doc="upper bound")))


@clip.relation
def _(data, attrs):
    t = tensor(data, "clip: data", 0)
    if attrs.a_min > attrs.a_max:
        raise OpTypeError(f"clip: a_min {attrs.a_min} is greater than a_max {attrs.a_max}")
    return t


@clip.reference
def _(x, attrs):
    return np.clip(x, attrs.a_min, attrs.a_max).astype(x.dtype)


cast = define("cast", ("data",), ELEMWISE, doc="Convert every element to another dtype.",
              attrs=(Attr("dtype", STR, doc="the target dtype"),))


@cast.relation
def _(data, attrs):
    return TensorType(tensor(data, "cast: data", 0).shape, check_dtype(attrs.dtype))


@cast.reference
def _(x, attrs):
    return x.astype(attrs.dtype)


def _like(name: str, value: int, doc: str) -> None:
    opdef = define(name, ("data",), ELEMWISE, doc=doc)
    opdef.relation(lambda data, attrs: tensor(data, f"{name}: data", 0))
    opdef.reference(lambda x, attrs: np.full_like(x, value))


_like("zeros_like", 0, "A tensor of zeros with the shape and dtype of data.")
_like("ones_like", 1, "A tensor of ones with the shape and dtype of data.")

full_like = define("full_like", ("data", "fill_value"), ELEMWISE,
                   doc="A tensor with the shape and dtype of data, every element fill_value.")


@full_like.relation
def _(data, fill_value, attrs):
    t = tensor(data, "full_like: data", 0)
    f = tensor(fill_value, "full_like: fill_value", 1)
    if f.shape:
        raise OpTypeError(f"full_like: fill_value must be a scalar, found {type_text(f)}", 1)
    return t


@full_like.reference
def _(x, fill, attrs):
    return np.full_like(x, fill)


fixed_point_multiply = define(
    "fixed_point_multiply", ("data",), ELEMWISE,
    attrs=(Attr("multiplier", INT, doc="the Q31 fixed-point multiplier"),
           Attr("shift", INT, doc="the power of two applied after the multiplication")),
    doc="x * (multiplier / 2^31) * 2^shift on integers, rounded to nearest (quantised inference).")


@fixed_point_multiply.relation
def _(data, attrs):
    t = tensor(data, "fixed_point_multiply: data", 0)
    if not t.dtype.startswith(("int", "uint")):
        raise OpTypeError(f"fixed_point_multiply expects an integer tensor, found {type_text(t)}", 0)
    return t


@fixed_point_multiply.reference
def _(x, attrs):
    total = 31 - attrs.shift
    value = x.astype(np.int64) * attrs.multiplier
    if total > 0:
        value = (value + (1 << (total - 1))) >> total
    else:
        value = value << -total
    return value.astype(x.dtype)
