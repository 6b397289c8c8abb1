"""The visitor core (compiler/ir/functor.py): post_order, ExprVisitor, ExprFunctor,
ExprMutator, pruning through `children()`, and 50,000-node chains under the default
recursion limit."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pytest

from relaylens.compiler.ir import (
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    ErrorExpr,
    ExprFunctor,
    ExprMutator,
    ExprVisitor,
    Function,
    GlobalTypeVar,
    GlobalVar,
    If,
    IntImm,
    LayerSpan,
    Let,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    children,
    op,
    post_order,
)
from relaylens.compiler.ir.structural_equal import assert_structural_equal

N = 50_000
F32 = TensorType((), "float32")
LIST = GlobalTypeVar("List")
CONS = Constructor("Cons", (F32,), LIST, 0)


def const(v):
    return Constant(np.array(v, "float32"))


def call(name, *args, **kw):
    return Call(op(name), tuple(args), **kw)


@pytest.fixture(autouse=True)
def default_recursion_limit():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


def every_kind():
    """One graph holding every expression kind, with a shared subexpression."""
    x = Var("x", F32, span=LayerSpan("x"))
    shared = call("add", x, const(1.0), span=LayerSpan("shared"))
    v, w = Var("v"), Var("w")
    match = Match(
        shared,
        (
            Clause(PatternConstructor(CONS, (PatternVar(v),)), v, span=LayerSpan("clause")),
            Clause(PatternTuple((PatternWildcard(), PatternVar(w))), w),
        ),
        span=LayerSpan("match"),
    )
    r = Var("r")
    body = Let(
        r,
        RefCreate(shared),
        Tuple((
            If(const(True), RefRead(r), TupleGetItem(Tuple((shared, shared)), 1)),
            RefWrite(r, shared),
            Call(GlobalVar("g"), (match,)),
            Call(CONS, (shared,)),
            ErrorExpr("oops"),
        ), span=LayerSpan("tuple")),
        span=LayerSpan("let"),
    )
    return Function((x,), body, span=LayerSpan("fn")), x, shared


# ------------------------------------------------------------ post_order
def test_post_order_children_first_each_once():
    fn, x, shared = every_kind()
    order = list(post_order(fn))
    assert len(order) == len(set(map(id, order)))  # each node once
    assert order[-1] is fn
    position = {id(n): i for i, n in enumerate(order)}
    for node in order:
        for child in children(node):
            assert position[id(child)] < position[id(node)], (child, node)
    # Everything reachable is there, and the shared node only once.
    assert sum(1 for n in order if n is shared) == 1
    assert x in order and op("add") in order


def test_post_order_exact_order():
    x, y = Var("x"), Var("y")
    a = call("multiply", x, y)
    e = call("add", a, a)
    assert list(post_order(e)) == [op("add"), op("multiply"), x, y, a, e]


def test_post_order_let_binds_before_value_and_match_pattern_vars():
    v = Var("v")
    let = Let(v, const(1.0), v)
    order = list(post_order(let))
    assert order.index(v) < order.index(let.value)
    p = Var("p")
    m = Match(const(1.0), (Clause(PatternVar(p), p),))
    assert p in list(post_order(m))


def test_post_order_with_done_skips_finished_nodes():
    x = Var("x")
    inner = call("negative", x)
    outer = call("add", inner, x)
    done = {inner: None, x: None}
    seen = []
    for node in post_order(outer, done=done):
        seen.append(node)
        done[node] = None  # the caller's side of the contract
    assert seen == [op("add"), outer]


def test_post_order_custom_expand_prunes():
    x = Var("x")
    prim = Function((x,), call("negative", x), attrs=Attrs({"Primitive": IntImm(1)}))
    e = Call(prim, (const(1.0),))

    def expand(n):
        return () if isinstance(n, Function) else children(n)

    order = list(post_order(e, expand))
    assert prim in order and x not in order


# ------------------------------------------------------------ ExprVisitor
class Counting(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.counts = Counter()
        self.order = []

    def visit_default(self, expr):
        self.counts[type(expr).__name__] += 1
        self.order.append(expr)

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_get_item = visit_let = visit_if = visit_default
    visit_function = visit_ref_create = visit_ref_read = visit_ref_write = visit_default
    visit_match = visit_error_expr = visit_default


def test_visitor_counts_each_node_once_and_dispatches_every_kind():
    fn, x, shared = every_kind()
    v = Counting()
    v.visit(fn)
    distinct = list(post_order(fn))
    assert v.order == distinct
    assert sum(v.counts.values()) == len(distinct)
    for kind in ("Var", "GlobalVar", "Constant", "Op", "Constructor", "Call", "Tuple", "TupleGetItem",
                 "Let", "If", "Function", "RefCreate", "RefRead", "RefWrite", "Match", "ErrorExpr"):
        assert v.counts[kind] >= 1, kind
    assert sum(1 for n in v.order if n is shared) == 1
    # Visiting again (or a part already seen) costs nothing.
    v.visit(fn)
    v.visit(shared)
    assert sum(v.counts.values()) == len(distinct)


def test_visitor_hooks_by_name():
    seen = []

    class Calls(ExprVisitor):
        def visit_call(self, c):
            seen.append(c.op.name)

        def visit_tuple_get_item(self, t):
            seen.append(f".{t.index}")

    x = Var("x")
    Calls().visit(TupleGetItem(Tuple((call("nn.relu", call("negative", x)),)), 0))
    assert seen == ["negative", "nn.relu", ".0"]


# ------------------------------------------------------------ ExprFunctor
class Depth(ExprFunctor[int]):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def visit_default(self, e):
        self.calls += 1
        return 1 + max((self.visit(c) for c in self.children(e)), default=0)

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_get_item = visit_let = visit_if = visit_default
    visit_function = visit_ref_create = visit_ref_read = visit_ref_write = visit_default
    visit_match = visit_error_expr = visit_default


def test_functor_memo_and_recursive_style_hooks():
    x = Var("x")
    a = call("add", x, x)
    b = call("multiply", a, a)
    f = Depth()
    assert f.visit(b) == 3
    assert f.calls == 5  # add, multiply, x, a, b: each once
    assert f.memo[a] == 2 and f.memo[x] == 1
    assert f.visit(b) == 3 and f.visit(a) == 2
    assert f.calls == 5  # answered from the memo


def test_functor_base_hooks_raise():
    with pytest.raises(NotImplementedError, match="does not handle Var"):
        ExprFunctor().visit(Var("x"))

    class Strange(Var):
        pass

    with pytest.raises(TypeError, match="no hook for Strange"):
        ExprVisitor().visit(Strange("s"))


# ------------------------------------------------------------ ExprMutator
def test_mutator_identity_returns_same_objects():
    fn, _, _ = every_kind()
    m = ExprMutator()
    assert m.visit(fn) is fn
    assert all(m.memo[n] is n for n in post_order(fn))


class RenameVar(ExprMutator):
    def __init__(self, old, new):
        super().__init__()
        self.old, self.new = old, new

    def visit_var(self, v):
        return self.new if v is self.old else v


def test_mutator_rebuilds_keeping_span_and_ty_and_sharing():
    x, y = Var("x"), Var("y")
    untouched = call("negative", const(2.0), span=LayerSpan("neg"))
    shared = call("add", x, const(1.0), span=LayerSpan("shared"), ty=F32)
    top = call("multiply", shared, shared, span=LayerSpan("top"), ty=F32)
    root = Tuple((top, untouched), span=LayerSpan("tuple"))
    out = RenameVar(x, y).visit(root)
    assert out is not root and out.span == root.span
    new_top = out.fields[0]
    assert new_top.span == top.span and new_top.ty is F32
    assert new_top.args[0] is new_top.args[1]  # still shared, rebuilt once
    assert new_top.args[0].args[0] is y and new_top.args[0].span == shared.span and new_top.args[0].ty is F32
    assert out.fields[1] is untouched  # unchanged subgraphs are the same objects
    assert new_top.args[0].args[1] is shared.args[1]


def test_mutator_every_kind_rebuilt_with_spans():
    fn, x, _ = every_kind()
    x2 = Var("x2", F32, span=x.span)
    out = RenameVar(x, x2).visit(fn)
    assert out.params[0] is x2
    assert_structural_equal(fn, out, spans=True)  # the same up to the renaming, spans kept
    assert all(n is not x for n in post_order(out))


def test_mutator_match_clause_pattern():
    v, v2 = Var("v"), Var("v2")
    d = Var("d")
    clause = Clause(PatternConstructor(CONS, (PatternVar(v, span=LayerSpan("pv")),), span=LayerSpan("pc")),
                    call("nn.relu", v), span=LayerSpan("clause"))
    keep = Clause(PatternTuple((PatternWildcard(),)), const(0.0))
    m = Match(d, (clause, keep), complete=False, span=LayerSpan("match"), ty=F32)
    out = RenameVar(v, v2).visit(m)
    assert out is not m and out.span == m.span and out.ty is F32 and out.complete is False
    new_clause = out.clauses[0]
    assert new_clause.span == clause.span
    assert new_clause.lhs.span == clause.lhs.span
    assert new_clause.lhs.patterns[0].var is v2 and new_clause.lhs.patterns[0].span == LayerSpan("pv")
    assert new_clause.rhs.args[0] is v2
    assert out.clauses[1] is keep
    assert out.data is d
    assert ExprMutator().visit(m) is m
    # Changing only the matched value rebuilds the match, not the clauses.
    out = RenameVar(d, Var("e")).visit(m)
    assert out.data is not d and out.clauses[0] is clause and out.clauses[1] is keep


# ------------------------------------------------------------ pruning through children()
class SkipPrimitive:
    def children(self, expr):
        if isinstance(expr, Function) and expr.is_primitive:
            return ()
        return children(expr)


def primitive_program():
    y = Var("y")
    prim = Function((y,), call("negative", y), attrs=Attrs({"Primitive": IntImm(1)}))
    x = Var("x")
    return Call(prim, (call("negative", x),)), prim, y


def test_pruned_visitor_does_not_enter():
    class V(SkipPrimitive, Counting):
        pass

    e, prim, y = primitive_program()
    v = V()
    v.visit(e)
    assert prim in v.order and y not in v.order and prim.body not in v.order


def test_pruned_mutator_leaves_the_subgraph_alone():
    class NegToRelu(SkipPrimitive, ExprMutator):
        def visit_call(self, c):
            c = self.rebuild(c)
            if c.op is op("negative"):
                return Call(op("nn.relu"), c.args, span=c.span)
            return c

    e, prim, _ = primitive_program()
    out = NegToRelu().visit(e)
    assert out.op is prim  # not walked, not rebuilt
    assert out.args[0].op is op("nn.relu")
    m = NegToRelu()
    assert m.visit(prim) is prim  # pruning a root leaves it alone too


def test_pruned_functor_can_still_visit_on_demand():
    class D(SkipPrimitive, Depth):
        pass

    e, prim, _ = primitive_program()
    f = D()
    f.visit(e)
    assert f.memo[prim] == 1 and prim.body not in f.memo
    assert f.visit(prim.body) == 2  # asked explicitly: walked


# ------------------------------------------------------------ long chains
def call_chain(n):
    x = Var("x")
    e = x
    for _ in range(n):
        e = call("add", e, x)
    return Function((x,), e), x


def let_chain(n):
    vs = [Var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in range(n - 1, 0, -1):
        body = Let(vs[i], call("add", vs[i - 1], vs[i - 1]), body)
    return Function((vs[0],), body), vs[0]


def tuple_nest(n):
    x = Var("x")
    e = x
    for _ in range(n):
        e = Tuple((e,))
    return e, x


CHAINS = [call_chain, let_chain, tuple_nest]


@pytest.mark.parametrize("make", CHAINS, ids=["call", "let", "tuple"])
def test_chains_post_order_and_visitor(make):
    root, _ = make(N)
    order = list(post_order(root))
    assert order[-1] is root
    v = Counting()
    v.visit(root)
    assert len(v.order) == len(order)


@pytest.mark.parametrize("make", CHAINS, ids=["call", "let", "tuple"])
def test_chains_functor(make):
    root, _ = make(N)
    assert Depth().visit(root) > N


@pytest.mark.parametrize("make", CHAINS, ids=["call", "let", "tuple"])
def test_chains_mutator(make):
    root, x = make(N)
    assert ExprMutator().visit(root) is root
    x2 = Var("x2")
    out = RenameVar(x, x2).visit(root)
    assert out is not root
    assert x2 in set(post_order(out)) and x not in set(post_order(out))
