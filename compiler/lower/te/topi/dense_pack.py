"""`nn.contrib_dense_pack` as tensor expressions (TVM: topi/x86/dense.py `dense_pack`).

The weight arrives packed NC[x]n, (units/x, K, x): x output features side by side for
each k.  Two stages:

    T_dense_pack_NCn[i, b, l] = sum_k data[i, k] * weight[b, k, l]     (M, units/x, x)
    T_dense_pack[i, j]        = T_dense_pack_NCn[i, j // x, j % x]      (M, units)

The tagged reduction keeps the block and its lane as axes of their own, so a schedule
vectorises the lane (x contiguous floats of the weight per k) with no index arithmetic
inside the loop (schedule/dense_pack.py); the second stage is an injective copy that
default schedules inline into the epilogue (bias, activation).

When x is not a power of two (TVM packs 1000 units NC25n) no vector holds the lanes, so
for M a multiple of ROW_LANES the rows take the vectors instead (`rows_in_vectors`): the
data is transposed once per call into `T_dense_pack_data_t` (K, M) and

    T_dense_pack_NC{x}n_t[b, l, i] = sum_k data_t[k, i] * weight[b, k, l]   (units/x, x, M)
    T_dense_pack[i, j]             = T_dense_pack_NC{x}n_t[j // x, j % x, i]

tagged ROWS_TAG: per k, one vector of 16 rows times x weight scalars.  Products are summed as
nn.dense's (nn_conv.py `acc_dtype`); a `T_cast` follows when that is not `out_dtype`.
"""

from __future__ import annotations

from ....ops.conv_geometry import result_dtype
from .. import expr as te
from .nn_conv import acc_dtype, finish
from .registry import register_compute

BLOCKED_TAG = "nn.contrib_dense_pack"
ROWS_TAG = "nn.contrib_dense_pack.rows"
ROW_LANES = 16  # float32 lanes of one vector register


def rows_in_vectors(m: int, lanes: int) -> bool:
    """Whether the product keeps rows in its vectors (see the module doc)."""
    return lanes & (lanes - 1) != 0 and m % ROW_LANES == 0


@register_compute("nn.contrib_dense_pack")
def _(data: te.Tensor, weight: te.Tensor, attrs, out_type) -> te.Tensor:
    m, k = data.shape
    blocks, _, lanes = weight.shape
    out_dtype = result_dtype(attrs, data.dtype)
    acc = acc_dtype(out_dtype, data.dtype, weight.dtype)
    rk = te.reduce_axis(k, "k")

    if rows_in_vectors(m, lanes):
        data_t = te.compute((k, m), lambda kk, i: data[i, kk], "T_dense_pack_data_t")

        def rows_body(b, lane, i):
            return te.sum(te.cast(data_t[rk, i], acc) * te.cast(weight[b, rk, lane], acc), axis=[rk])

        product = te.compute((blocks, lanes, m), rows_body, f"T_dense_pack_NC{lanes}n_t", tag=ROWS_TAG)
        unpacked = te.compute((m, blocks * lanes), lambda i, j: product[j // lanes, j % lanes, i], "T_dense_pack")
        return finish(unpacked, out_dtype)

    def body(i, b, lane):
        return te.sum(te.cast(data[i, rk], acc) * te.cast(weight[b, rk, lane], acc), axis=[rk])

    blocked = te.compute((m, blocks, lanes), body, f"T_dense_pack_NC{lanes}n", tag=BLOCKED_TAG)
    unpacked = te.compute((m, blocks * lanes), lambda i, j: blocked[i, j // lanes, j % lanes], "T_dense_pack")
    return finish(unpacked, out_dtype)
