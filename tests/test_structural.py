"""structural_equal / structural_hash / assert_structural_equal.

Every node and type kind has an equal and an unequal pair; then the rules that need more
than a pair: binding positions (alpha-equivalence, free variables), graph sharing, spans,
types, modules, the mismatch report, hash consistency (hypothesis), and 50,000-node chains
under the default recursion limit.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relaylens.compiler.ir import (
    ANY,
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    ErrorExpr,
    ExprMutator,
    FloatImm,
    FuncType,
    Function,
    GlobalTypeVar,
    GlobalVar,
    If,
    IncompleteType,
    IntImm,
    IRModule,
    LayerSpan,
    Let,
    Match,
    MetaRef,
    MetaType,
    Opaque,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefType,
    RefWrite,
    SequentialSpan,
    Source,
    Span,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
    Var,
    op,
)
from relaylens.compiler.ir.structural_equal import assert_structural_equal, first_mismatch, structural_equal
from relaylens.compiler.ir.structural_hash import structural_hash

from call_count import calls

REPO = Path(__file__).resolve().parents[1]


def f32(*shape):
    return TensorType(tuple(shape), "float32")


def call(name, *args, **attrs):
    return Call(op(name), tuple(args), Attrs(attrs))


def const(value, dtype="float32"):
    return Constant(np.array(value, dtype=dtype))


def check_equal(a, b, **kw):
    """Equal both ways, with the same hash."""
    assert structural_equal(a, b, **kw), first_mismatch(a, b, **kw)
    assert structural_equal(b, a, **kw)
    assert first_mismatch(a, b, **kw) is None
    assert structural_hash(a, spans=kw.get("spans", False)) == structural_hash(b, spans=kw.get("spans", False))


def check_unequal(a, b, **kw):
    """Unequal both ways, with a report."""
    assert not structural_equal(a, b, **kw)
    assert not structural_equal(b, a, **kw)
    report = first_mismatch(a, b, **kw)
    assert report is not None and report.reason
    with pytest.raises(AssertionError, match="structural mismatch at"):
        assert_structural_equal(a, b, **kw)


# ------------------------------------------------------------ one pair per node kind
ADT = GlobalTypeVar("List")
ADT2 = GlobalTypeVar("Tree")
CONS = Constructor("Cons", (f32(),), ADT, 0)
NIL = Constructor("Nil", (), ADT, 1)


def match_on(pattern_factory, complete=True):
    d = Var("d")
    v = Var("v")
    return Function((d,), Match(d, (Clause(pattern_factory(v), v), Clause(PatternWildcard(), d)), complete))


# (name, build a, build b): each builder makes fresh objects on every call.
EQUAL = [
    ("free var", lambda: Var("x", f32(2)), lambda: Var("y", f32(2))),
    ("global var", lambda: GlobalVar("f"), lambda: GlobalVar("f")),
    ("constant", lambda: const([1.0, 2.0]), lambda: const([1.0, 2.0])),
    ("constant nan", lambda: const([math.nan, 1.0]), lambda: const([math.nan, 1.0])),
    ("constant nan payloads", lambda: Constant(np.array([0x7FC00000, 0x7FC00001], "uint32").view("float32")),
     lambda: Constant(np.array([0xFFC00000, 0x7F800001], "uint32").view("float32"))),
    ("constant signed zero", lambda: const(0.0), lambda: const(-0.0)),
    ("constant big", lambda: Constant(np.arange(10_000, dtype="float32")),
     lambda: Constant(np.arange(10_000, dtype="float32"))),
    ("constant meta", lambda: Constant(None, MetaRef("relay.Constant", 0)),
     lambda: Constant(None, MetaRef("relay.Constant", 0))),
    ("constant meta ignored with data", lambda: Constant(np.ones(2), MetaRef("relay.Constant", 0)),
     lambda: Constant(np.ones(2), MetaRef("relay.Constant", 7))),
    ("op", lambda: op("add"), lambda: op("add")),
    ("call", lambda: call("add", const(1.0), const(2.0)), lambda: call("add", const(1.0), const(2.0))),
    ("call attrs order", lambda: call("nn.conv2d", const(1.0), channels=IntImm(8), padding=(IntImm(1), IntImm(1))),
     lambda: call("nn.conv2d", const(1.0), padding=(IntImm(1), IntImm(1)), channels=IntImm(8))),
    ("call attrs int is int32", lambda: call("sum", const(1.0), axis=1), lambda: call("sum", const(1.0), axis=IntImm(1))),
    ("call attrs float is float32", lambda: call("f", const(1.0), a=0.5), lambda: call("f", const(1.0), a=FloatImm(0.5))),
    ("call attrs nan", lambda: call("f", const(1.0), a=FloatImm(math.nan)), lambda: call("f", const(1.0), a=FloatImm(math.nan))),
    ("call attrs expr", lambda: call("f", const(1.0), g=GlobalVar("g")), lambda: call("f", const(1.0), g=GlobalVar("g"))),
    ("call attrs misc", lambda: call("f", a=None, b="NCHW", c=True, d=MetaRef("x", 1), e=Opaque("{}")),
     lambda: call("f", a=None, b="NCHW", c=True, d=MetaRef("x", 1), e=Opaque("{}"))),
    ("call type args", lambda: Call(GlobalVar("id"), (const(1.0),), type_args=(f32(),)),
     lambda: Call(GlobalVar("id"), (const(1.0),), type_args=(f32(),))),
    ("call of a function", lambda: Call(Function((Var("p"),), const(1.0)), (const(2.0),)),
     lambda: Call(Function((Var("q"),), const(1.0)), (const(2.0),))),
    ("tuple", lambda: Tuple((const(1.0), op("add"))), lambda: Tuple((const(1.0), op("add")))),
    ("empty tuple", lambda: Tuple(()), lambda: Tuple(())),
    ("tuple get item", lambda: TupleGetItem(Tuple((const(1.0),)), 0), lambda: TupleGetItem(Tuple((const(1.0),)), 0)),
    ("let", lambda: (lambda v: Let(v, const(1.0), v))(Var("a", f32())),
     lambda: (lambda v: Let(v, const(1.0), v))(Var("b", f32()))),
    ("if", lambda: If(const(True, "bool"), const(1.0), const(2.0)), lambda: If(const(True, "bool"), const(1.0), const(2.0))),
    ("function", lambda: (lambda p: Function((p,), p, f32(3)))(Var("p", f32(3))),
     lambda: (lambda p: Function((p,), p, f32(3)))(Var("q", f32(3)))),
    ("function attrs", lambda: Function((), const(1.0), attrs=Attrs({"Primitive": IntImm(1)})),
     lambda: Function((), const(1.0), attrs=Attrs({"Primitive": IntImm(1)}))),
    ("function type params", lambda: (lambda t: (lambda p: Function((p,), p, t, (t,)))(Var("p", t)))(TypeVar("A")),
     lambda: (lambda t: (lambda p: Function((p,), p, t, (t,)))(Var("p", t)))(TypeVar("B"))),
    ("ref create", lambda: RefCreate(const(1.0)), lambda: RefCreate(const(1.0))),
    ("ref read", lambda: RefRead(RefCreate(const(1.0))), lambda: RefRead(RefCreate(const(1.0)))),
    ("ref write", lambda: RefWrite(RefCreate(const(1.0)), const(2.0)), lambda: RefWrite(RefCreate(const(1.0)), const(2.0))),
    ("constructor", lambda: CONS, lambda: Constructor("Cons", (), GlobalTypeVar("List"))),
    ("match", lambda: match_on(lambda v: PatternConstructor(CONS, (PatternVar(v),))),
     lambda: match_on(lambda v: PatternConstructor(CONS, (PatternVar(v),)))),
    ("match tuple pattern", lambda: match_on(lambda v: PatternTuple((PatternVar(v), PatternWildcard()))),
     lambda: match_on(lambda v: PatternTuple((PatternVar(v), PatternWildcard())))),
    ("error expr", lambda: ErrorExpr("bad"), lambda: ErrorExpr("bad")),
]

UNEQUAL = [
    ("free var annotation", lambda: Var("x", f32(2)), lambda: Var("x", f32(3))),
    ("free var annotation absent", lambda: Var("x", f32(2)), lambda: Var("x")),
    ("var vs global", lambda: Var("f"), lambda: GlobalVar("f")),
    ("global var", lambda: GlobalVar("f"), lambda: GlobalVar("g")),
    ("constant value", lambda: const([1.0, 2.0]), lambda: const([1.0, 3.0])),
    ("constant nan vs number", lambda: const(math.nan), lambda: const(0.0)),
    ("constant dtype", lambda: const(1.0, "float32"), lambda: const(1.0, "float64")),
    ("constant shape", lambda: const([1.0, 2.0]), lambda: const([[1.0, 2.0]])),
    ("constant big", lambda: Constant(np.arange(10_000, dtype="float32")),
     lambda: Constant(np.arange(1, 10_001, dtype="float32"))),
    ("constant meta", lambda: Constant(None, MetaRef("relay.Constant", 0)), lambda: Constant(None, MetaRef("relay.Constant", 1))),
    ("constant meta vs data", lambda: Constant(None, MetaRef("relay.Constant", 0)), lambda: const(1.0)),
    ("op", lambda: op("add"), lambda: op("subtract")),
    ("call args", lambda: call("add", const(1.0), const(2.0)), lambda: call("add", const(2.0), const(1.0))),
    ("call arity", lambda: call("add", const(1.0)), lambda: call("add", const(1.0), const(1.0))),
    ("call op", lambda: call("add", const(1.0)), lambda: call("multiply", const(1.0))),
    ("call attrs value", lambda: call("sum", const(1.0), axis=IntImm(1)), lambda: call("sum", const(1.0), axis=IntImm(2))),
    ("call attrs dtype", lambda: call("sum", const(1.0), axis=IntImm(1)), lambda: call("sum", const(1.0), axis=IntImm(1, "int64"))),
    ("call attrs float dtype", lambda: call("f", a=FloatImm(1.0)), lambda: call("f", a=FloatImm(1.0, "float16"))),
    ("call attrs int vs float", lambda: call("f", a=IntImm(1)), lambda: call("f", a=FloatImm(1.0))),
    ("call attrs bool vs int", lambda: call("f", a=True), lambda: call("f", a=IntImm(1))),
    ("call attrs keys", lambda: call("f", a=IntImm(1)), lambda: call("f", b=IntImm(1))),
    ("call attrs tuple length", lambda: call("f", a=(IntImm(1),)), lambda: call("f", a=(IntImm(1), IntImm(1)))),
    ("call attrs str", lambda: call("f", layout="NCHW"), lambda: call("f", layout="NHWC")),
    ("call attrs expr", lambda: call("f", g=GlobalVar("g")), lambda: call("f", g=GlobalVar("h"))),
    ("call type args", lambda: Call(GlobalVar("id"), (), type_args=(f32(),)), lambda: Call(GlobalVar("id"), (), type_args=(f32(1),))),
    ("tuple fields", lambda: Tuple((const(1.0), const(2.0))), lambda: Tuple((const(1.0),))),
    ("tuple vs empty", lambda: Tuple((const(1.0),)), lambda: Tuple(())),
    ("tuple get item index", lambda: TupleGetItem(Tuple((const(1.0), const(1.0))), 0),
     lambda: TupleGetItem(Tuple((const(1.0), const(1.0))), 1)),
    ("let value", lambda: (lambda v: Let(v, const(1.0), v))(Var("a")), lambda: (lambda v: Let(v, const(2.0), v))(Var("a"))),
    ("let var annotation", lambda: (lambda v: Let(v, const(1.0), v))(Var("a", f32())),
     lambda: (lambda v: Let(v, const(1.0), v))(Var("a", f32(1)))),
    ("let body not the var", lambda: (lambda v: Let(v, const(1.0), v))(Var("a")),
     lambda: (lambda v: Let(v, const(1.0), const(1.0)))(Var("a"))),
    ("if branches", lambda: If(const(True, "bool"), const(1.0), const(2.0)), lambda: If(const(True, "bool"), const(2.0), const(1.0))),
    ("function ret type", lambda: Function((), const(1.0), f32()), lambda: Function((), const(1.0), None)),
    ("function arity", lambda: Function((Var("p"),), const(1.0)), lambda: Function((Var("p"), Var("q")), const(1.0))),
    ("function param annotation", lambda: (lambda p: Function((p,), p))(Var("p", f32(1))),
     lambda: (lambda p: Function((p,), p))(Var("p", f32(2)))),
    ("function attrs", lambda: Function((), const(1.0), attrs=Attrs({"Primitive": IntImm(1)})), lambda: Function((), const(1.0))),
    ("function type params", lambda: Function((), const(1.0), type_params=(TypeVar("A"),)), lambda: Function((), const(1.0))),
    ("ref create", lambda: RefCreate(const(1.0)), lambda: RefCreate(const(2.0))),
    ("ref read vs create", lambda: RefRead(const(1.0)), lambda: RefCreate(const(1.0))),
    ("ref write", lambda: RefWrite(RefCreate(const(1.0)), const(2.0)), lambda: RefWrite(RefCreate(const(1.0)), const(3.0))),
    ("constructor name", lambda: CONS, lambda: NIL),
    ("constructor adt", lambda: CONS, lambda: Constructor("Cons", (f32(),), ADT2)),
    ("match pattern constructor", lambda: match_on(lambda v: PatternConstructor(CONS, (PatternVar(v),))),
     lambda: match_on(lambda v: PatternConstructor(Constructor("Cons", (), ADT2), (PatternVar(v),)))),
    ("match pattern kind", lambda: match_on(lambda v: PatternTuple((PatternVar(v),))),
     lambda: match_on(lambda v: PatternConstructor(CONS, (PatternVar(v),)))),
    ("match pattern arity", lambda: match_on(lambda v: PatternTuple((PatternVar(v),))),
     lambda: match_on(lambda v: PatternTuple((PatternVar(v), PatternWildcard())))),
    ("match wildcard vs var", lambda: match_on(lambda v: PatternTuple((PatternVar(v), PatternWildcard()))),
     lambda: match_on(lambda v: PatternTuple((PatternVar(v), PatternVar(Var("w")))))),
    ("match complete", lambda: match_on(lambda v: PatternVar(v)), lambda: match_on(lambda v: PatternVar(v), complete=False)),
    ("error expr", lambda: ErrorExpr("bad"), lambda: ErrorExpr("worse")),
]


@pytest.mark.parametrize("name,make_a,make_b", EQUAL, ids=[c[0] for c in EQUAL])
def test_equal_pairs(name, make_a, make_b):
    check_equal(make_a(), make_b())
    check_equal(make_a(), make_b(), types=True, spans=True)


@pytest.mark.parametrize("name,make_a,make_b", UNEQUAL, ids=[c[0] for c in UNEQUAL])
def test_unequal_pairs(name, make_a, make_b):
    check_unequal(make_a(), make_b())


A, B = TypeVar("A"), TypeVar("B")
TYPES_EQUAL = [
    ("tensor", f32(1, 8), f32(1, 8)),
    ("tensor int32 dim", TensorType((1, 8), "float32"), TensorType((IntImm(1), 8), "float32")),
    ("tensor i64 dim", TensorType((IntImm(1, "int64"),), "int8"), TensorType((IntImm(1, "int64"),), "int8")),
    ("tensor any dim", TensorType((ANY, 3), "float32"), TensorType((ANY, 3), "float32")),
    ("tensor meta dim", TensorType((MetaRef("tir.SizeVar", 0),), "float32"), TensorType((MetaRef("tir.SizeVar", 0),), "float32")),
    ("tuple type", TupleType((f32(1), f32(2))), TupleType((f32(1), f32(2)))),
    ("unit", TupleType(()), TupleType(())),
    ("free type var", TypeVar("A"), TypeVar("B")),
    ("func type alpha", FuncType((A,), A, (A,)), FuncType((B,), B, (B,))),
    ("global type var", GlobalTypeVar("List"), GlobalTypeVar("List")),
    ("type call", TypeCall(GlobalTypeVar("List"), (f32(),)), TypeCall(GlobalTypeVar("List"), (f32(),))),
    ("ref type", RefType(f32(2)), RefType(f32(2))),
    ("incomplete", IncompleteType(), IncompleteType()),
    ("meta type", MetaType(MetaRef("IncompleteType", 0)), MetaType(MetaRef("IncompleteType", 0))),
]
TYPES_UNEQUAL = [
    ("tensor dtype", f32(1, 8), TensorType((1, 8), "float16")),
    ("tensor shape", f32(1, 8), f32(8, 1)),
    ("tensor rank", f32(1, 8), f32(1, 8, 1)),
    ("tensor i64 dim", TensorType((1,), "int8"), TensorType((IntImm(1, "int64"),), "int8")),
    ("tensor any dim", TensorType((ANY,), "float32"), TensorType((1,), "float32")),
    ("tuple type arity", TupleType((f32(1),)), TupleType((f32(1), f32(1)))),
    ("tuple vs tensor", TupleType(()), f32()),
    ("func type params", FuncType((A, B), A, (A, B)), FuncType((A, B), B, (A, B))),
    ("func type arity", FuncType((f32(),), f32()), FuncType((), f32())),
    ("global type var", GlobalTypeVar("List"), GlobalTypeVar("Tree")),
    ("type call args", TypeCall(GlobalTypeVar("List"), (f32(),)), TypeCall(GlobalTypeVar("List"), (f32(1),))),
    ("type call func", TypeCall(GlobalTypeVar("List"), ()), TypeCall(GlobalTypeVar("Tree"), ())),
    ("ref type", RefType(f32(2)), RefType(f32(3))),
    ("incomplete vs tensor", IncompleteType(), f32()),
    ("incomplete vs none", IncompleteType(), None),
    ("meta type", MetaType(MetaRef("IncompleteType", 0)), MetaType(MetaRef("IncompleteType", 1))),
]


@pytest.mark.parametrize("name,a,b", TYPES_EQUAL, ids=[c[0] for c in TYPES_EQUAL])
def test_equal_types(name, a, b):
    check_equal(a, b)


@pytest.mark.parametrize("name,a,b", TYPES_UNEQUAL, ids=[c[0] for c in TYPES_UNEQUAL])
def test_unequal_types(name, a, b):
    check_unequal(a, b)


def test_type_variables_are_a_bijection():
    assert not structural_equal(TupleType((A, B)), TupleType((A, A)))
    assert not structural_equal(TupleType((A, A)), TupleType((A, B)))
    assert structural_equal(TupleType((A, A)), TupleType((B, B)))
    assert not structural_equal(TupleType((A,)), TupleType((B,)), map_free_vars=False)
    assert structural_equal(TupleType((A,)), TupleType((A,)), map_free_vars=False)


# ------------------------------------------------------------ binding positions
def test_alpha_equivalence():
    x, y = Var("x"), Var("y")
    check_equal(Function((x,), x), Function((y,), y))  # fn (%x) { %x } == fn (%y) { %y }
    x, y, x2, y2 = Var("x"), Var("y"), Var("x"), Var("y")
    check_unequal(Function((x, y), x), Function((x2, y2), y2))  # fn (%x, %y) { %x } != ... { %y }
    # The same objects in another order are unequal too: position, not identity, counts.
    check_unequal(Function((x, y), x), Function((y, x), x))


def test_let_and_pattern_binders():
    a, b = Var("a"), Var("b")
    check_equal(Let(a, const(1.0), call("add", a, a)), Let(b, const(1.0), call("add", b, b)))
    a, b, c = Var("a"), Var("b"), Var("c")
    outer = Let(a, const(1.0), Let(b, const(2.0), a))
    other = Let(a, const(1.0), Let(c, const(2.0), c))
    check_unequal(outer, other)
    # Pattern variables bind in the clause's right-hand side.
    v, w = Var("v"), Var("w")
    d = Var("d")
    m1 = Function((d,), Match(d, (Clause(PatternConstructor(CONS, (PatternVar(v),)), v),)))
    d2 = Var("d")
    m2 = Function((d2,), Match(d2, (Clause(PatternConstructor(CONS, (PatternVar(w),)), w),)))
    check_equal(m1, m2)
    d3 = Var("d")
    m3 = Function((d3,), Match(d3, (Clause(PatternConstructor(CONS, (PatternVar(Var("w")),)), d3),)))
    check_unequal(m1, m3)


def test_free_variables():
    x, y = Var("x"), Var("y")
    x2, y2 = Var("x"), Var("y")
    check_equal(call("add", x, y), call("add", x2, y2))
    # A one-to-one mapping: two free variables cannot both stand for one.
    check_unequal(call("add", x, y), call("add", x2, x2))
    # Without mapping, free variables must be the same objects.
    assert not structural_equal(call("add", x, y), call("add", x2, y2), map_free_vars=False)
    assert structural_equal(call("add", x, y), call("add", x, y), map_free_vars=False)
    assert "map_free_vars" in first_mismatch(x, x2, map_free_vars=False).reason
    # Bound variables are mapped whatever map_free_vars says.
    assert structural_equal(Function((x,), x), Function((y,), y), map_free_vars=False)
    # A variable free on one side and bound on the other never matches.
    p = Var("p")
    check_unequal(Function((p,), call("add", p, x)), Function((y2,), call("add", y2, y2)))


def test_var_virtual_device():
    x, y = Var("x", virtual_device=IntImm(1)), Var("y", virtual_device=IntImm(1))
    check_equal(Function((x,), x), Function((y,), y))
    z = Var("z", virtual_device=IntImm(2))
    check_unequal(Function((x,), x), Function((z,), z))
    check_unequal(Var("a"), Var("a", virtual_device=IntImm(1)))


# ------------------------------------------------------------ graph sharing
def test_shared_vs_duplicated_subexpressions():
    """`%0 = f(%x); add(%0, %0)` is not `add(f(%x), f(%x))`: node pairs map one to one,
    as in TVM's SEqual, so a node shared on one side cannot stand for two on the other."""
    x = Var("x")
    f = GlobalVar("f")
    shared0 = Call(f, (x,))
    shared = call("add", shared0, shared0)
    duplicated = call("add", Call(f, (x,)), Call(f, (x,)))
    check_unequal(shared, duplicated)
    assert "shared" in first_mismatch(shared, duplicated).reason
    assert "shared" in first_mismatch(duplicated, shared).reason
    # Shared on both sides, or duplicated on both sides: equal.
    other0 = Call(f, (x,))
    check_equal(shared, call("add", other0, other0))
    check_equal(duplicated, call("add", Call(f, (x,)), Call(f, (x,))))
    # The hash does not see sharing (equal => same hash only).
    assert structural_hash(shared) == structural_hash(duplicated)


