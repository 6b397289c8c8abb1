"""Type inference: every expression kind, polymorphism and ADTs, and the errors with
their messages and line:col."""

from __future__ import annotations

import sys

from relaylens.compiler.ir import TypeCall
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_type
from relaylens.compiler.typing import infer_types

HEADER = '#[version = "0.0.5"]\n'


def check(text: str, *, annotations: bool = False):
    """(module, [(line, col, severity, message)]) for a text that parses cleanly."""
    result = parse(HEADER + text, "t.relay")
    assert not [d for d in result.diagnostics if d.is_error], [d.message for d in result.diagnostics]
    found = []
    for d in infer_types(result.module, check_annotations=annotations):
        _, line, col = d.location()
        found.append((line - 1, col, d.severity.name.lower(), d.message))
    return result.module, found


def typed(text: str):
    module, found = check(text)
    assert not found, found
    return module


def body_type(module, name: str = "main") -> str:
    return print_type(module[name].body.ty)


def test_call_types_flow_through_a_graph():
    m = typed("def @main(%x: Tensor[(1, 3), float32], %y: Tensor[(4, 1), float32]) {\n"
              "  %0 = add(%x, %y);\n  %1 = multiply(%0, %0);\n  greater(%1, %x)\n}")
    assert body_type(m) == "Tensor[(4, 3), bool]"
    call = m["main"].body
    assert print_type(call.args[0].ty) == "Tensor[(4, 3), float32]"
    assert print_type(m["main"].ty) == ("fn (Tensor[(1, 3), float32], Tensor[(4, 1), float32]) "
                                        "-> Tensor[(4, 3), bool]")


def test_unknown_dims_flow():
    m = typed("def @main(%x: Tensor[(?, 3), float32], %y: Tensor[(1, 3), float32]) { add(%x, %y) }")
    assert body_type(m) == "Tensor[(?, 3), float32]"


def test_params_and_vars_carry_types():
    m = typed("def @main(%x: float32) { let %y = negative(%x); %y }")
    let = m["main"].body
    assert print_type(let.var.ty) == "float32"
    assert print_type(m["main"].params[0].ty) == "float32"


def test_broadcast_error_names_both_sides_at_the_call():
    _, found = check("def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 1), float32]) {\n"
                     "  %0 = add(%x, %y);\n  negative(%0)\n}")
    assert found == [(2, 8, "error", "add: shapes cannot be broadcast together: "
                      "Tensor[(2, 3), float32] and Tensor[(4, 1), float32]")]


def test_one_error_does_not_hide_the_next():
    _, found = check("def @main(%x: Tensor[(2, 3), float32], %b: bool) {\n"
                     "  %0 = add(%x, %b);\n  %1 = negative(%0);\n  %2 = logical_not(%x);\n  (%1, %2)\n}")
    assert [(line, col) for line, col, *_ in found] == [(2, 8), (4, 8)]
    assert "different dtypes" in found[0][3]
    assert found[1][3] == "logical_not expects a bool tensor, found Tensor[(2, 3), float32]"


def test_unknown_operator_is_a_diagnostic_at_the_call():
    _, found = check("def @main(%x: Tensor[(1, 3, 8, 8), float32]) {\n  nn.conv4d(%x)\n}")
    assert found == [(2, 3, "error", "unknown operator nn.conv4d (did you mean nn.conv3d?)")]
    _, found = check("def @main(%x: Tensor[(1, 3, 8, 8), float32]) {\n  zzyzx(%x)\n}")
    assert found == [(2, 3, "error", "unknown operator zzyzx")]  # nothing close: no guess


def test_attribute_errors_name_the_attribute():
    _, found = check("def @main(%x: float32) { clip(%x, a_mn=0f, a_max=6f) }")
    assert found[0][3] == "clip has no attribute 'a_mn' (did you mean a_min?); it takes: a_min, a_max"
    _, found = check('def @main(%x: float32) { clip(%x, a_min="low", a_max=6f) }')
    assert found[0][3] == 'clip: attribute a_min expects a number, got "low"'
    _, found = check("def @main(%x: float32) { clip(%x, a_max=6f) }")
    assert found[0][3] == "clip: attribute a_min is required (expected a number)"


