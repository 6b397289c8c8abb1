"""AnnotateTarget: mark where each supported call enters and leaves an external compiler.

As TVM's pass (src/relay/transforms/annotate_target.cc, with include_non_call_ops=True,
the default of its Python API), bottom-up over every global function:

* A call's target is the first target (in the order given) that takes it: an op in the
  target's op list (`relay.byoc.ops`, `--target-ops`), or a call of a composite function
  whose `Composite` name starts with `<target>.`; otherwise `default` (the host).
* Each argument of a call gets `annotation.compiler_begin(arg, compiler=T)` with the
  call's target T; an argument computed by an annotated expression is first closed with
  `annotation.compiler_end(arg, compiler=its target)`.  A tuple and a projection take the
  target of their fields when they all agree, else `default`, and annotate them alike.
* The body of each function (and of a let, and each branch of an if) is closed with a
  `compiler_end` of its own target.  Composite functions are not entered.
* Running the pass again keeps annotations for real targets and replaces `default` ones.

`default` annotations stay in the output, as in TVM; PartitionGraph removes them.
The target list comes from `relay.byoc.targets` (`--target`); without one, every call is
`default`.

Expects: typed input (required: InferType).  Guarantees: typed output, the same values
(the annotations are identities).

Spans: an annotation takes the span of the expression it wraps; a rebuilt call keeps its
own span.
"""

from __future__ import annotations

import dataclasses

from ...diagnostics import Diagnostic
from ...ir.attrs import Attrs
from ...ir.expr import Call, Expr, Function, If, Let, Op, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, op
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...typing import infer_types
from ..infra import FunctionPass, PassContext, register_pass
from ..patterns import byoc_options

BEGIN = op("annotation.compiler_begin")
END = op("annotation.compiler_end")
DEFAULT = "default"


def annotation(kind: Op, expr: Expr, target: str) -> Call:
    return Call(kind, (expr,), Attrs({"compiler": target}), ty=expr.ty, span=expr.span)


def target_of(call: Call) -> str:
    return str(call.attrs.get("compiler"))


def is_annotation(expr: Expr, kind: Op) -> bool:
    return isinstance(expr, Call) and expr.op is kind


class _Annotator(ExprMutator):
    def __init__(self, targets: list[str], ops: dict[str, frozenset[str]]) -> None:
        super().__init__()
        self.targets = targets
        self.ops = ops
        self.target: dict[Expr, str] = {}  # op_expr_to_target_: new expression -> its target

    # --- helpers, as AnnotateArgs and InsertCompilerEndAndPropogateTarget -------------
    def annotate_args(self, args: tuple[Expr, ...], target: str = "") -> tuple[str, tuple[Expr, ...]]:
        ref = ""
        begins: list[Expr] = []
        ends: list[Expr] = []
        for arg in args:
            arg_target = DEFAULT
            if is_annotation(arg, BEGIN):
                if target_of(arg) != DEFAULT:  # keep another target's annotation
                    begins.append(arg)
                else:
                    ends.append(arg.args[0])
                if is_annotation(arg.args[0], END):
                    arg_target = target_of(arg.args[0])
            elif arg in self.target:
                arg_target = self.target[arg]
                if isinstance(arg, Call) and not arg.args:  # zeros(), ones(): like an input
                    ends.append(arg)
                else:
                    ends.append(annotation(END, arg, arg_target))
            else:
                ends.append(arg)  # an input
            ref = arg_target if ref in ("", arg_target) else DEFAULT
        chosen = target or ref
        if ref == "":
            return chosen, args
        begins.extend(annotation(BEGIN, e, chosen) for e in ends)
        return chosen, tuple(begins)

    def close(self, expr: Expr) -> Expr:
        if expr in self.target:
            if (isinstance(expr, (RefWrite, RefCreate, RefRead, TupleGetItem))
                    or (isinstance(expr, Call) and expr.args) or (isinstance(expr, Tuple) and expr.fields)):
                target = self.target[expr]
                expr = annotation(END, expr, target)
                self.target[expr] = target
        elif is_annotation(expr, END) and target_of(expr) == DEFAULT:
            inner = expr.args[0]
            target = self.target.get(inner, DEFAULT)
            expr = annotation(END, inner, target)
            self.target[expr] = target
        return expr

    def supported(self, call: Call) -> list[str]:
        found: list[str] = []
        if isinstance(call.op, Op):
            found = [t for t in self.targets if call.op.name in self.ops.get(t, ())]
        elif isinstance(call.op, Function) and "Composite" in call.op.attrs:
            prefix, dot, _ = str(call.op.attrs["Composite"]).partition(".")
            if dot and prefix in self.targets:
                found = [prefix]
        return found + [DEFAULT]

    # --- the rewrites ---------------------------------------------------------------
    def visit_call(self, pre: Call) -> Expr:
        post = self.rebuild(pre)
        if pre.op is BEGIN:
            return post
        if pre.op is END:
            inner = post.args[0]
            self.target.setdefault(inner, target_of(post))
            return post
        if pre.args and is_annotation(pre.args[0], BEGIN) and target_of(pre.args[0]) != DEFAULT:
            return post  # annotated by an earlier run
        target = self.supported(pre)[0]
        _, args = self.annotate_args(post.args, target)
        new = dataclasses.replace(post, args=args, ty=pre.ty, span=pre.span)
        self.target[new] = target
        return new

    def visit_tuple(self, pre: Tuple) -> Expr:
        post = self.rebuild(pre)
        target, fields = self.annotate_args(post.fields)
        new = dataclasses.replace(post, fields=fields)
        self.target[new] = target
        return new

    def visit_tuple_get_item(self, pre: TupleGetItem) -> Expr:
        post = self.rebuild(pre)
        target, (inner,) = self.annotate_args((post.tuple_value,))
        new = dataclasses.replace(post, tuple_value=inner)
        self.target[new] = target
        return new

    def visit_function(self, pre: Function) -> Expr:
        if "Composite" in pre.attrs:
            return pre  # not entered
        post = self.rebuild(pre)
        return dataclasses.replace(post, body=self.close(post.body))

    def visit_let(self, pre: Let) -> Expr:
        post = self.rebuild(pre)
        body = self.close(post.body)
        if isinstance(post.value, Function):
            return dataclasses.replace(post, body=body)
        _, (value,) = self.annotate_args((post.value,))
        return dataclasses.replace(post, value=value, body=body)

    def visit_if(self, pre: If) -> Expr:
        post = self.rebuild(pre)
        return dataclasses.replace(post, cond=self.close(post.cond), true_branch=self.close(post.true_branch),
                                   false_branch=self.close(post.false_branch))


@register_pass
class AnnotateTarget(FunctionPass):
    name = "AnnotateTarget"
    opt_level = 0
    required = ("InferType",)

    def __init__(self, targets: list[str] | None = None, ops: dict[str, list[str]] | None = None) -> None:
        self.targets = targets
        self.ops = ops
        self.diagnostics: list[Diagnostic] = []

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        opts = byoc_options(ctx)
        self.diagnostics = [d for d in opts.diagnostics if d.source != "patterns"]  # MergeComposite's to say
        self._targets = list(self.targets if self.targets is not None else opts.targets)
        self._ops = {t: frozenset(v) for t, v in self.ops.items()} if self.ops is not None else opts.ops
        out = super().run(mod, ctx)
        if out is not mod:
            self.diagnostics.extend(infer_types(out))
        return out

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = _Annotator(self._targets, self._ops).visit(func)
        assert isinstance(out, Function)
        return out
