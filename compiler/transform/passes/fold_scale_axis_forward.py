"""ForwardFoldScaleAxis: fold `multiply(x, scale)` into the weight of the conv2d, conv3d
or dense that consumes it, through relu, leaky_relu, add and subtract, as TVM does.

Algorithm (TVM's two phases):

1. Prepare, from the function's result back to its inputs: each consumer says on which
   axes its input may arrive scaled.  conv2d/conv3d ask for the channel axes of their
   data layout on the data (nothing on the weight), under `ConvInfo`'s conditions; dense
   asks for axis 1 of 2-D data; both ask for a constant scale when their weight is a
   constant.  relu and leaky_relu pass their own request on and require a non-negative
   scale; add and subtract pass it to the operand the other one broadcasts onto (the
   other operand gets nothing) and require a constant without a zero element, since
   they divide by it (fold_scale_axis_shared.py says where this differs from TVM).  A
   value used several times gets the intersection of its uses' requests; any other use
   (an op without a rule, a tuple, an if, a let, a function's result) asks for nothing
   and so blocks folding of that value.
2. Rewrite, inputs first: a multiply whose result is requested on axes A, one operand of
   which broadcasts onto exactly A and meets the request's conditions, is dropped: its
   other operand goes on as a scaled value (value, A, squeezed scale).  relu and
   leaky_relu let it through; add and subtract divide their other operand by the scale
   (expand_dims to the operand's rank, or reshape for two axes); conv multiplies its
   weight by the scale on the kernel's input-channel axis (output-channel axis when
   depthwise; a reshape onto both blocked axes); dense multiplies its weight by it.

Like TVM's forward rewriter, the rewrite also takes a field out of a tuple literal:
`(a, b).1` becomes `b` (the field keeps its own span), whenever the function has a request
at all.

Expects: typed input (required: InferType); calls without types are not folded.
Guarantees: the same values (up to float rounding); a scale that a consumer cannot take
after all is applied again where it was (TVM aborts there).  New nodes have `ty` None
until the next InferType; the rebuilt relu/add/conv/dense keep theirs (the scale does
not change a type).  `nn.bias_add` has no forward rule, as in TVM.

Spans: the squeezed scale takes the multiply's span.  What a consumer makes of it (the
weight's multiply and its expand_dims/reshape, the divided operand of an add) takes the
SequentialSpan of the consumer and the multiply: a folded weight names the conv and the
scale it absorbed.  The rebuilt relu, add, conv and dense keep their own spans; the
multiply itself disappears.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ...ir.expr import Call, Expr, Function, Tuple, TupleGetItem
from ...ir.functor import ExprMutator, children, post_order
from ...ir.module import IRModule
from ...ir.span import AnySpan
from ..infra import FunctionPass, PassContext, register_pass
from ..si_builder import SIBuilder
from .fold_scale_axis_shared import (
    Message,
    broadcasts_onto,
    call,
    conv_info,
    dense_ok,
    expand_to_axis,
    intersect,
    is_constant,
    op_name,
    reshape_or_expand,
    reshape_to_axes,
    scale_allowed,
    squeezed_scale,
    tensor_type,
)

# --- phase 1: what each value's consumers can absorb ---------------------------------------

PrepRule = Callable[[Call, "Message | None"], "list[Message | None] | None"]


def relu_prep(c: Call, out: Message | None) -> list[Message | None] | None:
    return [replace(out, require_positive=True) if out is not None else None]


def add_sub_prep(c: Call, out: Message | None) -> list[Message | None] | None:
    lhs, rhs = (tensor_type(a) for a in c.args)
    if out is None or lhs is None or rhs is None:
        return None
    divides = replace(out, require_nonzero=True)  # the other operand is divided by the scale
    if broadcasts_onto(lhs, rhs, out.axes):
        return [divides, None]
    if broadcasts_onto(rhs, lhs, out.axes):
        return [None, divides]
    return None


def conv_prep(c: Call, out: Message | None) -> list[Message | None] | None:
    info = conv_info(c)
    axes = info.channel_axes(info.data) if info is not None else None
    return [Message(axes, require_constant=is_constant(c.args[1])), None] if axes is not None else None


def dense_prep(c: Call, out: Message | None) -> list[Message | None] | None:
    return [Message((1,), require_constant=is_constant(c.args[1])), None] if dense_ok(c) else None


PREP: dict[str, tuple[int, PrepRule]] = {  # op -> (arity, rule)
    "nn.relu": (1, relu_prep), "nn.leaky_relu": (1, relu_prep),
    "add": (2, add_sub_prep), "subtract": (2, add_sub_prep),
    "nn.conv2d": (2, conv_prep), "nn.conv3d": (2, conv_prep), "nn.dense": (2, dense_prep),
}


def prepare(func: Function) -> dict[Expr, Message | None]:
    """The request on every value, consumers before producers (reverse post-order)."""
    messages: dict[Expr, Message | None] = {func: None}

    def update(node: Expr, message: Message | None) -> None:
        messages[node] = intersect(messages[node], message) if node in messages else message

    for node in reversed(list(post_order(func))):
        if isinstance(node, Call):
            arity, rule = PREP.get(op_name(node), (-1, None))
            ins = rule(node, messages.get(node)) if rule is not None and arity == len(node.args) else None
            for arg, message in zip(node.args, ins or [None] * len(node.args)):
                update(arg, message)
        elif not isinstance(node, TupleGetItem):  # (a projection asks nothing of its tuple, as in TVM)
            for child in children(node):
                update(child, None)
    return messages


# --- phase 2: the rewrite ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Scaled:
    """`value` with its axes `axes` multiplied by `scale` (squeezed to those axes)."""

    value: Expr
    axes: tuple[int, ...]
    scale: Expr
    origin: AnySpan | None  # the span of the multiply the scale came from
    unfolded: Expr  # the same result with the scale applied where it was


Arg = Expr | Scaled
Rule = Callable[["_Rewriter", Call, list[Arg], "Message | None"], "Expr | Scaled | None"]


def _fill(new: Expr, consumer: Call, scaled: Scaled, inputs: list[Expr]) -> Expr:
    return SIBuilder([consumer.span, scaled.origin]).recursively_fill_span(new, inputs=inputs)


def relu_rule(rw: "_Rewriter", c: Call, args: list[Arg], message: Message | None) -> Expr | Scaled | None:
    (x,) = args
    if not isinstance(x, Scaled):
        return None
    return Scaled(replace(c, args=(x.value,)), x.axes, x.scale, x.origin, rw.rebuild(c))


def add_sub_rule(rw: "_Rewriter", c: Call, args: list[Arg], message: Message | None) -> Expr | Scaled | None:
    if isinstance(args[0], Scaled) == isinstance(args[1], Scaled):
        return None
    k = 0 if isinstance(args[0], Scaled) else 1
    scaled, other = args[k], rw.realize(args[1 - k])
    ty, other_ty = tensor_type(c.args[k]), tensor_type(c.args[1 - k])
    if ty is None or other_ty is None or not broadcasts_onto(ty, other_ty, scaled.axes):
        return None
    factor = reshape_or_expand(scaled.scale, ty.shape, scaled.axes)
    if factor is None:
        return None
    divided = _fill(call("divide", other, factor), c, scaled, [other, scaled.scale])
    new_args = (scaled.value, divided) if k == 0 else (divided, scaled.value)
    return Scaled(replace(c, args=new_args), scaled.axes, scaled.scale, scaled.origin, rw.rebuild(c))


def multiply_rule(rw: "_Rewriter", c: Call, args: list[Arg], message: Message | None) -> Expr | Scaled | None:
    if message is None or not message.axes or any(isinstance(a, Scaled) for a in args):
        return None  # (empty axes: consumers asked for different axes; TVM aborts)
    types = [tensor_type(a) for a in c.args]
    if None in types:
        return None
    for k in (0, 1):  # either operand may be the scale; the right one is tried first, as in TVM
        value, scale = args[k], args[1 - k]
        squeezed = squeezed_scale(types[k], types[1 - k], message.axes, scale)
        if squeezed is None or not scale_allowed(message, squeezed):
            continue
        SIBuilder(c).recursively_fill_span(squeezed, inputs=[scale])
        return Scaled(value, message.axes, squeezed, c.span, rw.rebuild(c))
    return None


def conv_rule(rw: "_Rewriter", c: Call, args: list[Arg], message: Message | None) -> Expr | Scaled | None:
    data, weight = args
    info = conv_info(c)
    if not isinstance(data, Scaled) or isinstance(weight, Scaled) or info is None:
        return None
    if info.channel_axes(info.data) != data.axes:
        return None
    big, small = info.kernel_axes("O" if info.depthwise else "I")
    if small < 0:
        factor = expand_to_axis(data.scale, info.kernel_ndim, big)
    else:
        factor = reshape_to_axes(data.scale, tensor_type(c.args[1]).shape, (big, small))
        if factor is None:
            return None
    new_weight = _fill(call("multiply", weight, factor), c, data, [weight, data.scale])
    return replace(c, args=(data.value, new_weight))


def dense_rule(rw: "_Rewriter", c: Call, args: list[Arg], message: Message | None) -> Expr | Scaled | None:
    data, weight = args
    if not isinstance(data, Scaled) or isinstance(weight, Scaled) or data.axes != (1,) or not dense_ok(c):
        return None
    new_weight = _fill(call("multiply", weight, data.scale), c, data, [weight, data.scale])
    return replace(c, args=(data.value, new_weight))


RULES: dict[str, tuple[int, Rule]] = {  # op -> (arity, rule)
    "nn.relu": (1, relu_rule), "nn.leaky_relu": (1, relu_rule),
    "add": (2, add_sub_rule), "subtract": (2, add_sub_rule), "multiply": (2, multiply_rule),
    "nn.conv2d": (2, conv_rule), "nn.conv3d": (2, conv_rule), "nn.dense": (2, dense_rule),
}


class _Rewriter(ExprMutator):
    """Inputs first; a call's rule sees its arguments as rewritten (scaled or not); every
    other node sees them realized."""

    def __init__(self, messages: dict[Expr, Message | None]) -> None:
        super().__init__()
        self.messages = messages

    @staticmethod
    def realize(value: Arg) -> Expr:
        return value.unfolded if isinstance(value, Scaled) else value

    def result(self, expr: Expr) -> Expr:
        return self.realize(super().result(expr))

    def visit_tuple_get_item(self, original: TupleGetItem) -> Expr:
        new = self.rebuild(original)
        fields = new.tuple_value.fields if isinstance(new.tuple_value, Tuple) else ()
        return fields[new.index] if 0 <= new.index < len(fields) else new

    def visit_call(self, original: Call) -> Expr | Scaled:  # type: ignore[override]
        arity, rule = RULES.get(op_name(original), (-1, None))
        if rule is not None and arity == len(original.args):
            args = [self.memo.get(a, a) for a in original.args]
            out = rule(self, original, args, self.messages.get(original))
            if out is not None:
                return out
        return self.rebuild(original)


def forward_fold_scale_axis(func: Function) -> Function:
    messages = prepare(func)
    if all(m is None for m in messages.values()):
        return func
    return _Rewriter(messages).visit(func)


@register_pass
class ForwardFoldScaleAxis(FunctionPass):
    name = "ForwardFoldScaleAxis"
    opt_level = 3
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return forward_fold_scale_axis(func)
