"""Name resolution, the symbol index, and `ty=`/`span=` comments read back."""

from __future__ import annotations

import pytest

from relaylens.compiler.ir import (
    Call,
    LayerSpan,
    Let,
    SequentialSpan,
    Span,
    TensorType,
    TupleGetItem,
    Var,
    sequential,
)
from relaylens.compiler.ir.span import origin_key
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module

HEADER = '#[version = "0.0.5"]\n'


def offset(text: str, needle: str, nth: int = 0) -> int:
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    return pos


# ---- the symbol index --------------------------------------------------------------------
TEXT = HEADER + (
    "type List[A] {\n"
    "  Cons(A, List[A]),\n"
    "  Nil,\n"
    "}\n"
    "def @len[A](%xs: List[A]) -> int32 {\n"
    "  match (%xs) {\n"
    "    Cons(_, %rest) => add(1, @len(%rest)),\n"
    "    Nil => 0,\n"
    "  }\n"
    "}\n"
    "def @main(%x: Tensor[(2), float32]) {\n"
    "  %0 = add(%x, %x);\n"
    "  let %y = multiply(%0, %0);\n"
    "  (%y, %0, @len(Nil))\n"
    "}\n"
)


@pytest.fixture(scope="module")
def result():
    return parse(TEXT, "names.relay")


def test_index_has_every_definition_with_its_uses(result) -> None:
    by = {(s.kind, s.name): s for s in result.index.symbols}
    x = by[("local", "x")]
    assert x.definition.start == offset(TEXT, "%x:")
    assert [r.start for r in x.references] == [offset(TEXT, "%x, %x"), offset(TEXT, "%x);")]
    graph = by[("graph", "0")]
    assert len(graph.references) == 3
    length = by[("global", "len")]
    assert length.definition.start == offset(TEXT, "@len[")
    assert [r.text for r in length.references] == ["@len", "@len"]
    cons = by[("constructor", "Cons")]
    assert [r.start for r in cons.references] == [offset(TEXT, "Cons(_")]
    nil = by[("constructor", "Nil")]
    assert len(nil.references) == 2  # in the pattern and the call
    a = [s for s in result.index.symbols if s.kind == "type_var" and s.name == "A"]
    assert len(a) == 2  # one per binder: the type definition's and @len's


def test_index_lookup_by_offset(result) -> None:
    symbol, span = result.index.at(offset(TEXT, "%y,") + 1)
    assert symbol.kind == "local" and symbol.name == "y"
    assert span.start == offset(TEXT, "%y,")
    assert symbol.definition.start == offset(TEXT, "%y = ")
    assert result.index.at(offset(TEXT, "multiply") + 2) is None  # op names are not symbols


def test_uses_are_the_binders_objects(result) -> None:
    main = result.module["main"]
    body = main.body
    assert isinstance(body, Let)
    x = main.params[0]
    add = body.value.args[0]
    assert add.args[0] is x and add.args[1] is x
    assert body.body.fields[1] is add  # %0 is one node, shared


def test_let_binds_before_its_value_so_closures_recurse() -> None:
    text = HEADER + "def @main() {\n  let %loop = fn (%i: int32) { %loop(%i) };\n  %loop(0)\n}\n"
    result = parse(text)
    assert result.errors == []
    let = result.module["main"].body
    call = let.value.body
    assert call.op is let.var


def test_scope_errors_name_the_variable_and_place() -> None:
    text = HEADER + "def @main(%c: bool) {\n  if (%c) { let %t = 1; %t } else { %t }\n}\n"
    [err] = parse(text).errors
    assert err.location()[1:] == (3, 37)
    assert err.message == "undefined variable %t"


def test_duplicates_point_at_both_places() -> None:
    text = HEADER + "type T { A, B }\ntype U { B }\ndef @f() { 1 }\ndef @f() { 2 }\n"
    errs = parse(text).errors
    assert [(e.location()[1:], e.message) for e in errs] == [
        ((3, 10), "constructor B is defined twice"),
        ((5, 5), "@f is defined twice"),
    ]
    assert [(n[0].line, n[0].col, n[1]) for n in errs[0].notes] == [(2, 13, "first defined here")]
    assert [(n[0].line, n[0].col) for n in errs[1].notes] == [(4, 5)]


def test_dotted_local_names_and_projection_fallback() -> None:
    text = HEADER + (
        "def @main(%input.1: Tensor[(1), float32], %onnx::Conv_7: Tensor[(1), float32], %t: (float32, float32)) {\n"
        "  (add(%input.1, %onnx::Conv_7), %t.1)\n"
        "}\n"
    )
    result = parse(text)
    assert result.errors == []
    main = result.module["main"]
    tup = main.body
    assert tup.fields[0].args[0] is main.params[0] and main.params[0].name == "input.1"
    assert tup.fields[0].args[1] is main.params[1] and main.params[1].name == "onnx::Conv_7"
    assert isinstance(tup.fields[1], TupleGetItem) and tup.fields[1].tuple_value is main.params[2]


