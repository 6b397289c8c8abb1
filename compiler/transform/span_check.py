"""The span invariant every pass keeps (DESIGN.md, "Source information"):
an expression made from expressions that have spans has a span itself.
"""

from __future__ import annotations

from ..ir.expr import Expr, Function, Var
from ..ir.functor import children, post_order
from ..ir.module import IRModule


def spanless(mod: IRModule) -> list[tuple[str, Expr]]:
    """(global name, expression) for every expression lacking a span although one of
    its sub-expressions has one.  Binders are leaves: a variable is checked on its own."""
    found: list[tuple[str, Expr]] = []
    done: set[Expr] = set()
    for gv, func in mod.functions.items():
        for node in post_order(func, done=done):
            done.add(node)
            if node.span is not None or isinstance(node, Var):
                continue
            kids = children(node)
            if isinstance(node, Function):
                kids = (node.body,)
            if any(k.span is not None for k in kids):
                found.append((gv.name, node))
    return found
