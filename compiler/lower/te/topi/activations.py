"""Activations (reference §7.3): the relu family and the softmax family.

A softmax is four computes, numerically stable as the numpy reference: the maximum along
the axis, exp(x - max), the sum of those, and each exponential times the sum's reciprocal
(`log_softmax`: the maximum, the sum of exp(x - max), and x - max - log(sum)).  float16
is computed in float32.
`nn.fast_softmax` is softmax with the fast exp (elemwise.py `fast`).
"""

from __future__ import annotations

from typing import Sequence

from .. import expr as te
from .elemwise import fast
from .registry import register_compute


@register_compute("nn.relu")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return te.compute(x.shape, lambda *i: te.maximum(x[i], 0), "T_relu")


@register_compute("nn.leaky_relu")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    """alpha in data's dtype (an integer tensor truncates it, as the reference)."""
    alpha = te.const(attrs.alpha, x.dtype)
    return te.compute(x.shape, lambda *i: te.select(te.gt(x[i], 0), x[i], x[i] * alpha), "T_leaky_relu")


@register_compute("nn.prelu")
def _(x: te.Tensor, alpha: te.Tensor, attrs, out_type) -> te.Tensor:
    return te.compute(x.shape, lambda *i: te.select(te.gt(x[i], 0), x[i], x[i] * alpha[i[attrs.axis]]),
                      "T_prelu")


def _wide(dtype: str) -> str:
    return "float32" if dtype == "float16" else dtype


def _drop(i: Sequence[te.PrimExpr], axis: int) -> tuple[te.PrimExpr, ...]:
    return tuple(i[:axis]) + tuple(i[axis + 1:])


def _put(r: Sequence[te.PrimExpr], axis: int, k: te.PrimExpr) -> tuple[te.PrimExpr, ...]:
    return tuple(r[:axis]) + (k,) + tuple(r[axis:])


def _max_along(x: te.Tensor, axis: int, name: str) -> te.Tensor:
    """The row's maximum, NaN not looked for (`max_nnan`: one `maxps` a step, where a
    NaN-keeping max takes three): a row with a NaN has NaN in its sum of exponentials
    whatever maximum is subtracted (softmax_exp and exp keep NaN), so every output of
    the row is NaN either way, as numpy's.  Measured (1 thread, CPU time, 1x12x128x128,
    the kernel alone, alternated in one process, load 6): 0.878x the time with `max`."""
    reduced = _drop(x.shape, axis)
    k = te.reduce_axis(x.shape[axis], "k")
    return te.compute(reduced, lambda *r: te.max_nnan(te.cast(x[_put(r, axis, k)], _wide(x.dtype)), k),
                      f"{name}_maxelem")


def _softmax(x: te.Tensor, axis: int, exp_fn) -> te.Tensor:
    """max, exp(x - max), their sum, then each exponential multiplied by 1 / sum: one
    division a row instead of one a lane, within 1.5 ulp of the quotient, as onnxruntime's
    MLAS scales its softmax rows and TVM's fast_softmax (the division loop was about a
    sixth of softmax's time, by perf samples on 1x12x128x128; at opt level 3 the
    multiply took softmax's 1x12x128x128 from 0.210 ms to 0.178, 1 thread, A/B)."""
    axis = axis % x.ndim
    wide = _wide(x.dtype)
    big = _max_along(x, axis, "T_softmax")
    exp = te.compute(x.shape, lambda *i: exp_fn(te.cast(x[i], wide) - big[_drop(i, axis)]), "T_softmax_exp")
    k = te.reduce_axis(x.shape[axis], "k")
    total = te.compute(big.shape, lambda *r: te.sum(exp[_put(r, axis, k)], k), "T_softmax_expsum")
    return te.compute(x.shape, lambda *i: te.cast(exp[i] * (1.0 / total[_drop(i, axis)]), x.dtype),
                      "T_softmax_norm")


def _shifted_exp(v: te.PrimExpr) -> te.PrimExpr:
    """e^v up to a scale for softmax's v = x - max(x) <= 0: `softmax_exp` on float32
    (2^64 e^v in fewer instructions than `exp`: te/mathfuncs.py; the scale cancels in the
    division by the sum), `exp` on float64.  Measured (1 thread, CPU time, 1x12x128x128,
    the kernel alone, alternated in one run, medians of 30 and 40 pairs, load 5-7):
    0.86-0.87x the time with `exp_nonpositive` (e^min(v, 0), three instructions more)."""
    return te.intrinsic("softmax_exp", v) if v.dtype == "float32" else te.exp(v)


@register_compute("nn.softmax")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _softmax(x, attrs.axis, _shifted_exp)


@register_compute("nn.fast_softmax")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    return _softmax(x, attrs.axis, lambda v: fast("exp", v))


@register_compute("nn.log_softmax")
def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
    axis = attrs.axis % x.ndim
    wide = _wide(x.dtype)
    big = _max_along(x, axis, "T_log_softmax")
    k = te.reduce_axis(x.shape[axis], "k")
    total = te.compute(big.shape, lambda *r: te.sum(te.exp(te.cast(x[_put(r, axis, k)], wide) - big[r]), k),
                       "T_log_softmax_expsum")

    def body(*i):
        r = _drop(i, axis)
        return te.cast(te.cast(x[i], wide) - big[r] - te.log(total[r]), x.dtype)

    return te.compute(x.shape, body, "T_log_softmax")
