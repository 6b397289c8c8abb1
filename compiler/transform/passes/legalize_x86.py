"""The FTVMLegalize rules TVM applies on its default x86 target, `llvm` (legalize.py).

For the ops of our registry, TVM v0.16 registers:

* `erf` (python/tvm/topi/x86/math_alter_op.py): data of another dtype than float32 is
  computed in float32: `cast(erf(cast(x, "float32")), dtype)`.
* `nn.conv2d_transpose` (python/tvm/topi/nn/conv2d_transpose.py, every target without
  cuDNN): the kernel is brought to IOHW (a transpose, when its layout is another
  permutation of those letters); NHWC data is transposed to NCHW, the deconvolution
  computed there, and its result transposed back.  An NCHW deconvolution whose kernel is
  already IOHW is left as it is (TVM rebuilds the same call).
* `nn.conv2d` (x86 `_conv2d_legalize`), `nn.dense` and `nn.batch_matmul` (x86
  `_dense_legalize`, `_batch_matmul_legalize`): only int8 operands, and only when the
  target has the features (SSE4.2 for conv2d, AVX-512 or AMX for dense) that `llvm`
  without `-mcpu` does not claim: no-ops here.
* `nn.matmul`, `nn.conv1d_transpose`, the pooling and other ops: the generic function
  returns None: no-ops.

Spans: see legalize.py.
"""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.expr import Call, Expr
from ...ops import get_op
from .legalize import register_legalize
from .simplify_expr_rules import make_call


@register_legalize("erf")
def erf_rule(call: Call, args, types) -> Expr | None:
    dtype = types[0].dtype
    if dtype == "float32":
        return None
    inner = make_call("erf", [make_call("cast", [args[0]], {"dtype": "float32"}, span=None)], span=None)
    return make_call("cast", [inner], {"dtype": dtype}, span=None)


def layout_transform(x: Expr, current: str, desired: str) -> Expr | None:
    """`x` permuted from layout `current` to `desired` (TVM's topi helper of that name,
    a transpose); None when they are not permutations of one another."""
    if sorted(current) != sorted(desired):
        return None
    if current == desired:
        return x
    return make_call("transpose", [x], {"axes": [current.index(c) for c in desired]}, span=None)


@register_legalize("nn.conv2d_transpose")
def conv2d_transpose_rule(call: Call, args, types) -> Expr | None:
    attrs = get_op("nn.conv2d_transpose").normalize_attrs(call.attrs)
    data, kernel = args
    if attrs.data_layout not in ("NHWC", "NCHW"):
        return None
    kernel = layout_transform(kernel, attrs.kernel_layout, "IOHW")
    if kernel is None or (attrs.data_layout == "NCHW" and kernel is args[1]):
        return None
    written = dict(call.attrs)
    written["kernel_layout"] = "IOHW"
    if attrs.data_layout == "NCHW":
        return Call(call.op, (data, kernel), Attrs(written))
    written["data_layout"] = "NCHW"
    nchw = make_call("transpose", [data], {"axes": [0, 3, 1, 2]}, span=None)
    deconv = Call(call.op, (nchw, kernel), Attrs(written))
    return make_call("transpose", [deconv], {"axes": [0, 2, 3, 1]}, span=None)
