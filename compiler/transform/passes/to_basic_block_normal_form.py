"""ToBasicBlockNormalForm: let-bind what several scopes share, in the scope they share.

As TVM's pass of that name (src/relay/transforms/to_basic_block_normal_form.cc, with
`CalcScope` and `Fill::ToBasicBlockNormalForm` of to_a_normal_form.cc and the
DependencyGraph of src/relay/analysis/dependency_graph.cc).

Scopes: a function's body, each branch of an `if`, each clause of a `match`, and the
rest of a `let` after its binding (value and body) each open a scope inside the scope of
the expression that holds them.  In our IR a dataflow graph (`%0 = ...;` statements) is
one expression with shared nodes, so a node used from two branches of an `if` is in no
basic block of its own: this pass gives it one.

1. Dependency graph.  Every expression is a node, every scope a node of its own; an
   edge runs from a user to what it uses, in TVM's order (a call's operands are visited
   first, then linked; an `if` links its condition, its two branch scopes, then each
   branch; a let chain links each binding's variable and value, then the bodies from
   the innermost out).
2. Scopes.  In reverse post-order each node gets the lowest common ancestor of its
   users' scopes.  A node whose scope differs from its *first* user's scope (TVM's
   rule: the order of the users counts) is "lifted" (operators never are).
3. Fill.  Rebuilding the function, a lifted expression (other than a variable, global,
   operator or constructor, which are atoms) is bound, `let %x = expr;`, in the let list
   of its scope, and each scope's bindings wrap that scope's body.  Existing lets are
   rebuilt through the same let lists, so they stay where they are unless their value
   is lifted.  As in TVM, an expression reached again after a `let` bound it reads the
   let's variable: `let %x = 4f; let %y = %x; %x` becomes `...; %y`.

So a dataflow graph with no `if`, `match`, `let` or local function comes back as it
is (the same object, without building the graph), and so does anything already in
basic block normal form.
`Primitive=1` functions are not entered, functions with a `Compiler` attribute are
skipped, as in TVM.

Left out (documented differences): TVM evaluates the three operands of a rebuilt `if`
in the C++ compiler's argument order; here the condition, then the true branch, then
the false one.  TVM re-wraps each binding it makes inside a fixed `on_device` (or a
function with a virtual device) in an `on_device` of that device; here a fixed
`on_device` (constrain_body and constrain_result) stays around its rebuilt body, a `let`
of one keeps binding the annotated value, and no new binding is annotated (in a
one-device build before PlanDevices there is no device to write).  TVM
requires global functions to have no free variables; here they are allowed.

Expects: nothing (no types needed; new variables are untyped until the next InferType).
Guarantees: the same values; no expression shared between scopes without a binding.

Spans: a new `let %x = expr;` and its variable take the span of `expr`; a rebuilt let
keeps the span of the let it rebuilds, a rebuilt node its own.  Fresh variables are
named `x`, `x1`, ... avoiding the function's own names (TVM names them all `x`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Generator, Iterable

from ...ir.expr import (
    Call,
    Constant,
    Constructor,
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
)
from ...ir.functor import children, post_order
from ...ir.module import IRModule
from ..infra import ModulePass, PassContext, register_pass
from ..names import NameSupply

ATOMS = (Var, GlobalVar, Op, Constructor)


def trampoline(gen: Generator) -> Any:
    """Run a recursive computation written as generators without Python recursion: a
    generator yields the generator of a sub-computation and is sent back its result."""
    stack = [gen]
    value = None
    while stack:
        try:
            child = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            value = stop.value
            continue
        stack.append(child)
        value = None
    return value


class _Scope:
    __slots__ = ("parent", "level", "lets")

    def __init__(self, parent: "_Scope | None" = None) -> None:
        self.parent = parent
        self.level = parent.level + 1 if parent is not None else 0
        self.lets: list[tuple[Var, Expr, Expr | None]] = []  # (var, value, where from)


def lca(a: _Scope, b: _Scope) -> _Scope:
    while a is not b:
        if a.level > b.level:
            a = a.parent
        elif a.level < b.level:
            b = b.parent
        else:
            a, b = a.parent, b.parent
    return a


class _Node:
    __slots__ = ("expr", "new_scope", "parents", "scope", "subs")

    def __init__(self, expr: Expr | None, new_scope: bool = False) -> None:
        self.expr = expr
        self.new_scope = new_scope
        self.parents: list[_Node] = []
        self.scope: _Scope | None = None
        self.subs: list[_Node] = []  # the scope nodes an if/function/let/match opens


class DependencyGraph:
    """TVM's DependencyGraph: nodes for expressions and scopes, users in TVM's order."""

    def __init__(self, root: Expr) -> None:
        self.nodes: dict[Expr, _Node] = {}
        self.order: list[_Node] = []  # post-DFS order
        self.visited: set[Expr] = set()
        trampoline(self._visit(root))

    def node(self, e: Expr) -> _Node:
        n = self.nodes.get(e)
        if n is None:
            n = self.nodes[e] = _Node(e)
        return n

    def _link(self, parent: _Node, child: _Node) -> None:
        child.parents.append(parent)

    def _scope_node(self, owner: _Node) -> _Node:
        b = _Node(None, new_scope=True)
        self._link(owner, b)
        owner.subs.append(b)
        return b

    def _depend(self, parent: _Node, child: Expr):
        yield self._visit(child)
        self._link(parent, self.node(child))

    def _visit(self, e: Expr):
        if e in self.visited:
            return
        self.visited.add(e)
        n = self.node(e)
        if isinstance(e, (Call, Tuple, TupleGetItem)):  # dataflow: visit all, then link
            kids = (e.op, *e.args) if isinstance(e, Call) else e.fields if isinstance(e, Tuple) else (e.tuple_value,)
            for kid in kids:
                yield self._visit(kid)
            for kid in kids:
                self._link(n, self.node(kid))
        elif isinstance(e, If):
            yield from self._depend(n, e.cond)
            t, f = self._scope_node(n), self._scope_node(n)
            yield from self._depend(t, e.true_branch)
            yield from self._depend(f, e.false_branch)
            self.order += [f, t]
        elif isinstance(e, Function):
            b = self._scope_node(n)
            for p in e.params:
                yield from self._depend(b, p)
            yield from self._depend(b, e.body)
            self.order.append(b)
        elif isinstance(e, Let):
            chain: list[tuple[Let, _Node]] = []
            let: Expr = e
            while isinstance(let, Let):
                self.visited.add(let)
                b = self._scope_node(self.node(let))
                yield from self._depend(b, let.var)
                yield from self._depend(b, let.value)
                chain.append((let, b))
                let = let.body
            for let, b in reversed(chain):
                yield from self._depend(b, let.body)
                self.order.append(b)
                if let is not e:
                    self.order.append(self.node(let))
        elif isinstance(e, Match):
            yield from self._depend(n, e.data)
            scopes = []
            for clause in e.clauses:
                b = self._scope_node(n)
                yield from self._depend(b, clause.rhs)
                scopes.append(b)
            self.order += reversed(scopes)
        elif isinstance(e, (RefCreate, RefRead, RefWrite)):
            for kid in (e.value,) if isinstance(e, RefCreate) else (e.ref,) if isinstance(e, RefRead) else (e.ref, e.value):
                yield from self._depend(n, kid)
        self.order.append(n)

    def scopes(self) -> set[Expr]:
        """Give every node its scope; returns the lifted expressions (TVM's CalcScope)."""
        lifted: set[Expr] = set()
        root_scope = _Scope()
        for n in reversed(self.order):
            if not n.parents:
                s = root_scope
            else:
                first = s = n.parents[0].scope
                for p in n.parents[1:]:
                    s = lca(s, p.scope)
                if s is not first and n.expr is not None and not isinstance(n.expr, Op):
                    lifted.add(n.expr)
            n.scope = _Scope(s) if n.new_scope else s
        return lifted


class _Fill:
    def __init__(self, graph: DependencyGraph, lifted: set[Expr], names: NameSupply) -> None:
        self.graph = graph
        self.lifted = lifted
        self.names = names
        self.memo: dict[Expr, Expr] = {}
        self.nesting = 0

    def scope(self, e: Expr) -> _Scope:
        return self.graph.nodes[e].scope

    def sub(self, e: Expr, i: int) -> _Scope:
        return self.graph.nodes[e].subs[i].scope

    @staticmethod
    def wrap(scope: _Scope, body: Expr) -> Expr:
        """`body` inside the scope's bindings; a binding that came from a let rebuilds it."""
        for var, value, origin in reversed(scope.lets):
            if isinstance(origin, Let) and origin.var is var:
                if origin.value is not value or origin.body is not body:
                    body = replace(origin, value=value, body=body)
                else:
                    body = origin
            else:
                body = Let(var, value, body, span=origin.span if origin is not None else None)
        scope.lets.clear()
        return body

    def fresh(self, origin: Expr) -> Var:
        return Var(self.names.fresh_name("x", add_prefix=False, add_underscore=False), span=origin.span)

    def atomic(self, e: Expr, v: Var | None, let: Let | None, scope_of: Expr | None = None) -> Expr:
        if v is None:
            return e
        self.scope(scope_of if scope_of is not None else e).lets.append((v, e, let))
        return v

    def compound(self, orig: Expr, now: Expr, v: Var | None, let: Let | None) -> Expr:
        if v is None and orig not in self.lifted:
            return now
        scope = self.scope(orig)
        var = v if v is not None else self.fresh(orig)
        if isinstance(now, Let):  # flatten: the inner bindings go to the same list
            while isinstance(now, Let):
                scope.lets.append((now.var, now.value, now))
                now = now.body
        scope.lets.append((var, now, let if let is not None else orig))
        return var

    def visit(self, e: Expr, v: Var | None = None, let: Let | None = None):
        if e in self.memo:
            if v is not None:
                self.scope(e).lets.append((v, self.memo[e], let))
            return self.memo[e]
        out = yield self._dispatch(e, v, let)
        self.memo[e] = out
        return out

    def _all(self, exprs: Iterable[Expr]):
        out = []
        for x in exprs:
            out.append((yield self.visit(x)))
        return out

    def _dispatch(self, e: Expr, v: Var | None, let: Let | None):
        if isinstance(e, ATOMS):
            return self.atomic(e, v, let)
        if isinstance(e, Constant):
            return self.compound(e, e, v, let)
        if isinstance(e, Call):
            if is_fixed_on_device(e):  # transparent: its body is visited, it is kept
                body = yield self.visit(e.args[0])
                now = e if body is e.args[0] else replace(e, args=(body,))
                return self.atomic(now, v, let, scope_of=e)
            args = yield from self._all(e.args)
            callee = yield self.visit(e.op)
            return self.compound(e, _rebuilt(e, op=callee, args=tuple(args)), v, let)
        if isinstance(e, Tuple):
            fields = yield from self._all(e.fields)
            return self.compound(e, _rebuilt(e, fields=tuple(fields)), v, let)
        if isinstance(e, TupleGetItem):
            tup = yield self.visit(e.tuple_value)
            return self.compound(e, _rebuilt(e, tuple_value=tup), v, let)
        if isinstance(e, RefCreate):
            value = yield self.visit(e.value)
            return self.compound(e, _rebuilt(e, value=value), v, let)
        if isinstance(e, RefRead):
            ref = yield self.visit(e.ref)
            return self.compound(e, _rebuilt(e, ref=ref), v, let)
        if isinstance(e, RefWrite):
            ref = yield self.visit(e.ref)
            value = yield self.visit(e.value)
            return self.compound(e, _rebuilt(e, ref=ref, value=value), v, let)
        if isinstance(e, If):
            cond = yield self.visit(e.cond)
            t = self.wrap(self.sub(e, 0), (yield self.visit(e.true_branch)))
            f = self.wrap(self.sub(e, 1), (yield self.visit(e.false_branch)))
            return self.compound(e, _rebuilt(e, cond=cond, true_branch=t, false_branch=f), v, let)
        if isinstance(e, Function):
            if e.is_primitive:
                out = e
            else:
                self.nesting += 1
                body = self.wrap(self.sub(e, 0), (yield self.visit(e.body)))
                self.nesting -= 1
                out = _rebuilt(e, body=body)
            return out if self.nesting == 0 else self.compound(e, out, v, let)
        if isinstance(e, Let):
            yield self.visit(e.value, e.var, e)
            body = self.wrap(self.sub(e, 0), (yield self.visit(e.body)))
            return self.compound(e, body, v, let)
        if isinstance(e, Match):
            data = yield self.visit(e.data)
            clauses = []
            for i, clause in enumerate(e.clauses):
                rhs = self.wrap(self.sub(e, i), (yield self.visit(clause.rhs)))
                clauses.append(clause if rhs is clause.rhs else replace(clause, rhs=rhs))
            same = data is e.data and all(a is b for a, b in zip(clauses, e.clauses))
            return self.compound(e, e if same else replace(e, data=data, clauses=tuple(clauses)), v, let)
        return self.compound(e, e, v, let)  # an ErrorExpr: left as it is


def _rebuilt(e: Expr, **fields: Any) -> Expr:
    """`e` with these fields, or `e` itself when every one is the same object."""
    for name, value in fields.items():
        old = getattr(e, name)
        if isinstance(value, tuple):
            if len(value) != len(old) or any(a is not b for a, b in zip(value, old)):
                return replace(e, **fields)
        elif value is not old:
            return replace(e, **fields)
    return e


def is_fixed_on_device(e: Call) -> bool:
    """`on_device(x, constrain_body=True, constrain_result=True)` (TVM's `is_fixed`)."""
    if not (isinstance(e.op, Op) and e.op.name == "on_device" and len(e.args) == 1):
        return False
    return bool(e.attrs.get("constrain_result", False)) and bool(e.attrs.get("constrain_body", True))


def basic_block_violations(func: Function) -> set[Expr]:
    """The expressions this pass would bind (empty: `func` is in basic block normal
    form).  TVM's check_basic_block_normal_form also counts atoms (a global called from
    two branches), which no pass ever binds; they are left out here."""
    return {e for e in DependencyGraph(func).scopes() if not isinstance(e, ATOMS)}


def has_scopes(func: Function) -> bool:
    """Whether `func`'s body opens a scope (if, match, let, local function); without one
    every node shares the body's scope and the pass has nothing to do."""
    expand = lambda e: () if isinstance(e, Function) and e is not func else children(e)  # noqa: E731
    return any(isinstance(n, (If, Match, Let)) or (isinstance(n, Function) and n is not func)
               for n in post_order(func, expand))


def to_basic_block_normal_form(func: Function) -> Function:
    if not has_scopes(func):
        return func
    graph = DependencyGraph(func)
    lifted = graph.scopes()
    names = NameSupply(prefix="")
    for node in post_order(func):
        if isinstance(node, Var):
            names.reserve_name(node.name, add_prefix=False)
    fill = _Fill(graph, lifted, names)
    out = trampoline(fill.visit(func))
    return fill.wrap(graph.nodes[func].scope, out)


@register_pass
class ToBasicBlockNormalForm(ModulePass):
    name = "ToBasicBlockNormalForm"
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed = {}
        for gv, func in mod.functions.items():
            if not isinstance(func, Function) or "Compiler" in func.attrs:
                continue
            new = to_basic_block_normal_form(func)
            if new is not func:
                changed[gv] = new
        return mod.with_functions(changed) if changed else mod

