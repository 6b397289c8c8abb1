"""Legalize: rewrite ops into forms the target computes well, as TVM's pass of that name
(src/relay/transforms/legalize.cc, opt level 1), and the hook the rules register on.

A rule is TVM's FTVMLegalize: `rule(call, args, types) -> Expr | None`, with the call as
the walk rebuilt it (`args` its new arguments), and `types` the argument types then the
result type as InferType gave them.  None keeps the call.  Rules are kept per attribute
name, as TVM keeps them on the op registry:

    @register_legalize("erf")                              # FTVMLegalize
    @register_legalize("qnn.conv2d", "FTVMQnnLegalize")    # qnn.Legalize's first step

The walk is post-order: a call's arguments are legalized before it.  A call whose
argument or result types are unknown is left alone.  The target is TVM's default x86
target, `llvm` (what `relay.build(mod, target="llvm")` compiles for); the rules and which
ops have none are listed in legalize_x86.py and qnn_legalize.py.

Expects typed input (required: InferType).  Guarantees the same values.

Spans: the expressions a rule builds take the span of the call they replace
(`SIBuilder(call).recursively_fill_span(out, inputs=args)`).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from ...ir.expr import Call, Expr, Function, Op
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...ir.types import Type
from ..infra import FunctionPass, PassContext, register_pass
from ..si_builder import SIBuilder

Rule = Callable[[Call, tuple[Expr, ...], list[Type]], "Expr | None"]
_RULES: dict[str, dict[str, Rule]] = {}


def register_legalize(op_name: str, attr: str = "FTVMLegalize") -> Callable[[Rule], Rule]:
    """Register `rule` as the `attr` legalization of `op_name` (one per op and attribute)."""

    def register(rule: Rule) -> Rule:
        table = _RULES.setdefault(attr, {})
        if op_name in table:
            raise ValueError(f"{attr} of {op_name} is registered twice")
        table[op_name] = rule
        return rule

    return register


@contextmanager
def temporary_legalize(op_name: str, rule: Rule | None, attr: str = "FTVMLegalize") -> Iterator[None]:
    """`rule` in place of `op_name`'s `attr` rule while the block runs (TVM's TempOpAttr,
    for tests); None removes the rule for the block."""
    table = _RULES.setdefault(attr, {})
    saved = table.pop(op_name, None)
    if rule is not None:
        table[op_name] = rule
    try:
        yield
    finally:
        table.pop(op_name, None)
        if saved is not None:
            table[op_name] = saved


def legalizations(attr: str = "FTVMLegalize") -> dict[str, Rule]:
    """The rules registered under `attr`, by op name."""
    return dict(_RULES.get(attr, {}))


class _Legalizer(ExprMutator):
    def __init__(self, rules: dict[str, Rule]) -> None:
        super().__init__()
        self.rules = rules

    def visit_call(self, original: Call) -> Expr:
        new = self.rebuild(original)
        rule = self.rules.get(original.op.name) if isinstance(original.op, Op) else None
        if rule is None:
            return new
        types = [a.ty for a in original.args] + [original.ty]
        if any(t is None for t in types):
            return new
        out = rule(new, new.args, types)
        if out is None:
            return new
        return SIBuilder(original).recursively_fill_span(out, inputs=new.args)


def legalize_function(func: Function, attr: str) -> Function:
    rules = legalizations(attr)
    return _Legalizer(rules).visit(func) if rules else func


@register_pass
class Legalize(FunctionPass):
    name = "Legalize"
    opt_level = 1
    required = ("InferType",)

    def __init__(self, legalize_map_attr_name: str = "FTVMLegalize") -> None:
        self.attr = legalize_map_attr_name

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return legalize_function(func, self.attr)