def test_op_arity():
    _, found = check("def @main(%x: float32) { add(%x) }")
    assert found[0][3] == "add takes 2 arguments (lhs, rhs), 1 given"


def test_let_annotation_is_checked():
    _, found = check("def @main(%x: Tensor[(2), float32]) {\n"
                     "  let %y: Tensor[(3), float32] = negative(%x);\n  %y\n}")
    assert found == [(2, 34, "error", "%y is annotated Tensor[(3), float32] but its value has type "
                      "Tensor[(2), float32] (dimension 0: 3 vs 2)")]


def test_if_condition_and_branches():
    m = typed("def @main(%c: bool, %x: float32) { if (%c) { %x } else { negative(%x) } }")
    assert body_type(m) == "float32"
    _, found = check("def @main(%c: float32, %x: float32, %y: int32) {\n"
                     "  if (%c) { %x } else { %y }\n}")
    messages = [f[3] for f in found]
    assert messages == ["the condition of if must be a bool scalar, found float32 (dtype bool vs float32)",
                        "the branches of if differ: the true branch is float32, the false branch int32 "
                        "(dtype float32 vs int32)"]


def test_tuples_and_projection():
    m = typed("def @main(%x: float32, %y: Tensor[(2), int32]) { %0 = (%x, %y); %0.1 }")
    assert body_type(m) == "Tensor[(2), int32]"
    _, found = check("def @main(%x: float32) {\n  %0 = (%x, %x);\n  %0.2\n}")
    assert found == [(3, 3, "error", "index 2 is out of range for a tuple of 2 fields ((float32, float32))")]


def test_unannotated_closures_are_inferred_from_their_use():
    m = typed("def @main(%x: Tensor[(5, 7), float32], %y: Tensor[(5, 7), float32]) {\n"
              "  let %f = fn (%g) { fn (%a) { %1 = %g(%a); add(%1, %x) } };\n"
              "  let %h = fn (%b) { negative(%b) };\n"
              "  %2 = %f(%h);\n  %3 = %2(%y);\n  subtract(%x, %3)\n}")
    assert body_type(m) == "Tensor[(5, 7), float32]"
    let_f = m["main"].body
    assert print_type(let_f.var.ty) == ("fn (fn (Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]) -> "
                                        "fn (Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]")


def test_polymorphic_global_is_instantiated_per_use():
    m = typed("def @id[A](%x: A) -> A { %x }\n"
              "def @main(%a: float32, %b: Tensor[(2), int8]) { (@id(%a), @id(%b)) }")
    assert body_type(m) == "(float32, Tensor[(2), int8])"


def test_globals_called_before_their_definition_and_recursion():
    m = typed("def @main(%x: int32) { @count(%x) }\n"
              "def @count(%n: int32) -> int32 {\n"
              "  if (equal(%n, 0)) { 0 } else { @count(subtract(%n, 1)) }\n}")
    assert body_type(m) == "int32"


def test_call_argument_mismatch_and_arity():
    _, found = check("def @f(%x: Tensor[(3), float32]) -> Tensor[(3), float32] { %x }\n"
                     "def @main(%y: Tensor[(4), float32]) {\n  @f(%y)\n}")
    assert found == [(3, 3, "error", "argument 1 of @f: expected Tensor[(3), float32], found "
                      "Tensor[(4), float32] (dimension 0: 3 vs 4)")]
    _, found = check("def @f(%x: float32) -> float32 { %x }\ndef @main(%y: float32) {\n  @f(%y, %y)\n}")
    assert found == [(3, 3, "error", "@f takes 1 argument, 2 given")]


