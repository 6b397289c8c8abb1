"""Activations (reference §7.3): the relu family and the softmax family.

`nn.relu` and `nn.leaky_relu` map each element on its own (ElemWise); `nn.prelu` takes a
per-channel slope (Broadcast); the softmaxes normalise along one axis (OutEWiseFusable).
All keep data's type.  TVM has no other `nn.*` activation op in Relay (gelu, silu and
hardswish are built from these and element-wise ops by the frontends).
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from .attrs import FLOAT, INT, Attr, AttrError
from .registry import BROADCAST, ELEMWISE, OUT_EWISE_FUSABLE, OpTypeError, define
from .shapes import axis_index, dims, same_dim, tensor, type_text


def _floating(op: str, t) -> None:
    if not t.dtype.startswith(("float", "bfloat")):
        raise OpTypeError(f"{op} expects a floating-point tensor, found {type_text(t)}", 0)


relu = define("nn.relu", ("data",), ELEMWISE, doc="max(x, 0), element by element.")
relu.relation(lambda data, attrs: tensor(data, "nn.relu: data", 0))


@relu.reference
def _(x, attrs):
    return np.maximum(x, np.zeros((), x.dtype))


leaky_relu = define("nn.leaky_relu", ("data",), ELEMWISE,
                    attrs=(Attr("alpha", FLOAT, 0.25, "slope for x < 0 (at least 0)"),),
                    doc="x where x > 0, else alpha * x.")


@leaky_relu.relation
def _(data, attrs):
    if attrs.alpha < 0:  # TVM declares a lower bound of 0 for alpha
        raise AttrError(f"nn.leaky_relu: attribute alpha must be at least 0, got {attrs.alpha}",
                        "alpha")
    return tensor(data, "nn.leaky_relu: data", 0)


@leaky_relu.reference
def _(x, attrs):
    alpha = np.asarray(attrs.alpha).astype(x.dtype)  # an integer tensor truncates alpha, as TVM
    return np.where(x > 0, x, x * alpha).astype(x.dtype)


prelu = define("nn.prelu", ("data", "alpha"), BROADCAST,
               attrs=(Attr("axis", INT, 1, "the channel axis alpha runs along (not negative)"),),
               doc="x where x > 0, else alpha[c] * x, with c the index along axis; alpha is 1-D.")


@prelu.relation
def _(data, alpha, attrs):
    d = tensor(data, "nn.prelu: data", 0)
    a = tensor(alpha, "nn.prelu: alpha", 1)
    if not 0 <= attrs.axis < d.ndim:  # TVM indexes the shape with axis as written
        raise OpTypeError(f"nn.prelu: axis {attrs.axis} is out of range for a tensor of rank "
                          f"{d.ndim} (expected 0 to {d.ndim - 1}; negative axes are not accepted)")
    channels = dims(d)[attrs.axis]
    if a.ndim != 1:
        raise OpTypeError(f"nn.prelu: alpha must be 1-D with the {channels} channels of data along "
                          f"axis {attrs.axis}, found {type_text(a)} (data {type_text(d)})", 1)
    if not same_dim(dims(a)[0], channels):
        raise OpTypeError(f"nn.prelu: alpha has {dims(a)[0]} elements but data has {channels} "
                          f"along axis {attrs.axis} (alpha {type_text(a)}, data {type_text(d)})", 1)
    if a.dtype != d.dtype:
        raise OpTypeError(f"nn.prelu: alpha has dtype {a.dtype} but data has {d.dtype} "
                          f"(alpha {type_text(a)}, data {type_text(d)})", 1)
    return d


@prelu.reference
def _(x, alpha, attrs):
    shape = [1] * x.ndim
    shape[attrs.axis] = alpha.shape[0]
    return np.where(x > 0, x, x * alpha.reshape(shape)).astype(x.dtype)


def _softmax_relation(name: str):
    def relation(data, attrs):
        d = tensor(data, f"{name}: data", 0)
        _floating(name, d)
        axis_index(attrs.axis, d.ndim, f"{name}: axis")
        return d

    return relation


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    wide = x.astype(np.promote_types(x.dtype, np.float32))
    e = np.exp(wide - np.max(wide, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    wide = x.astype(np.promote_types(x.dtype, np.float32))
    shifted = wide - np.max(wide, axis=axis, keepdims=True)
    return (shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))).astype(x.dtype)


SOFTMAXES = {
    "nn.softmax": (_softmax, "exp(x) / sum(exp(x)) along axis."),
    "nn.fast_softmax": (_softmax, "softmax with fast_exp in place of exp (what FastMath makes of "
                                  "nn.softmax)."),
    "nn.log_softmax": (_log_softmax, "log(softmax(x)) along axis, computed as x - max - "
                                     "log(sum(exp(x - max)))."),
}

for _name, (_fn, _doc) in SOFTMAXES.items():
    _op = define(_name, ("data",), OUT_EWISE_FUSABLE,
                 attrs=(Attr("axis", INT, -1, "the axis to normalise along"),), doc=_doc)
    _op.relation(_softmax_relation(_name))
    _op.reference(lambda x, attrs, _fn=_fn: _fn(x, attrs.axis))
