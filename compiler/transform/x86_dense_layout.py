"""What TVM's x86 strategy makes of a dense in AlterOpLayout, untuned (TVM:
python/tvm/topi/x86/dense_alter_op.py `_alter_dense_layout`, with the fallback config of
topi/x86/dense.py `_default_dense_pack_config`).

    alter_dense(call, attrs, args, simd_lanes=16) -> Call | None

On an llvm target without BLAS libraries the strategy's best dense is `dense_pack.x86`
(plevel 10, above dense_nopack's 5), so every `nn.dense` with 2-D data and a static
number of units becomes

    nn.contrib_dense_pack(data, layout_transform(weight, "NC", "NC{bn}n"),
                          units=None, out_dtype=<the dense's result dtype>, weight_layout="NC{bn}n")

with the weight (N, K) packed as (N / bn, K, bn), where the fallback config picks

    bn = the largest divisor of N up to 2 * simd_lanes

(32 with AVX-512, 16 with AVX2: `tile_x`'s innermost factor).  `simd_lanes` is TVM's
get_simd_32bit_lanes, as for conv2d (x86_conv2d_layout.py `host_simd_lanes`).  With the
weight bound, the FoldConstant after AlterOpLayout packs it at build time.

One departure, measured: float32 data on AVX2 (8 lanes) packs bn = the largest divisor
of N up to 8, one register.  AVX2 has 16 vector registers, 12 for accumulators
(lower/schedule/vector_unit.py): with bn = 16 the register tile of 128 rows is 4 rows x
1 block of two registers (8 chains of FMAs, too few to hide their latency), with bn = 8
it is 4 rows x 3 blocks (12).  GPT-2's 128 x 768 by 3072 with bias, 1 thread, CPU time:
13.8 ms with NC16n, 9.9 ms with NC8n (onnxruntime's whole block 32 ms, ours 43 to 34).
ResNet-50's 1000 classes pack NC8n instead of TVM's NC10n (whole vectors).

Not done here (TVM does it): uint8 x int8 dense on AVX-512 whose weight's units divide by
16 and K by 4, to the VNNI layout NC16n4c (4-D weight); such a dense is left as it is.  Data of more than 2 dimensions is left as
it is too (TVM's rule reads the data shape as (M, K) and fails on it).
"""

from __future__ import annotations

from ..ir.attrs import Attrs
from ..ir.expr import Call, op
from ..ir.types import TensorType
from ..ops import get_op
from .x86_conv2d_layout import largest_divisor


def pack_block(units: int, simd_lanes: int, dtype: str = "float32") -> int:
    """bn: the packed weight's lanes (TVM's fallback config, but one vector of float32 on
    AVX2; see the module doc)."""
    if dtype == "float32" and simd_lanes == 8:
        return largest_divisor(units, simd_lanes)
    return largest_divisor(units, 2 * simd_lanes)


def alter_dense(call: Call, attrs: Attrs, args: list, simd_lanes: int) -> Call | None:
    data, weight = (a.ty for a in call.args)
    if not (isinstance(data, TensorType) and isinstance(weight, TensorType)):
        return None
    if data.ndim != 2 or weight.ndim != 2 or not isinstance(weight.shape[0], int):
        return None
    n, k = weight.shape
    vnni = (simd_lanes >= 16 and data.dtype == "uint8" and "int8" in weight.dtype
            and isinstance(k, int) and n % 16 == 0 and k % 4 == 0)  # TVM's check_int8_applicable
    if vnni:
        return None
    a = get_op("nn.dense").normalize_attrs(attrs)
    out_dtype = a.out_dtype or data.dtype
    layout = f"NC{pack_block(weight.shape[0], simd_lanes, data.dtype)}n"
    new = Attrs({"units": None, "out_dtype": out_dtype, "weight_layout": layout})
    return Call(op("nn.contrib_dense_pack"), tuple(args), new)