def test_tvm_graph_equal_example():
    x = Var("x")
    y0 = call("add", x, x)
    z0 = call("add", y0, y0)
    y1 = call("add", x, x)
    z1 = call("add", y1, y1)
    z3 = call("add", call("add", x, x), call("add", x, x))
    check_equal(z0, z1)
    check_unequal(z0, z3)


def test_sharing_across_kinds():
    # Tuple, TupleGetItem, Function are graph nodes too.
    t = Tuple((const(1.0), const(2.0)))
    check_unequal(Tuple((TupleGetItem(t, 0), TupleGetItem(t, 1))),
                  Tuple((TupleGetItem(Tuple((const(1.0), const(2.0))), 0),
                         TupleGetItem(Tuple((const(1.0), const(2.0))), 1))))
    x = Var("x")
    g = TupleGetItem(x, 0)
    check_unequal(call("add", g, g), call("add", TupleGetItem(x, 0), TupleGetItem(x, 0)))
    # Values are not: a constant, an op, a global, the empty tuple, may be shared or not.
    c = const(1.0)
    check_equal(call("add", c, c), call("add", const(1.0), const(1.0)))
    e = Tuple(())
    check_equal(Tuple((e, e)), Tuple((Tuple(()), Tuple(()))))


def test_same_object_compares_equal():
    x = Var("x")
    e = call("add", call("multiply", x, const(2.0)), x)
    check_equal(e, e, map_free_vars=False, spans=True, types=True)


