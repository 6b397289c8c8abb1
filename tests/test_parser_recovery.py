"""Syntax errors: each reported at its place in words, and the rest of the file still read."""

from __future__ import annotations

from relaylens.compiler.ir import Call, ErrorExpr, ExprVisitor, Function, Let
from relaylens.compiler.parser import parse

HEADER = '#[version = "0.0.5"]\n'


def errors(text: str) -> list[tuple[int, int, str]]:
    result = parse(text, "t.relay")
    return [(d.location()[1], d.location()[2], d.message) for d in result.diagnostics if d.is_error]


def test_several_errors_each_reported_and_good_definitions_kept() -> None:
    text = HEADER + (
        "def @a(%x: float32) -> float32 {\n"
        "  %0 = add(%x %x);\n"  # line 3: missing comma
        "  nn.relu(%0)\n"
        "}\n"
        "def @b(%x: float32) {\n"
        "  %x\n"
        "}\n"
        "def @c(%x: Tensor[(1, 2) float32]) {\n"  # line 9: missing comma in a type
        "  %x\n"
        "}\n"
        "def @d(%y) {\n"
        "  let %z = negative(%y);\n"
        "  $\n"  # line 14: a character that starts nothing
        "}\n"
    )
    result = parse(text, "t.relay")
    got = [(d.location()[1], d.location()[2], d.message) for d in result.diagnostics if d.is_error]
    assert got == [
        (3, 15, "expected ',' or ')' after '%x', found '%x'"),
        (9, 26, "expected ',' after ')', found 'float32'"),
        # the '$' is blanked out; then the ';' before '}' is the next slip
        (13, 24, "a block ends with a value, but nothing follows this binding"),
        (14, 3, "unexpected character '$'"),
    ]
    names = sorted(gv.name for gv in result.module.functions)
    assert names == ["a", "b", "d"]  # @c's header is broken; the others are whole
    # @a keeps its second statement; the broken one became a hole bound to %0
    body = result.module["a"].body
    assert isinstance(body, Call) and body.op.name == "nn.relu"
    assert isinstance(body.args[0], ErrorExpr)


def test_broken_definition_name_stays_defined() -> None:
    text = HEADER + "def @f(%x: Tensor[(1, 2) float32]) { %x }\ndef @main() { @f(1f) }\n"
    result = parse(text, "t.relay")
    assert [d.message for d in result.diagnostics if "not defined" in d.message] == []


def test_missing_semicolon_is_mended() -> None:
    text = HEADER + "def @main(%x) {\n  %0 = add(%x, %x)\n  %1 = multiply(%0, %0);\n  %1\n}\n"
    result = parse(text, "t.relay")
    assert [(d.location()[1:], d.message) for d in result.errors] == [((3, 19), "expected ';' after ')'")]
    body = result.module["main"].body  # nothing was dropped
    assert body.op.name == "multiply" and body.args[0].op.name == "add"


def test_semicolon_before_closing_brace_is_mended() -> None:
    text = HEADER + "def @main(%x) {\n  %0 = add(%x, %x);\n  nn.relu(%0);\n}\n"
    result = parse(text, "t.relay")
    [err] = result.errors
    assert err.location()[1:] == (4, 14)
    assert err.message.startswith("a block ends with its value, not ';'")
    assert result.module["main"].body.op.name == "nn.relu"


def test_dropped_binding_does_not_cascade() -> None:
    text = HEADER + "def @main(%x) {\n  %0 = add(%x, , );\n  %1 = nn.relu(%0);\n  multiply(%1, %0)\n}\n"
    got = errors(text)
    assert len(got) == 1 and got[0][:2] == (3, 16)
    assert "expected an expression" in got[0][2]


def test_named_binding_without_let_is_said_once_with_its_fix() -> None:
    text = HEADER + ("def @main(%x) {\n  %0 = nn.relu(%x);\n  %y = add(%0, %0);\n  multiply(%y, %y)\n}\n"
                     "def @g(%a) {\n  %y\n}\n")
    result = parse(text, "t.relay")
    got = [(d.location()[1:], d.message) for d in result.errors]
    assert got[0] == ((4, 3), "'%y = ...' binds a name without 'let': write 'let %y = ...' "
                              "(only a graph number binds without it, as in '%0 = ...')")
    assert got[1:] == [((8, 3), "undefined variable %y")]  # another definition's %y is still undefined
    [fix] = result.errors[0].fixes
    assert (fix.span.start, fix.span.end, fix.text) == (text.index("%y ="), text.index("%y ="), "let ")
    fixed = parse(text[:fix.span.start] + "let " + text[fix.span.start:], "t.relay")
    assert [(d.location()[1:], d.message) for d in fixed.errors] == got[1:]


