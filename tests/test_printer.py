"""The printer: IR built by hand → exact Relay text; locations; long chains; and, when the
parser is there, parse → print → parse → print on the corpus."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.ir import (
    ANY,
    UNIT,
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    ErrorExpr,
    FloatImm,
    FuncType,
    Function,
    GlobalTypeVar,
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
    scalar_type,
    sequential,
)
from relaylens.compiler.printer import (
    Printer,
    print_attr_value,
    print_expr,
    print_module,
    print_type,
)

from conftest import CORPUS
HEADER = '#[version = "0.0.5"]\n'
F32 = scalar_type("float32")
T2 = TensorType((2,), "float32")


def dedent(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def const(value, dtype="float32") -> Constant:
    return Constant(np.array(value, dtype))


def call(name: str, *args, **attrs) -> Call:
    return Call(op(name), tuple(args), Attrs(attrs))


def module(**functions: Function) -> IRModule:
    mod = IRModule()
    for name, fn in functions.items():
        mod.add(mod.get_global_var(name), fn)
    return mod


def list_adt(mod: IRModule) -> tuple[Constructor, Constructor]:
    """`type List[A] { Cons(A, List[A]), Nil }` added to `mod`."""
    lst = mod.get_global_type_var("List")
    a = TypeVar("A")
    cons = Constructor("Cons", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("Nil", (), lst, 1)
    mod.add_type(TypeData(lst, (a,), (cons, nil)))
    return cons, nil


# ------------------------------------------------------------------------ module layout
def test_module_layout_sorts_types_then_functions():
    mod = IRModule()
    x, y = Var("x", F32), Var("y", F32)
    mod.add(mod.get_global_var("main"), Function((x,), call("negative", x), ret_type=F32))
    mod.add(mod.get_global_var("helper"), Function((y,), y, ret_type=F32))
    pair = mod.get_global_type_var("Pair")
    a, b = TypeVar("A"), TypeVar("B")
    mod.add_type(TypeData(pair, (a, b), (Constructor("MkPair", (a, b), pair),)))
    empty = mod.get_global_type_var("Empty")
    mod.add_type(TypeData(empty, (), ()))
    assert print_module(mod) == HEADER + dedent("""
        type Empty {
        }

        type Pair[A, B] {
          MkPair(A, B),
        }

        def @helper(%y: float32) -> float32 {
          %y
        }

        def @main(%x: float32) -> float32 {
          negative(%x)
        }
        """) + "\n"


def test_module_without_header_and_empty_module():
    x = Var("x")
    assert print_module(module(f=Function((x,), x)), header=False) == "def @f(%x) {\n  %x\n}\n"
    assert print_module(IRModule()) == HEADER


def test_def_with_type_params_and_attrs():
    a = TypeVar("A")
    x = Var("x", a)
    fn = Function((x,), x, ret_type=a, type_params=(a,), attrs=Attrs({"Inline": IntImm(1)}))
    assert print_module(module(id=fn), header=False) == dedent("""
        def @id[A](%x: A, Inline=1) -> A {
          %x
        }
        """) + "\n"


# ---------------------------------------------------------------- expression kinds, GNF
def test_call_arguments_are_bound_and_tail_is_inline():
    x, w = Var("x", TensorType((1, 4), "float32")), Var("w", TensorType((8, 4), "float32"))
    dense = call("nn.dense", x, w, units=None)
    body = call("nn.relu", call("add", dense, const(1.0)))
    assert print_module(module(main=Function((x, w), body))) == HEADER + dedent("""
        def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(8, 4), float32]) {
          %0 = nn.dense(%x, %w, units=None);
          %1 = add(%0, 1f);
          nn.relu(%1)
        }
        """) + "\n"


def test_node_used_twice_gets_one_binding():
    x = Var("x", F32)
    shared = call("multiply", x, x)
    body = call("add", shared, shared)
    assert print_expr(Function((x,), body)) == dedent("""
        fn (%x: float32) {
          %0 = multiply(%x, %x);
          add(%0, %0)
        }
        """)


def test_shared_tail_is_bound_too():
    x = Var("x")
    tup = Tuple((const(0, "int32"), const(0, "int32")))
    expr = Let(x, tup, tup)  # TVM's test_let_inlining
    assert print_expr(expr) == dedent("""
        %0 = (0, 0);
        let %x = %0;
        %0
        """)


def test_call_order_arguments_before_callee():
    # The shape of TVM's test_call_node_order: `(fn (%b) { %b })((fn (%a) { %a })(7))`.
    a, b = Var("a"), Var("b")
    inner = Call(Function((a,), a), (const(7, "int32"),))
    assert print_expr(Call(Function((b,), b), (inner,))) == dedent("""
        %0 = fn (%a) {
          %a
        };
        %1 = %0(7);
        %2 = fn (%b) {
          %b
        };
        %2(%1)
        """)


def test_one_counter_for_the_whole_module():
    x, y = Var("x"), Var("y")
    mod = module(a=Function((x,), call("add", call("abs", x), x)),
                 b=Function((y,), call("add", call("abs", y), y)))
    assert print_module(mod, header=False) == dedent("""
        def @a(%x) {
          %0 = abs(%x);
          add(%0, %x)
        }

        def @b(%y) {
          %1 = abs(%y);
          add(%1, %y)
        }
        """) + "\n"


def test_definitions_never_refer_to_each_others_bindings():
    # A node reachable from two defs is written out in each: every def reads on its own.
    x = Var("x")
    shared = call("abs", x)
    mod = module(a=Function((x,), call("add", shared, shared)), b=Function((x,), shared))
    assert print_module(mod, header=False) == dedent("""
        def @a(%x) {
          %0 = abs(%x);
          add(%0, %0)
        }

        def @b(%x) {
          abs(%x)
        }
        """) + "\n"


def test_tuples_and_projections():
    x = Var("x")
    tup = Tuple((x, call("abs", x)))
    expr = Tuple((TupleGetItem(tup, 1), TupleGetItem(x, 0), Tuple((x,)), Tuple(())))
    assert print_expr(expr) == dedent("""
        free_var %x;
        %0 = abs(%x);
        %1 = (%x, %0);
        %2 = %1.1;
        %3 = %x.0;
        %4 = (%x,);
        %5 = ();
        (%2, %3, %4, %5)
        """)


def test_if_layout_and_condition_binding():
    c, x = Var("c", scalar_type("bool")), Var("x", F32)
    expr = If(call("logical_not", c), call("abs", x), Let(Var("y"), x, call("negative", x)))
    fn = Function((c, x), expr)
    assert print_module(module(main=fn), header=False) == dedent("""
        def @main(%c: bool, %x: float32) {
          %0 = logical_not(%c);
          if (%0) {
            abs(%x)
          } else {
            let %y = %x;
            negative(%x)
          }
        }
        """) + "\n"


def test_if_bound_when_used_as_argument():
    c = Var("c", scalar_type("bool"))
    branch = If(c, const(1, "int32"), const(0, "int32"))
    assert print_expr(call("add", branch, const(2, "int32"))) == dedent("""
        free_var %c: bool;
        %0 = if (%c) {
          1
        } else {
          0
        };
        add(%0, 2)
        """)


def test_match_layout():
    mod = IRModule()
    cons, nil = list_adt(mod)
    xs, h, t = Var("xs", TypeCall(mod.get_global_type_var("List"), (F32,))), Var("h"), Var("t", F32)
    clauses = (
        Clause(PatternConstructor(cons, (PatternVar(h), PatternWildcard())), call("abs", h)),
        Clause(PatternConstructor(nil), Call(nil, ())),
        Clause(PatternTuple((PatternVar(t),)), t),
    )
    fn = Function((xs,), Match(xs, clauses))
    first = Clause(PatternConstructor(cons, (PatternVar(h), PatternWildcard())), call("abs", h))
    partial = Function((xs,), Match(xs, (first,), complete=False))
    mod.add(mod.get_global_var("main"), fn)
    mod.add(mod.get_global_var("partial"), partial)
    assert print_module(mod, header=False) == dedent("""
        type List[A] {
          Cons(A, List[A]),
          Nil,
        }

        def @main(%xs: List[float32]) {
          match (%xs) {
            Cons(%h, _) => {
              abs(%h)
            },
            Nil => {
              Nil
            },
            (%t: float32,) => {
              %t
            },
          }
        }

        def @partial(%xs: List[float32]) {
          match? (%xs) {
            Cons(%h, _) => {
              abs(%h)
            },
          }
        }
        """) + "\n"


def test_match_scrutinee_bound_and_clause_lines_nested():
    mod = IRModule()
    cons, nil = list_adt(mod)
    x, h, rest, y = Var("x"), Var("h"), Var("rest"), Var("y")
    body = Let(y, call("abs", h), call("add", call("negative", y), h))
    scrutinee = Call(cons, (x, Call(nil, ())))
    expr = Match(scrutinee, (Clause(PatternConstructor(cons, (PatternVar(h), PatternVar(rest))), body),))
    assert print_expr(expr) == dedent("""
        free_var %x;
        %0 = Nil;
        %1 = Cons(%x, %0);
        match (%1) {
          Cons(%h, %rest) => {
            let %y = abs(%h);
            %2 = negative(%y);
            add(%2, %h)
          },
        }
        """)


def test_function_literal_with_attrs_in_binding():
    p0, p1 = Var("p0", T2), Var("p1", T2)
    fused = Function((p0, p1), call("add", p0, p1), ret_type=T2,
                     attrs=Attrs({"Primitive": IntImm(1), "relay.reshape_only": IntImm(1)}))
    a, b = Var("a", T2), Var("b", T2)
    fn = Function((a, b), Call(fused, (a, b)), ret_type=T2)
    assert print_module(module(main=fn), header=False) == dedent("""
        def @main(%a: Tensor[(2), float32], %b: Tensor[(2), float32]) -> Tensor[(2), float32] {
          %0 = fn (%p0: Tensor[(2), float32], %p1: Tensor[(2), float32], Primitive=1, relay.reshape_only=1) -> Tensor[(2), float32] {
            add(%p0, %p1)
          };
          %0(%a, %b)
        }
        """) + "\n"


def test_polymorphic_function_literal():
    a = TypeVar("A")
    x = Var("x", a)
    assert print_expr(Function((x,), x, ret_type=a, type_params=(a,))) == dedent("""
        fn [A](%x: A) -> A {
          %x
        }
        """)


def test_refs_globals_constructors_and_errors():
    mod = IRModule()
    cons, nil = list_adt(mod)
    r = Var("r")
    g = mod.get_global_var("f")
    expr = Tuple((
        RefCreate(call("abs", r)),
        RefRead(r),
        RefWrite(r, const(1.0)),
        Call(g, (r,)),
        cons,
        Call(nil, ()),
        ErrorExpr("broken"),
    ))
    assert print_expr(expr) == dedent("""
        free_var %r;
        %0 = abs(%r);
        %1 = ref(%0);
        %2 = ref_read(%r);
        %3 = ref_write(%r, 1f);
        %4 = @f(%r);
        %5 = Nil;
        (%1, %2, %3, %4, Cons, %5, __error__)
        """)


def test_curried_call_binds_inner_call():
    f = Var("f")
    assert print_expr(Call(Call(f, (const(0, "int32"),)), (const(1, "int32"),))) == dedent("""
        free_var %f;
        %0 = %f(0);
        %0(1)
        """)


# ---------------------------------------------------------------------------------- lets
def test_let_chain_in_tail_position():
    x = Var("x", F32)
    a, b = Var("a"), Var("b", F32)
    body = Let(a, call("abs", call("negative", x)), Let(b, call("exp", a), Tuple((a, b))))
    assert print_expr(Function((x,), body)) == dedent("""
        fn (%x: float32) {
          %0 = negative(%x);
          let %a = abs(%0);
          let %b: float32 = exp(%a);
          (%a, %b)
        }
        """)


def test_let_in_argument_position_is_wrapped():
    a = Var("a")
    inner = Let(a, const(1, "int32"), call("abs", a))
    assert print_expr(call("add", inner, const(2, "int32"))) == dedent("""
        %0 = (
          let %a = 1;
          abs(%a)
        );
        add(%0, 2)
        """)


def test_let_as_let_value_is_wrapped_inline():
    a, b = Var("a"), Var("b")
    expr = Let(a, Let(b, const(1, "int32"), call("abs", b)), a)
    assert print_expr(expr) == dedent("""
        let %a = (
          let %b = 1;
          abs(%b)
        );
        %a
        """)


def test_sequencing_let():
    r = Var("r")
    first = Let(Var("_"), RefWrite(r, const(1.0)), Let(Var("_"), RefRead(r), Tuple(())))
    assert print_expr(first) == dedent("""
        free_var %r;
        let %_ = ref_write(%r, 1f);
        let %_1 = ref_read(%r);
        ()
        """)


# ------------------------------------------------------------------------------- names
def test_names_made_unique_over_the_whole_print():
    xs = [Var("x") for _ in range(3)]
    ps = [Var("p0"), Var("p0"), Var("x1")]
    odd = [Var("1"), Var(""), Var(""), Var("_tmp"), Var("input.1"), Var("onnx::Conv_7")]
    fn = Function(tuple(xs + ps + odd), Tuple(tuple(xs + ps + odd)))
    other = Var("x")
    mod = module(a=fn, b=Function((other,), other))
    text = print_module(mod, header=False)
    assert text.splitlines()[0] == (
        "def @a(%x, %x1, %x2, %p0, %p01, %x11, %v1, %v, %v2, %_tmp, %input.1, %onnx::Conv_7) {")
    assert "def @b(%x3) {\n  %x3\n}" in text


def test_free_variables_declared_first_with_types():
    x, y = Var("x", T2), Var("y")
    expr = Function((Var("z"),), call("add", x, y))
    assert print_expr(expr) == dedent("""
        free_var %x: Tensor[(2), float32];
        free_var %y;
        fn (%z) {
          add(%x, %y)
        }
        """)


# ---------------------------------------------------------------------------- literals
@pytest.mark.parametrize("value, dtype, text", [
    (1, "int32", "1"),
    (-7, "int32", "-7"),
    (5, "int64", "5i64"),
    (42, "int16", "42i16"),
    (1.0, "float32", "1f"),
    (1.5, "float32", "1.5f"),
    (0.1, "float32", "0.1f"),
    (1e-05, "float32", "1e-05f"),
    (1e16, "float32", "1e+16f"),
    (123456789.0, "float32", "123456790f"),  # the shortest text that reads back
    (0.01639530062675476, "float32", "0.0163953f"),
    (3.0, "float16", "3f16"),
    (65504.0, "float16", "65500f16"),
    (0.1, "float16", "0.1f16"),
    (3.0, "float64", "3f64"),
    (0.1, "float64", "0.1f64"),
    (-2.5, "float64", "-2.5f64"),
    (True, "bool", "True"),
    (False, "bool", "False"),
    (np.inf, "float32", "inff"),
    (-np.inf, "float32", "-inff"),
])
def test_scalar_constants(value, dtype, text):
    assert print_expr(Constant(np.array(value, dtype))) == text


def test_float_literals_read_back_at_their_width():
    rng = np.random.default_rng(7)
    values = (rng.standard_normal(200) * 10.0 ** rng.integers(-8, 8, 200)).astype("float32")
    for value in values:
        text = print_expr(Constant(np.array(value, "float32")))
        assert np.float32(float(text[:-1])) == value, text


def test_scalars_without_a_literal_go_to_metadata():
    # int8, uint8 scalars have no literal form; TVM stores them as metadata too.
    assert print_expr(const(3, "int8")) == "meta[relay.Constant][0]"
    assert print_expr(const(3, "uint8")) == "meta[relay.Constant][0]"


# --------------------------------------------------------------------- attribute values
@pytest.mark.parametrize("value, text", [
    (IntImm(3), "3"),
    (IntImm(-1), "-1"),
    (IntImm(0, "int64"), "0i64"),
    (IntImm(7, "int16"), "7i16"),
    (IntImm(1, "bool"), "True"),
    (True, "True"),
    (False, "False"),
    (5, "5"),
    (FloatImm(1e-05), "1e-05f"),
    (FloatImm(0.5, "float16"), "0.5f16"),
    (FloatImm(6.0), "6f"),
    (FloatImm(2.0, "float64"), "2f64"),
    (FloatImm(-np.inf), "-inff"),
    (0.25, "0.25f"),
    ("NCHW", '"NCHW"'),
    ('say "hi"\\ \n\t\r\x01\x7f é', '"say \\"hi\\"\\\\ \\n\\t\\r\\x01\\x7f é"'),
    ("", '""'),
    ((IntImm(1), IntImm(2)), "[1, 2]"),
    (((IntImm(0), IntImm(0)), (IntImm(1), IntImm(1))), "[[0, 0], [1, 1]]"),
    ((), "[]"),
    (None, "None"),
    (MetaRef("VirtualDevice", 2), "meta[VirtualDevice][2]"),
    (Opaque("{a=1}"), "{a=1}"),
    (ANY, "?"),
])
def test_attribute_values(value, text):
    assert print_attr_value(value) == text


def test_expression_attribute_values_use_printed_names():
    mod = IRModule()
    g = mod.get_global_var("callee")
    x1, x2 = Var("x"), Var("x")
    body = Call(op("annotation.marker"), (x2,), Attrs({"target": g, "arg": x2}))
    text = print_expr(Function((x1, x2), body))
    assert "annotation.marker(%x1, target=@callee, arg=%x1)" in text
    assert print_attr_value(g) == "@callee"
    assert print_attr_value(x1) == "%x"


def test_call_attributes_keep_stored_order():
    x = Var("x")
    attrs = Attrs((("strides", (IntImm(2), IntImm(2))), ("padding", (IntImm(3),) * 4),
                   ("channels", IntImm(64)), ("data_layout", "NHWC"), ("out_dtype", "")))
    assert print_expr(Call(op("nn.conv2d"), (x, x), attrs)).splitlines()[-1] == (
        'nn.conv2d(%x, %x, strides=[2, 2], padding=[3, 3, 3, 3], channels=64, '
        'data_layout="NHWC", out_dtype="")')


# ------------------------------------------------------------------------------- types
@pytest.mark.parametrize("ty, text", [
    (TensorType((1, 3, 224, 224), "float32"), "Tensor[(1, 3, 224, 224), float32]"),
    (TensorType((), "float32"), "float32"),
    (TensorType((64,), "int8"), "Tensor[(64), int8]"),
    (TensorType((ANY, 1), "float32"), "Tensor[(?, 1), float32]"),
    (TensorType((IntImm(1, "int64"), 2), "float32"), "Tensor[(1i64, 2), float32]"),
    (TensorType((MetaRef("tir.SizeVar", 0), 4), "float16"), "Tensor[(meta[tir.SizeVar][0], 4), float16]"),
    (TupleType((F32, T2)), "(float32, Tensor[(2), float32])"),
    (TupleType((F32,)), "(float32,)"),
    (UNIT, "()"),
    (FuncType((F32, T2), F32), "fn (float32, Tensor[(2), float32]) -> float32"),
    (FuncType((), TupleType((F32, F32))), "fn () -> (float32, float32)"),
    (RefType(F32), "ref(float32)"),
    (IncompleteType(), "_"),
    (MetaType(MetaRef("IncompleteType", 0)), "meta[IncompleteType][0]"),
])
def test_types(ty, text):
    assert print_type(ty) == text


def test_adt_and_polymorphic_types():
    lst, a = GlobalTypeVar("List"), TypeVar("A")
    assert print_type(TypeCall(lst, (a,))) == "List[A]"
    assert print_type(TypeCall(lst, (TypeCall(lst, (F32,)),))) == "List[List[float32]]"
    assert print_type(TypeCall(GlobalTypeVar("Storage"))) == "Storage"
    assert print_type(FuncType((a, TypeCall(lst, (a,))), a, (a,))) == "fn [A](A, List[A]) -> A"


# ------------------------------------------------------------------ ty and span comments
def test_type_comments_on_every_annotated_kind():
    x = Var("x", T2, ty=T2)
    c = Constant(np.array(2.0, "float32"), ty=F32)
    mul = Call(op("multiply"), (x, c), ty=T2)
    tup = Tuple((mul, x), ty=TupleType((T2, T2)))
    item = TupleGetItem(tup, 0, ty=T2)
    p = Var("p", T2, ty=T2)
    lam = Function((p,), p, ret_type=T2, ty=FuncType((T2,), T2))
    body = Let(Var("f", ty=FuncType((T2,), T2)), lam, Call(lam, (item,), ty=T2))
    fn = Function((x,), body, ret_type=T2, ty=FuncType((T2,), T2))
    expected = dedent("""
        def @main(%x: Tensor[(2), float32] /* ty=Tensor[(2), float32] */) -> Tensor[(2), float32] {
          %0 = fn (%p: Tensor[(2), float32] /* ty=Tensor[(2), float32] */) -> Tensor[(2), float32] {
            %p
          } /* ty=fn (Tensor[(2), float32]) -> Tensor[(2), float32] */;
          let %f /* ty=fn (Tensor[(2), float32]) -> Tensor[(2), float32] */ = %0;
          %1 = multiply(%x, 2f /* ty=float32 */) /* ty=Tensor[(2), float32] */;
          %2 = (%1, %x) /* ty=(Tensor[(2), float32], Tensor[(2), float32]) */;
          %3 = %2.0 /* ty=Tensor[(2), float32] */;
          %0(%3) /* ty=Tensor[(2), float32] */
        }
        """) + "\n"
    assert print_module(module(main=fn), types=True, header=False) == expected
    plain = print_module(module(main=fn), header=False)
    assert "/*" not in plain


def test_untyped_nodes_get_no_comment():
    x = Var("x")
    assert print_expr(call("abs", x), types=True, spans=True) == "free_var %x;\nabs(%x)"


def test_span_comments():
    source = Source("model.relay", "line one\n  add(%x, %y)\n")
    doc = Span(source, 11, 22)
    layer = LayerSpan("conv1/Conv", 0, 0)
    odd = LayerSpan('odd, "name" [x]', 3, 4)
    x = Var("x", F32, span=Span(source, 0, 4))
    expr = Tuple((
        Call(op("abs"), (x,), span=doc),
        Call(op("exp"), (x,), span=layer, ty=F32),
        Call(op("log"), (x,), span=sequential(doc, layer, odd)),
        Call(op("sin"), (x,), span=LayerSpan("", 1, 2)),
        Call(op("cos"), (x,), span=LayerSpan("a/*b", 1, 2)),
        Call(op("tan"), (x,), span=LayerSpan("back\\slash x", 1, 2)),
    ))
    text = print_expr(Function((x,), expr), spans=True, types=True)
    assert text == dedent("""
        fn (%x: float32 /* span=model.relay:1:1 */) {
          %0 = abs(%x) /* span=model.relay:2:3 */;
          %1 = exp(%x) /* ty=float32 span=conv1/Conv:0:0 */;
          %2 = log(%x) /* span=[conv1/Conv:0:0, "odd, \\"name\\" [x]":3:4] */;
          %3 = sin(%x) /* span="":1:2 */;
          %4 = cos(%x) /* span="a\\/\\*b":1:2 */;
          %5 = tan(%x) /* span="back\\\\slash x":1:2 */;
          (%0, %1, %2, %3, %4, %5)
        }
        """)
    # Only what was asked for is written.
    assert "span=" not in print_expr(Function((x,), expr), types=True)
    assert "ty=" not in print_expr(Function((x,), expr), spans=True)


def test_names_holding_a_comment_delimiter_read_back():
    """Block comments nest and know no strings, so a quoted `*/` ended the comment: an ONNX
    node named `relu */ end` imported to text that check refused (`expected ';' after ')',
    found 'end'`), and `a/*b` opened a comment that never closed."""
    from relaylens.compiler.parser import parse

    names = ["relu */ end", "a/*b", "*/*", "/*/", 'q "*/" \\ x*', "a*/"]
    x = Var("x", F32)
    body = Tuple(tuple(Call(op("abs"), (x,), span=LayerSpan(name)) for name in names))
    text = '#[version = "0.0.5"]\ndef @main' + print_expr(Function((x,), body), spans=True)[len("fn "):] + "\n"
    result = parse(text, "m.relay")
    assert not result.diagnostics, [d.message for d in result.diagnostics]
    read = [next(o.name for o in field.span.origins() if isinstance(o, LayerSpan))
            for field in result.module["main"].body.fields]
    assert read == names


def test_document_spans_print_when_they_are_the_only_origins():
    one, two = Source("a.relay", "abc\ndef\n"), Source("b.relay", "x\n")
    x = Var("x")
    both = sequential(Span(one, 4, 7), Span(two, 0, 1))
    assert print_expr(Call(op("abs"), (x,), span=both), spans=True).endswith(
        "abs(%x) /* span=[a.relay:2:1, b.relay:1:1] */")


def test_constants_carry_their_comment_at_every_use():
    c = Constant(np.array(1, "int32"), ty=scalar_type("int32"))
    x = Var("x")
    assert print_expr(call("add", c, call("add", x, c)), types=True) == dedent("""
        free_var %x;
        %0 = add(%x, 1 /* ty=int32 */);
        add(1 /* ty=int32 */, %0)
        """)


# ---------------------------------------------------------------------------- metadata
def test_meta_refs_numbered_in_order_of_first_print():
    x = Var("x")
    w1, w2, w3 = (Constant(np.ones((2, 2), "float32")) for _ in range(3))
    also_w2 = Constant(w2.data)  # the same array: one entry (as a re-parsed file has it)
    lost = Constant(None, MetaRef("relay.Constant", 7))
    body = call("add", call("multiply", x, w2), Tuple((w1, w2, also_w2, lost, w3)))
    text = print_module(module(main=Function((x,), body)), metadata=False)
    assert text == HEADER + dedent("""
        def @main(%x) {
          %0 = multiply(%x, meta[relay.Constant][0]);
          %1 = (meta[relay.Constant][1], meta[relay.Constant][0], meta[relay.Constant][0], meta[relay.Constant][7], meta[relay.Constant][2]);
          add(%0, %1)
        }
        """) + "\n"


@pytest.mark.skipif(importlib.util.find_spec("relaylens.compiler.metadata") is None,
                    reason="compiler/metadata.py is not written yet")
def test_metadata_section_holds_the_tensors():
    from relaylens.compiler.metadata import parse_metadata

    x = Var("x")
    w1 = Constant(np.arange(6, dtype="float32").reshape(2, 3))
    w2 = Constant(np.array([1, 2, 3], "int64"))
    body = call("add", call("multiply", x, w2), w1)
    text = print_module(module(main=Function((x,), body)))
    code, _, section = text.partition("\n#[metadata]\n")
    assert code.endswith("add(%0, meta[relay.Constant][1])\n}\n")
    table = parse_metadata(section)
    np.testing.assert_array_equal(table.constant(0), w2.data)
    np.testing.assert_array_equal(table.constant(1), w1.data)
    assert "#[metadata]" not in print_module(module(main=Function((x,), body)), metadata=False)
    assert "#[metadata]" not in print_module(module(main=Function((x,), x)))


# --------------------------------------------------------------------------- locations
def test_locations_point_at_the_printed_text():
    x = Var("x", F32)
    c = const(2.0)
    mul = call("multiply", x, c)
    y = Var("y")
    p = Var("p")
    lam = Function((p,), p)
    let = Let(y, call("abs", mul), Call(lam, (y,)))
    fn = Function((x,), let, ret_type=F32)
    result = Printer(types=True).print_module(module(main=fn))
    text, where = result.text, result.locations

    def at(node):
        start, end = where[node]
        return text[start:end]

    assert at(mul) == "multiply(%x, 2f)"
    assert at(c) == "2f"
    assert at(x) == "%x"
    assert at(y) == "%y"
    assert at(let.value) == "abs(%0)"
    assert at(lam) == "fn (%p) {\n    %p\n  }"
    assert at(let) == "let %y = abs(%0);\n  %1 = fn (%p) {\n    %p\n  };\n  %1(%y)"
    assert at(let.body) == "%1(%y)"
    assert at(fn).startswith("def @main(%x: float32) -> float32 {") and at(fn).endswith("}")
    assert text[where[fn][1]:] == "\n"


def test_locations_with_comments_and_free_vars():
    x = Var("x", ty=F32)
    inner = Call(op("abs"), (x,), ty=F32)
    outer = Call(op("exp"), (inner,), ty=F32)
    result = Printer(types=True).print_expr(outer)
    assert result.text == "free_var %x /* ty=float32 */;\n%0 = abs(%x) /* ty=float32 */;\nexp(%0) /* ty=float32 */"
    assert [result.text[slice(*result.locations[n])] for n in (x, inner, outer)] == [
        "%x", "abs(%x)", "exp(%0)"]


# ------------------------------------------------------------------------- long chains
N = 50_000


def test_fifty_thousand_call_chain():
    x = Var("x", T2)
    expr = x
    for _ in range(N):
        expr = Call(op("add"), (expr, const(1.0)), ty=T2)
    result = Printer(types=True).print_module(module(main=Function((x,), expr)))
    lines = result.text.splitlines()
    assert len(lines) == N + 3
    assert lines[2] == "  %0 = add(%x, 1f) /* ty=Tensor[(2), float32] */;"
    assert lines[-2] == f"  add(%{N - 2}, 1f) /* ty=Tensor[(2), float32] */"
    start, end = result.locations[expr]
    assert result.text[start:end] == f"add(%{N - 2}, 1f)"


def test_fifty_thousand_let_chain():
    x = Var("x")
    expr = x
    for i in range(N):
        expr = Let(Var("v"), call("add", x, x) if i % 2 else Tuple((x,)), expr)
    lines = print_expr(expr).splitlines()
    assert len(lines) == N + 2
    assert lines[:3] == ["free_var %x;", "let %v = add(%x, %x);", "let %v1 = (%x,);"]
    assert lines[-1] == "%x"


def test_deeply_nested_scopes():
    x = Var("x", scalar_type("bool"))
    expr = const(0, "int32")
    for _ in range(1_000):
        expr = If(x, expr, const(1, "int32"))
    text = print_expr(expr)
    assert text.count("if (%x) {") == 1_000
    assert "\n" + "  " * 1_000 + "0\n" in text
    assert text.splitlines()[-1] == "}"


# ------------------------------------------------------------- round trips on the corpus
def _parser():
    try:
        from relaylens.compiler.parser import parse
    except ImportError:
        return None
    return parse


parse = _parser()
needs_parser = pytest.mark.skipif(parse is None, reason="the parser is not written yet")
CORPUS_FILES = sorted(CORPUS.glob("*.relay")) if CORPUS.is_dir() else []

# A comment after an auto-applied nullary constructor (`Nil /* ty=... */`) is not read
# back by the parser yet, so those files lose that one annotation on the way round.


def _errors(result) -> set[str]:
    return {d.message for d in result.diagnostics if d.is_error}


@needs_parser
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_corpus_round_trip(path):
    original = parse(path.read_text(), path.name)
    first = print_module(original.module)
    again = parse(first, "printed")
    assert print_module(again.module) == first
    assert _errors(again) <= _errors(original)


@needs_parser
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_corpus_round_trip_with_types_and_spans(path):
    original = parse(path.read_text(), path.name)
    first = print_module(original.module, types=True, spans=True)
    again = parse(first, "printed")
    assert print_module(again.module, types=True, spans=True) == first


@needs_parser
@pytest.mark.parametrize("value", [np.finfo(np.float32).max, -np.finfo(np.float32).max])
def test_largest_float32_reads_back(value):
    # torch.finfo(float32).min fills attention masks in exported models; its shortest
    # digits, -3.4028235e+38, lie beyond the largest float32 as a decimal and the parser
    # refused the printed import as out of range
    text = print_expr(Constant(np.array(value, "float32")))
    result = parse(f"def @main() {{ {text} }}", "t")
    assert not _errors(result), _errors(result)
    body = result.module["main"].body
    assert body.data.dtype == np.float32 and body.data == value


@needs_parser
@pytest.mark.parametrize("value, dtype", [(-np.inf, "float16"), (np.inf, "float64"), (np.nan, "float32"),
                                          (np.nan, "float16")])
def test_non_finite_scalars_without_a_literal_read_back(value, dtype):
    # -1e9 in a float16 model's mask is -inf, printed `-inff16`, which no parser reads;
    # they go to metadata, as the scalars of other dtypes without a literal do
    mod = module(main=Function((), Constant(np.array(value, dtype))))
    text = print_module(mod)
    assert "meta[relay.Constant][0]" in text
    result = parse(text, "t")
    assert not _errors(result), _errors(result)
    data = result.module["main"].body.data
    assert data.dtype == np.dtype(dtype) and np.array_equal(data, np.array(value, dtype), equal_nan=True)
