"""Which pattern came closest to a call left on the host, and why it was kept out
(compiler/transform/patterns/closest.py: the editor's hover)."""

from __future__ import annotations

from byoc_cases import parse_typed
from relaylens.compiler.ir.expr import Call
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.transform.patterns import load_pattern_table
from relaylens.compiler.transform.patterns.closest import closest, users_of

X = "Tensor[(1, 3, 8, 8), float32]"
W = "Tensor[(4, 3, 3, 3), float32]"
TABLE = load_pattern_table("""
def @conv2d_bias_relu(%x, %w, %b, Constants=["w", "b"]) {
  %0 = nn.conv2d(%x, %w);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}
def @conv2d_s2(%x, %w) { nn.conv2d(%x, %w, strides=[2, 2]) }
def @add_relu(%x, %y) { nn.relu(add(%x, %y)) }
def @small_exp(%x: Tensor[(1, 4), float32]) { exp(%x) }
""", "table.relay")


def calls(text: str):
    mod = parse_typed(text)
    body = mod["main"].body
    found = {c.op.name: c for c in post_order(body) if isinstance(c, Call)}
    return found, users_of(body)


def test_the_pattern_that_got_furthest_and_the_constraint_that_failed():
    found, users = calls(f"""def @main(%x: {X}, %w: {W}, %b: Tensor[(4), float32]) {{
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  exp(%2)
}}""")
    near = closest(TABLE.entries, found["nn.conv2d"], users)
    # conv2d_bias_relu reaches three calls from the relu; conv2d_s2 one (and fails on strides)
    assert (near.entry.name, near.reached, near.root) == ("conv2d_bias_relu", 3, found["nn.relu"])
    assert near.why == "%w must be a constant"
    bias = closest(TABLE.entries, found["nn.bias_add"], users)
    assert bias.entry.name == "conv2d_bias_relu" and bias.why == "%w must be a constant"
    assert closest(TABLE.entries, found["exp"], users).why == "%x: the type differs from the annotation"


def test_an_attribute_that_differs_and_an_op_no_pattern_uses():
    found, users = calls(f"""def @main(%x: {X}, %w: {W}) {{
  %0 = nn.conv2d(%x, %w, strides=[1, 1]);
  nn.softmax(%0)
}}""")
    near = closest(TABLE.entries, found["nn.conv2d"], users)
    assert (near.entry.name, near.why) == ("conv2d_s2", "nn.conv2d: attribute strides differs")
    assert closest(TABLE.entries, found["nn.softmax"], users) is None


def test_a_pattern_that_matches_says_so():
    found, users = calls(f"def @main(%a: {X}, %b: {X}) {{ nn.relu(add(%a, %b)) }}")
    near = closest(TABLE.entries, found["add"], users)
    assert (near.entry.name, near.why, near.root) == ("add_relu", None, found["nn.relu"])


def test_a_pattern_that_fails_above_the_call_is_still_named():
    """dense then add (not bias_add): @dense_bias is tried at the add, and says so."""
    table = load_pattern_table("def @dense_bias(%x, %w, %b) { nn.bias_add(nn.dense(%x, %w), %b) }", "t.relay")
    found, users = calls("def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32]) {"
                         " add(nn.dense(%x, %w), %b) }")
    near = closest(table.entries, found["nn.dense"], users)
    assert (near.entry.name, near.root, near.why) == ("dense_bias", found["add"], "expected nn.bias_add, found add")
    lone = calls("def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(4, 8), float32]) { nn.dense(%x, %w) }")
    near = closest(table.entries, lone[0]["nn.dense"], lone[1])  # nothing above it to be the root
    assert (near.entry.name, near.why) == ("dense_bias", "nothing above it fits the pattern, which continues up to "
                                                         "nn.bias_add")
