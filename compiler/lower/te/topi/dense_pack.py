"""`nn.contrib_dense_pack` as tensor expressions (TVM: topi/x86/dense.py `dense_pack`).

The weight arrives packed NC[x]n, (units/x, K, x): x output features side by side for
each k.  Two stages:

    T_dense_pack_NCn[i, b, l] = sum_k data[i, k] * weight[b, k, l]     (M, units/x, x)
    T_dense_pack[i, j]        = T_dense_pack_NCn[i, j // x, j % x]      (M, units)

The tagged reduction keeps the block and its lane as axes of their own, so a schedule
vectorises the lane (x contiguous floats of the weight per k) with no index arithmetic
inside the loop (schedule/dense_pack.py); the second stage is an injective copy that
default schedules inline into the epilogue (bias, activation).  Products are summed as
nn.dense's (nn_conv.py `acc_dtype`); a `T_cast` follows when that is not `out_dtype`.
"""

from __future__ import annotations

from ....ops.conv_geometry import result_dtype
from .. import expr as te
from .nn_conv import acc_dtype, finish
from .registry import register_compute

BLOCKED_TAG = "nn.contrib_dense_pack"


@register_compute("nn.contrib_dense_pack")
def _(data: te.Tensor, weight: te.Tensor, attrs, out_type) -> te.Tensor:
    m, k = data.shape
    blocks, _, lanes = weight.shape
    out_dtype = result_dtype(attrs, data.dtype)
    acc = acc_dtype(out_dtype, data.dtype, weight.dtype)
    rk = te.reduce_axis(k, "k")

    def body(i, b, lane):
        return te.sum(te.cast(data[i, rk], acc) * te.cast(weight[b, rk, lane], acc), axis=[rk])

    blocked = te.compute((m, blocks, lanes), body, f"T_dense_pack_NC{lanes}n", tag=BLOCKED_TAG)
    unpacked = te.compute((m, blocks * lanes), lambda i, j: blocked[i, j // lanes, j % lanes], "T_dense_pack")
    return finish(unpacked, out_dtype)
