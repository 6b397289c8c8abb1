"""DynamicToStatic: dynamic ops whose shape arguments are known become static ops, as TVM's
pass of that name (src/relay/transforms/dynamic_to_static.cc; user-run, opt level 2).

    %0 = shape_of(%y);  dyn.reshape(%x, %0)      (%y: Tensor[(8, 3), float32])
      =>
    reshape(%x, newshape=[8, 3])

Walking each function in post-order, each argument of a dynamic call (the ops of
ops/dynamic.py's DYNAMIC_FORMS: dyn.reshape, dyn.squeeze, dyn.tile, dyn.broadcast_to,
dyn.zeros, dyn.ones, dyn.full, dyn.one_hot, dyn.strided_slice, dyn.nn.pad,
dyn.image.resize2d, dyn.nn.upsampling, dyn.topk) that is not a constant is constant-folded on its
own (so `shape_of` of a statically typed tensor is a constant); when every argument that
holds an attribute of the static op (and dyn.nn.pad's pad value, as TVM asks) is then a
constant, the call becomes the static op with those values as attributes, its other
arguments as they were, and its type inferred at once, so that a later `shape_of` of it
folds too.  Then, as TVM's pass ends, the whole function is constant-folded and typed
again; this repeats until no dynamic call changes (TVM's per-call type inference reaches
the same fixed point).  TVM's dyn.nn.upsampling3d and dyn.sparse_to_dense have no static
op here and are not rewritten.

Expects: any module (types let more fold).  Guarantees: the same values; no dynamic
call with constant attribute arguments remains; the module is constant-folded.

Spans: a static call takes the SequentialSpan of the dynamic call and of the constants
its attributes came from (a folded argument's constant names what was folded, by
FoldConstant's contract, which also holds for the final folding).
"""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.expr import Call, Constant, Expr, Function, Op, op
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...ops import get_op
from ...ops.attrs import to_ir_value
from ...ops.dynamic import DYNAMIC_FORMS, DynamicForm
from ...typing import infer_types
from ..infra import ModulePass, PassContext, register_pass
from ..si_builder import SIBuilder
from .fold_constant import FoldConstant, fold_expression


def static_call(call: Call, form: DynamicForm, constants: dict[int, Constant]) -> Call | None:
    """The static call for `call` given its attribute arguments folded to constants; None
    when their values do not make attributes the static op accepts."""
    dyn, static = get_op(form.name), get_op(form.static)
    try:
        values = {i: c.data for i, c in constants.items()}
        attrs = form.static_attrs(dyn.normalize_attrs(call.attrs), values)
    except Exception:  # noqa: BLE001 -- values the static op cannot take: left dynamic
        return None
    moved = {name for name, _ in form.moved.values()}
    written = {k: v for k, v in call.attrs.items() if k in {a.name for a in static.attrs} and k not in moved}
    written.update({name: to_ir_value(attrs[name]) for name in sorted(moved)})
    ordered = {a.name: written[a.name] for a in static.attrs if a.name in written}  # the op's order
    args = tuple(call.args[i] for i in form.kept_args())
    ir_attrs = Attrs(ordered)
    ty = None
    if all(a.ty is not None for a in args):
        try:
            ty = static.infer([a.ty for a in args], ir_attrs)
        except Exception:  # noqa: BLE001 -- the next InferType reports it
            ty = None
    span = SIBuilder([call.span, *(c.span for c in constants.values())]).create_span()
    return Call(op(form.static), args, ir_attrs, span=span, ty=ty)


class _Rewriter(ExprMutator):
    def __init__(self, mod: IRModule, ctx: PassContext) -> None:
        super().__init__()
        self.mod, self.ctx = mod, ctx

    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        form = DYNAMIC_FORMS.get(new.op.name) if isinstance(new.op, Op) else None
        if form is None or len(new.args) != len(form.inputs):
            return new
        constants: dict[int, Constant] = {}
        for i in (*form.moved, *form.also_constant):
            arg = new.args[i]
            if not isinstance(arg, Constant):
                arg = fold_expression(arg, self.mod, self.ctx)
            if not isinstance(arg, Constant) or arg.data is None:
                return new
            constants[i] = arg
        out = static_call(new, form, constants)
        return new if out is None else out


@register_pass
class DynamicToStatic(ModulePass):
    name = "DynamicToStatic"
    opt_level = 2

    def __init__(self) -> None:
        self.diagnostics: list = []

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        while True:
            self.diagnostics = infer_types(mod)
            changed = {}
            for gv, func in mod.functions.items():
                if isinstance(func, Function) and not func.is_primitive:
                    new = _Rewriter(mod, ctx).visit(func)
                    if new is not func:
                        changed[gv] = new
            folded = FoldConstant().run(mod.with_functions(changed) if changed else mod, ctx)
            if not changed:
                self.diagnostics = infer_types(folded)
                return folded
            mod = folded