# ------------------------------------------------------------ spans
SRC = Source("a.relay", "def @main() {\n  add(1f, 2f)\n}\n")


def test_spans_ignored_by_default_and_compared_on_request():
    a = call("add", const(1.0))
    b = replace(a, span=Span(SRC, 16, 27))
    check_equal(a, b)
    check_unequal(a, b, spans=True)
    report = first_mismatch(a, b, spans=True)
    assert "spans differ" in report.reason and "a.relay:2:3" in report.reason and "<no span>" in report.reason
    assert structural_hash(a, spans=True) != structural_hash(b, spans=True)
    structural_hash(a)


def test_span_origins():
    doc = Span(SRC, 16, 27)  # a.relay:2:3
    same_place_other_source_object = Span(Source("a.relay", SRC.text), 16, 20)
    printed = LayerSpan("a.relay", 2, 3)
    elsewhere = Span(SRC, 18, 27)  # a.relay:2:5
    layer = LayerSpan("conv1", 0, 0)
    x = const(1.0)

    def at(span):
        return replace(x, span=span)

    check_equal(at(doc), at(same_place_other_source_object), spans=True)
    check_equal(at(doc), at(printed), spans=True)  # a document range and its printed reference
    check_unequal(at(doc), at(elsewhere), spans=True)
    check_unequal(at(layer), at(LayerSpan("conv2", 0, 0)), spans=True)
    # A parsed node that also carries `span=conv1:0:0` prints (and reparses) as the layer.
    check_equal(at(SequentialSpan((doc, layer))), at(layer), spans=True)
    check_unequal(at(SequentialSpan((layer, LayerSpan("conv2", 0, 0)))), at(layer), spans=True)


