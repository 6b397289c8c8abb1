"""FastMath: exp, tanh, erf and nn.softmax replaced by their fast approximations.

As TVM's pass of that name (src/relay/transforms/fast_math.cc, `FastMathMutator`): every
call of `exp`, `tanh`, `erf` and `nn.softmax` becomes a call of `fast_exp`, `fast_tanh`,
`fast_erf` and `nn.fast_softmax` with the same arguments (and, for the softmax, the same
attributes); nothing else changes.  Calls inside nested functions are rewritten too, as
TVM's post-order rewriter does.

Its opt_level is 4, as TVM's: `relay.build` runs it (followed by FoldConstant) only at
`--opt-level 4`, or when the context requires it by name (`required_pass`, or naming it
in `relaylens build --passes`).  What the fast ops compute, and their error bounds, is in
lower/te/mathfuncs.py; `nn.fast_softmax` also multiplies by one reciprocal of the row's
sum instead of dividing each element (lower/te/topi/activations.py).

Expects: any module (required: InferType, as TVM declares it).  Guarantees: the same
values within the fast ops' error bounds; no exp, tanh, erf or nn.softmax call left.

Spans: a rewritten call is the same call with another op: it keeps its span and type.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.expr import Call, Expr, Function, Op, op
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ..infra import FunctionPass, PassContext, register_pass

FAST_OPS = {"exp": "fast_exp", "tanh": "fast_tanh", "erf": "fast_erf", "nn.softmax": "nn.fast_softmax"}


class _FastOps(ExprMutator):
    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        if isinstance(new.op, Op) and new.op.name in FAST_OPS:
            return replace(new, op=op(FAST_OPS[new.op.name]))
        return new


@register_pass
class FastMath(FunctionPass):
    name = "FastMath"
    opt_level = 4
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return _FastOps().visit(func)
