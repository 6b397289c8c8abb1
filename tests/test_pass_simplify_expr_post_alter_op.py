"""SimplifyExprPostAlterOp: TVM's SimplifyExpr test cases for the six rules it runs
(test_simplify_reshape, test_eliminate_identity, test_simplify_same_cast,
test_simplify_consecutive_cast, test_simplify_clip_cast, test_simplify_cast_clip) as
Relay text with spans, the rules it leaves out, values with the interpreter, spans."""

from __future__ import annotations

import pytest

from relaylens.compiler.ir.structural import first_mismatch
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.simplify_expr_post_alter_op import SimplifyExprPostAlterOp
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

from test_pass_simplify_expr import assert_same_values, layers, module


def simplify(mod):
    p = get_pass("SimplifyExprPostAlterOp")
    with PassContext(opt_level=3):
        out = p(mod)
    assert [d for d in infer_types(out) if d.is_error] == []
    assert spanless(out) == []
    return out, p


def golden(before_text: str, expected_text: str, fired: str | None = None) -> None:
    before = module(before_text)
    after, p = simplify(before)
    mismatch = first_mismatch(layers(after), layers(module(expected_text)), spans=True)
    assert mismatch is None, str(mismatch)
    if fired is not None:
        assert fired in p.fired, p.fired
    assert_same_values(before, after)


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


# --- test_simplify_reshape -------------------------------------------------------------


def test_simplify_reshape():
    # TVM's last reshape is reverse_reshape(newshape=(32, 0, -1)), an op RelayLens does
    # not have; reshape(newshape=[32, 16, -1]) gives the same shape
    conv = ("%0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) /* span=conv:0:0 */;\n")
    params = ("%x: Tensor[(1, 16, 16, 16), float32] /* span=x:0:0 */, "
              "%w: Tensor[(32, 16, 3, 3), float32] /* span=w:0:0 */")
    golden(f"def @main({params}) {{\n  {conv}"
           "  %1 = reshape(%0, newshape=[1, 16, -1]) /* span=r1:0:0 */;\n"
           "  %2 = reshape(%1, newshape=[4, 8, -1, 16]) /* span=r2:0:0 */;\n"
           "  reshape(%2, newshape=[32, 16, -1]) /* span=r3:0:0 */\n}",
           f"def @main({params}) {{\n  {conv}"
           "  reshape(%0, newshape=[32, 16, 16]) /* span=[r3:0:0, r2:0:0, r1:0:0] */\n}", "SimplifyReshape")



# --- test_eliminate_identity -----------------------------------------------------------

X = "%x: Tensor[(2, 3, 4), float32] /* span=x:0:0 */"



# --- casts -----------------------------------------------------------------------------



@pytest.mark.parametrize("chain, to", [(["int16", "int32"], "int32"), (["int16", "int32", "int64"], "int64"),
                                       (["int16", "int32", "int64", "float32"], "float32")])
def test_simplify_consecutive_cast(chain, to):
    casts, prev = [], "%x"
    for i, dtype in enumerate(chain):
        casts.append(f"  %{i} = cast({prev}, dtype=\"{dtype}\") /* span=c{i}:0:0 */;\n")
        prev = f"%{i}"
    spans = ", ".join(f"c{i}:0:0" for i in reversed(range(len(chain))))
    golden("def @main(%x: Tensor[(3, 4, 5), int8] /* span=x:0:0 */) {\n" + "".join(casts) + f"  abs({prev}) /* span=a:0:0 */\n}}",
           "def @main(%x: Tensor[(3, 4, 5), int8] /* span=x:0:0 */) {\n"
           f"  %0 = cast(%x, dtype=\"{to}\") /* span=[{spans}] */;\n  abs(%0) /* span=a:0:0 */\n}}",
           "SimplifyConsecutiveCast")



# --- clip and casts (test_simplify_clip_cast, test_simplify_cast_clip) -----------------

I32 = "%x: Tensor[(4, 8), int32] /* span=x:0:0 */"


@pytest.mark.parametrize("casts", [["uint8", "int32"], ["uint8", "int16", "int32"]])
def test_simplify_clip_cast_to_the_clip(casts):
    lines, prev = [], "%0"
    for i, dtype in enumerate(casts, start=1):
        lines.append(f"  %{i} = cast({prev}, dtype=\"{dtype}\") /* span=c{i}:0:0 */;\n")
        prev = f"%{i}"
    golden(f"def @main({I32}) {{\n  %0 = clip(%x, a_min=0f, a_max=255f) /* span=clip:0:0 */;\n"
           + "".join(lines) + f"  negative({prev}) /* span=n:0:0 */\n}}",
           f"def @main({I32}) {{\n  %0 = clip(%x, a_min=0f, a_max=255f) /* span=clip:0:0 */;\n"
           "  negative(%0) /* span=n:0:0 */\n}", "SimplifyClipAndConsecutiveCast")



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