def test_spans_count_on_binders_but_not_on_patterns_and_clauses():
    """Spans compare on the node kinds the text format annotates (expr.ANNOTATED): a
    printed module keeps those and nothing else."""
    s1, s2 = LayerSpan("l1"), LayerSpan("l2")
    x, y = Var("x", span=s1), Var("y", span=s2)
    check_equal(Function((x,), x), Function((y,), y))
    check_unequal(Function((x,), x), Function((y,), y), spans=True)
    v, w = Var("v"), Var("w")
    m1 = Match(const(1.0), (Clause(PatternVar(v, span=s1), v, span=s1),), span=s1)
    m2 = Match(const(1.0), (Clause(PatternVar(w, span=s2), w, span=s2),), span=s2)
    check_equal(m1, m2, spans=True)
    let1 = Let(Var("a"), const(1.0), const(2.0), span=s1)
    let2 = Let(Var("b"), const(1.0), const(2.0), span=s2)
    check_equal(let1, let2, spans=True)


def test_type_spans_never_count():
    a = Var("x", TensorType((1,), "float32", span=LayerSpan("here")))
    b = Var("x", TensorType((1,), "float32", span=LayerSpan("there")))
    check_equal(a, b, spans=True)


# ------------------------------------------------------------ types of expressions
def test_ty_compared_only_on_request():
    a = replace(call("add", const(1.0)), ty=f32())
    b = replace(call("add", const(1.0)), ty=f32(1))
    c = call("add", const(1.0))
    check_equal(a, b)
    check_unequal(a, b, types=True)
    check_unequal(a, c, types=True)
    assert first_mismatch(a, b, types=True).path == "ty"


