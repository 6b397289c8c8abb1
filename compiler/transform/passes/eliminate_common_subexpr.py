"""EliminateCommonSubexpr: compute equal expressions once, as TVM's pass of that name.

Rewrites, walking each function bottom-up (so arguments are already merged):

* a call merges into an earlier call of the same operator with structurally equal
  attributes (after defaults are filled in: `concatenate(t)` equals
  `concatenate(t, axis=0)`) and equivalent arguments: the very same expression, or two
  scalar constants with equal dtype and value, or two tuples whose fields are so;
* a projection `t.i` merges into an earlier projection of the very same tuple `t` and
  index.

Never merged, as in TVM: calls with no arguments, calls of anything but an operator
(functions, globals, constructors: they may have effects), calls of stateful operators
(`nn.dropout`, `memory.kill`, `vm.invoke_tvm_op`, TVM's TOpIsStateful), and whatever
the optional `fskip(expr)` callback says to skip.  (TVM's `relay.build` passes a
callback meant to skip `cast(.., "int32")`, which in v0.16 never skips anything; the
default here skips nothing either.)  The random ops need no exception: they are pure
functions of their key.  Merging is across the whole function, nested functions and
branches included, as TVM's pass does; sharing a node is how the graph says "compute
once" and scoping is safe, since arguments must be the very same objects.

Expects: typed input (required: InferType), though nothing here reads a type.
Guarantees: the same values; no two calls left that the rules above would merge.
Surviving nodes keep their types.

Spans: the surviving expression's span becomes the SequentialSpan of its own span and
the spans of every expression merged into it, in the order they were met; the survivor
is rebuilt with `dataclasses.replace`, the input is never touched.  An expression not
involved in a merge keeps its span.  With `ir.enable_si_builder` off, survivors keep
their own span.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ...ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem
from ...ir.functor import ExprMutator
from ...ir.module import IRModule
from ...ir.span import sequential
from ...ir.structural_equal import structural_equal
from ...ops import get_op
from ..infra import FunctionPass, PassContext, register_pass

STATEFUL_OPS = frozenset({"nn.dropout", "memory.kill", "vm.invoke_tvm_op"})


def _arg_key(arg: Expr) -> Any:
    """What two equivalent arguments share: the object itself, or for a scalar constant
    its dtype and bytes, or for a tuple the keys of its fields."""
    if isinstance(arg, Constant) and arg.data is not None and np.ndim(arg.data) == 0:
        data = np.asarray(arg.data)
        return ("scalar", data.dtype.str, data.tobytes())
    if isinstance(arg, Tuple):
        return ("tuple", tuple(_arg_key(f) if not isinstance(f, Tuple) else id(f) for f in arg.fields))
    return id(arg)


class _Attrs:
    """A call's attributes for comparison: normalised when the op knows them."""

    __slots__ = ("call", "normal")

    def __init__(self, call: Call) -> None:
        self.call = call
        opdef = get_op(call.op.name)
        try:
            self.normal = opdef.normalize_attrs(call.attrs) if opdef is not None else None
        except Exception:  # noqa: BLE001 -- compare as written
            self.normal = None

    def __eq__(self, other: object) -> bool:
        assert isinstance(other, _Attrs)
        if self.normal is not None and other.normal is not None:
            return dict(self.normal) == dict(other.normal)
        a, b = self.call, other.call
        return structural_equal(Call(a.op, (), a.attrs), Call(b.op, (), b.attrs))


class _Merger(ExprMutator):
    """TVM's CommonSubexprEliminator; also records, per survivor, what merged into it."""

    def __init__(self, fskip: Callable[[Expr], bool] | None) -> None:
        super().__init__()
        self.fskip = fskip
        self.calls: dict[tuple, list[tuple[Call, _Attrs]]] = {}  # (op, arg keys) -> calls
        self.items: dict[tuple[int, int], TupleGetItem] = {}  # (id(tuple), index) -> projection
        self.merged: dict[Expr, list[Expr]] = {}  # survivor -> the expressions merged into it

    def visit_call(self, call: Call) -> Expr:
        new = self.rebuild(call)
        if (not new.args or not isinstance(new.op, Op) or new.op.name in STATEFUL_OPS
                or (self.fskip is not None and self.fskip(new))):
            return new
        bucket = self.calls.setdefault((new.op.name, tuple(_arg_key(a) for a in new.args)), [])
        attrs = _Attrs(new)
        for candidate, cand_attrs in bucket:
            if cand_attrs == attrs:
                self.merged.setdefault(candidate, []).append(new)
                return candidate
        bucket.append((new, attrs))
        return new

    def visit_tuple_get_item(self, item: TupleGetItem) -> Expr:
        new = self.rebuild(item)
        if self.fskip is not None and self.fskip(new):
            return new
        key = (id(new.tuple_value), new.index)
        found = self.items.get(key)
        if found is not None:
            self.merged.setdefault(found, []).append(new)
            return found
        self.items[key] = new
        return new


class _Respan(ExprMutator):
    """Gives each survivor the spans of what merged into it (rebuilding, never mutating)."""

    def __init__(self, merged: dict[Expr, list[Expr]]) -> None:
        super().__init__()
        self.merged = merged

    def visit_default(self, expr: Expr) -> Expr:
        new = self.rebuild(expr)
        dups = self.merged.get(expr)
        if dups is None:
            return new
        return replace(new, span=sequential(expr.span, *(d.span for d in dups)))

    visit_call = visit_tuple_get_item = visit_default


@register_pass
class EliminateCommonSubexpr(FunctionPass):
    name = "EliminateCommonSubexpr"
    opt_level = 3
    required = ("InferType",)

    def __init__(self, fskip: Callable[[Expr], bool] | None = None) -> None:
        self.fskip = fskip
        self.merges = 0  # expressions merged away by the last run

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.merges = 0
        return super().run(mod, ctx)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        merger = _Merger(self.fskip)
        out = merger.visit(func)
        if not merger.merged or not ctx.si_builder_enabled:
            return out
        self.merges += sum(len(d) for d in merger.merged.values())
        return _Respan(merger.merged).visit(out)
