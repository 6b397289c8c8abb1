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

Data of more than 2 dimensions is left as it is (TVM's rule reads the data shape as (M, K)
and fails on it).

int8 and VNNI, not done here.  TVM v0.16 asks the *target*, never the machine
(`tvm.target.codegen.target_has_features`: the features of `-mcpu` and `-mattr`; without
`-mcpu` LLVM's "generic" x86-64, SSE2 only).  Its dense takes the int8 path when
`check_int8_applicable` (topi/x86/dense_alter_op.py) holds: the target has avx512bw and
avx512f (or amx-int8), both dtypes contain "int8", the weight's units divide by 16 and K
by 4.  Then Legalize shifts int8 data to uint8 (+128, less 128 * sum(weight) after,
padding units to 16 and K to 4), and AlterOpLayout makes a uint8 dense
`nn.contrib_dense_pack(..., weight_layout="NC16n4c")`, computed by the tensor intrinsic
dot_16x1x16_uint8_int8_int32 (topi/x86/tensor_intrin.py): VNNI `vpdpbusd` when the target
also has avx512vnni or avxvnni, else AVX-512 `vpmaddubsw`/`vpmaddwd`; AMX tiles with
amx-int8.  With `relay.build(mod, target="llvm")` none of these features is claimed, so
TVM takes none of it; on this project's AVX2 machine (no AVX-512, no VNNI) even
`-mcpu=native` would not.  Here the rule is the untuned float path only: a uint8 x int8
dense that would qualify on an AVX-512 host (`vnni` below, simd_lanes 16) is left as it
is rather than packed the float way, and no int8 intrinsic is emitted (RelayLens compiles
for the host; README "AlterOpLayout cases" says which TVM cases that leaves out).
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