def test_ty_of_binders_and_polymorphic_functions():
    t = TypeVar("T")
    p = Var("p", t, ty=t)
    f = Function((p,), p, t, (t,), ty=FuncType((t,), t, (t,)))
    u = TypeVar("U")
    q = Var("q", u, ty=u)
    g = Function((q,), q, u, (u,), ty=FuncType((u,), u, (u,)))
    check_equal(f, g, types=True)
    q2 = Var("q", u, ty=f32())
    g2 = Function((q2,), q2, u, (u,), ty=FuncType((u,), u, (u,)))
    check_unequal(f, g2, types=True)


# ------------------------------------------------------------ modules
def make_module(body_const=1.0, callee="g", extra_type=False, ctor_field=None):
    mod = IRModule()
    lst = mod.get_global_type_var("List")
    a = TypeVar("a")
    cons = Constructor("Cons", (a, TypeCall(lst, (a,))) if ctor_field is None else ctor_field, lst, 0)
    nil = Constructor("Nil", (), lst, 1)
    mod.add_type(TypeData(lst, (a,), (cons, nil)))
    if extra_type:
        opt = mod.get_global_type_var("Option")
        mod.add_type(TypeData(opt, (), (Constructor("None_", (), opt, 0),)))
    x = Var("x", f32(2))
    main = mod.get_global_var("main")
    g = mod.get_global_var(callee)
    mod.add(main, Function((x,), call("add", x, Call(g, (x,)))))
    y = Var("y", f32(2))
    mod.add(g, Function((y,), call("multiply", y, const(body_const))))
    return mod


