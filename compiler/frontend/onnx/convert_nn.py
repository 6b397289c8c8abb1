"""Layers with weights: Conv, ConvTranspose, Gemm, MatMul, Einsum, and CumSum (as a matrix product).

Conv becomes `nn.conv1d/2d/3d` (+ `nn.bias_add`), ConvTranspose `nn.conv1d/2d_transpose`,
Gemm and 2-D MatMul `nn.dense` (with `transpose` for a (K, N) weight, which FoldConstant
removes for constant weights), batched MatMul `nn.batch_matmul` on 3-D reshapes, Einsum
`einsum` of the tuple of its inputs with the node's equation, as TVM's frontend does.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...ir.expr import Expr
from ...ir.types import ANY
from .builder import call, const, dtype, make_tuple, normalize_axis, rank, scalar, shape, static_shape
from .context import NodeContext
from .errors import NodeError
from .registry import converter
from .windows import read_window

CONVS = {1: "nn.conv1d", 2: "nn.conv2d", 3: "nn.conv3d"}
CONV_TRANSPOSES = {1: "nn.conv1d_transpose", 2: "nn.conv2d_transpose"}


def _bias(ctx: NodeContext, out: Expr, k: int) -> Expr:
    bias = ctx.optional(k)
    return out if bias is None else call("nn.bias_add", out, bias, axis=1)


@converter("Conv")
def _(ctx: NodeContext) -> Expr:
    x, w = ctx.input(0), ctx.input(1)
    wshape = static_shape(w, "the weight of Conv")
    window = read_window(ctx, x, wshape[2:])
    op_name = CONVS.get(window.ndim)
    if op_name is None:
        raise NodeError(f"{window.ndim}-D convolution is not supported")
    out = call(op_name, x, w, strides=window.strides, padding=window.pads, dilation=window.dilations,
               groups=ctx.attrs.int("group", 1), channels=wshape[0], kernel_size=window.kernel)
    return _bias(ctx, out, 2)


@converter("ConvTranspose")
def _(ctx: NodeContext) -> Expr:
    x, w = ctx.input(0), ctx.input(1)
    wshape = static_shape(w, "the weight of ConvTranspose")
    groups = ctx.attrs.int("group", 1)
    auto_pad = ctx.attrs.string("auto_pad", "NOTSET")
    window = read_window(ctx, x, wshape[2:]) if auto_pad in ("NOTSET", "VALID") else None
    n = rank(x) - 2
    op_name = CONV_TRANSPOSES.get(n)
    if op_name is None:
        raise NodeError(f"{n}-D transposed convolution is not supported")
    kernel = ctx.attrs.ints("kernel_shape", wshape[2:])
    strides = ctx.attrs.ints("strides", (1,) * n)
    dilations = ctx.attrs.ints("dilations", (1,) * n)
    output_padding = list(ctx.attrs.ints("output_padding", (0,) * n))
    output_shape = ctx.attrs.ints("output_shape", None)
    if output_shape is not None or window is None:
        pads = _transpose_pads(x, kernel, strides, dilations, output_padding, output_shape, auto_pad)
    else:
        pads = list(window.pads)
    for i in range(n):  # a negative end pad is extra output at the end
        if pads[n + i] < 0:
            output_padding[i] -= pads[n + i]
            pads[n + i] = 0
    if min(pads) < 0:
        raise NodeError(f"output_shape {list(output_shape or ())} needs negative padding at the start")
    out = call(op_name, x, w, channels=wshape[1] * groups, kernel_size=kernel, strides=strides,
               output_padding=output_padding, padding=pads, dilation=dilations, groups=groups)
    return _bias(ctx, out, 2)


def _transpose_pads(x: Expr, kernel, strides, dilations, output_padding, output_shape, auto_pad) -> list[int]:
    """Pads giving `output_shape` (or, for SAME, input extent × stride), the odd one at the
    end for SAME_UPPER and at the beginning otherwise."""
    extents = static_shape(x, "ConvTranspose with output_shape or auto_pad")[2:]
    if output_shape is None:
        output_shape = [e * s for e, s in zip(extents, strides)]
    output_shape = list(output_shape)[-len(extents):]
    before, after = [], []
    for i, extent in enumerate(extents):
        full = strides[i] * (extent - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1
        total = full - output_shape[i]
        half = total // 2
        before.append(half if auto_pad == "SAME_UPPER" else total - half)
        after.append(total - half if auto_pad == "SAME_UPPER" else half)
    return before + after


@converter("Gemm")
def _(ctx: NodeContext) -> Expr:
    a, b = ctx.input(0), ctx.input(1)
    if rank(a) != 2 or rank(b) != 2:
        raise NodeError(f"Gemm takes 2-D A and B, found ranks {rank(a)} and {rank(b)}")
    alpha, beta = ctx.attrs.float("alpha", 1.0), ctx.attrs.float("beta", 1.0)
    if ctx.attrs.int("transA", 0):
        a = call("transpose", a, axes=(1, 0))
    if not ctx.attrs.int("transB", 0):
        b = call("transpose", b, axes=(1, 0))
    out = call("nn.dense", a, b, units=_dim_or_none(shape(b)[0]))
    if alpha != 1.0:
        out = call("multiply", out, scalar(alpha, out))
    c = ctx.optional(2)
    if c is not None and beta != 0.0:
        out = call("add", out, c if beta == 1.0 else call("multiply", c, scalar(beta, c)))
    return out


def _dim_or_none(d) -> int | None:
    return d if isinstance(d, int) else None


@converter("MatMul")
def _(ctx: NodeContext) -> Expr:
    return matmul(ctx.input(0), ctx.input(1))


@converter("Einsum")
def _(ctx: NodeContext) -> Expr:
    return call("einsum", make_tuple(ctx.variadic()), equation=ctx.attrs.string("equation"))


def _nn_dense(a: Expr, weight: Expr, units: int | None) -> Expr:
    return call("nn.dense", a, weight, units=units)


def _nn_batch_matmul(a: Expr, b: Expr) -> Expr:
    return call("nn.batch_matmul", a, b, transpose_a=False, transpose_b=False)


Product = Callable[[Expr, Expr, int | None], Expr]


def matmul(a: Expr, b: Expr, dense: Product = _nn_dense,
           batch_matmul: Callable[[Expr, Expr], Expr] = _nn_batch_matmul) -> Expr:
    """NumPy's matmul: 1-D operands are promoted and their axis removed again; batch axes
    broadcast.  `dense(a, weight, units)` multiplies (M, K) by a (N, K) weight when B is
    2-D, `batch_matmul(a, b)` (B, M, K) by (B, K, N) otherwise (nn.dense and
    nn.batch_matmul unless given: QLinearMatMul's qnn ops)."""
    squeeze = []
    if rank(a) == 1:
        a = call("expand_dims", a, axis=0)
        squeeze.append(-2)
    if rank(b) == 1:
        b = call("expand_dims", b, axis=1)
        squeeze.append(-1)
    if rank(a) < 2 or rank(b) < 2:
        raise NodeError("MatMul takes tensors of rank 1 or more")
    if rank(b) == 2:
        out = _dense(a, b, dense)
    else:
        out = _batch_matmul(a, b, batch_matmul)
    if squeeze:
        out = call("squeeze", out, axis=[rank(out) + s for s in squeeze])
    return out


def _dense(a: Expr, b: Expr, dense: Product) -> Expr:
    """(..., M, K) × (K, N): one dense over the flattened batch (over the batch as it is
    when more than one of its axes is unknown)."""
    units = _dim_or_none(shape(b)[1])
    weight = call("transpose", b, axes=(1, 0))
    dims = shape(a)
    if rank(a) == 2 or (dense is _nn_dense and sum(d is ANY for d in dims[:-1]) > 1):
        return dense(a, weight, units)  # nn.dense takes (..., K) whole: flattened, the reshape
        # back could not say two unknown batch axes (qnn.dense's data is 2-D)
    flat = call("reshape", a, newshape=(-1, _known(dims[-1], "the K axis of MatMul")))
    out = dense(flat, weight, units)
    return call("reshape", out, newshape=_newshape((*dims[:-1], shape(b)[1])))


def _batch_matmul(a: Expr, b: Expr, batch_matmul: Callable[[Expr, Expr], Expr]) -> Expr:
    """(..., M, K) × (..., K, N): broadcast the batch axes, flatten them to one, multiply."""
    da, db = shape(a), shape(b)
    batch = _broadcast_batch(da[:-2], db[:-2])
    a3 = _to_batch(a, batch, da[-2:])
    b3 = _to_batch(b, batch, db[-2:])
    out = batch_matmul(a3, b3)
    if len(batch) == 1:
        return out
    return call("reshape", out, newshape=_newshape((*batch, da[-2], db[-1])))


def _broadcast_batch(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is ANY or y is ANY:
            raise NodeError("MatMul needs static batch axes where only one side is known; fix them with --shape")
        else:
            raise NodeError(f"MatMul batch axes {x} and {y} do not broadcast")
    return tuple(out)


def _to_batch(x: Expr, batch: tuple, matrix: tuple) -> Expr:
    dims = shape(x)
    if dims[:-2] != batch:
        x = call("broadcast_to", x, shape=[_known(d, "a broadcast batch axis of MatMul") for d in (*batch, *matrix)])
    if len(batch) == 1:
        return x
    return call("reshape", x, newshape=_newshape((-1, *matrix)))


def _known(d, what: str) -> int:
    if d is ANY:
        raise NodeError(f"{what} must be static; fix the input dimensions with --shape")
    return d


def _newshape(dims: tuple) -> tuple[int, ...]:
    """Relay's newshape for these dimensions: one unknown becomes -1."""
    unknown = [i for i, d in enumerate(dims) if d is ANY or d == -1]
    if len(unknown) > 1:
        raise NodeError("this reshape needs static dimensions; fix the input dimensions with --shape")
    return tuple(-1 if (d is ANY or d == -1) else d for d in dims)


@converter("CumSum")
def _(ctx: NodeContext) -> Expr:
    """A running sum as a product with a triangular matrix of ones (Relay has no cumsum):
    the axis is moved last and the rest flattened, so one `nn.dense` does it."""
    x = ctx.input(0)
    n = rank(x)
    axis = normalize_axis(int(ctx.value(1, "axis").reshape(-1)[0]), n)
    length = shape(x)[axis]
    if not isinstance(length, int):
        raise NodeError("CumSum needs a static extent along its axis")
    rows, cols = np.arange(length)[:, None], np.arange(length)[None, :]  # output j, input i
    reverse, exclusive = ctx.attrs.int("reverse", 0), ctx.attrs.int("exclusive", 0)
    keep = (cols >= rows) if reverse else (cols <= rows)
    if exclusive:
        keep &= cols != rows
    perm = (*(a for a in range(n) if a != axis), axis)
    moved = x if axis == n - 1 else call("transpose", x, axes=perm)
    dims = shape(moved)
    flat = call("reshape", moved, newshape=(-1, length))
    summed = call("nn.dense", flat, const(keep.astype(dtype(x))), units=length)
    out = call("reshape", summed, newshape=_newshape(dims))
    return out if axis == n - 1 else call("transpose", out, axes=tuple(int(i) for i in np.argsort(perm)))


@converter("CumProd")
def _(ctx: NodeContext) -> Expr:
    """Relay's `cumprod` (a product has no matrix form); reverse=1 is `reverse` on both
    sides, as TVM's frontend writes a reverse CumSum."""
    x = ctx.input(0)
    axis = normalize_axis(int(ctx.value(1, "axis").reshape(-1)[0]), rank(x))
    exclusive = bool(ctx.attrs.int("exclusive", 0))
    if not ctx.attrs.int("reverse", 0):
        return call("cumprod", x, axis=axis, exclusive=exclusive)
    run = call("cumprod", call("reverse", x, axis=axis), axis=axis, exclusive=exclusive)
    return call("reverse", run, axis=axis)