def test_missing_header_is_a_warning_only() -> None:
    result = parse("def @main() { 1 }")
    assert result.errors == []
    [warning] = result.diagnostics
    assert "no version header" in warning.message and warning.location()[1:] == (1, 1)


# ---- comments read back ------------------------------------------------------------------
ANNOTATED = HEADER + (
    "def @main(%x: Tensor[(1, 8), float32] /* ty=Tensor[(1, 8), float32] span=input:0:0 */) {\n"
    "  %0 = nn.relu(%x) /* ty=Tensor[(1, 8), float32] span=conv1/Relu:0:0 */;\n"
    "  %1 = add(%0, 1f /* ty=float32 */) /* span=[conv1/Add:0:0, \"odd, name\":3:4] */;\n"
    "  multiply(%1, %1) /* span=onnx::Mul_9:0:0 */\n"
    "}\n"
)


def test_ty_and_span_comments_land_on_their_expressions() -> None:
    result = parse(ANNOTATED, "a.relay")
    assert result.errors == []
    main = result.module["main"]
    x = main.params[0]
    assert x.ty == TensorType((1, 8), "float32")
    assert [o.key() for o in x.span.origins()][1:] == [("input", 0, 0)]
    mul = main.body
    add = mul.args[0]
    relu = add.args[0]
    assert relu.ty == TensorType((1, 8), "float32")
    assert origin_key(relu.span) == (("conv1/Relu", 0, 0),)
    # the document range comes first, then what the comment names
    assert isinstance(relu.span, SequentialSpan) and isinstance(relu.span.spans[0], Span)
    assert relu.span.spans[0].text == "nn.relu(%x)"
    assert origin_key(add.span) == (("conv1/Add", 0, 0), ("odd, name", 3, 4))
    assert add.args[1].ty == TensorType((), "float32")
    assert origin_key(mul.span) == (("onnx::Mul_9", 0, 0),)


def test_type_in_a_comment_has_spans_inside_the_comment() -> None:
    result = parse(ANNOTATED, "a.relay")
    relu = result.module["main"].body.args[0].args[0]
    start = relu.ty.span.start
    assert ANNOTATED[start : relu.ty.span.end] == "Tensor[(1, 8), float32]"
    assert ANNOTATED.rfind("ty=", 0, start) == start - 3


def test_comment_not_right_after_an_expression_is_only_a_comment() -> None:
    text = HEADER + "def @main(%x) {\n  /* ty=float32 */ nn.relu(%x)\n}\n"
    result = parse(text)
    assert result.errors == []
    assert result.module["main"].body.ty is None


def test_multi_origin_spans_round_trip_through_the_printer() -> None:
    result = parse(ANNOTATED, "a.relay")
    text = print_module(result.module, spans=True, types=True)
    assert 'span=[conv1/Add:0:0, "odd, name":3:4]' in text
    again = parse(text, "b.relay")
    add = again.module["main"].body.args[0]
    assert origin_key(add.span) == (("conv1/Add", 0, 0), ("odd, name", 3, 4))


def test_document_spans_print_as_references_and_compare_equal() -> None:
    text = HEADER + "def @main(%x) {\n  nn.relu(%x)\n}\n"
    first = parse(text, "doc.relay")
    printed = print_module(first.module, spans=True)
    assert "span=doc.relay:3:3" in printed
    again = parse(printed, "printed.relay")
    relu_a, relu_b = first.module["main"].body, again.module["main"].body
    assert origin_key(relu_a.span) == origin_key(relu_b.span) == (("doc.relay", 3, 3),)


def test_sequential_flattens_and_drops_duplicates() -> None:
    a, b = LayerSpan("a"), LayerSpan("b")
    assert sequential(a, sequential(b, a), None, b) == SequentialSpan((a, b))
    assert sequential(a) is a and sequential(None) is None


def test_calls_and_vars_from_the_example_model() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "examples" / "mnist.relay").read_text()
    result = parse(text, "mnist.relay")
    assert result.errors == []
    layers = set()

    def walk(e):
        from relaylens.compiler.ir import post_order

        for node in post_order(e):
            if isinstance(node, (Call, Var)) and node.span is not None:
                layers.update(o.name for o in node.span.origins() if isinstance(o, LayerSpan))

    walk(result.module["main"])
    assert any("Conv" in name for name in layers)