def test_modules():
    check_equal(make_module(), make_module())
    check_unequal(make_module(), make_module(body_const=2.0))
    check_unequal(make_module(), make_module(callee="h"))
    check_unequal(make_module(), make_module(extra_type=True))
    b = TypeVar("b")
    check_unequal(make_module(), make_module(ctor_field=(b, b)))
    report = first_mismatch(make_module(), make_module(body_const=2.0))
    assert report.path == "@g.body.args[1]"
    assert "constant values differ" in report.reason
    assert isinstance(report.left, Constant) and isinstance(report.right, Constant)
    report = first_mismatch(make_module(), make_module(callee="h"))
    assert "global functions differ" in report.reason and "'g'" in report.reason


def test_module_globals_compare_by_name():
    m1, m2 = make_module(), make_module()
    assert m1.get_global_var("g") is not m2.get_global_var("g")
    check_equal(m1, m2, spans=True)
    m3 = IRModule()
    assert not structural_equal(m1, m3)
    assert not structural_equal(m1, m1["main"])


# ------------------------------------------------------------ the report
def test_report_names_path_kinds_values():
    x = Var("x", f32(2))
    a = Function((x,), call("add", x, call("multiply", x, const(2.0))))
    y = Var("y", f32(2))
    b = Function((y,), call("add", y, call("subtract", y, const(2.0))))
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(a, b)
    text = str(info.value)
    assert "at body.args[1].op" in text
    assert "operator multiply vs subtract" in text
    assert "Op(multiply)" in text and "Op(subtract)" in text


def test_report_kinds_and_spans():
    a = Tuple((call("add", const(1.0)),))
    b = Tuple((Var("x"),))
    with pytest.raises(AssertionError, match=r"fields\[0\]: Call vs Var"):
        assert_structural_equal(a, b)
    a = Tuple((replace(const(1.0), span=LayerSpan("conv1", 0, 0)),))
    b = Tuple((replace(const(1.0), span=LayerSpan("conv2", 0, 0)),))
    with pytest.raises(AssertionError, match=r"fields\[0\]: spans differ: conv1:0:0 vs conv2:0:0"):
        assert_structural_equal(a, b, spans=True)
    assert_structural_equal(a, b)


def test_report_of_attribute():
    a = call("nn.conv2d", const(1.0), padding=(IntImm(1), IntImm(1)))
    b = call("nn.conv2d", const(1.0), padding=(IntImm(1), IntImm(2)))
    report = first_mismatch(a, b)
    assert report.path == "attrs['padding'][1]"
    assert "padding" in report.reason


# ------------------------------------------------------------ hash consistency
LEAF_OPS = ("add", "multiply", "nn.relu")


@st.composite
def recipes(draw, depth=0):
    """A plain-data description of an expression; `build` turns it into fresh IR."""
    leaves = st.one_of(
        st.tuples(st.just("var"), st.integers(0, 4)),
        st.tuples(st.just("const"), st.sampled_from([0.0, 1.0, -1.5, math.nan]), st.sampled_from(["float32", "int32"])),
        st.tuples(st.just("global"), st.sampled_from(["f", "g"])),
        st.tuples(st.just("op"), st.sampled_from(LEAF_OPS)),
    )
    if depth >= 4:
        return draw(leaves)
    sub = recipes(depth=depth + 1)
    kind = draw(st.sampled_from(["leaf", "call", "tuple", "get", "let", "fn", "if", "share", "match"]))
    if kind == "leaf":
        return draw(leaves)
    if kind == "call":
        attrs = draw(st.sampled_from([(), (("axis", 1),), (("axis", 2), ("keepdims", True))]))
        return ("call", draw(st.sampled_from(LEAF_OPS)), draw(st.lists(sub, max_size=3)), attrs)
    if kind == "tuple":
        return ("tuple", draw(st.lists(sub, max_size=3)))
    if kind == "get":
        return ("get", draw(sub), draw(st.integers(0, 1)))
    if kind == "let":
        return ("let", draw(st.sampled_from([None, (2,), (3,)])), draw(sub), draw(sub))
    if kind == "fn":
        return ("fn", draw(st.integers(0, 2)), draw(sub))
    if kind == "if":
        return ("if", draw(sub), draw(sub), draw(sub))
    if kind == "share":
        return ("share", draw(sub))
    return ("match", draw(sub), draw(sub))


