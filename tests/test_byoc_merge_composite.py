"""MergeComposite with pattern tables written as Relay text, after TVM's
tests/python/relay/test_pass_merge_composite.py (each case's patterns as text, the
expected module as Relay text, compared structurally), and the table's own rules."""

from __future__ import annotations

import pytest

from byoc_cases import assert_module, assert_same_values, parse_typed, run_byoc
from relaylens.compiler.ir import SequentialSpan
from relaylens.compiler.ir.expr import Call, Function
from relaylens.compiler.transform.patterns import explain, load_pattern_table

T = "Tensor[(10, 10), float32]"
ADD_RELU = "def @add_relu(%x, %y) { nn.relu(add(%x, %y)) }"


def test_simple_merge():
    """add -> relu becomes one composite (TVM: test_simple_merge)."""
    before = f"def @main(%a: {T}, %b: {T}) {{\n  %0 = add(%a, %b);\n  nn.relu(%0)\n}}"
    out = run_byoc(before, ["MergeComposite"], patterns=ADD_RELU)
    assert_module(out, f"""def @main(%a: {T}, %b: {T}) {{
  %1 = fn (%x: {T}, %y: {T}, PartitionedFromPattern="add_nn.relu_", Composite="add_relu") {{
    %0 = add(%x, %y);
    nn.relu(%0)
  }};
  %1(%a, %b)
}}""")
    assert_same_values(before, out)


def test_branch_merge_binds_a_parameter_used_twice_to_one_expression():
    """A pattern whose parameters are used twice (TVM: test_branch_merge): both chains
    match; groups are found from the output back, so the outer one is numbered first."""
    before = f"""def @main(%a: {T}, %b: {T}, %c: {T}) {{
  %0 = add(%a, %b);
  %1 = subtract(%a, %b);
  %2 = multiply(%0, %1);
  %3 = add(%c, %2);
  %4 = subtract(%c, %2);
  multiply(%3, %4)
}}"""
    table = "def @add_sub_mul(%x, %y) {\n  %0 = add(%x, %y);\n  %1 = subtract(%x, %y);\n  multiply(%0, %1)\n}"
    out = run_byoc(before, ["MergeComposite"], patterns=table)
    composite = ('fn (%x: {T}, %y: {T}, PartitionedFromPattern="add_subtract_multiply_", Composite="add_sub_mul") '
                 '{{ %{n}0 = add(%x, %y); %{n}1 = subtract(%x, %y); multiply(%{n}0, %{n}1) }}')
    assert_module(out, f"""def @main(%a: {T}, %b: {T}, %c: {T}) {{
  %0 = {composite.format(T=T, n=1)};
  %1 = %0(%a, %b);
  %2 = {composite.format(T=T, n=2)};
  %2(%c, %1)
}}""")
    assert [p.name for p in out["main"].body.op.params] == ["FunctionVar_0_0", "FunctionVar_0_1"]
    assert_same_values(before, out)


def test_parameter_used_twice_does_not_match_two_different_expressions():
    table = "def @square_add(%x) { add(%x, %x) }"
    same = run_byoc(f"def @main(%a: {T}) {{ add(%a, %a) }}", ["MergeComposite"], patterns=table)
    assert isinstance(same["main"].body.op, Function)
    other = run_byoc(f"def @main(%a: {T}, %b: {T}) {{ add(%a, %b) }}", ["MergeComposite"], patterns=table)
    assert not isinstance(other["main"].body.op, Function)


MULTI = f"""def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32], %b: Tensor[(4), float32]) {{
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = add(%2, %x);
  nn.relu(%3)
}}"""
CONV_BIAS_RELU = """def @conv2d_bias_relu(%x, %w, %b) {
  %0 = nn.conv2d(%x, %w);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}"""


def test_multiple_patterns():
    """conv2d+bias+relu and add+relu, each its own composite (TVM: test_multiple_patterns)."""
    out = run_byoc(MULTI, ["MergeComposite"], patterns=CONV_BIAS_RELU + "\n" + ADD_RELU)
    t, w, b = "Tensor[(1, 4, 8, 8), float32]", "Tensor[(4, 4, 3, 3), float32]", "Tensor[(4), float32]"
    assert_module(out, f"""def @main(%x: {t}, %w: {w}, %b: {b}) {{
  %0 = fn (%p0: {t}, %p1: {w}, %p2: {b}, PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_",
           Composite="conv2d_bias_relu") {{
    %1 = nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1]);
    %2 = nn.bias_add(%1, %p2);
    nn.relu(%2)
  }};
  %3 = %0(%x, %w, %b);
  %4 = fn (%q0: {t}, %q1: {t}, PartitionedFromPattern="add_nn.relu_", Composite="add_relu") {{
    %5 = add(%q0, %q1);
    nn.relu(%5)
  }};
  %4(%3, %x)
}}""")
    assert_same_values(MULTI, out)


