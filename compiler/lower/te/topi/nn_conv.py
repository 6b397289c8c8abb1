"""Convolutions, dense and matmul (reference §7.1) as tensor expressions.

A convolution is two stages: `T_pad`, the input with its spatial axes padded (a select on
the bounds that reads the input only inside them; skipped when there is no padding), then
the reduction over input channels and kernel positions, tagged with the op name so that
default schedules recognise it.  Arithmetic is written in the canonical layouts (NCHW and
OIHW for conv2d, IOHW for conv2d_transpose, ...); every layout the relation accepts is
read and written through an index map, channel-blocked ones (NCHW8c, OIHW8i8o) included,
so the result comes out directly in `out_layout`.  A split spatial axis (NCHW4w) is a
LoweringError.

A float32 conv2d in NCHW/OIHW without groups, or depthwise, with at least 16 channels
is computed channel-blocked instead (conv_blocked.py), and so is the float32
nn.contrib_conv2d_NCHWc and nn.contrib_depthwise_conv2d_NCHWc that AlterOpLayout makes
(NCHW[x]c, OIHW[x]i[y]o or OIHW1i[x]o, NCHW[y]c: their operands are blocked already).

A transposed convolution is a convolution with the flipped kernel over `T_pad`, the input
dilated by the strides (zeros between elements) and padded by dilation*(K-1) - padding;
strided without dilation, it is computed by phases instead, without the zeros
(conv_transpose.py).

Products are summed as the numpy reference does: floats in float32 (float64 when a side
is float64), integers in `out_dtype` (modulo 2^bits the same as summing exactly and
wrapping at the end).  When that is not `out_dtype` (float16 results) a stage `T_cast`
follows the tagged reduction.
"""

from __future__ import annotations

import math

from typing import Callable, Sequence

from ....ops.conv_geometry import ConvSpec, Layout, conv_plan, forward_shape, is_depthwise, result_dtype
from ....ops.nn_conv import CONV1D, CONV1D_T, CONV2D, CONV2D_NCHWC, CONV2D_T, CONV3D, DW_CONV2D_NCHWC
from ...errors import LoweringError
from .. import expr as te
from .conv_blocked import (blocked_conv2d, blocked_depthwise2d, blocked_kind, nchwc_conv2d, nchwc_depthwise2d,
                           nchwc_depthwise_kind, nchwc_kind)
from .registry import register_compute

Indices = dict[str, te.PrimExpr]


# ---- layouts as index maps


