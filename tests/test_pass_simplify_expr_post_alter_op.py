"""SimplifyExprPostAlterOp: its registration and the rules it leaves out.  TVM's
SimplifyExpr test cases for the six rules it runs (test_simplify_reshape,
test_eliminate_identity, test_simplify_same_cast, test_simplify_consecutive_cast,
test_simplify_clip_cast, test_simplify_cast_clip) are golden files in
tests/passes/simplify_expr_post_alter_op/ (format: tests/passes/README.md)."""

from __future__ import annotations

import pytest

from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.simplify_expr_post_alter_op import SimplifyExprPostAlterOp
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

from test_pass_simplify_expr import module


def simplify(mod):
    p = get_pass("SimplifyExprPostAlterOp")
    with PassContext(opt_level=3):
        out = p(mod)
    assert [d for d in infer_types(out) if d.is_error] == []
    assert spanless(out) == []
    return out, p


def unchanged(text: str) -> None:
    before = module(text)
    after, p = simplify(before)
    assert after is before, f"expected no rewrite, rules fired: {p.fired}"


def test_registered_under_tvms_name_with_six_rules():
    p = get_pass("SimplifyExprPostAlterOp")
    assert isinstance(p, SimplifyExprPostAlterOp) and p.opt_level == 0
    assert [type(r).__name__ for r in p.rules] == [
        "EliminateIdentity", "SimplifyReshape", "SimplifySameCast", "SimplifyConsecutiveCast",
        "SimplifyClipAndConsecutiveCast", "SimplifyClip"]


# --- test_eliminate_identity -----------------------------------------------------------

X = "%x: Tensor[(2, 3, 4), float32] /* span=x:0:0 */"


# --- what SimplifyExpr does and this pass does not -------------------------------------


@pytest.mark.parametrize("body", [
    "add(%x, %x)",                                                       # SimplifyAdd
    "divide(%x, sqrt(%x))",                                              # SimplifyRSqrt
    "transpose(transpose(%x, axes=[1, 0, 2]), axes=[1, 0, 2])",         # SimplifyTranspose
    "transpose(%x, axes=[0, 1, 2])",                                     # SimplifyNoOpTranspose
    "multiply(add(%x, 1f), 2f)",                                         # SwitchAddMultiply
    "multiply(multiply(%x, 2f), 3f)",                                    # SimplifyAdjacentMultiplyOrAdd
    "add(%x, full(1f, shape=[2, 3, 4], dtype=\"float32\"))",            # FullElementwise
    "reshape_like(%x, zeros(shape=[6, 4], dtype=\"float32\"))",          # ConcretizeLike
])
def test_the_rules_it_leaves_out_do_not_fire(body):
    text = f"def @main({X}) {{\n  {body}\n}}"
    unchanged(text)
    with PassContext(opt_level=3):
        assert get_pass("SimplifyExpr")(module(text)) is not module(text)  # SimplifyExpr would rewrite it