def test_merge_order():
    """The table's order is the priority (TVM: test_merge_order)."""
    before = f"def @main(%a: {T}, %b: {T}) {{\n  %0 = add(%a, %b);\n  %1 = nn.relu(%0);\n  exp(%1)\n}}"
    relu_exp = "def @relu_exp(%x) { exp(nn.relu(%x)) }"
    first = run_byoc(before, ["MergeComposite"], patterns=ADD_RELU + "\n" + relu_exp)
    assert first["main"].body.op.name == "exp"
    assert first["main"].body.args[0].op.attrs["Composite"] == "add_relu"
    second = run_byoc(before, ["MergeComposite"], patterns=relu_exp + "\n" + ADD_RELU)
    assert second["main"].body.op.attrs["Composite"] == "relu_exp"
    assert second["main"].body.args[0].op.name == "add"


def test_tuple_get_item_merge():
    """batch_norm, its projection %0.0, relu (TVM: test_tuple_get_item_merge)."""
    v = "Tensor[(8), float32]"
    t = "Tensor[(1, 8, 4, 4), float32]"
    before = f"""def @main(%x: {t}, %g: {v}, %b: {v}, %m: {v}, %v: {v}) {{
  %0 = nn.batch_norm(%x, %g, %b, %m, %v);
  %1 = %0.0;
  nn.relu(%1)
}}"""
    table = "def @bn_relu(%x, %g, %b, %m, %v) {\n  %0 = nn.batch_norm(%x, %g, %b, %m, %v);\n  nn.relu(%0.0)\n}"
    out = run_byoc(before, ["MergeComposite"], patterns=table, targets=["mynpu"])
    assert_module(out, f"""def @main(%x: {t}, %g: {v}, %b: {v}, %m: {v}, %v: {v}) {{
  %2 = fn (%p0: {t}, %p1: {v}, %p2: {v}, %p3: {v}, %p4: {v},
           PartitionedFromPattern="nn.batch_norm_TupleGetItem0_nn.relu_", Composite="mynpu.bn_relu") {{
    %0 = nn.batch_norm(%p0, %p1, %p2, %p3, %p4);
    %1 = %0.0;
    nn.relu(%1)
  }};
  %2(%x, %g, %b, %m, %v)
}}""")
    assert_same_values(before, out)


def test_diamond_not_merge():
    """An inner value used outside the match keeps the match out (TVM: test_diamond_not_merge)."""
    before = f"""def @main(%a: {T}, %b: {T}) {{
  %0 = add(%a, %b);
  %1 = nn.relu(%0);
  %2 = exp(%0);
  multiply(%1, %2)
}}"""
    out = run_byoc(before, ["MergeComposite"], patterns=ADD_RELU)
    assert_module(out, before)


def test_written_attributes_must_be_equal_and_unwritten_ones_are_free():
    table = "def @conv_pad1(%x, %w) { nn.conv2d(%x, %w, padding=[1i64, 1, 1, 1]) }"
    out = run_byoc(MULTI, ["MergeComposite"], patterns=table)
    conv = out["main"].body.args[0].args[0].args[0].args[0]
    assert isinstance(conv.op, Function) and conv.op.attrs["Composite"] == "conv_pad1"
    other = "def @conv_pad0(%x, %w) { nn.conv2d(%x, %w, padding=[0, 0, 0, 0]) }"
    assert not _composites(run_byoc(MULTI, ["MergeComposite"], patterns=other))


def test_annotated_parameter_matches_only_its_type():
    before = f"def @main(%a: {T}, %b: Tensor[(10, 10), float16]) {{\n  %0 = nn.relu(%a);\n  (%0, nn.relu(%b))\n}}"
    table = "def @relu32(%x: Tensor[(?, 10), float32]) { nn.relu(%x) }"
    out = run_byoc(before, ["MergeComposite"], patterns=table)
    assert _composites(out) == ["relu32"]
    assert out["main"].body.fields[1].op.name == "nn.relu"  # the float16 relu stays


def test_commutative_add_matches_swapped_arguments():
    before = f"def @main(%a: {T}, %b: {T}) {{\n  %0 = nn.relu(%a);\n  add(%b, %0)\n}}"
    out = run_byoc(before, ["MergeComposite"], patterns="def @relu_add(%x, %y) { add(nn.relu(%x), %y) }")
    assert _composites(out) == ["relu_add"]
    assert [a.name for a in out["main"].body.args] == ["a", "b"]
    assert_same_values(before, out)


