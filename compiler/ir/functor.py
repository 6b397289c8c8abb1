"""Visitors over expressions that never recurse on the Python stack.

`post_order(root)` walks an expression graph with an explicit stack and yields every node
once, children before parents.  The three visitor classes are built on it, in TVM's
spirit (dispatch by node type, memoised so a shared node is visited once):

* `ExprVisitor.visit(e)` calls `visit_<kind>(node)` for every node below `e`, children
  first.  A hook does not recurse: the walk has already reached the children.
* `ExprFunctor[R].visit(e)` returns a value per node.  Before a hook runs, every child
  already has its value in the memo, so `self.visit(child)` inside a hook is a lookup and
  hooks may be written as if recursive.
* `ExprMutator.visit(e)` rebuilds the graph bottom-up.  The default hooks rebuild a node
  only when a child changed (keeping its span and type) and return the same object
  otherwise, so a mutator that changes nothing returns its input.

Override `children(node)` to prune the walk (e.g. to leave `Primitive=1` functions alone);
`ExprMutator.rebuild` keeps a pruned child as it is instead of walking it after all.
A 50,000-node chain costs a 50,000-entry list, never 50,000 Python frames.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Container, Generic, Iterable, Iterator, TypeVar

from ..pauses import pause_point

from .expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    ErrorExpr,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    pattern_vars,
)

R = TypeVar("R")

# The expression-valued fields of each node kind: (field name, is a tuple of expressions).
FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {
    Call: (("op", False), ("args", True)),
    Tuple: (("fields", True),),
    TupleGetItem: (("tuple_value", False),),
    Let: (("var", False), ("value", False), ("body", False)),
    If: (("cond", False), ("true_branch", False), ("false_branch", False)),
    Function: (("params", True), ("body", False)),
    RefCreate: (("value", False),),
    RefRead: (("ref", False),),
    RefWrite: (("ref", False), ("value", False)),
}
LEAVES = (Var, GlobalVar, Constant, Op, Constructor, ErrorExpr)


def children(expr: Expr) -> tuple[Expr, ...]:
    """The sub-expressions of a node, binders included, in evaluation order."""
    fields = FIELDS.get(type(expr))
    if fields is not None:
        out: list[Expr] = []
        for name, many in fields:
            value = getattr(expr, name)
            if many:
                out.extend(value)
            else:
                out.append(value)
        return tuple(out)
    if isinstance(expr, Match):
        out = [expr.data]
        for clause in expr.clauses:
            out.extend(pattern_vars(clause.lhs))
            out.append(clause.rhs)
        return tuple(out)
    return ()


PAUSE_NODES = 1024  # steps of `post_order` between two pause points


def post_order(
    root: Expr,
    expand: Callable[[Expr], Iterable[Expr]] = children,
    done: Container[Expr] | None = None,
) -> Iterator[Expr]:
    """Every node reachable from `root`, each once, children first.

    `done` holds nodes already handled (the caller's memo); when given, the caller must
    add each yielded node to it before asking for the next one.  A pause point every
    PAUSE_NODES steps (compiler/pauses.py: the language server's analyses in pieces).
    """
    own = done is None
    finished: Container[Expr] = set() if own else done  # type: ignore[assignment]
    stack: list[tuple[Expr, bool]] = [(root, False)]
    countdown = PAUSE_NODES
    while stack:
        countdown -= 1
        if not countdown:  # (the way down a chain of 20,000 statements, before the first node)
            countdown = PAUSE_NODES
            pause_point()
        node, expanded = stack.pop()
        if node in finished:
            continue
        if expanded:
            if own:
                finished.add(node)  # type: ignore[union-attr]
            yield node
            continue
        stack.append((node, True))
        kids = expand(node)
        for child in reversed(tuple(kids)):
            if child not in finished:
                stack.append((child, False))


def _hook_name(cls: type) -> str:
    name = cls.__name__
    snake = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return "visit_" + snake


_HOOKS = {cls: _hook_name(cls) for cls in (*FIELDS, *LEAVES, Match)}


class ExprFunctor(Generic[R]):
    """Computes a value per node, bottom-up, memoised by node identity."""

    def __init__(self) -> None:
        self.memo: dict[Expr, R] = {}

    def children(self, expr: Expr) -> Iterable[Expr]:
        return children(expr)

    def visit(self, expr: Expr) -> R:
        memo = self.memo
        if expr in memo:
            return memo[expr]
        for node in post_order(expr, self.children, memo):
            memo[node] = self._dispatch(node)
        return memo[expr]

    def _dispatch(self, node: Expr) -> R:
        hook = _HOOKS.get(type(node))
        if hook is None:
            raise TypeError(f"{type(self).__name__}: no hook for {type(node).__name__}")
        return getattr(self, hook)(node)

    def visit_default(self, expr: Expr) -> R:
        raise NotImplementedError(f"{type(self).__name__} does not handle {type(expr).__name__}")

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_get_item = visit_let = visit_if = visit_default
    visit_function = visit_ref_create = visit_ref_read = visit_ref_write = visit_default
    visit_match = visit_error_expr = visit_default


class ExprVisitor(ExprFunctor[None]):
    """Calls `visit_<kind>(node)` once per node, children first; hooks do not recurse."""

    def visit_default(self, expr: Expr) -> None:
        return None

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_get_item = visit_let = visit_if = visit_default
    visit_function = visit_ref_create = visit_ref_read = visit_ref_write = visit_default
    visit_match = visit_error_expr = visit_default


class ExprMutator(ExprFunctor[Expr]):
    """Rebuilds expressions bottom-up; unchanged subgraphs come back as the same objects."""

    def visit_default(self, expr: Expr) -> Expr:
        return self.rebuild(expr)

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_get_item = visit_let = visit_if = visit_default
    visit_function = visit_ref_create = visit_ref_read = visit_ref_write = visit_default
    visit_error_expr = visit_default

    def result(self, expr: Expr) -> Expr:
        """The visited value of a child; a child the walk did not reach (pruned by
        `children()`) is left alone rather than walked now."""
        memo = self.memo
        return memo[expr] if expr in memo else expr

    def rebuild(self, expr: Expr) -> Expr:
        """`expr` with every child replaced by its visited value (same object if none changed)."""
        fields = FIELDS.get(type(expr))
        if fields is None:
            return expr
        result = self.result
        changes = {}
        for name, many in fields:
            old = getattr(expr, name)
            if many:
                new = tuple(result(e) for e in old)
                if any(a is not b for a, b in zip(new, old)):
                    changes[name] = new
            else:
                new = result(old)
                if new is not old:
                    changes[name] = new
        return replace(expr, **changes) if changes else expr

    def visit_match(self, match: Match) -> Expr:
        data = self.result(match.data)
        clauses = tuple(self.visit_clause(c) for c in match.clauses)
        if data is match.data and all(a is b for a, b in zip(clauses, match.clauses)):
            return match
        return replace(match, data=data, clauses=clauses)

    def visit_clause(self, clause: Clause) -> Clause:
        lhs = self.visit_pattern(clause.lhs)
        rhs = self.result(clause.rhs)
        if lhs is clause.lhs and rhs is clause.rhs:
            return clause
        return replace(clause, lhs=lhs, rhs=rhs)

    def visit_pattern(self, pattern: Pattern) -> Pattern:
        if isinstance(pattern, PatternVar):
            var = self.result(pattern.var)
            return pattern if var is pattern.var else replace(pattern, var=var)
        if isinstance(pattern, (PatternConstructor, PatternTuple)):
            subs = tuple(self.visit_pattern(p) for p in pattern.patterns)
            if all(a is b for a, b in zip(subs, pattern.patterns)):
                return pattern
            return replace(pattern, patterns=subs)
        assert isinstance(pattern, PatternWildcard)
        return pattern