def read_in_layout(t: te.Tensor, layout: Layout, idx: Indices) -> te.PrimExpr:
    """`t`, laid out as `layout`, at the canonical position `idx` (letter -> index)."""
    out: list[te.PrimExpr] = []
    for k, (letter, factor) in enumerate(layout.axes):
        if factor is None:
            sub = layout.factor(letter)
            out.append(idx[letter] if sub is None else idx[letter] // sub)
        else:  # a sub-axis split again (OHWI16i64o2i) reads its digit: (index // inner) % factor
            inner = math.prod(layout.axes[j][1] for j in layout.subs(letter.upper()) if j > k)
            out.append((idx[letter.upper()] // inner if inner > 1 else idx[letter.upper()]) % factor)
    return t[tuple(out)]


def canonical_indices(layout: Layout, axes: Sequence[te.PrimExpr]) -> Indices:
    """The canonical position of the element at `axes` of a tensor laid out as `layout`."""
    idx: Indices = {letter: ax for (letter, factor), ax in zip(layout.axes, axes) if factor is None}
    for (letter, factor), ax in zip(layout.axes, axes):
        if factor is not None:
            idx[letter.upper()] = idx[letter.upper()] * factor + ax
    return idx


def whole_spatial(op: str, spatial: str, layout: Layout, attr: str) -> None:
    for letter in spatial:
        if layout.factor(letter) is not None:
            raise LoweringError(f"{op}: {attr} {layout.name} splits the spatial axis {letter}; "
                                   f"lowering needs it whole")


# ---- dtypes


def acc_dtype(out_dtype: str, *dtypes: str) -> str:
    """The dtype products are summed in (see the module doc)."""
    if te.is_float(out_dtype) or any(te.is_float(d) for d in dtypes):
        return "float64" if "float64" in (out_dtype, *dtypes) else "float32"
    return out_dtype


def finish(result: te.Tensor, out_dtype: str) -> te.Tensor:
    """`result` cast to `out_dtype` by a stage of its own when it is not in it already."""
    if result.dtype == out_dtype:
        return result
    return te.compute(result.shape, lambda *i: te.cast(result[i], out_dtype), "T_cast")


# ---- padding


def resized_stage(data: te.Tensor, layout: Layout, spatial: str, extents: Sequence[int],
                  source: Callable[[Indices], tuple[te.PrimExpr, te.PrimExpr]],
                  fill: te.PrimExpr, name: str = "T_pad") -> te.Tensor:
    """A stage in `data`'s layout with its spatial axes resized to `extents`: at the
    canonical position idx it is `value if cond else fill`, `(cond, value) = source(idx)`."""
    shape = list(data.shape)
    for letter, extent in zip(spatial, extents):
        shape[layout.index(letter)] = extent

    def body(*axes):
        cond, value = source(canonical_indices(layout, axes))
        return te.select(cond, value, fill)

    return te.compute(shape, body, name)


def pad_spatial(data: te.Tensor, layout: Layout, spatial: str, before: Sequence[int],
                after: Sequence[int], fill: te.PrimExpr | None = None) -> te.Tensor:
    """`T_pad`: data padded on its spatial axes with `fill` (default 0), in fill's dtype;
    data itself when there is no padding."""
    if not any(before) and not any(after):
        return data
    fill = te.const(0, data.dtype) if fill is None else fill
    sizes = [data.shape[layout.index(letter)] for letter in spatial]

    def source(idx: Indices):
        inside: list[te.PrimExpr] = []
        shifted = dict(idx)
        for letter, b, a, n in zip(spatial, before, after, sizes):
            pos = idx[letter] - b
            if b:
                inside.append(te.ge(pos, 0))
            if a:
                inside.append(te.lt(pos, n))
            shifted[letter] = pos
        return te.all_of(*inside), te.cast(read_in_layout(data, layout, shifted), fill.dtype)

    extents = [n + b + a for n, b, a in zip(sizes, before, after)]
    return resized_stage(data, layout, spatial, extents, source, fill)


# ---- convolution


Term = Callable[[te.PrimExpr, Indices], te.PrimExpr]


def conv_forward(op: str, padded: te.Tensor, data_layout: Layout, weight: te.Tensor,
                 kernel_layout: Layout, out_shape: Sequence[int], out_layout: Layout, spatial: str,
                 strides: Sequence[int], dilation: Sequence[int], groups: int,
                 data_term: Term, weight_term: Term) -> te.Tensor:
    """The tagged reduction of a convolution over `padded` (canonical NC+spatial, padding
    already applied) with `weight` (canonical OI+spatial).  `data_term(value, idx)` and
    `weight_term(value, idx)` turn what is read into the factors of the product (a cast,
    qnn's zero-point subtraction); idx is the output's canonical position."""
    dshape = forward_shape(data_layout, padded.shape, "NC" + spatial)
    wshape = forward_shape(kernel_layout, weight.shape, "OI" + spatial)
    w_out, w_in = wshape[0], wshape[1]
    # depthwise with a channel multiplier: weight (C, multiplier, *K), output c*m + j
    multiplier = w_in if is_depthwise(groups, dshape[1], w_out) and w_in != 1 else None
    rks = [te.reduce_axis(k, f"r{letter.lower()}") for letter, k in zip(spatial, wshape[2:])]
    rc = None if multiplier is not None else te.reduce_axis(w_in, "rc")
    per_group = w_out // groups

    def body(*axes):
        idx = canonical_indices(out_layout, axes)
        o = idx["C"]
        didx: Indices = {"N": idx["N"]}
        widx: Indices = {}
        for i, letter in enumerate(spatial):
            didx[letter] = idx[letter] * strides[i] + rks[i] * dilation[i]
            widx[letter] = rks[i]
        if rc is None:
            didx["C"], widx["O"], widx["I"] = o // multiplier, o // multiplier, o % multiplier
        else:
            didx["C"] = rc if groups == 1 else (o // per_group) * w_in + rc
            widx["O"], widx["I"] = o, rc
        x = data_term(read_in_layout(padded, data_layout, didx), idx)
        w = weight_term(read_in_layout(weight, kernel_layout, widx), idx)
        return te.sum(x * w, axis=([] if rc is None else [rc]) + rks)

    return te.compute(out_shape, body, f"T_{op.removeprefix('nn.')}", tag=op)


def _cast_term(dtype: str) -> Term:
    return lambda value, idx: te.cast(value, dtype)


def _channels(shape: Sequence[int], layout: Layout) -> int | None:
    """The channels of an NCHW[x]c tensor of `shape`, None when a dimension is not static."""
    dims = dict(zip((a for a, _ in layout.axes), shape))
    if not all(isinstance(dims.get(a), int) for a in "Cc"):
        return None
    return dims["C"] * dims["c"]


def _conv_rule(spec: ConvSpec):
    from .conv_transpose import phased_conv_transpose, phases_apply  # it reads this file's helpers

    op = spec.name

    @register_compute(op)
    def rule(data: te.Tensor, weight: te.Tensor, attrs, out_type) -> te.Tensor:
        plan = conv_plan(spec, attrs)
        whole_spatial(op, spec.spatial, plan.data_layout, "data_layout")
        whole_spatial(op, spec.spatial, plan.out_layout, "out_layout")
        out_dtype = result_dtype(attrs, data.dtype)
        acc = acc_dtype(out_dtype, data.dtype, weight.dtype)
        if spec.transpose and phases_apply(spec, plan):
            result = phased_conv_transpose(op, spec, plan, data, weight, out_type.shape, acc)
        elif spec.transpose:
            result = _conv_transpose(op, spec, plan, data, weight, out_type.shape, acc)
        else:
            kind = blocked_kind(op, plan, data, weight, acc)
            if kind == "depthwise":
                result = blocked_depthwise2d(data, weight, out_type.shape, plan, acc)
            else:
                padded = pad_spatial(data, plan.data_layout, spec.spatial, plan.pad_before, plan.pad_after)
                if kind == "conv":
                    result = blocked_conv2d(padded, weight, out_type.shape, plan.strides, plan.dilation, acc)
                elif nchwc_kind(op, plan, acc, _channels(data.shape, plan.data_layout),
                                _channels(out_type.shape, plan.out_layout)):
                    result = nchwc_conv2d(padded, weight, out_type.shape, plan.strides, plan.dilation, acc,
                                          plan.groups)
                elif nchwc_depthwise_kind(op, plan, acc):
                    result = nchwc_depthwise2d(padded, weight, out_type.shape, plan.strides, plan.dilation, acc)
                else:
                    result = conv_forward(op, padded, plan.data_layout, weight, plan.kernel_layout,
                                          out_type.shape, plan.out_layout, spec.spatial, plan.strides,
                                          plan.dilation, plan.groups, _cast_term(acc), _cast_term(acc))
        return finish(result, out_dtype)

    return rule


def _conv_transpose(op: str, spec: ConvSpec, plan, data: te.Tensor, weight: te.Tensor,
                    out_shape: Sequence[int], acc: str) -> te.Tensor:
    spatial = spec.spatial
    dshape = forward_shape(plan.data_layout, data.shape, spec.data_canonical)
    wshape = forward_shape(plan.kernel_layout, weight.shape, spec.kernel_canonical)
    oshape = forward_shape(plan.out_layout, tuple(out_shape), spec.data_canonical)
    kernel, sizes = wshape[2:], dshape[2:]
    strides, dilation = plan.strides, plan.dilation
    # out[y] sums x[i] * w[k] over i*stride + k*dilation = y + pad_before; with the kernel
    # flipped (k' = K-1-k) that reads T_pad[y + k'*dilation], T_pad[p] = x[(p - off) / stride]
    offsets = [dilation[i] * (kernel[i] - 1) - plan.pad_before[i] for i in range(spec.ndim)]

    def source(idx: Indices):
        conds: list[te.PrimExpr] = []
        shifted = dict(idx)
        for i, letter in enumerate(spatial):
            pos = idx[letter] - offsets[i]
            conds += [te.ge(pos, 0), te.le(pos, strides[i] * (sizes[i] - 1))]
            if strides[i] > 1:
                conds.append(te.eq(pos % strides[i], 0))
            shifted[letter] = pos // strides[i]
        return te.all_of(*conds), read_in_layout(data, plan.data_layout, shifted)

    extents = [oshape[2 + i] + dilation[i] * (kernel[i] - 1) for i in range(spec.ndim)]
    dilated = resized_stage(data, plan.data_layout, spatial, extents, source, te.const(0, data.dtype))
    groups = plan.groups
    per_group_in, per_group_out = dshape[1] // groups, wshape[1]
    rc = te.reduce_axis(per_group_in, "rc")
    rks = [te.reduce_axis(k, f"r{letter.lower()}") for letter, k in zip(spatial, kernel)]

    def body(*axes):
        idx = canonical_indices(plan.out_layout, axes)
        o = idx["C"]
        c = rc if groups == 1 else (o // per_group_out) * per_group_in + rc
        didx: Indices = {"N": idx["N"], "C": c}
        widx: Indices = {"I": c, "O": o if groups == 1 else o % per_group_out}
        for i, letter in enumerate(spatial):
            didx[letter] = idx[letter] + rks[i] * dilation[i]
            widx[letter] = kernel[i] - 1 - rks[i]
        x = te.cast(read_in_layout(dilated, plan.data_layout, didx), acc)
        w = te.cast(read_in_layout(weight, plan.kernel_layout, widx), acc)
        return te.sum(x * w, axis=[rc] + rks)

    return te.compute(out_shape, body, f"T_{op.removeprefix('nn.')}", tag=op)


for _spec in (CONV1D, CONV2D, CONV3D, CONV1D_T, CONV2D_T, CONV2D_NCHWC, DW_CONV2D_NCHWC):
    _conv_rule(_spec)


# ---- dense, matmul, batch_matmul


def _matmul(op: str, out_shape: Sequence[int], k: int, read_a, read_b, out_dtype: str,
            dtypes: tuple[str, str]) -> te.Tensor:
    """out[i] = sum_k read_a(i, k) * read_b(i, k), tagged with the op name."""
    acc = acc_dtype(out_dtype, *dtypes)
    rk = te.reduce_axis(k, "k")

    def body(*i):
        return te.sum(te.cast(read_a(i, rk), acc) * te.cast(read_b(i, rk), acc), axis=[rk])

    return finish(te.compute(out_shape, body, f"T_{op.removeprefix('nn.')}", tag=op), out_dtype)


@register_compute("nn.dense")
def _(data: te.Tensor, weight: te.Tensor, attrs, out_type) -> te.Tensor:
    """data (..., K) times weight (units, K) transposed."""
    return _matmul("nn.dense", out_type.shape, data.shape[-1],
                   lambda i, k: data[i[:-1] + (k,)], lambda i, k: weight[i[-1], k],
                   result_dtype(attrs, data.dtype), (data.dtype, weight.dtype))


@register_compute("nn.matmul")
def _(a: te.Tensor, b: te.Tensor, attrs, out_type) -> te.Tensor:
    """a (..., M, K) (transpose_a: (..., K, M)) times b (K, N) (transpose_b: (N, K))."""
    ta, tb = attrs.transpose_a, attrs.transpose_b

    def read_a(i, k):
        return a[i[:-2] + (k, i[-2])] if ta else a[i[:-1] + (k,)]

    def read_b(i, k):
        return b[i[-1], k] if tb else b[k, i[-1]]

    k = a.shape[-2] if ta else a.shape[-1]
    return _matmul("nn.matmul", out_type.shape, k, read_a, read_b, result_dtype(attrs, a.dtype),
                   (a.dtype, b.dtype))


@register_compute("nn.batch_matmul")
def _(a: te.Tensor, b: te.Tensor, attrs, out_type) -> te.Tensor:
    """a (B, M, K) times b (B, K, N), either transposed; a batch of 1 broadcasts."""
    ta, tb = attrs.transpose_a, attrs.transpose_b

    def read_a(i, k):
        batch = 0 if a.shape[0] == 1 else i[0]
        return a[batch, k, i[1]] if ta else a[batch, i[1], k]

    def read_b(i, k):
        batch = 0 if b.shape[0] == 1 else i[0]
        return b[batch, i[2], k] if tb else b[batch, k, i[2]]

    k = a.shape[1] if ta else a.shape[2]
    return _matmul("nn.batch_matmul", out_type.shape, k, read_a, read_b, result_dtype(attrs, a.dtype),
                   (a.dtype, b.dtype))
