"""CanonicalizeOps: turn special ops into basic ones, as TVM does (today: nn.bias_add).

Rewrites `nn.bias_add(x, b, axis=a)` into `add(x, expand_dims(b, axis=1, num_newaxis=k))`,
k = ndim(x) - a - 1 the number of axes of x after the bias axis (a negative axis counts
from the end); when k is 0 the bias broadcasts as it is and no expand_dims is made.

Expects: typed input (required: InferType; a bias_add that did not typecheck is left
alone).  Guarantees: no nn.bias_add with typed data remains.  The new `add` has the
bias_add's type, as TVM sets it; the expand_dims has none until the next InferType.

Spans: the new add and expand_dims take the span of the bias_add they replace
(`SIBuilder(bias_add).recursively_fill_span(add, inputs=[x, b])`).
"""

from __future__ import annotations

from ...ir.attrs import Attrs, IntImm
from ...ir.expr import Call, Expr, Function, Op, op
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...ir.types import TensorType
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass
from ..si_builder import SIBuilder


def expand_bias(bias: Expr, ndim: int, axis: int) -> Expr:
    """The bias vector shaped to broadcast along `axis` of an `ndim`-tensor."""
    pad = ndim - axis - 1
    if pad <= 0:
        return bias
    attrs = {"axis": IntImm(1)} if pad == 1 else {"axis": IntImm(1), "num_newaxis": IntImm(pad)}
    return Call(op("expand_dims"), (bias,), Attrs(attrs))


def bias_add_rule(original: Call, new: Call) -> Expr | None:
    """`nn.bias_add(x, b)` -> `add(x, expand_dims(b))`, or None when x's type is unknown."""
    ty = original.args[0].ty if len(original.args) == 2 else None
    if not isinstance(ty, TensorType) or original.ty is None:  # not typechecked: left alone
        return None
    try:
        axis = get_op("nn.bias_add").normalize_attrs(new.attrs).axis
    except Exception:  # noqa: BLE001 -- a bad attribute: the type checker reports it
        return None
    if axis < 0:
        axis += ty.ndim
    data, bias = new.args
    return Call(op("add"), (data, expand_bias(bias, ty.ndim, axis)), ty=original.ty)


RULES = {"nn.bias_add": bias_add_rule}


class _Canonicalizer(ExprMutator):
    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        rule = RULES.get(original.op.name) if isinstance(original.op, Op) else None
        out = rule(original, new) if rule is not None else None
        if out is None:
            return new
        return SIBuilder(original).recursively_fill_span(out, inputs=new.args)


@register_pass
class CanonicalizeOps(FunctionPass):
    name = "CanonicalizeOps"
    opt_level = 3
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return _Canonicalizer().visit(func)
