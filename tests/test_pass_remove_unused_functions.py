"""RemoveUnusedFunctions: the cases of TVM's test_pass_remove_unused_functions.py (with a
small prelude of our own written in Relay text), globals reached as arguments or through
an `if`, modules without the entry, and the interpreter's result before and after."""

from __future__ import annotations

import numpy as np

from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.structural import assert_structural_equal
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.remove_unused_functions import RemoveUnusedFunctions
from relaylens.compiler.transform.span_check import spanless

from conftest import _parse_ok

HEADER = '#[version = "0.0.5"]\n'

PRELUDE = """
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @hd[A](%xs: List[A]) -> A {
  match? (%xs) {
    Cons(%x, _) => %x,
  }
}

def @tl[A](%xs: List[A]) -> List[A] {
  match? (%xs) {
    Cons(_, %rest) => %rest,
  }
}

def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}

def @length[A](%xs: List[A]) -> int32 {
  match (%xs) {
    Cons(_, %rest) => add(1, @length(%rest)),
    Nil => 0,
  }
}

def @inc(%x: int32) -> int32 {
  add(%x, 1)
}
"""

LIST = "Cons(0, Cons(1, Cons(2, Cons(3, Cons(4, Nil)))))"


def remove(mod, entries=("main",)):
    with PassContext(opt_level=3):
        return RemoveUnusedFunctions(entries)(mod)


def names(mod) -> set[str]:
    return {gv.name for gv in mod.functions}


def module(text: str):
    return _parse_ok(HEADER + PRELUDE + text, "unused.relay")


def test_an_entry_that_calls_nothing_keeps_only_itself():
    mod = module("def @main(%x: Tensor[(1, 16), float32]) { %x }")
    out = remove(mod)
    assert names(out) == {"main"}
    assert out["main"] is mod["main"]
    assert out.type_definitions == mod.type_definitions  # the List type and its constructors stay
    assert len(names(mod)) == 6, "the input module changed"


def test_a_called_global_is_kept():
    mod = module("""def @id_func(%x: Tensor[(1, 16), float32]) { %x }
def @main(%x: Tensor[(1, 16), float32]) { @id_func(%x) }""")
    assert names(remove(mod)) == {"id_func", "main"}


def test_globals_called_by_main_are_kept_with_what_they_call():
    mod = module(f"def @main() {{ @hd(@tl(@tl({LIST}))) }}")
    out = remove(mod)
    assert names(out) == {"tl", "hd", "main"}
    assert int(interpret(out)) == int(interpret(mod)) == 2


def test_tracing_is_transitive_and_stops_at_recursion():
    mod = module(f"""def @count[A](%xs: List[A]) -> int32 {{ @length(%xs) }}
def @main() {{ @count({LIST}) }}""")
    out = remove(mod)
    assert names(out) == {"count", "length", "main"}
    assert int(interpret(out)) == 5


def test_several_entry_functions():
    mod = module(f"""def @main1() {{ @hd(@tl(@tl({LIST}))) }}
def @id_func(%x: Tensor[(1, 16), float32]) {{ %x }}
def @main2(%x: Tensor[(1, 16), float32]) {{ @id_func(%x) }}""")
    assert names(remove(mod, ("main1", "main2"))) == {"tl", "hd", "main2", "id_func", "main1"}


def test_a_global_passed_as_an_argument_is_kept():
    mod = module(f"def @main() {{ @length(@map(@inc, {LIST})) }}")
    out = remove(mod)
    assert names(out) == {"length", "map", "inc", "main"}
    assert int(interpret(out)) == 5


def test_globals_called_through_an_if_without_arguments_are_kept():
    text = """def @g1() { 1 }
def @g2() { 2 }
def @main(%p: bool) {
  %0 = if (%p) { @g1 } else { @g2 };
  %0()
}"""
    mod = _parse_ok(HEADER + text, "if.relay")
    out = remove(mod)
    assert out is mod
    assert_structural_equal(out, _parse_ok(HEADER + text, "if.relay"))
    for flag in (True, False):
        assert int(interpret(out, np.array(flag))) == (1 if flag else 2)


def test_an_undefined_lowered_callee_is_kept_by_name_and_the_rest_goes():
    text = """def @unused(%x: Tensor[(2), float32]) { %x }
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  call_lowered(@tvmgen_default_fused_add, (%x, %x))
}"""
    out = remove(_parse_ok(HEADER + text, "lowered.relay"))
    assert names(out) == {"main"}
    assert "unused" not in out and "unused" not in out.global_vars


def test_a_module_without_the_entry_comes_back_unchanged():
    mod = _parse_ok(HEADER + "def @helper(%x: int32) { %x }\ndef @other() { 1 }", "no_main.relay")
    assert remove(mod) is mod


def test_nothing_unused_returns_the_same_module():
    mod = _parse_ok(HEADER + "def @f(%x: int32) { %x }\ndef @main(%x: int32) { @f(%x) }", "all.relay")
    assert remove(mod) is mod


def test_registered_under_tvms_name_at_opt_level_1():
    p = get_pass("RemoveUnusedFunctions")
    assert isinstance(p, RemoveUnusedFunctions) and p.entry_functions == ("main",)
    mod = module("def @main(%x: int32) { %x }")
    with PassContext(opt_level=0):
        assert p(mod) is mod
    with PassContext(opt_level=1):
        out = p(mod)
    assert names(out) == {"main"} and spanless(out) == []
