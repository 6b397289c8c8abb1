"""DefuseOps: undo FuseOps, as TVM's pass of that name (src/relay/transforms/defuse_ops.cc).

Every call whose callee is a function literal (a fused `Primitive=1` function or any
other `fn`) becomes the function's body with each parameter replaced by the matching
argument; calls inside the body are defused first, so nested fused functions open too.
A user-run pass (opt level 3, not in relay.build's pipeline): `FuseOps | DefuseOps`
gives back the unfused program.

TVM substitutes by parameter *name* (and refuses a function with two parameters of one
name); here the substitution is by the parameter itself, which is the same for the
functions FuseOps makes and leaves any other variable of the body (a `let`) alone.

Expects: any module (required: InferType, as TVM).  Guarantees: no call of a function
literal remains; the same values.

Spans: the inlined body keeps the spans its expressions have (FuseOps gave them those of
the source); a body expression without one takes the span of the call it replaces.  The
call and its function leave the program.
"""

from __future__ import annotations

from ...ir.expr import Call, Expr, Function, Var
from ...ir.functor import ExprMutator, post_order
from ...ir.module import IRModule
from ..infra import FunctionPass, PassContext, register_pass
from ..si_builder import SIBuilder


class _Bind(ExprMutator):
    """The body with each parameter replaced by its argument."""

    def __init__(self, args: dict[Var, Expr]) -> None:
        super().__init__()
        self.args = args

    def visit_var(self, var: Var) -> Expr:
        return self.args.get(var, var)


class _Defuser(ExprMutator):
    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        func = new.op
        if not isinstance(func, Function) or len(func.params) != len(new.args):
            return new
        body = _Bind(dict(zip(func.params, new.args))).visit(func.body)
        unchanged = post_order(func.body)  # shared with the input: never filled in place
        return SIBuilder(original).recursively_fill_span(body, inputs=[*new.args, *unchanged])


@register_pass
class DefuseOps(FunctionPass):
    name = "DefuseOps"
    opt_level = 3
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return _Defuser().visit(func)
