"""Reductions (reference §7.5) as tensor expressions.

Each rule is one reduction stage over the axes the op reduces (its output axes are the
kept ones, and the reduced ones with extent 1 under keepdims), tagged with the op name;
reducing no axis at all (exclude listing every axis, a rank-0 tensor) reduces over one
dummy position.  `mean` and `variance` divide the sum in a second stage; argmax/argmin
reduce to int64 positions and cast them to int32 in a second stage.

Dtypes follow the numpy reference: sums and products stay in the data dtype (integers
wrap), float16 mean and variance sum in float32, integer means truncate toward zero.
`all`/`any` are min/max over bool.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ....ops.reduce import reduce_axes
from .. import expr as te
from .registry import register_compute


class Reduction:
    """What a reduction reads: `axes` (sorted data axes reduced), one reduce variable for
    each (`rvars`), and `read(t, out_indices)`, t's element for an output position and
    the reduce variables (t of data's rank, extents 1 broadcasting)."""

    def __init__(self, op: str, data: te.Tensor, attrs) -> None:
        self.axes = reduce_axes(op, data.ndim, attrs.axis, attrs.exclude)
        self.keepdims = attrs.keepdims
        self.rvars = [te.reduce_axis(data.shape[a], f"k{a}") for a in self.axes]
        self.count = int(np.prod([data.shape[a] for a in self.axes], dtype=np.int64))
        self.ndim = data.ndim

    @property
    def loop_axes(self) -> list[te.IterVar]:
        return self.rvars or [te.reduce_axis(1, "k")]

    def data_indices(self, out: tuple) -> list[te.PrimExpr]:
        """The data position an output position and the reduce variables read."""
        out = list(out)
        idx: list[te.PrimExpr] = []
        for a in range(self.ndim):
            if a in self.axes:
                idx.append(self.rvars[self.axes.index(a)])
                if self.keepdims:
                    out.pop(0)
            else:
                idx.append(out.pop(0))
        return idx

    def read(self, t: te.Tensor, out: tuple) -> te.PrimExpr:
        idx = self.data_indices(out)
        return t[tuple(0 if d == 1 else i for d, i in zip(t.shape, idx))] if t.ndim else t[()]


_COMBINERS: dict[str, Callable] = {"sum": te.sum, "prod": te.prod, "max": te.max, "min": te.min,
                                   "all": te.min, "any": te.max}


def _simple(op: str) -> None:
    combine = _COMBINERS[op]

    @register_compute(op)
    def rule(data: te.Tensor, attrs, out_type) -> te.Tensor:
        r = Reduction(op, data, attrs)
        return te.compute(out_type.shape, lambda *i: combine(r.read(data, i), r.loop_axes),
                          f"T_{op}", tag=op)


for _op in _COMBINERS:
    _simple(_op)


def _wide(dtype: str) -> str:
    return "float32" if dtype == "float16" else dtype


def divide_by(total: te.Tensor, count: int, dtype: str, name: str) -> te.Tensor:
    """total / count cast to dtype; integers truncate toward zero, with count in data's
    dtype as the reference has it."""
    if te.is_float(total.dtype):
        n = te.const(count, total.dtype)
        return te.compute(total.shape, lambda *i: te.cast(total[i] / n, dtype), name)
    n = te.const(np.asarray(count).astype(dtype).item(), dtype)
    return te.compute(total.shape, lambda *i: te.truncdiv(total[i], n), name)


@register_compute("mean")
def _(data: te.Tensor, attrs, out_type) -> te.Tensor:
    r = Reduction("mean", data, attrs)
    wide = _wide(data.dtype)
    total = te.compute(out_type.shape, lambda *i: te.sum(te.cast(r.read(data, i), wide), r.loop_axes),
                       "T_mean_sum", tag="mean")
    return divide_by(total, r.count, data.dtype, "T_mean")


@register_compute("variance")
def _(data: te.Tensor, mean: te.Tensor, attrs, out_type) -> te.Tensor:
    """sum((data - mean)^2) / (n or n - 1); the difference is taken in data's dtype."""
    r = Reduction("variance", data, attrs)
    wide = _wide(data.dtype)

    def square(*i):
        d = te.cast(r.read(data, i) - r.read(mean, i), wide)
        return te.sum(d * d, r.loop_axes)

    total = te.compute(out_type.shape, square, "T_variance_sum", tag="variance")
    return divide_by(total, r.count - (1 if attrs.unbiased else 0), data.dtype, "T_variance")


def _arg(op: str) -> None:
    reducer = te.argmax if op == "argmax" else te.argmin

    @register_compute(op)
    def rule(data: te.Tensor, attrs, out_type) -> te.Tensor:
        """The flat position within the reduced axes (row-major); select_last_index walks
        them backwards, so the first hit is the last position."""
        r = Reduction(op, data, attrs)
        last = attrs.select_last_index
        extents = [data.shape[a] for a in r.axes]

        def body(*i):
            idx = r.data_indices(i)
            flat: te.PrimExpr = te.const(0, te.INDEX)
            for a, v, n in zip(r.axes, r.rvars, extents):
                pos = (n - 1) - v if last else v
                idx[a] = pos
                flat = flat * n + pos
            return reducer(data[tuple(idx)], r.loop_axes, flat)

        positions = te.compute(out_type.shape, body, f"T_{op}", tag=op)
        return te.compute(out_type.shape, lambda *i: te.cast(positions[i], out_type.dtype), f"T_{op}_cast")


_arg("argmax")
_arg("argmin")