def test_adt_constructors_match_and_recursion():
    m = typed("type List[A] { Cons(A, List[A]), Nil }\n"
              "def @sum(%l: List[int32]) -> int32 {\n"
              "  match (%l) { Cons(%h, %t) => add(%h, @sum(%t)), Nil => 0 }\n}\n"
              "def @main(%a: int32) { @sum(Cons(%a, Cons(2, Nil))) }")
    assert body_type(m) == "int32"
    match = m["sum"].body
    head = match.clauses[0].lhs.patterns[0].var
    tail = match.clauses[0].lhs.patterns[1].var
    assert print_type(head.ty) == "int32"
    assert print_type(tail.ty) == "List[int32]"
    cons = m["main"].body.args[0]
    assert isinstance(cons.ty, TypeCall) and print_type(cons.ty) == "List[int32]"


def test_constructor_argument_mismatch():
    _, found = check("type List[A] { Cons(A, List[A]), Nil }\n"
                     "def @main(%a: int32, %b: float32) {\n  Cons(%a, Cons(%b, Nil))\n}")
    assert len(found) == 1 and found[0][:2] == (3, 3)
    assert found[0][3].startswith("argument 2 of Cons: expected List[int32], found List[float32]")


def test_pattern_of_the_wrong_type():
    _, found = check("type List[A] { Cons(A, List[A]), Nil }\ntype Opt[A] { Some(A), None }\n"
                     "def @main(%l: List[int32]) {\n  match (%l) { Some(%x) => %x, _ => 0 }\n}")
    assert found[0][:3] == (4, 16, "error")
    assert found[0][3].startswith("pattern Some of Opt[")


def test_refs():
    m = typed("def @main(%x: float32) {\n  let %r = ref(%x);\n  let %u = ref_write(%r, negative(%x));\n"
              "  ref_read(%r)\n}")
    assert body_type(m) == "float32"
    assert print_type(m["main"].body.var.ty) == "ref(float32)"
    _, found = check("def @main(%x: float32, %i: int32) {\n  let %r = ref(%x);\n  ref_write(%r, %i)\n}")
    assert found[0][3] == "ref_write: the reference holds float32, the value is int32 (dtype float32 vs int32)"


def test_function_return_annotation_is_checked():
    _, found = check("def @main(%x: float32) -> int32 {\n  negative(%x)\n}")
    assert found == [(2, 3, "error", "the function returns float32 but its result is annotated int32 "
                      "(dtype int32 vs float32)")]


def test_ty_comments_are_checked_when_asked():
    text = ("def @main(%x: Tensor[(2), float32]) {\n"
            "  %0 = negative(%x) /* ty=Tensor[(3), float32] */;\n  %0\n}")
    _, found = check(text)
    assert found == []
    _, found = check(text, annotations=True)
    assert found == [(2, 8, "warning", "the comment says ty=Tensor[(3), float32], but the type is "
                      "Tensor[(2), float32]")]


def test_closure_over_unused_param_warns():
    _, found = check("def @main(%x) { %x }")
    assert found == [(1, 11, "warning", "cannot infer the type of parameter %x of @main; annotate it")]


def test_long_chain_at_the_default_recursion_limit():
    n = 5000
    lines = ["def @main(%x: Tensor[(2), float32]) {", "  %0 = add(%x, %x);"]
    lines += [f"  %{i} = add(%{i - 1}, %x);" for i in range(1, n)]
    lines += [f"  %{n - 1}", "}"]
    m = typed("\n".join(lines))
    assert sys.getrecursionlimit() <= 10000
    assert body_type(m) == "Tensor[(2), float32]"


def test_long_let_chain():
    n = 5000
    lines = ["def @main(%x: float32) {"]
    lines += [f"  let %v{i} = add(%x, %x);" for i in range(n)]
    lines += [f"  %v{n - 1}", "}"]
    m = typed("\n".join(lines))
    assert body_type(m) == "float32"


def test_inference_is_repeatable():
    m = typed("def @main(%x: Tensor[(1, 3), float32]) { add(%x, %x) }")
    again = infer_types(m)
    assert again == [] and body_type(m) == "Tensor[(1, 3), float32]"
