"""Normalisation and dropout (reference §7.1).

`nn.batch_norm` (OutEWiseFusable) gives a 3-tuple: the normalised data and the two
channel vectors; consumers read `%k.0`.  `nn.layer_norm`, `nn.group_norm`,
`nn.instance_norm` and `nn.l2_normalize` have no pattern: SimplifyInference rewrites them
into element-wise ops and reductions before fusion, and the numpy semantics here are those
rewrites'.  `nn.lrn` and `nn.dropout` are Opaque; dropout is the identity at inference
(its mask is all ones).

gamma, beta (and batch_norm's moving mean and variance) are 1-D, as long as data's channel
axis, in data's dtype; they are checked even when `center`/`scale` switch them off, as
TVM does.  Statistics are computed in float32 at least and cast back to data's dtype.
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType, TupleType
from .attrs import BOOL, FLOAT, INT, OPT_INTS, Attr, AttrError
from .reduce import reduce_axes
from .registry import OPAQUE, OUT_EWISE_FUSABLE, OpTypeError, define
from .shapes import axis_index, dims, known, same_dim, tensor, type_text


EPSILON = Attr("epsilon", FLOAT, 1e-05, "added to the variance before the square root")
CENTER = Attr("center", BOOL, True, "add beta")
SCALE = Attr("scale", BOOL, True, "multiply by gamma")


def _floating_data(op: str, data) -> TensorType:
    d = tensor(data, f"{op}: data", 0)
    if not d.dtype.startswith(("float", "bfloat")):
        raise OpTypeError(f"{op} expects a floating-point tensor, found {type_text(d)}", 0)
    return d


def _channel_vector(op: str, name: str, ty, arg: int, d: TensorType, axis: int, written: int):
    """Check that argument `arg` is a 1-D tensor of data's channel count and dtype."""
    v = tensor(ty, f"{op}: {name}", arg)
    channels = dims(d)[axis]
    if v.ndim != 1:
        raise OpTypeError(f"{op}: {name} must be 1-D with the {channels} channels of data along "
                          f"axis {written}, found {type_text(v)} (data {type_text(d)})", arg)
    if not same_dim(dims(v)[0], channels):
        raise OpTypeError(f"{op}: {name} has {dims(v)[0]} elements but data has {channels} "
                          f"channels along axis {written} ({name} {type_text(v)}, "
                          f"data {type_text(d)})", arg)
    if v.dtype != d.dtype:
        raise OpTypeError(f"{op}: {name} has dtype {v.dtype} but data has {d.dtype} "
                          f"({name} {type_text(v)}, data {type_text(d)})", arg)
    return v


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.promote_types(x.dtype, np.float32))


