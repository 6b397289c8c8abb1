"""The code generator's current node (`_Emitter.at`): errors carry the span of the node at
fault, and each instruction the location of the node that made it, the enclosing node's
coming back once a nested one is done."""

from __future__ import annotations

import pytest

from relaylens.compiler.ir.span import Source, Span
from relaylens.compiler.lower.codegen.llvm import generate
from relaylens.compiler.lower.codegen.llvm_map import function_ranges, line_locations
from relaylens.compiler.lower.errors import LoweringError
from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.te import expr as te

RELAY = """\
def @main(%x: Tensor[(4), float32]) {
  %0 = add(%x, 1f);
  %1 = cast(%0, dtype="int32");
  negative(%1)
}
"""
SRC = Source("spans.relay", RELAY)


def at(needle: str) -> Span:
    start = RELAY.index(needle)
    return Span(SRC, start, start + len(needle))


FUNC, ADD, CAST, NEG = at("def @main"), at("add(%x, 1f)"), at('cast(%0, dtype="int32")'), at("negative(%1)")
X, OUT = te.Buffer("x", (4,), "float32"), te.Buffer("out", (4,), "float32")


def func(body: ln.Stmt, name: str = "f") -> ln.PrimFunc:
    return ln.PrimFunc(name, (X, OUT), body, span=FUNC)


def error_of(*funcs: ln.PrimFunc) -> LoweringError:
    with pytest.raises(LoweringError) as caught:
        generate(list(funcs), SRC.name)
    return caught.value


def test_an_error_in_an_expression_is_at_that_expression():
    i, stray = te.Var("i"), te.Var("stray")
    value = te.Binary("add", te.BufferLoad(X, stray, "float32", loc=ADD), te.const(1.0, "float32"), "float32",
                      loc=CAST)
    err = error_of(func(ln.For(i, 4, ln.Store(OUT, i, value, loc=NEG), loc=NEG)))
    assert "unbound variable stray" in err.message
    assert err.span is ADD


def test_an_error_in_a_node_without_a_span_is_at_the_enclosing_node():
    i = te.Var("i")
    store = ln.Store(OUT, i, te.const(1, "int32"))  # no loc, and the dtype does not match
    err = error_of(func(ln.For(i, 4, store, loc=CAST)))
    assert "storing int32" in err.message
    assert err.span is CAST
    err = error_of(func(ln.Store(OUT, te.const(0, te.INDEX), te.const(1, "int32"))))
    assert err.span is FUNC  # nothing inside has a span: the function's


def test_an_error_in_a_parallel_loop_keeps_the_span_of_its_statement():
    i, stray = te.Var("i"), te.Var("stray")
    store = ln.Store(OUT, i, te.BufferLoad(X, stray, "float32"))
    err = error_of(func(ln.For(i, 4, store, "parallel", loc=NEG)))
    assert "unbound variable stray" in err.message
    assert err.span is NEG


def test_two_functions_of_one_name_is_an_error_at_the_second():
    body = ln.Store(OUT, te.const(0, te.INDEX), te.const(1.0, "float32"))
    second = ln.PrimFunc("f", (X, OUT), body, span=NEG)
    err = error_of(func(body), second)
    assert "two functions named f" in err.message
    assert err.span is second.span


def test_the_statement_location_comes_back_after_a_nested_expression():
    """out[i] = float(int(x[i] + 1)) stored at `negative`: the add (and the load inside
    it) and the inner cast at their own calls; the outer cast, which has no span, and the
    store, emitted after them, at the statement's."""
    i = te.Var("i")
    add = te.Binary("add", te.BufferLoad(X, i, "float32"), te.const(1.0, "float32"), "float32", loc=ADD)
    cast = te.Cast(te.Cast(add, "int32", loc=CAST), "float32")
    body = ln.For(i, 4, ln.Store(OUT, i, cast, loc=NEG), loc=NEG)
    text = str(generate([func(body)], SRC.name))
    first, last = function_ranges(text)["f"]
    where = line_locations(text)
    lines = {n: line.strip() for n, line in enumerate(text.splitlines(), 1) if first < n < last}

    def located(prefix: str) -> set:
        return {where.get(n) for n, line in lines.items() if prefix in line}

    assert located("fadd float") == {(2, 8)}
    assert located("fptosi") == {(3, 8)}
    assert located("load float") == {(2, 8)}  # no span of its own: the add's
    assert located("sitofp") == {(4, 3)}
    assert located("store float") == {(4, 3)}
