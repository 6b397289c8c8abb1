"""BackwardFoldScaleAxis: fold `multiply(y, scale)` into the weight of the conv2d, conv3d
or dense that produces y, through relu, leaky_relu, add, subtract and nn.bias_add, as TVM
does.

Algorithm (TVM's two phases):

1. Prepare, inputs first: conv2d/conv3d offer the channel axes of their output layout
   (`out_layout`, else `data_layout`) under `ConvInfo`'s conditions; dense offers axis 1
   of a 2-D result; both require a constant scale when their weight is a constant
   (fold_scale_axis_shared.py says where this differs from TVM).  relu and leaky_relu
   pass their input's offer on and require a non-negative scale; add and subtract pass
   on the offer of the operand the other one broadcasts onto, or of both (with the
   conditions of both) when both offer the same axes and have the same shape; bias_add
   passes its data's offer on when its axis is that single axis.  Only a call used
   exactly once takes part: a value used twice cannot change for one of its users.
2. Rewrite: a multiply one operand of which carries an offer on axes A, the other a
   scale that broadcasts onto exactly A and meets the offer's conditions, is replaced
   by that operand rebuilt with the scale pushed down: through relu unchanged,
   into the other operand of an add/subtract (multiplied by the scale, expand_dims'd or
   reshaped to its rank) or into both when both offered, into bias_add's bias, and at the
   bottom into the conv's weight (scale on the kernel's output-channel axis; reshape onto
   `O` and `o` when blocked) or the dense weight (`expand_dims(scale, axis=1)`).

Expects: typed input (required: InferType); calls without types are not folded.
Guarantees: the same values (up to float rounding).  Where TVM would abort or miscompile
we leave the multiply: an add/subtract whose offers disagree with the multiply's axes,
a bias_add without an offer on its data, a dynamic extent to reshape to.  So we do when
the chain from the multiply down to the layer is longer than MAX_DEPTH calls (the rules
recurse).  An add of two offers requires a positive scale when either side does (TVM
kept the left side's flag only, letting a negative scale through a relu on the right).
New nodes have `ty` None until the next InferType; rebuilt calls keep theirs.

Spans: the squeezed scale takes the multiply's span; each multiply (and its expand_dims/
reshape) made to push the scale into a weight or a bias takes the SequentialSpan of the
call it goes into (the conv, dense, add, bias_add) and of the multiply.  Rebuilt calls keep
their own spans; the multiply itself disappears.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable

from ...ir.expr import Call, Expr, Function
from ...ir.functor import ExprMutator, children, post_order
from ...ir.module import IRModule
from ...ir.span import AnySpan
from ...ops import get_op
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
    same_shape,
    scale_allowed,
    squeezed_scale,
    tensor_type,
)

# --- phase 1: what each value offers ----------------------------------------------------

PrepRule = Callable[[Call, "list[Message | None]"], "Message | None"]


def relu_prep(c: Call, ins: list[Message | None]) -> Message | None:
    return replace(ins[0], require_positive=True) if ins[0] is not None else None


def add_sub_prep(c: Call, ins: list[Message | None]) -> Message | None:
    lhs, rhs = (tensor_type(a) for a in c.args)
    if lhs is None or rhs is None:
        return None
    if ins[0] is not None and broadcasts_onto(lhs, rhs, ins[0].axes):
        return ins[0]
    if ins[1] is not None and broadcasts_onto(rhs, lhs, ins[1].axes):
        return ins[1]
    if ins[0] is not None and ins[1] is not None and ins[0].axes == ins[1].axes and same_shape(lhs, rhs):
        return intersect(ins[0], ins[1])
    return None


def bias_add_prep(c: Call, ins: list[Message | None]) -> Message | None:
    try:
        axis = get_op("nn.bias_add").normalize_attrs(c.attrs).axis
    except Exception:  # noqa: BLE001 -- bad attributes: the type checker reports them
        return None
    if ins[0] is not None and ins[0].axes == (axis,):  # (axis as written: -1 never matches, as in TVM)
        return ins[0]
    return None


def conv_prep(c: Call, ins: list[Message | None]) -> Message | None:
    info = conv_info(c)
    axes = info.channel_axes(info.out) if info is not None else None
    return Message(axes, require_constant=is_constant(c.args[1])) if axes is not None else None


def dense_prep(c: Call, ins: list[Message | None]) -> Message | None:
    return Message((1,), require_constant=is_constant(c.args[1])) if dense_ok(c) else None


PREP: dict[str, tuple[int, PrepRule]] = {  # op -> (arity, rule)
    "nn.relu": (1, relu_prep), "nn.leaky_relu": (1, relu_prep),
    "add": (2, add_sub_prep), "subtract": (2, add_sub_prep), "nn.bias_add": (2, bias_add_prep),
    "nn.conv2d": (2, conv_prep), "nn.conv3d": (2, conv_prep), "nn.dense": (2, dense_prep),
}


def use_counts(func: Function) -> Counter:
    """How many times each node is referred to (the function itself once)."""
    counts: Counter = Counter({func: 1})
    for node in post_order(func):
        counts.update(children(node))
    return counts


def prepare(func: Function) -> dict[Expr, Message]:
    uses = use_counts(func)
    messages: dict[Expr, Message] = {}
    for node in post_order(func):
        arity, rule = PREP.get(op_name(node), (-1, None))
        if rule is None or arity != len(node.args) or uses[node] != 1:
            continue
        out = rule(node, [messages.get(a) for a in node.args])
        if out is not None:
            messages[node] = out
    return messages


# --- phase 2: pushing a scale down -------------------------------------------------------
#
# A rule rebuilds one call of the offering chain with the scale pushed into it, or says
# None when it cannot after all; the multiply then stays as it was.  The chain's calls
# are used once (phase 1), so their rebuilt forms are needed nowhere else.

Rule = Callable[["_Transformer", Call, Message, Expr, "AnySpan | None"], "Expr | None"]
MAX_DEPTH = 200  # a longer chain keeps its multiply (the rules recurse on the Python stack)


def _fill(new: Expr, into: Call, origin: AnySpan | None, inputs: list[Expr]) -> Expr:
    return SIBuilder([into.span, origin]).recursively_fill_span(new, inputs=inputs)


def relu_rule(tf: "_Transformer", c: Call, message: Message, scale: Expr, origin: AnySpan | None) -> Expr | None:
    inner = tf.transform(c.args[0], message, scale, origin)
    return replace(c, args=(inner,)) if inner is not None else None


def add_sub_rule(tf: "_Transformer", c: Call, message: Message, scale: Expr, origin: AnySpan | None) -> Expr | None:
    offers = [tf.messages.get(a) for a in c.args]
    scaled = [m is not None and m.axes == message.axes for m in offers]
    if all(scaled):
        both = [tf.transform(a, message, scale, origin) for a in c.args]
        return replace(c, args=tuple(both)) if None not in both else None
    if not any(scaled):
        return None
    k = scaled.index(True)
    ty, other_ty = tensor_type(c.args[k]), tensor_type(c.args[1 - k])
    if ty is None or other_ty is None or not broadcasts_onto(ty, other_ty, message.axes):
        return None
    factor = reshape_or_expand(scale, ty.shape, message.axes)
    moved = tf.transform(c.args[k], message, scale, origin)
    if factor is None or moved is None:
        return None
    other = tf.result(c.args[1 - k])
    other = _fill(call("multiply", other, factor), c, origin, [other, scale])
    return replace(c, args=(moved, other) if k == 0 else (other, moved))


def bias_add_rule(tf: "_Transformer", c: Call, message: Message, scale: Expr, origin: AnySpan | None) -> Expr | None:
    data = tf.transform(c.args[0], message, scale, origin) if tf.messages.get(c.args[0]) is not None else None
    if data is None:
        return None
    bias = tf.result(c.args[1])
    bias = _fill(call("multiply", bias, scale), c, origin, [bias, scale])
    return replace(c, args=(data, bias))


def conv_rule(tf: "_Transformer", c: Call, message: Message, scale: Expr, origin: AnySpan | None) -> Expr | None:
    info = conv_info(c)
    if info is None or info.channel_axes(info.out) != message.axes:
        return None
    big, small = info.kernel_axes("O")
    if small < 0:
        factor = expand_to_axis(scale, info.kernel_ndim, big)
    else:
        factor = reshape_to_axes(scale, tensor_type(c.args[1]).shape, (big, small))
        if factor is None:
            return None
    data, weight = tf.result(c.args[0]), tf.result(c.args[1])
    weight = _fill(call("multiply", weight, factor), c, origin, [weight, scale])
    return replace(c, args=(data, weight))


def dense_rule(tf: "_Transformer", c: Call, message: Message, scale: Expr, origin: AnySpan | None) -> Expr | None:
    if message.axes != (1,) or not dense_ok(c):
        return None
    data, weight = tf.result(c.args[0]), tf.result(c.args[1])
    weight = _fill(call("multiply", weight, expand_to_axis(scale, 2, 0)), c, origin, [weight, scale])
    return replace(c, args=(data, weight))


RULES: dict[str, Rule] = {
    "nn.relu": relu_rule, "nn.leaky_relu": relu_rule, "add": add_sub_rule, "subtract": add_sub_rule,
    "nn.bias_add": bias_add_rule, "nn.conv2d": conv_rule, "nn.conv3d": conv_rule, "nn.dense": dense_rule,
}


class _Transformer(ExprMutator):
    """Rebuilds inputs first; a multiply that folds becomes its offering operand rebuilt
    again with the scale pushed down (`transform`)."""

    def __init__(self, messages: dict[Expr, Message]) -> None:
        super().__init__()
        self.messages = messages
        self.depth = 0  # calls of the chain being rebuilt (the rules recurse)

    def visit_call(self, original: Call) -> Expr:
        if op_name(original) == "multiply" and len(original.args) == 2:
            folded = self.fold_multiply(original)
            if folded is not None:
                return folded
        return self.rebuild(original)

    def fold_multiply(self, c: Call) -> Expr | None:
        types = [tensor_type(a) for a in c.args]
        if None in types:
            return None
        for k in (0, 1):  # only the first operand with an offer is tried, as in TVM
            offer = self.messages.get(c.args[k])
            if offer is None:
                continue
            # the scale is the operand as written (TVM does not rewrite inside it)
            scale = squeezed_scale(types[k], types[1 - k], offer.axes, c.args[1 - k])
            if scale is None or not scale_allowed(offer, scale):
                return None
            SIBuilder(c).recursively_fill_span(scale, inputs=[c.args[1 - k]])
            return self.transform(c.args[k], offer, scale, c.span)
        return None

    def transform(self, expr: Expr, message: Message, scale: Expr, origin: AnySpan | None) -> Expr | None:
        """`expr` rebuilt with `scale` multiplied in on the message's axes, or None."""
        rule = RULES.get(op_name(expr))
        if rule is None or self.depth >= MAX_DEPTH:
            return None
        self.depth += 1
        try:
            return rule(self, expr, message, scale, origin)
        finally:
            self.depth -= 1


def backward_fold_scale_axis(func: Function) -> Function:
    messages = prepare(func)
    if not messages:
        return func
    return _Transformer(messages).visit(func)


@register_pass
class BackwardFoldScaleAxis(FunctionPass):
    name = "BackwardFoldScaleAxis"
    opt_level = 3
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return backward_fold_scale_axis(func)