def _along(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A channel vector shaped to broadcast along `axis` of an ndim-tensor."""
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return _wide(v).reshape(shape)


def _normalize(x: np.ndarray, axes: tuple[int, ...], epsilon: float) -> np.ndarray:
    """(x - mean) / sqrt(var + epsilon) over `axes` (biased variance), in float32 or wider."""
    w = _wide(x)
    mean = w.mean(axis=axes, keepdims=True)
    var = ((w - mean) ** 2).mean(axis=axes, keepdims=True)
    return (w - mean) / np.sqrt(var + np.asarray(epsilon, w.dtype))


def _affine(out: np.ndarray, gamma, beta, attrs, axis: int, dtype) -> np.ndarray:
    if attrs.scale:
        out = out * _along(gamma, out.ndim, axis)
    if attrs.center:
        out = out + _along(beta, out.ndim, axis)
    return out.astype(dtype)


# ---- nn.batch_norm ----------------------------------------------------------------------

batch_norm = define(
    "nn.batch_norm", ("data", "gamma", "beta", "moving_mean", "moving_var"), OUT_EWISE_FUSABLE,
    attrs=(Attr("axis", INT, 1, "the channel axis (-1: the last)"), EPSILON, CENTER, SCALE),
    doc="Inference batch normalisation: (x - moving_mean) / sqrt(moving_var + epsilon) * gamma "
        "+ beta along the channel axis.  A 3-tuple: the result, moving_mean and moving_var.")


@batch_norm.relation
def _(data, gamma, beta, moving_mean, moving_var, attrs):
    d = _floating_data("nn.batch_norm", data)
    if d.ndim == 0:
        raise OpTypeError(f"nn.batch_norm needs data of rank 1 or more, found {type_text(d)}", 0)
    if not -1 <= attrs.axis < d.ndim:  # TVM allows -1 and no other negative axis
        raise OpTypeError(f"nn.batch_norm: axis {attrs.axis} is out of range for a tensor of rank "
                          f"{d.ndim} (expected -1 to {d.ndim - 1})")
    axis = attrs.axis % d.ndim
    vectors = [_channel_vector("nn.batch_norm", name, ty, i, d, axis, attrs.axis)
               for i, (name, ty) in enumerate((("gamma", gamma), ("beta", beta),
                                               ("moving_mean", moving_mean),
                                               ("moving_var", moving_var)), 1)]
    channels = d.shape[axis]
    if not known(dims(d)[axis]):  # a vector may know what data leaves open
        channels = next((v.shape[0] for v in vectors if known(dims(v)[0])), channels)
    vec = TensorType((channels,), d.dtype)
    return TupleType((d, vec, vec))


@batch_norm.reference
def _(x, gamma, beta, moving_mean, moving_var, attrs):
    axis = attrs.axis % x.ndim
    mean, var = _along(moving_mean, x.ndim, axis), _along(moving_var, x.ndim, axis)
    out = (_wide(x) - mean) / np.sqrt(var + np.asarray(attrs.epsilon, var.dtype))
    return _affine(out, gamma, beta, attrs, axis, x.dtype), moving_mean.copy(), moving_var.copy()


# ---- nn.layer_norm, nn.group_norm, nn.instance_norm ---------------------------------------

def _norm_relation(op: str, min_rank: int = 0):
    def relation(data, gamma, beta, attrs):
        d = _floating_data(op, data)
        if d.ndim < min_rank:
            raise OpTypeError(f"{op} needs data of rank {min_rank} or more, found {type_text(d)}", 0)
        axis = axis_index(attrs.axis, d.ndim, f"{op}: axis")
        _channel_vector(op, "gamma", gamma, 1, d, axis, attrs.axis)
        _channel_vector(op, "beta", beta, 2, d, axis, attrs.axis)
        if op == "nn.group_norm":
            _check_groups(d, axis, attrs)
        return d

    return relation


layer_norm = define(
    "nn.layer_norm", ("data", "gamma", "beta"), None,
    attrs=(Attr("axis", INT, -1, "the axis to normalise over"), EPSILON, CENTER, SCALE),
    doc="Layer normalisation: (x - mean) / sqrt(var + epsilon) * gamma + beta, with mean and "
        "variance over axis; gamma and beta run along axis.")
layer_norm.relation(_norm_relation("nn.layer_norm"))


@layer_norm.reference
def _(x, gamma, beta, attrs):
    axis = attrs.axis % x.ndim
    return _affine(_normalize(x, (axis,), attrs.epsilon), gamma, beta, attrs, axis, x.dtype)


group_norm = define(
    "nn.group_norm", ("data", "gamma", "beta"), None,
    attrs=(Attr("num_groups", INT, 0, "how many groups the channels split into"),
           Attr("axis", INT, 1, "the channel axis"), EPSILON, CENTER, SCALE),
    doc="Group normalisation: the channels split into num_groups groups; each group is "
        "normalised over its channels and the axes after the channel axis, then gamma and beta "
        "apply per channel.")


def _check_groups(d: TensorType, axis: int, attrs) -> None:
    if attrs.num_groups < 1:  # TVM would divide by zero when it lowers the op
        raise AttrError(f"nn.group_norm: attribute num_groups must be at least 1, got "
                        f"{attrs.num_groups}", "num_groups")
    channels = dims(d)[axis]
    if known(channels) and channels % attrs.num_groups:
        raise OpTypeError(f"nn.group_norm: num_groups {attrs.num_groups} does not divide the "
                          f"{channels} channels of data along axis {attrs.axis} "
                          f"(data {type_text(d)})")


group_norm.relation(_norm_relation("nn.group_norm"))


@group_norm.reference
def _(x, gamma, beta, attrs):
    axis = attrs.axis % x.ndim
    groups = attrs.num_groups
    split = x.shape[:axis] + (groups, x.shape[axis] // groups) + x.shape[axis + 1:]
    # As SimplifyInference lowers it: the group's own channels and every axis after the
    # channel axis (so for NHWC only the channels within the group).
    out = _normalize(x.reshape(split), tuple(range(axis + 1, len(split))), attrs.epsilon)
    return _affine(out.reshape(x.shape), gamma, beta, attrs, axis, x.dtype)


instance_norm = define(
    "nn.instance_norm", ("data", "gamma", "beta"), None,
    attrs=(Attr("axis", INT, 1, "the channel axis"), EPSILON, CENTER, SCALE),
    doc="Instance normalisation: each sample and channel normalised over the remaining axes "
        "(all but the first and the channel axis), then gamma and beta per channel.")
instance_norm.relation(_norm_relation("nn.instance_norm", min_rank=3))


@instance_norm.reference
def _(x, gamma, beta, attrs):
    axis = attrs.axis % x.ndim
    axes = tuple(i for i in range(1, x.ndim) if i != axis)
    return _affine(_normalize(x, axes, attrs.epsilon), gamma, beta, attrs, axis, x.dtype)


# ---- nn.l2_normalize --------------------------------------------------------------------

l2_normalize = define(
    "nn.l2_normalize", ("data",), None,
    attrs=(Attr("eps", FLOAT, doc="lower bound for the sum of squares"),
           Attr("axis", OPT_INTS, None, "axes to sum over (None: all)")),
    doc="x / sqrt(max(sum(x^2 over axis), eps)).")


@l2_normalize.relation
def _(data, attrs):
    d = _floating_data("nn.l2_normalize", data)
    reduce_axes("nn.l2_normalize", d.ndim, attrs.axis)
    return d


@l2_normalize.reference
def _(x, attrs):
    w = _wide(x)
    axes = reduce_axes("nn.l2_normalize", x.ndim, attrs.axis)
    total = np.sum(w * w, axis=axes, keepdims=True)
    return (w / np.sqrt(np.maximum(total, np.asarray(attrs.eps, w.dtype)))).astype(x.dtype)


# ---- nn.lrn -----------------------------------------------------------------------------

lrn = define(
    "nn.lrn", ("data",), OPAQUE,
    attrs=(Attr("size", INT, 5, "window length along axis (odd)"),
           Attr("axis", INT, 1, "the channel axis: 1 (NCHW) or 3 (NHWC)"),
           Attr("bias", FLOAT, 2.0, "added before the power"),
           Attr("alpha", FLOAT, 0.0001, "scale of the sum of squares"),
           Attr("beta", FLOAT, 0.75, "exponent")),
    doc="Local response normalisation across channels: x / (bias + alpha * s / size)^beta, "
        "s the sum of squares over the size channels centred on x (zeros past the edges).")


@lrn.relation
def _(data, attrs):
    # TVM's relation is the identity; these are the conditions TVM needs to build it.
    d = _floating_data("nn.lrn", data)
    if d.ndim != 4:
        raise OpTypeError(f"nn.lrn needs a 4-D tensor (NCHW or NHWC), found {type_text(d)}", 0)
    if attrs.axis not in (1, 3):
        raise AttrError(f"nn.lrn: attribute axis must be 1 (NCHW) or 3 (NHWC), got {attrs.axis}",
                        "axis")
    if attrs.size < 1 or attrs.size % 2 == 0:
        raise AttrError(f"nn.lrn: attribute size must be a positive odd number, got {attrs.size}",
                        "size")
    return d


@lrn.reference
def _(x, attrs):
    axis = attrs.axis % x.ndim
    w = _wide(x)
    half = attrs.size // 2
    pad = [(0, 0)] * x.ndim
    pad[axis] = (half, half)
    padded = np.pad(w * w, pad)
    extent = x.shape[axis]
    total = sum(np.take(padded, np.arange(k, k + extent), axis=axis) for k in range(attrs.size))
    denom = (attrs.bias + attrs.alpha * total / attrs.size) ** attrs.beta
    return (w / denom).astype(x.dtype)


# ---- nn.dropout -------------------------------------------------------------------------

dropout = define(
    "nn.dropout", ("data",), OPAQUE,
    attrs=(Attr("rate", FLOAT, 0.5, "the probability of dropping an element in training"),),
    doc="Dropout; a 2-tuple (result, mask) of data's type.  At inference the result is data and "
        "the mask all ones (SimplifyInference replaces `%k.0` by data).")


@dropout.relation
def _(data, attrs):
    d = tensor(data, "nn.dropout: data", 0)
    return TupleType((d, d))


@dropout.reference
def _(x, attrs):
    return x.copy(), np.ones_like(x)
