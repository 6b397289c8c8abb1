"""The layout rewriter that AlterOpLayout and ConvertLayout share (TVM:
src/relay/transforms/transform_layout.h, forward_rewrite.cc); each op's layout rule is in
layout_rules.py, the layouts themselves in layouts.py.

    new_func = LayoutRewriter(change_call).rewrite(func)

`change_call(ref_call, attrs, args) -> Call | None` is the one thing the two passes do
differently: AlterOpLayout asks the target's alter rules (x86_conv2d_layout.py,
x86_dense_layout.py), ConvertLayout
the desired layouts.  The walk is TVM's ForwardRewrite: every call, children first, gets

1. the layouts its inputs are in now (`new_prd`) and were in before (`old_prd`): an input
   that an earlier rewrite changed is an `Altered(value, old, new)`, any other has no
   layout (None);
2. `old_cur, old_out = infer(call, None, old_prd)`: the layouts the original call works in;
3. the call changed (`change_call`, or kept), then `new_cur, new_out = infer(new_call,
   new_prd or old_cur, old_prd or old_cur)`;
4. each input transformed from the layout it is in to the one the new call wants
   (`layout_transform`, with `expand_dims` first when the input has fewer primal axes, a
   bias beside NCHW16c data; nothing for an input whose every extent is 1, which
   broadcasts in any layout), memoised per (input, from, to) so a tensor is transformed
   once however many calls read it;
5. the result an `Altered(new_call, old_out, new_out)`.

An op without an inference rule (layout_rules.py), or whose rule fails (None), is rebuilt
with its inputs transformed back to the layouts they had (`realize`); so is anything that
is not a call (a function's result, a let, an if).  A call with a tuple result
(batch_norm, split) is an `AlteredResults`: its `TupleGetItem`s are Altered values of
their own, and anything else that reads it whole gets a tuple of its fields each
transformed back.

Layouts are TVM's strings (layouts.py): upper-case letters primal axes, `16c` a sub-axis
of C of 16.  `UNDEF` is TVM's Layout::Undef(), the "any layout" a broadcast of two
layout-less inputs reports; it is a layout (the rewrite goes on), and transforming from it
to itself is nothing.

Spans: a layout_transform or expand_dims made for a call's input takes the span of that
input (of the call, when the input has none); for an input that is a variable, the call's
document range with the variable's frontend layers (`input_span`): a variable's range is
its binder, a parameter on the def line, which computes nothing, while the transform is a
kernel that runs at every inference (a weight left unbound, the model's input), so it
sits on the line that reads the variable, and its profile row keeps the variable's layer
(`/conv1/Conv.input`).  It is not the call's own kernel: provenance lets a move speak for
the call only when nothing else does (compiler/provenance.py, `movers`).  One that takes a
result back to its old layout takes the span of the expression that reads it (the result expression's, for the
function's result: its lens sits on that line, not on the def line beside the inputs').  So a source expression leads to its own kernel, not to the transforms around it.
A rewritten call keeps the span of the call it replaces; the TupleGetItems and the Tuple that
take a rewritten tuple result back apart take that call's span.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..ir.attrs import Attrs, IntImm
from ..ir.expr import Call, Expr, Function, Op, Tuple, TupleGetItem, Var, op
from ..ir.functor import ExprFunctor, FIELDS
from ..ir.span import AnySpan, LayerSpan, document_span, sequential
from ..ir.types import TensorType, TupleType
from ..ops import get_op
from ..ops.attrs import AttrError
from .layout_rules import infer, infer_rule
from .layouts import UNDEF, Layout, LayoutError, MaybeLayout, convertible, same


# ---------------------------------------------------------------------- the rewriter


def _same_attrs(op_name: str, a: Attrs, b: Attrs) -> bool:
    """Whether two attribute maps of an op mean the same (defaults filled in)."""
    if a == b:
        return True
    opdef = get_op(op_name)
    try:
        return opdef is not None and dict(opdef.normalize_attrs(a)) == dict(opdef.normalize_attrs(b))
    except (AttrError, TypeError, ValueError):  # attributes that do not normalise are not the same
        return False

@dataclass(eq=False)
class Altered:
    """A value that a rewrite produced in `new` layout where the original was in `old`."""

    value: Expr
    old: Layout
    new: Layout


@dataclass(eq=False)
class AlteredTuple:
    """A tuple whose fields may be Altered (TVM keeps such a tuple's temporaries)."""

    node: Tuple
    fields: list


@dataclass(eq=False)
class AlteredResults:
    """A call with a tuple result (batch_norm, split) whose fields a rewrite produced in
    `new` layouts where the original's were in `old`."""

    value: Call
    old: list
    new: list


ChangeCall = Callable[[Call, Attrs, list], "Call | None"]


class LayoutRewriter(ExprFunctor):
    """One walk of one function (see the module doc)."""

    def __init__(self, change_call: ChangeCall) -> None:
        super().__init__()
        self.change_call = change_call
        self.transforms: dict[tuple[int, str, str], Expr] = {}
        self.keep: list[Expr] = []  # the memo's keys stay alive

    def rewrite(self, func: Function) -> Function:
        body = self.realize(self.visit(func.body), func.body.span or func.span)
        if body is func.body:
            return func
        return replace(func, body=body)

    def children(self, expr: Expr):
        if isinstance(expr, Function):  # a nested function is rewritten on its own
            return ()
        return super().children(expr)

    # ---- transforms

    def transform(self, raw: Expr, src: MaybeLayout, dst: MaybeLayout, span: AnySpan | None) -> Expr:
        """`raw` (in `src`) in `dst`, memoised (TVM's TransformMemorizer)."""
        if same(src, dst):
            return raw
        if src is None or dst is None or src is UNDEF or dst is UNDEF:
            raise LayoutError(f"cannot transform from {src} to {dst}")
        key = (id(raw), src.name, dst.name)
        found = self.transforms.get(key)
        if found is None:
            found = self.transforms[key] = self._transform(raw, src, dst, span)
            self.keep.append(raw)
        return found

    def _transform(self, raw: Expr, src: Layout, dst: Layout, span) -> Expr:
        value = raw
        if src.ndim_primal < dst.ndim_primal:
            if isinstance(raw.ty, TensorType) and all(d == 1 for d in raw.ty.shape):
                return raw  # TVM's IsScalar: every extent 1 broadcasts in any layout
            count = dst.ndim_primal - src.ndim_primal
            src = src.expand_primal(dst)
            attrs = {"axis": IntImm(0), "num_newaxis": IntImm(count)}
            value = Call(op("expand_dims"), (value,), Attrs(attrs), span=span)
            if same(src, dst):
                return value
        if not convertible(src, dst):
            raise LayoutError(f"cannot transform from {src} to {dst}")
        return Call(op("layout_transform"), (value,),
                    Attrs({"src_layout": src.name, "dst_layout": dst.name}), span=span)

    def realize(self, value, span=None) -> Expr:
        """A rewritten value as a plain expression in its original layout; the transform
        back takes `span` (its reader's), else the value's own."""
        if isinstance(value, Altered):
            return self.transform(value.value, value.new, value.old, span or value.value.span)
        if isinstance(value, AlteredResults):
            if all(same(o, n) for o, n in zip(value.old, value.new)):
                return value.value
            call = value.value
            fields = tuple(self.transform(TupleGetItem(call, i, span=call.span), n, o, span or call.span)
                           for i, (o, n) in enumerate(zip(value.old, value.new)))
            return Tuple(fields, span=call.span)
        if isinstance(value, AlteredTuple):
            fields = tuple(self.realize(f, span) for f in value.fields)
            if all(a is b for a, b in zip(fields, value.node.fields)):
                return value.node
            return replace(value.node, fields=fields)
        return value

    # ---- the walk

    def visit_default(self, expr: Expr):
        """Anything but a call or tuple: rebuilt from its realized children."""
        fields = FIELDS.get(type(expr))
        if not fields:
            return expr
        changes = {}
        for name, many in fields:
            old = getattr(expr, name)
            if many:
                new = tuple(self._plain(e, expr.span) for e in old)
                if any(a is not b for a, b in zip(new, old)):
                    changes[name] = new
            else:
                new = self._plain(old, expr.span)
                if new is not old:
                    changes[name] = new
        return replace(expr, **changes) if changes else expr

    def _plain(self, e, span=None):
        if not isinstance(e, Expr):
            return e
        return self.realize(self.memo[e], span) if e in self.memo else e

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_let = visit_if = visit_function = visit_ref_create = visit_ref_read = visit_default
    visit_ref_write = visit_match = visit_error_expr = visit_default

    def visit_tuple(self, node: Tuple):
        fields = [self.memo.get(f, f) for f in node.fields]
        if all(f is g for f, g in zip(fields, node.fields)):
            return node
        if any(isinstance(f, AlteredResults) for f in fields):
            fields = [self.realize(f, node.span) if isinstance(f, AlteredResults) else f for f in fields]
        if not any(isinstance(f, (Altered, AlteredTuple)) for f in fields):
            return replace(node, fields=tuple(fields))
        return AlteredTuple(node, fields)

    def visit_tuple_get_item(self, node: TupleGetItem):
        inner = self.memo.get(node.tuple_value, node.tuple_value)
        if isinstance(inner, AlteredTuple):
            return inner.fields[node.index]
        if isinstance(inner, AlteredResults):
            item = node if inner.value is node.tuple_value else replace(node, tuple_value=inner.value)
            return Altered(item, inner.old[node.index], inner.new[node.index])
        return self.visit_default(node)

    def visit_call(self, call: Call):
        args = [self.memo.get(a, a) for a in call.args]
        try:
            out = self._rewrite_call(call, args)
        except LayoutError:
            out = None
        if out is not None:
            return out
        new_args = tuple(self.realize(a, call.span) for a in args)
        new_op = self._plain(call.op)
        if new_op is call.op and all(a is b for a, b in zip(new_args, call.args)):
            return call
        return replace(call, op=new_op, args=new_args)

    def _rewrite_call(self, ref: Call, args: list):
        if not isinstance(ref.op, Op) or infer_rule(ref.op.name) is None:
            return None
        if any(a.ty is None for a in ref.args):
            return None
        inputs: list = []  # (value, old, new) per flattened input
        plain_args: list[Expr] = []
        for a in args:
            if isinstance(a, (AlteredTuple, Tuple)):
                node = a.node if isinstance(a, AlteredTuple) else a
                fields = a.fields if isinstance(a, AlteredTuple) else list(a.fields)
                vals = [self._one(f, inputs) for f in fields]
                same_fields = all(x is y for x, y in zip(vals, node.fields))
                plain_args.append(node if same_fields else replace(node, fields=tuple(vals)))
            else:
                plain_args.append(self._one(a, inputs))
        old_prd = [o for _, o, _ in inputs]
        new_prd = [n for _, _, n in inputs]
        types = [a.ty for a in ref.args]
        first = infer(ref, None, old_prd, types)
        if first is None or len(first.inputs) != len(inputs):
            return None
        old_cur, old_out = first.inputs, first.outputs
        new_prd_inferred = [n if n is not None else c for n, c in zip(new_prd, old_cur)]
        old_prd_inferred = [o if o is not None else c for o, c in zip(old_prd, old_cur)]
        new_call = self.change_call(ref, first.attrs, plain_args)
        if new_call is None:
            new_call = Call(ref.op, tuple(plain_args), first.attrs)
        second = infer(new_call, new_prd_inferred, old_prd_inferred, types)
        if second is None or len(second.inputs) != len(inputs) or len(second.outputs) != len(old_out):
            return None
        new_cur, new_out = second.inputs, second.outputs

        def fix(item: Expr, k: int) -> Expr:
            if same(old_cur[k], old_prd[k]):
                return self.transform(item, new_prd[k], new_cur[k], input_span(item, ref))
            if old_prd[k] is not None:
                item = self.transform(item, new_prd[k], old_prd[k], input_span(item, ref))
            return self.transform(item, old_cur[k], new_cur[k], input_span(item, ref))

        transformed, k = [], 0
        for arg in new_call.args:
            if isinstance(arg, Tuple):
                fields = []
                for f in arg.fields:
                    fields.append(fix(f, k))
                    k += 1
                transformed.append(replace(arg, fields=tuple(fields)))
            else:
                transformed.append(fix(arg, k))
                k += 1
        attrs = second.attrs
        if new_call.op is ref.op and _same_attrs(ref.op.name, attrs, ref.attrs):
            attrs = ref.attrs  # a rule that wrote the values in force (axis=1 for axis=1) changed nothing
        if (new_call.op is ref.op and attrs is ref.attrs
                and all(a is b for a, b in zip(transformed, ref.args))):
            value = ref  # nothing changed: the very call, so an untouched graph stays as it was
        else:
            value = Call(new_call.op, tuple(transformed), attrs, span=ref.span)
        if isinstance(ref.ty, TupleType):
            if len(old_out) != len(ref.ty.fields):
                return None
            return AlteredResults(value, list(old_out), list(new_out))
        return Altered(value, old_out[0], new_out[0])

    @staticmethod
    def _one(a, inputs: list) -> Expr:
        if isinstance(a, Altered):
            inputs.append((a.value, a.old, a.new))
            return a.value
        if isinstance(a, (AlteredTuple, AlteredResults)):
            raise LayoutError("a nested tuple")
        inputs.append((a, None, None))
        return a


def input_span(value: Expr, call: Call) -> AnySpan | None:
    """The span of a transform of `call`'s input `value`: the input's own; the call's when
    it has none; for a variable (whose range is its binder: a parameter on the def line),
    the call's document range with the variable's frontend layers."""
    if value.span is None:
        return call.span
    if not isinstance(value, Var):
        return value.span
    layers = [o for o in value.span.origins() if isinstance(o, LayerSpan)]
    return sequential(document_span(call.span), *layers) or value.span
