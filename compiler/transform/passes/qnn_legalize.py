"""qnn.Legalize: TVM's dialect legalization, the first of relay.build's rewrites
(src/relay/qnn/pass/legalize.cc): a sequence of QnnLegalize (the FTVMQnnLegalize rules)
then QnnCanonicalize (FTVMQnnCanonicalize), both opt level 1, walked as legalize.py walks.

QnnLegalize on TVM's default x86 target, `llvm` (python/tvm/relay/qnn/op/legalizations.py,
`_qnn_conv2d_legalize_intel_cpu` / `_qnn_dense_legalize_intel_cpu`): `llvm` without
`-mcpu` does not claim SSE4.2, so `is_fast_int8_on_intel()` is false and
`helper_no_fast_int8_hw_legalization` applies: `qnn.conv2d` and `qnn.dense` become
`nn.conv2d` / `nn.dense` on int16 operands with the zero points subtracted first,

    qnn.conv2d(%d, %k, %dzp, %kzp, %ds, %ks, ...)
      =>
    nn.conv2d(subtract(cast(%d, "int16"), cast(%dzp, "int16")),
              subtract(cast(%k, "int16"), cast(%kzp, "int16")), ..., out_dtype="int32")

a per-channel kernel zero point subtracted with `nn.bias_add(cast(%k), negative(cast(%kzp)),
axis=O)` (O: kernel_layout's O for conv2d, 0 for dense).  The scales are not needed: the
qnn op's result is the integer accumulation.  The attributes are the qnn op's, with
out_dtype written (the qnn op's result dtype, int32 unless it said otherwise).
qnn.conv2d_transpose's rule (TVM's generic one) is in qnn_composite_rules.py with the
canonicalizations of qnn.add and qnn.concatenate; TVM's other QnnLegalize rules are for
ops our registry does not have (the qnn unary ops).

QnnCanonicalize: qnn.quantize, qnn.dequantize and qnn.requantize become Relay arithmetic
as TVM lowers them (qnn_canonicalize.py, which lists the forms it leaves as ops).

Spans: see legalize.py.
"""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.expr import Call, Expr, Function, op
from ...ir.module import IRModule
from ...ops import get_op
from ..infra import FunctionPass, PassContext, Sequential, register_pass
from .legalize import legalize_function, register_legalize
from .simplify_expr_rules import make_call


def _int16(x: Expr) -> Call:
    return make_call("cast", [x], {"dtype": "int16"}, span=None)


def no_fast_int8(call: Call, args, types, nn_op: str, output_axis: int) -> Expr:
    """TVM's helper_no_fast_int8_hw_legalization."""
    data, kernel, data_zp, kernel_zp = args[:4]
    shift_data = make_call("subtract", [_int16(data), _int16(data_zp)], span=None)
    if types[3].ndim == 0:
        shift_kernel = make_call("subtract", [_int16(kernel), _int16(kernel_zp)], span=None)
    else:
        negated = make_call("negative", [_int16(kernel_zp)], span=None)
        shift_kernel = make_call("nn.bias_add", [_int16(kernel), negated], {"axis": output_axis}, span=None)
    schema = {a.name for a in get_op(nn_op).attrs}
    written = {k: v for k, v in call.attrs.items() if k in schema}
    written["out_dtype"] = types[-1].dtype
    ordered = {a.name: written[a.name] for a in get_op(nn_op).attrs if a.name in written}
    return Call(op(nn_op), (shift_data, shift_kernel), Attrs(ordered))


@register_legalize("qnn.conv2d", "FTVMQnnLegalize")
def qnn_conv2d_rule(call: Call, args, types) -> Expr | None:
    layout = get_op("qnn.conv2d").normalize_attrs(call.attrs).kernel_layout
    if "O" not in layout:
        return None
    return no_fast_int8(call, args, types, "nn.conv2d", layout.index("O"))


@register_legalize("qnn.dense", "FTVMQnnLegalize")
def qnn_dense_rule(call: Call, args, types) -> Expr | None:
    return no_fast_int8(call, args, types, "nn.dense", 0)


@register_pass
class QnnLegalize(FunctionPass):
    name = "QnnLegalize"
    opt_level = 1
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return legalize_function(func, "FTVMQnnLegalize")


@register_pass
class QnnCanonicalize(FunctionPass):
    name = "QnnCanonicalize"
    opt_level = 1
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return legalize_function(func, "FTVMQnnCanonicalize")


@register_pass
class QnnLegalizeSequence(Sequential):
    name = "qnn.Legalize"
    opt_level = 0

    def __init__(self) -> None:
        super().__init__([QnnLegalize(), QnnCanonicalize()], name=self.name)

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or PassContext.current()
        if self.name in ctx.disabled_pass:  # the sequence as a whole, as TVM's
            return mod
        return super().__call__(mod, ctx)
