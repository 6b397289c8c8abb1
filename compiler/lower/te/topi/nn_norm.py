"""Normalisation and dropout (reference §7.1) as tensor expressions.

Statistics are computed in float32 at least (float64 stays float64), as the numpy
reference does, in stages: `T_sum` -> `T_mean` (divide), `T_sqsum` of the squared
deviations -> `T_var`, then one element-wise stage that normalises, scales by gamma, adds
beta and casts back to data's dtype.  The batch_norm and dropout tuples are built from
element-wise stages (the moving statistics and the dropout mask are copies / ones).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....ops.reduce import reduce_axes
from .. import expr as te
from .registry import register_compute


def _wide(dtype: str) -> str:
    return str(np.promote_types(dtype, np.float32))


def _copy(t: te.Tensor, name: str) -> te.Tensor:
    return te.compute(t.shape, lambda *i: t[i], name)


def _affine(value: te.PrimExpr, gamma: te.Tensor, beta: te.Tensor, attrs, channel: te.PrimExpr,
            wide: str, dtype: str) -> te.PrimExpr:
    if attrs.scale:
        value = value * te.cast(gamma[channel], wide)
    if attrs.center:
        value = value + te.cast(beta[channel], wide)
    return te.cast(value, dtype)


@register_compute("nn.batch_norm")
def _(data, gamma, beta, moving_mean, moving_var, attrs, out_type):
    """(x - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta along the channel
    axis; with copies of the moving mean and variance."""
    axis = attrs.axis % data.ndim
    wide = _wide(data.dtype)
    eps = te.const(attrs.epsilon, wide)

    def body(*i):
        c = i[axis]
        centred = te.cast(data[i], wide) - te.cast(moving_mean[c], wide)
        value = centred / te.sqrt(te.cast(moving_var[c], wide) + eps)
        return _affine(value, gamma, beta, attrs, c, wide, data.dtype)

    out = te.compute(data.shape, body, "T_batch_norm", tag="nn.batch_norm")
    return out, _copy(moving_mean, "T_moving_mean"), _copy(moving_var, "T_moving_var")


@register_compute("nn.dropout")
def _(data, attrs, out_type):
    """Inference dropout: the data and a mask of ones."""
    ones = te.compute(data.shape, lambda *i: te.const(1, data.dtype), "T_dropout_mask")
    return _copy(data, "T_dropout"), ones


# ---- mean and variance over some axes


def moments(data: te.Tensor, wide: str, shape: Sequence[int], extents: Sequence[int],
            position: Callable[[tuple, list], tuple]) -> tuple[te.Tensor, te.Tensor]:
    """Mean and (biased) variance tensors of `shape`: the element at s covers the data
    positions `position(s, r)` for the reduce variables r of `extents`."""
    count = int(np.prod(extents, dtype=np.int64))
    n = te.const(count, wide)

    def reduce_vars():
        return [te.reduce_axis(e, f"k{k}") for k, e in enumerate(extents)]

    def sums(*s):
        r = reduce_vars()
        return te.sum(te.cast(data[position(s, r)], wide), r)

    total = te.compute(shape, sums, "T_sum")
    mean = te.compute(shape, lambda *s: total[s] / n, "T_mean")

    def squares(*s):
        r = reduce_vars()
        d = te.cast(data[position(s, r)], wide) - mean[s]
        return te.sum(d * d, r)

    sq = te.compute(shape, squares, "T_sqsum")
    var = te.compute(shape, lambda *s: sq[s] / n, "T_var")
    return mean, var


def _keepdims_moments(data: te.Tensor, axes: Sequence[int], wide: str):
    """moments over `axes`, shaped as data with those axes of extent 1."""
    shape = [1 if a in axes else d for a, d in enumerate(data.shape)]

    def position(s, r):
        idx = list(s)
        for a, v in zip(axes, r):
            idx[a] = v
        return tuple(idx)

    mean, var = moments(data, wide, shape, [data.shape[a] for a in axes], position)

    def at(t: te.Tensor, i: tuple) -> te.PrimExpr:
        return t[tuple(0 if a in axes else x for a, x in enumerate(i))]

    return mean, var, at


def _normalized(op: str, data, gamma, beta, attrs, axes: Sequence[int], axis: int) -> te.Tensor:
    wide = _wide(data.dtype)
    mean, var, at = _keepdims_moments(data, axes, wide)
    eps = te.const(attrs.epsilon, wide)

    def body(*i):
        value = (te.cast(data[i], wide) - at(mean, i)) / te.sqrt(at(var, i) + eps)
        return _affine(value, gamma, beta, attrs, i[axis], wide, data.dtype)

    return te.compute(data.shape, body, f"T_{op.removeprefix('nn.')}", tag=op)


@register_compute("nn.layer_norm")
def _(data, gamma, beta, attrs, out_type):
    axis = attrs.axis % data.ndim
    return _normalized("nn.layer_norm", data, gamma, beta, attrs, (axis,), axis)


@register_compute("nn.instance_norm")
def _(data, gamma, beta, attrs, out_type):
    axis = attrs.axis % data.ndim
    axes = tuple(a for a in range(1, data.ndim) if a != axis)
    return _normalized("nn.instance_norm", data, gamma, beta, attrs, axes, axis)


@register_compute("nn.group_norm")
def _(data, gamma, beta, attrs, out_type):
    """Statistics per (leading axes, group) over the group's channels and every axis
    after the channel axis."""
    axis = attrs.axis % data.ndim
    groups = attrs.num_groups
    per_group = data.shape[axis] // groups
    post = data.shape[axis + 1:]
    wide = _wide(data.dtype)

    def position(s, r):
        return tuple(s[:axis]) + (s[axis] * per_group + r[0],) + tuple(r[1:])

    shape = tuple(data.shape[:axis]) + (groups,)
    mean, var = moments(data, wide, shape, (per_group,) + tuple(post), position)
    eps = te.const(attrs.epsilon, wide)

    def body(*i):
        s = tuple(i[:axis]) + (i[axis] // per_group,)
        value = (te.cast(data[i], wide) - mean[s]) / te.sqrt(var[s] + eps)
        return _affine(value, gamma, beta, attrs, i[axis], wide, data.dtype)

    return te.compute(data.shape, body, "T_group_norm", tag="nn.group_norm")


@register_compute("nn.l2_normalize")
def _(data, attrs, out_type):
    """x / sqrt(max(sum of squares over axis, eps))."""
    axes = reduce_axes("nn.l2_normalize", data.ndim, attrs.axis)
    wide = _wide(data.dtype)
    shape = [1 if a in axes else d for a, d in enumerate(data.shape)]

    def squares(*s):
        r = [te.reduce_axis(data.shape[a], f"k{a}") for a in axes]
        idx = list(s)
        for a, v in zip(axes, r):
            idx[a] = v
        x = te.cast(data[tuple(idx)], wide)
        return te.sum(x * x, r)

    total = te.compute(shape, squares, "T_sqsum")
    eps = te.const(attrs.eps, wide)

    def body(*i):
        t = total[tuple(0 if a in axes else x for a, x in enumerate(i))]
        return te.cast(te.cast(data[i], wide) / te.sqrt(te.maximum(t, eps)), data.dtype)

    return te.compute(data.shape, body, "T_l2_normalize", tag="nn.l2_normalize")


@register_compute("nn.lrn")
def _(data, attrs, out_type):
    """x / (bias + alpha * s / size)^beta, s the sum of squares over the size channels
    centred on x (positions past the edges count 0)."""
    axis = attrs.axis % data.ndim
    wide = _wide(data.dtype)
    half, channels = attrs.size // 2, data.shape[axis]

    def window(*i):
        k = te.reduce_axis(attrs.size, "k")
        idx = list(i)
        idx[axis] = i[axis] + k - half
        x = te.cast(data[tuple(idx)], wide)
        inside = te.logical_and(te.ge(idx[axis], 0), te.lt(idx[axis], channels))
        return te.sum(te.select(inside, x * x, te.const(0, wide)), [k])

    total = te.compute(data.shape, window, "T_lrn_sum")
    bias, alpha, size, beta = (te.const(v, wide) for v in (attrs.bias, attrs.alpha, attrs.size, attrs.beta))

    def body(*i):
        denom = te.power(bias + alpha * total[i] / size, beta)
        return te.cast(te.cast(data[i], wide) / denom, data.dtype)

    return te.compute(data.shape, body, "T_lrn", tag="nn.lrn")