def test_named_binding_slip_in_a_definition_with_span_comments() -> None:
    text = HEADER + "def @main(%x) {\n  %y = nn.relu(%x) /* span=a:0:0 */;\n  %y\n} /* span=main:0:0 */\n"
    assert [g[:2] for g in errors(text)] == [(3, 3)]  # the definition's span is a sequence of spans
    assert errors(text.replace("%y =", "let %y =")) == []


def test_broken_let_keeps_its_variable() -> None:
    text = HEADER + "def @main(%x) {\n  let %y = add(%x %x);\n  negative(%y)\n}\n"
    got = errors(text)
    assert [g[:2] for g in got] == [(3, 19)]
    body = parse(text).module["main"].body
    assert isinstance(body, Let) and body.var.name == "y" and isinstance(body.value, ErrorExpr)


def test_error_in_bare_expression_file() -> None:
    got = errors("fn (%x) {\n  add(%x, %x,, )\n}\n")
    assert got[0][:2] == (2, 14)


def test_unclosed_body_is_one_error_at_the_end() -> None:
    text = HEADER + "def @main(%x) {\n  add(%x, %x)\n"
    got = errors(text)
    assert got == [(4, 1, "expected '}' after ')', found the end of the definition")]


def test_unterminated_comment_and_string() -> None:
    assert errors(HEADER + "def @main() { 1 } /* open") == [(2, 19, "this block comment is never closed (expected '*/')")]
    got = errors(HEADER + 'def @main(%x) { nn.conv2d(%x, %x, data_layout="NCHW) }\n')
    assert got[0][:2] == (2, 47)
    assert "never closed" in got[0][2]


def test_bad_literals_are_reported_at_the_literal() -> None:
    got = errors(HEADER + "def @main() {\n  (1.5, 1-1, 32768i16, 7i8)\n}\n")
    assert got == [
        (3, 4, "a floating-point literal needs the f suffix: write 1.5f"),
        (3, 9, "'1-1' is not a number: put spaces around an infix '+' or '-'"),
        (3, 14, "32768i16 is out of range for int16"),
        (3, 24, "'7i8': integer widths are i16, i32 and i64"),
    ]


def test_many_errors_stop_without_hanging() -> None:
    body = "".join(f"  %{i} = add(%x %x);\n" for i in range(300))
    result = parse(HEADER + "def @main(%x) {\n" + body + "  %x\n}\n")
    assert 10 <= len(result.errors) <= 60


class _Count(ExprVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.errors = 0

    def visit_error_expr(self, e: ErrorExpr) -> None:
        self.errors += 1


def test_holes_stand_where_statements_were_dropped() -> None:
    text = HEADER + "def @main(%x) {\n  %0 = add(%x %x);\n  %1 = add(%0 %0);\n  (%0, %1)\n}\n"
    result = parse(text)
    main = result.module["main"]
    assert isinstance(main, Function)
    counter = _Count()
    counter.visit(main)
    assert counter.errors == 2


def test_a_hole_the_recovery_made_is_no_second_error() -> None:
    """A broken clause of a match: the statement dropped for it is the whole match body, a
    hole where a clause was expected, which the next parse refused ('... found an earlier
    error') at the match's `{`, where nothing is wrong (1 edit in 50 on the corpus)."""
    text = HEADER + (
        "type Nat {\n  Zero,\n  Succ(Nat),\n}\n"
        "def @plus(%a: Nat, %b: Nat) -> Nat {\n"
        "  match (%a) {\n"            # line 7
        "    Zero => %b,\n"
        "    Succ(%n) = Succ(@plus(%n, %b))\n"  # line 9: '=' for '=>'
        "  }\n"
        "}\n")
    assert errors(text) == [(9, 14, "expected '=>' after ')', found '='")]
    attrs = HEADER + 'def @main(%x, %y {\n  add(%x, %y)\n}\n'  # ')' forgotten: `{` reads as attributes
    assert [(line, col) for line, col, _ in errors(attrs)] == [(3, 6)]
