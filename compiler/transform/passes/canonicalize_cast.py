"""CanonicalizeCast: give each elementwise consumer of a shared up-cast its own copy.

As TVM's pass of that name (src/relay/transforms/canonicalize_cast.cc,
`CastCanonicalizer`).  An up-cast is `cast(x, dtype=T)` where x's dtype has fewer bits
than T (bool counts 1 bit).  When several calls whose op pattern is elementwise or
broadcast read one up-cast, the first of them keeps the cast and every later one reads a
fresh `cast(x, dtype=T)` of its own, so that after fusion each consumer's function
casts for itself and the producer's function returns the narrow type:

    %1 = cast(%0, dtype="int32");           %1 = cast(%0, dtype="int32");
    add(add(%1, %b1), add(%1, %b2))    =>   %2 = cast(%0, dtype="int32");
                                            add(add(%1, %b1), add(%2, %b2))

"First" is TVM's order: its mutator visits a call's arguments one after the other, each
fully, and counts an argument as soon as that argument has been visited; so in
`add(%1, exp(%1))` the outer add's first argument is counted before the exp inside its
second one.  `first_uses` replays that order without recursion.  Uses by other calls
(conv2d, reshape, ...; an op without a pattern; a call of a function) are not counted
and keep reading the original; down-casts and same-width casts are never copied; a
cast whose input type is unknown is left alone (TVM requires types).

Expects: typed input (required: InferType).  Guarantees: the same values; no up-cast is
read by two elementwise/broadcast calls.  Copies keep the type of the cast they copy.

Spans: a copy is the same cast again, so it carries the span (and type) of the cast it
copies; nothing else is built.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.dtypes import bits
from ...ir.expr import Call, Expr, Function, Op
from ...ir.functor import ExprMutator, children
from ...ir.module import IRModule
from ...ir.types import TensorType
from ...ops import get_op
from ...ops.registry import BROADCAST
from ..infra import FunctionPass, PassContext, register_pass


def is_elementwise_call(expr: Expr) -> bool:
    """A call of an op whose fusion pattern is elementwise or broadcast."""
    if not isinstance(expr, Call) or not isinstance(expr.op, Op):
        return False
    opdef = get_op(expr.op.name)
    return opdef is not None and opdef.pattern is not None and opdef.pattern <= BROADCAST


def is_up_cast(expr: Expr) -> bool:
    if not (isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "cast"):
        return False
    source = expr.args[0].ty if len(expr.args) == 1 else None
    target = expr.attrs.get("dtype")
    if not isinstance(source, TensorType) or not isinstance(target, str):
        return False
    try:
        return bits(source.dtype) < bits(target)
    except ValueError:  # a dtype without a width (handle types): not a numeric cast
        return False


def copied_uses(func: Function) -> set[tuple[Call, int]]:
    """(consumer, argument index) of every elementwise use of an up-cast that is not its
    first, in TVM's visiting order."""
    counts: dict[Expr, int] = {}
    copies: set[tuple[Call, int]] = set()
    visited: set[Expr] = set()
    stack: list[tuple] = [(func,)]
    while stack:
        item = stack.pop()
        if len(item) == 2:  # (consumer, i): the i-th argument has just been visited
            consumer, i = item
            arg = consumer.args[i]
            if is_up_cast(arg):
                counts[arg] = counts.get(arg, 0) + 1
                if counts[arg] > 1:
                    copies.add((consumer, i))
            continue
        (node,) = item
        if node in visited:
            continue
        visited.add(node)
        if is_elementwise_call(node):
            for i in reversed(range(len(node.args))):
                stack.append((node, i))
                stack.append((node.args[i],))
        else:
            kids = (node.body,) if isinstance(node, Function) else children(node)
            stack.extend((kid,) for kid in reversed(kids))
    return copies


class _Copier(ExprMutator):
    def __init__(self, copies: set[tuple[Call, int]]) -> None:
        super().__init__()
        self.copies = copies

    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        marked = [i for i in range(len(original.args)) if (original, i) in self.copies]
        if not marked:
            return new
        args = list(new.args)
        for i in marked:
            args[i] = replace(args[i])  # a fresh node: same op, argument, attrs, span, type
        return replace(new, args=tuple(args))


@register_pass
class CanonicalizeCast(FunctionPass):
    name = "CanonicalizeCast"
    opt_level = 3
    required = ("InferType",)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        copies = copied_uses(func)
        return _Copier(copies).visit(func) if copies else func
