"""DeadCodeElimination: drop let bindings nobody reads, as TVM's pass of that name.

Rewrites `let %v = value; body` into `body` when %v is never used and evaluating `value`
is pure: it cannot read or write a reference, nor call something that might.  With
`inline_once=True` (default False, as in TVM) a pure binding used exactly once is also
inlined at its use.  With `ignore_impurity=True` (default False) every binding counts
as pure.  Global functions are all kept, used or not, as TVM keeps them; dataflow
bindings (`%0 = ...;`) are not lets and are untouched (an unused one is not in the
graph at all).

How, following TVM's dead_code.cc:

* Purity, over the whole module first.  An expression is pure to evaluate unless it
  reads or writes a reference, calls a stateful op (`nn.dropout`, ...), or calls a
  function that is not pure to call.  Calling is tracked for functions: a global or
  local function is pure to call when its body is; a higher-order parameter, a function
  taken out of a tuple, a reference or an ADT, an extern global and a global the module
  does not define (a lowered PrimFunc behind `call_lowered(@f, ...)`, whose callee is @f)
  are assumed impure to call; a recursive function is assumed pure while its own body is examined.  An
  expression whose type is unknown counts as possibly a function.
* Uses, per function.  Counting starts at the body; the value of a pure binding is
  counted only once its variable has been used, so a chain of dead bindings goes in one
  run.  A use inside a function nested deeper than the binding counts twice (the
  function may run many times, so the value must not be inlined into it).
* Elimination: an unused pure binding goes; with inline_once a pure binding used once
  is replaced by its value at the use; everything else stays.

One difference from TVM: TVM assumes calls nested more than 25 deep are impure (to
bound its recursion), which keeps some dead bindings alive; this walk is iterative and
judges every call.  Removing those is sound, since they are pure.

Expects: typed input (required: InferType; without types, calls through variables are
assumed impure).  Guarantees: the same values and effects.

Spans: nothing new is built.  Surviving expressions keep their spans (enclosing nodes
are rebuilt with `dataclasses.replace`); an inlined value keeps its own; removed
bindings leave no trace.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.expr import (
    Call,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    pattern_vars,
)
from ...ir.functor import ExprFunctor, ExprMutator, children
from ...ir.module import IRModule
from ...ir.types import RefType, TensorType, TupleType, TypeCall
from ..infra import ModulePass, PassContext, register_pass
from .eliminate_common_subexpr import STATEFUL_OPS


@dataclass(frozen=True, slots=True)
class Purity:
    eval: bool  # evaluating the expression has no effect
    call: bool  # calling its value (if it is a function) has no effect


PURE = Purity(True, True)


def first_order(e: Expr) -> bool:
    """Whether `e` is surely not a function (unknown types count as maybe a function)."""
    ty = e.ty
    if ty is None and isinstance(e, Var):
        ty = e.type_annotation
    return isinstance(ty, (TensorType, TupleType, RefType, TypeCall))


class PurityAnalysis(ExprFunctor[Purity]):
    """The purity of every let-bound value in a module (TVM's PurityVisitor)."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod = mod
        self.let_values: dict[Var, Expr] = {}  # let-bound variable -> its value
        self.vars: dict[Var, Purity] = {}  # parameters and pattern variables
        self.globals: dict[GlobalVar, Purity] = {}

    def run(self) -> dict[Var, bool]:
        for gv, func in self.mod.functions.items():
            if not _skipped(func):
                self.of_global(gv)
        return {v: self.of(value).eval for v, value in self.let_values.items() if value in self.memo}

    def of(self, e: Expr) -> Purity:
        """The purity of a visited child (variables are looked up, not memoised)."""
        if isinstance(e, Var):
            return self.of_var(e)
        return self.memo[e] if e in self.memo else self.visit(e)

    def of_var(self, var: Var) -> Purity:
        value = self.let_values.get(var)
        if value is not None:  # a let-bound variable: as pure to call as its value
            if isinstance(value, Var) or value in self.memo:
                return Purity(True, self.of(value).call)
            return PURE  # its own (recursive) value, being examined: assumed pure meanwhile
        return self.vars.get(var, Purity(True, first_order(var)))

    def of_global(self, gv: GlobalVar) -> Purity:
        found = self.globals.get(gv)
        if found is not None:
            return found
        func = self.mod.functions.get(gv)
        if not isinstance(func, Function) or func.attrs.get("Extern") is not None:
            return Purity(True, False)  # externs and unknown globals: assume effects
        self.globals[gv] = PURE  # a recursive call meets this while the body is examined
        self.globals[gv] = result = self.visit(func)
        return result

    def children(self, expr: Expr):
        if isinstance(expr, Let):
            self.let_values[expr.var] = expr.value
        elif isinstance(expr, Function):
            for p in expr.params:
                self.vars[p] = Purity(True, first_order(p))  # higher-order params: impure
        elif isinstance(expr, Match):
            for clause in expr.clauses:
                for v in pattern_vars(clause.lhs):
                    self.vars[v] = Purity(True, first_order(v))
        return children(expr)

    def visit_default(self, expr: Expr) -> Purity:
        return PURE

    def visit_op(self, node: Op) -> Purity:
        return Purity(True, node.name not in STATEFUL_OPS)

    def visit_global_var(self, gv: GlobalVar) -> Purity:
        return self.of_global(gv)

    def visit_function(self, fn: Function) -> Purity:
        body = self.of(fn.body)
        return Purity(True, body.eval and body.call)

    def visit_let(self, let: Let) -> Purity:
        value, body = self.of(let.value), self.of(let.body)
        return Purity(value.eval and body.eval, body.call)

    def visit_call(self, call: Call) -> Purity:
        callee, args = self.of(call.op), all(self.of(a).eval for a in call.args)
        if isinstance(call.op, Op) and call.op.name == "call_lowered" and call.args:
            callee = self.of(call.args[0])  # a lowered call: the callee is the function called
        return Purity(args and callee.eval and callee.call, first_order(call) or callee.call)

    def visit_if(self, node: If) -> Purity:
        c, t, f = self.of(node.cond), self.of(node.true_branch), self.of(node.false_branch)
        return Purity(c.eval and t.eval and f.eval, t.call and f.call)

    def visit_tuple(self, node: Tuple) -> Purity:
        return Purity(all(self.of(f).eval for f in node.fields), True)

    def visit_tuple_get_item(self, node: TupleGetItem) -> Purity:
        return Purity(self.of(node.tuple_value).eval, first_order(node))

    def visit_ref_create(self, node: RefCreate) -> Purity:
        return Purity(self.of(node.value).eval, True)  # creating a ref is unobservable

    def visit_ref_read(self, node: RefRead) -> Purity:
        return Purity(False, first_order(node))

    def visit_ref_write(self, node: RefWrite) -> Purity:
        return Purity(False, True)

    def visit_match(self, node: Match) -> Purity:
        data = self.of(node.data)
        rhs = [self.of(c.rhs) for c in node.clauses]
        return Purity(data.eval and all(r.eval for r in rhs), all(r.call for r in rhs))

    visit_var = visit_constant = visit_constructor = visit_error_expr = visit_default


def _skipped(func: object) -> bool:
    return not isinstance(func, Function) or func.is_primitive or func.attrs.get("Extern") is not None


def count_uses(func: Function, pure: dict[Var, bool], default: bool) -> dict[Var, int]:
    """Uses of every let-bound variable of `func`, 0, 1 or 2 (= many) (TVM's UsageVisitor).

    The walk visits an expression at most twice, and visits a pure binding's value only
    once its variable is used.  Each stack entry carries the function nesting level."""
    values: dict[Var, Expr] = {}
    level_of: dict[Var, int] = {}
    uses: dict[Var, int] = {}
    visits: dict[Expr, int] = {}
    stack: list[tuple[Expr, int]] = [(func, 0)]
    while stack:
        expr, level = stack.pop()
        n = visits.get(expr, 0) + 1
        visits[expr] = n
        if n > 2:
            continue
        if isinstance(expr, Let):
            lets = []
            while isinstance(expr, Let):
                values[expr.var] = expr.value
                uses.setdefault(expr.var, 0)
                level_of[expr.var] = level
                lets.append(expr)
                expr = expr.body
            stack.append((expr, level))  # the body first, then impure values, as TVM
            for let in reversed(lets):
                if not pure.get(let.var, default):
                    stack.append((let.value, level))
            continue
        if isinstance(expr, Var):
            if expr in values:
                count = uses[expr] = uses[expr] + 1
                if count == 1 and pure.get(expr, default):
                    stack.append((values[expr], level))  # now known to be needed
                if level_of[expr] < level:
                    uses[expr] += 1  # used inside a function that may run many times
            continue
        inner = level + 1 if isinstance(expr, Function) else level
        kids = (expr.body,) if isinstance(expr, Function) else children(expr)
        for kid in reversed(kids):
            stack.append((kid, inner))
    return uses


class _Eliminator(ExprMutator):
    """Elides or inlines the let bindings `count_uses` found dead or used once."""

    def __init__(self, uses: dict[Var, int], pure: dict[Var, bool], default: bool, inline_once: bool) -> None:
        super().__init__()
        self.uses, self.pure, self.default, self.inline_once = uses, pure, default, inline_once
        self.values: dict[Var, Expr] = {}
        self.removed = 0

    def action(self, var: Var) -> str:
        if var not in self.uses or not self.pure.get(var, self.default):
            return "keep"
        n = self.uses[var]
        return "elide" if n == 0 else "inline" if n == 1 and self.inline_once else "keep"

    def children(self, expr: Expr):
        if isinstance(expr, Let):
            act = self.action(expr.var)
            if act == "elide":
                return (expr.body,)
            if act == "inline":
                self.values[expr.var] = expr.value
                return (expr.value, expr.body)  # the value first: its result is what the use reads
        return children(expr)

    def visit_var(self, var: Var) -> Expr:
        value = self.values.get(var)
        return var if value is None else self.result(value)

    def visit_let(self, let: Let) -> Expr:
        if self.action(let.var) != "keep":
            self.removed += 1
            return self.result(let.body)
        return self.rebuild(let)


@register_pass
class DeadCodeElimination(ModulePass):
    name = "DeadCodeElimination"
    opt_level = 1
    required = ("InferType",)

    def __init__(self, inline_once: bool = False, ignore_impurity: bool = False) -> None:
        self.inline_once = inline_once
        self.ignore_impurity = ignore_impurity
        self.removed = 0  # bindings elided or inlined by the last run

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self.removed = 0
        pure = {} if self.ignore_impurity else PurityAnalysis(mod).run()
        default = self.ignore_impurity  # a binding the analysis did not reach
        changed: dict = {}
        for gv, func in mod.functions.items():
            if not isinstance(func, Function):
                continue
            uses = count_uses(func, pure, default)
            if not uses:
                continue
            eliminator = _Eliminator(uses, pure, default, self.inline_once)
            new = eliminator.visit(func)
            self.removed += eliminator.removed
            if new is not func:
                changed[gv] = new
        return mod.with_functions(changed) if changed else mod
