"""The LALR driver's short cut for `%N = op(args);` (compiler/parser/call_statements.py).

The same trees as Lark's (token types, values and offsets, child for child) on random
statements near the short cut's form, and the same IR, spans, symbols and diagnostics as
the driver without it on generated chains and on the corpus.  (tests/test_lalr_driver.py
also runs the driver, short cut on, against Lark on every file and on random edits.)
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from lark import Tree
from lark.exceptions import UnexpectedInput

from conftest import CORPUS
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.ir.span import document_span
from relaylens.compiler.parser import parse
from relaylens.compiler.parser import call_statements
from relaylens.compiler.parser.grammar import driver, grammar
from relaylens.compiler.parser.lalr_driver import NotTaken
from relaylens.compiler.printer import print_module
from test_lalr_driver import same


def chain(n: int, line=lambda k: f"  %{k} = add(%{k - 1}, %{k - 1});") -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(16), float32]) -> Tensor[(16), float32] {",
             "  %0 = add(%x, %x);", *(line(k) for k in range(1, n)), f"  %{n - 1}", "}"]
    return "\n".join(lines) + "\n"


def fingerprint(text: str) -> tuple:
    """Everything a parse gives that the editor and the compiler read."""
    result = parse(text, "t.relay", incremental=True)
    nodes = []
    for gv in sorted(result.module.functions, key=lambda g: g.name):
        for node in post_order(result.module.functions[gv]):
            span = document_span(node.span)
            nodes.append((type(node).__name__, None if span is None else (span.start, span.end)))
    symbols = [(s.kind, s.name, s.definition and (s.definition.start, s.definition.end),
                [(r.start, r.end) for r in s.references]) for s in result.index.symbols]
    diagnostics = [(d.message, d.location()) for d in result.diagnostics]
    return print_module(result.module, spans=True, types=True), nodes, symbols, diagnostics


def off(monkeypatch):
    monkeypatch.setattr(driver(), "shortcuts", {})


def test_the_short_cut_is_planned_and_taken(monkeypatch):
    assert driver().shortcuts, "the start-up check found the short cut's trees unlike Lark's"
    taken = []
    read = call_statements.CallStatements.read

    def counting(self, *args):
        found = read(self, *args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(call_statements.CallStatements, "read", counting)
    monkeypatch.setattr(driver(), "shortcuts", {})
    driver()._plan_shortcuts(grammar())  # (its start-up check reads its samples)
    taken.clear()
    parse(chain(50))
    assert taken == [True] * 50 + [False]  # every statement (`%0 = add(%x, %x);` too), not the value `%49`


def test_chains_give_the_same_ir(monkeypatch):
    shapes = [lambda k: f"  %{k} = add(%{k - 1}, %{k - 1});",
              lambda k: f"  %{k} = nn.relu(%{k - 1}) /* ty=Tensor[(16), float32] */;",
              lambda k: f"  %{k} = concatenate(%{k - 1},%x ,  %{k - 1}) ;" if k % 3 else f"  %{k} = %{k - 1};",
              lambda k: f"  %{k} = add(%{k - 1}, 1f);" if k % 2 else f"  %{k} = if(%{k - 1});",
              lambda k: f"  %{k} = add(%{k - 1}, %{k - 1}" + (";" if k % 7 else "") + ")" + ";"]
    for shape in shapes:
        text = chain(60, shape)
        with_short_cut = fingerprint(text)
        off(monkeypatch)
        assert fingerprint(text) == with_short_cut
        monkeypatch.undo()


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.relay"))[:40], ids=lambda p: p.name)
def test_the_corpus_gives_the_same_ir(path, monkeypatch):
    text = path.read_text()
    with_short_cut = fingerprint(text)
    off(monkeypatch)
    assert fingerprint(text) == with_short_cut


# Statements near the short cut's form: names that are keywords or numbers, arguments
# that are not `%` names, projections, blanks of every kind, trailing commas, a missing `;`.
NAMES = ["add", "nn.relu", "f/g", "_", "fn", "if", "let", "ref", "match", "match?", "inff", "True",
         "Tensor", "free_var", "meta", "ref_read", "a.b.c", "x1", "nn.", "2d"]
ARGS = ["%0", "%12", "%x", "%a.b", "%x-1", "%y::z", "%a:1", "%0.1", "%x.0", "1f", "%", "%-", "@g", "(%0)",
        "meta[relay.Constant][0]", "%onnx::Conv_7", "%a-", "%0a"]
BLANKS = st.sampled_from(["", " ", "  ", "\n", "\t", "\r\n", "\f", "\v", "\u00a0"])


@st.composite
def statements(draw) -> str:
    args = draw(st.lists(st.sampled_from(ARGS), min_size=0, max_size=4))
    parts = [draw(BLANKS), "%", str(draw(st.integers(0, 99))), draw(BLANKS), draw(st.sampled_from(["=", "==", ""])),
             draw(BLANKS), draw(st.sampled_from(NAMES)), draw(BLANKS), "("]
    for i, arg in enumerate(args):
        parts += [draw(BLANKS), arg, draw(BLANKS)] + ([","] if i < len(args) - 1 or draw(st.booleans()) else [])
    parts += [draw(BLANKS), draw(st.sampled_from([")", ")", ").0", ""])), draw(BLANKS), draw(st.sampled_from([";", ";", ""]))]
    return "".join(parts)


@settings(max_examples=600, deadline=None)
@given(st.lists(statements(), min_size=1, max_size=4), st.sampled_from(["%0", "%1 = add(%0, %0); %1", "}"]))
def test_random_statements_parse_to_larks_tree(body, tail):
    text = "def @f(%x) {\n" + "\n".join(body) + "\n" + tail + ("\n}" if tail != "}" else "")
    try:
        expected = grammar().parse(text, start="item")
    except UnexpectedInput:
        with pytest.raises(NotTaken):
            driver().parse(text, "item")
        return
    same(driver().parse(text, "item"), expected)


def test_a_statements_children_are_made_when_first_read():
    """The short cut's `graph_stmt` trees (StatementTree) hold their match until their
    children are read; then, copied or not, they are Lark's trees."""
    import copy

    text = chain(5)
    text = text[text.index("def"):]
    tree = driver().parse(text, "item")
    pending, stack = [], [tree]
    while stack:  # every tree, without reading a StatementTree's children
        node = stack.pop()
        if isinstance(node, call_statements.StatementTree):
            pending.append(node)
        elif isinstance(node, Tree):
            stack.extend(node.children)
    assert len(pending) == 5 and all(t._pending is not None for t in pending)
    same(tree, grammar().parse(text, start="item"))
    assert all(t._pending is None for t in pending)
    for statement in pending:
        same(statement.copy(), statement)
        assert copy.deepcopy(statement) == statement  # (Lark's deepcopy of a token drops its end_pos)