def build(recipe, names="v"):
    """Fresh IR for a recipe: new objects each call; variables named after `names`."""
    free = [Var(f"free{i}") for i in range(2)]
    counter = [0]

    def fresh(ann=None):
        counter[0] += 1
        return Var(f"{names}{counter[0]}", None if ann is None else f32(*ann))

    def go(r, env):
        kind = r[0]
        if kind == "var":
            scope = env + free
            return scope[r[1] % len(scope)]
        if kind == "const":
            return const(r[1], r[2]) if r[2] == "float32" or not math.isnan(r[1]) else const(0, r[2])
        if kind == "global":
            return GlobalVar(r[1])
        if kind == "op":
            return op(r[1])
        if kind == "call":
            return Call(op(r[1]), tuple(go(a, env) for a in r[2]), Attrs(dict(r[3])),
                        span=LayerSpan(f"call_{r[1]}", len(r[2])))
        if kind == "tuple":
            return Tuple(tuple(go(a, env) for a in r[1]))
        if kind == "get":
            return TupleGetItem(go(r[1], env), r[2])
        if kind == "let":
            v = fresh(r[1])
            return Let(v, go(r[2], env + [v]), go(r[3], env + [v]))
        if kind == "fn":
            params = [fresh() for _ in range(r[1])]
            return Function(tuple(params), go(r[2], params + env))
        if kind == "if":
            return If(go(r[1], env), go(r[2], env), go(r[3], env))
        if kind == "share":
            s = go(r[1], env)
            return Tuple((s, s))
        if kind == "match":
            v = fresh()
            return Match(go(r[1], env), (Clause(PatternConstructor(CONS, (PatternVar(v),)), go(r[2], env + [v])),
                                         Clause(PatternWildcard(), const(0.0))))
        raise AssertionError(kind)

    return go(recipe, [])


class Cloner(ExprMutator):
    """A deep copy: every node rebuilt, variables replaced by fresh, renamed ones."""

    def visit_var(self, v):
        return Var(v.name + "_copy", v.type_annotation, span=v.span, ty=v.ty)

    def visit_default(self, e):
        out = self.rebuild(e)
        return replace(out) if out is e else out

    visit_call = visit_tuple = visit_tuple_get_item = visit_let = visit_if = visit_default
    visit_function = visit_ref_create = visit_ref_read = visit_ref_write = visit_default
    visit_constant = visit_default

    def visit_match(self, m):
        out = super().visit_match(m)
        return replace(out) if out is m else out


@settings(max_examples=300, deadline=None)
@given(recipes(), recipes())
def test_hash_consistent_with_equality(r1, r2):
    a, b = build(r1), build(r2, names="w")
    for spans in (False, True):
        if structural_equal(a, b, spans=spans):
            assert structural_hash(a, spans=spans) == structural_hash(b, spans=spans)
    if r1 == r2:  # the same recipe built twice, with other names: equal
        assert_structural_equal(a, b, spans=True)
        assert structural_hash(a, spans=True) == structural_hash(b, spans=True)


@settings(max_examples=200, deadline=None)
@given(recipes())
def test_mutator_clone_is_equal(r):
    e = build(r)
    copy = Cloner().visit(e)
    if not isinstance(e, (GlobalVar,)) and type(e).__name__ != "Op":
        assert copy is not e
    assert_structural_equal(e, copy, spans=True, types=True)
    assert structural_hash(e, spans=True) == structural_hash(copy, spans=True)
    assert structural_equal(e, e, map_free_vars=False)
    # Free variables were renamed objects in the copy: equal only when mapped.
    if any(isinstance(n, Var) for n in _free_vars(e)):
        assert not structural_equal(e, copy, map_free_vars=False)


def _free_vars(e):
    from relaylens.compiler.ir import post_order

    bound = set()
    for n in post_order(e):
        if isinstance(n, Function):
            bound.update(n.params)
        elif isinstance(n, Let):
            bound.add(n.var)
        elif isinstance(n, Match):
            for c in n.clauses:
                if isinstance(c.lhs, PatternConstructor):
                    bound.update(p.var for p in c.lhs.patterns if isinstance(p, PatternVar))
    return [n for n in post_order(e) if isinstance(n, Var) and n not in bound]


def test_hash_distinguishes_common_differences():
    x, y = Var("x"), Var("y")
    assert structural_hash(Function((x, y), x)) != structural_hash(Function((x, y), y))
    assert structural_hash(call("add", const(1.0))) != structural_hash(call("add", const(2.0)))
    assert structural_hash(call("add", const(1.0))) != structural_hash(call("subtract", const(1.0)))
    assert structural_hash(f32(1, 8)) != structural_hash(f32(8, 1))
    assert structural_hash(call("sum", axis=1)) != structural_hash(call("sum", axis=2))