def test_constants_are_required_and_embedded():
    """`Constants=["w"]`: %w matches a constant only (TVM's is_constant()), which stays
    inside the composite instead of becoming its parameter."""
    table = 'def @dense_bias(%x, %w, %b, Constants=["w"]) { nn.bias_add(nn.dense(%x, %w), %b) }'
    mod = parse_typed("def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(2, 4), float32], "
                      "%b: Tensor[(2), float32]) {\n  %0 = nn.dense(%x, %w);\n  nn.bias_add(%0, %b)\n}")
    assert not _composites(run_byoc(mod, ["MergeComposite"], patterns=table))
    const_mod = _with_constant_weight(mod)
    out = run_byoc(const_mod, ["MergeComposite"], patterns=table)
    call = out["main"].body
    assert _composites(out) == ["dense_bias"]
    assert len(call.args) == 2 and len(call.op.params) == 2  # x and b: the weight is inside
    assert_same_values(const_mod, out)


def test_target_prefix_and_composite_attribute():
    table = ADD_RELU + '\ndef @other(%x, %y, Composite="mynpu.add_relu") { add(%x, %y) }'
    before = f"def @main(%a: {T}, %b: {T}) {{\n  %0 = add(%a, %b);\n  %1 = nn.relu(%0);\n  add(%1, %a)\n}}"
    out = run_byoc(before, ["MergeComposite"], patterns=table, targets=["mynpu"])
    assert _composites(out) == ["mynpu.add_relu", "mynpu.add_relu"]  # an alternative under one name


def test_spans_of_composites():
    before = f"def @main(%a: {T}, %b: {T}) {{\n  %0 = add(%a, %b);\n  nn.relu(%0)\n}}"
    out = run_byoc(before, ["MergeComposite"], patterns=ADD_RELU)
    call = out["main"].body
    assert isinstance(call.span, SequentialSpan)
    assert [o.line for o in call.span.origins()] == [3, 4]
    assert call.op.span is not None and call.op.body.span.line == 4


def test_nothing_inside_a_composite_is_matched_again():
    before = f"def @main(%a: {T}, %b: {T}) {{\n  %0 = add(%a, %b);\n  nn.relu(%0)\n}}"
    once = run_byoc(before, ["MergeComposite"], patterns=ADD_RELU)
    twice = run_byoc(once, ["MergeComposite"], patterns=ADD_RELU)
    assert twice["main"] is once["main"]


@pytest.mark.parametrize("text, message, line", [
    ("def @p(%x, Size=3) { nn.relu(%x) }", "unknown pattern attribute 'Size'", 1),
    ('def @p(%x) { nn.relu(%x) }\ndef @q(%x, Constants=["w"]) { exp(%x) }', "Constants names 'w'", 2),
    ("def @p(%x) { %x }", "a pattern's result must be a call", 1),
    ("def @p(%x) { nn.relu(%x }", "", 1),
    ("", "defines no pattern", None),
    # what `relaylens check` says of the table, the build says too: such a def never matches
    ("def @p(%x) {\n  nn.relux(%x)\n}", "unknown operator nn.relux (did you mean nn.relu?)", 2),
    ("def @p(%x, %y) { nn.relu(%x, %y) }", "nn.relu takes 1 argument (data), 2 given", 1),
    ("def @p(%x, %w) {\n  nn.conv2d(%x, %w, paddin=[1, 1])\n}", "nn.conv2d has no attribute 'paddin'", 2),
    ('def @p(%x, %w) { nn.conv2d(%x, %w, data_layout=3) }', "data_layout", 1),
])
def test_table_errors_are_placed(text, message, line):
    table = load_pattern_table(text, "table.relay")
    assert not table.ok
    error = next(d for d in table.diagnostics if d.is_error)
    assert message in error.message
    assert (error.location()[1] if error.span is not None else None) == line


def test_explain_says_why_a_pattern_does_not_match():
    table = load_pattern_table('def @p(%x, %w, Constants=["w"]) { nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) }')
    mod = parse_typed(MULTI)
    conv = mod["main"].body.args[0].args[0].args[0].args[0]
    assert explain(table.entries[0], conv) == "%w must be a constant"
    relu = mod["main"].body
    assert explain(table.entries[0], relu) == "expected nn.conv2d, found nn.relu"


def _composites(mod) -> list[str]:
    from relaylens.compiler.ir.functor import post_order

    return [n.op.attrs["Composite"] for n in post_order(mod["main"].body)
            if isinstance(n, Call) and isinstance(n.op, Function) and "Composite" in n.op.attrs]


def _with_constant_weight(mod):
    """@main with its %w parameter bound to a constant."""
    import numpy as np

    from relaylens.compiler.transform.bind_params import bind_params_by_name

    bound, errors = bind_params_by_name(mod, {"w": np.random.default_rng(1).standard_normal((2, 4)).astype("float32")})
    assert errors == []
    return bound