def test_hash_is_deterministic_across_processes():
    code = (
        "import numpy as np\n"
        "from relaylens.compiler.ir import *\n"
        "from relaylens.compiler.ir.structural_hash import structural_hash\n"
        "x = Var('x', TensorType((1, 8), 'float32'))\n"
        "e = Function((x,), Call(op('nn.conv2d'), (x, Constant(np.ones((2, 2), 'float32'))),"
        " Attrs({'data_layout': 'NCHW', 'padding': (IntImm(1), IntImm(1)), 'g': GlobalVar('g')}),"
        " span=LayerSpan('conv1')))\n"
        "nan = Constant(np.array([np.nan, 1.0], 'float32'))\n"
        "big_nan = Constant(np.full(5000, np.nan, 'float32'))\n"
        "print(structural_hash(e), structural_hash(e, spans=True), structural_hash(Constant(None, MetaRef('relay.Constant', 3))),"
        " structural_hash(nan), structural_hash(big_nan), structural_hash(call := Call(op('f'), (), Attrs({'a': FloatImm(np.nan)}))))\n"
    )
    outputs = set()
    for seed in ("1", "2", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
        outputs.add(out.stdout)
    assert len(outputs) == 1


# ------------------------------------------------------------ long chains, no recursion
N = 50_000


def call_chain(n, x, last=1.0):
    """add(add(...add(multiply(%x, last), %x)..., %x), %x): the constant at the bottom."""
    e = call("multiply", x, const(last))
    add = op("add")
    for _ in range(n):
        e = Call(add, (e, x))
    return e


def let_chain(n, last=1.0):
    vs = [Var(f"v{i}", f32()) for i in range(n)]
    body = call("multiply", vs[-1], const(last))
    for i in range(n - 1, 0, -1):
        body = Let(vs[i], call("add", vs[i - 1], const(1.0)), body)
    return Function((vs[0],), body)


def tuple_nest(n, last=1.0):
    e = const(last)
    for _ in range(n):
        e = Tuple((e,))
    return e


@pytest.fixture
def default_recursion_limit():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


@pytest.mark.parametrize("make", [
    lambda last: Function((x := Var("x"),), call_chain(N, x, last)),
    lambda last: let_chain(N, last),
    lambda last: tuple_nest(N, last),
], ids=["call", "let", "tuple"])
def test_long_chains(make, default_recursion_limit):
    a, b, c = make(1.0), make(1.0), make(2.0)
    assert structural_equal(a, b, spans=True, types=True)
    structural_hash(a)
    assert structural_hash(a) != structural_hash(c)
    assert not structural_equal(a, c)
    report = first_mismatch(a, c)
    assert "constant values differ" in report.reason
    assert "more" in report.path  # a 50,000-step path, cut in the middle
    assert str(report)  # formatting the report does not recurse either


def test_deep_types(default_recursion_limit):
    def nest(n, dtype="float32"):
        t = TensorType((), dtype)
        for _ in range(n):
            t = TupleType((t, t))  # shared twice: the pair memo keeps this linear
        return t

    a, b = nest(N), nest(N)
    check_equal(Var("x", a), Var("y", b))
    assert not structural_equal(Var("x", a), Var("y", nest(N, "int8")))


def typed_nest(n):
    e = replace(const(1.0), ty=f32())
    for _ in range(n):
        e = Tuple((e,), ty=TupleType((e.ty,)))
    return e


def grows_linearly(work, n: int) -> bool:
    """The calls `work(n)` makes against `work(2n)`'s: about twice as many for a linear
    algorithm, four times for a quadratic one (counted, not timed: tests/call_count.py)."""
    return calls(work, 2 * n) <= 2.2 * calls(work, n)


def test_deep_tuple_with_inferred_types_is_linear(default_recursion_limit):
    """Each tuple's `ty` shares its field's type: comparing with types=True stays linear."""
    assert structural_equal(typed_nest(N), typed_nest(N), types=True)
    assert grows_linearly(lambda n: structural_equal(typed_nest(n), typed_nest(n), types=True), 2_000)


def test_large_graphs_are_linear():
    """Two 200,000-node graphs compare and hash (no recursion limit), and both take work
    linear in the graph's size."""
    a, b = call_chain(200_000, Var("x")), call_chain(200_000, Var("y"))
    assert structural_equal(a, b)
    structural_hash(a)
    assert grows_linearly(lambda n: structural_equal(call_chain(n, Var("x")), call_chain(n, Var("y"))), 5_000)
    assert grows_linearly(lambda n: structural_hash(call_chain(n, Var("x"))), 5_000)


# ------------------------------------------------------------ parsed text
def test_parsed_modules():
    parse = pytest.importorskip("relaylens.compiler.parser").parse
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x) /* span=conv1:0:0 */;
  multiply(%0, %0)
}
"""
    m1 = parse(text, "one.relay").module
    m2 = parse(text.replace("%x", "%input"), "one.relay").module
    m3 = parse(text.replace("multiply(%0, %0)", "multiply(add(%x, %x), add(%x, %x))"), "one.relay").module
    m4 = parse("\n" + text, "one.relay").module  # everything one line lower
    check_equal(m1, m2)
    check_equal(m1, m2, spans=True)  # `%x` and `%input` start at the same columns
    check_unequal(m1, m3)  # shared vs duplicated
    check_equal(m1, m4)
    check_unequal(m1, m4, spans=True)
    # The layer span survives: the add keeps `conv1` even one line lower.
    report = first_mismatch(m1, m4, spans=True)
    assert "one.relay:" in report.reason
