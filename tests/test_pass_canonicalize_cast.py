"""CanonicalizeCast beyond its golden cases: TVM's test_pass_canonicalize_cast.py case
with the type of the copy, the visiting order that decides which use keeps the cast (by
object identity), and its opt level. Their before/expected cases are golden files in tests/passes/canonicalize_cast/ (format:
tests/passes/README.md), run by tests/test_golden_passes.py."""

from __future__ import annotations

import numpy as np

from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.structural_equal import assert_structural_equal, structural_equal
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.span_check import spanless

from conftest import _parse_ok

HEADER = '#[version = "0.0.5"]\n'


def parse(text: str, name: str = "cast.relay"):
    return _parse_ok(HEADER + text + " /* span=main:0:0 */", name)


def canonicalize(mod, opt_level: int = 3):
    with PassContext(opt_level=opt_level):
        return get_pass("CanonicalizeCast")(mod)


def check_golden(before: str, expected: str):
    mod = parse(before, "before.relay")
    printed = print_module(mod, spans=True)
    out = canonicalize(mod)
    assert print_module(mod, spans=True) == printed, "the input module changed"
    want = parse(expected, "expected.relay")
    assert_structural_equal(out, want, spans=True)
    assert not structural_equal(mod, want), "the golden does not tell the rewrite from its input"
    assert spanless(out) == []
    return mod, out


CONV = ("%data: Tensor[(1, 16, 7, 7), int8] /* span=data:0:0 */, %weight: Tensor[(16, 16, 3, 3), int8] "
        "/* span=weight:0:0 */, %bias1: Tensor[(16, 1, 1), int32] /* span=b1:0:0 */, "
        "%bias2: Tensor[(16, 1, 1), int32] /* span=b2:0:0 */")


def test_tvm_canonicalize_cast_gives_the_second_add_its_own_cast():
    mod, out = check_golden(
        f"""def @main({CONV}) {{
  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3], out_dtype="int8") /* span=conv:0:0 */;
  %1 = cast(%0, dtype="int32") /* span=cast:0:0 */;
  %2 = add(%1, %bias1) /* span=add1:0:0 */;
  %3 = add(%1, %bias2) /* span=add2:0:0 */;
  add(%2, %3) /* span=add3:0:0 */
}}""",
        f"""def @main({CONV}) {{
  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3], out_dtype="int8") /* span=conv:0:0 */;
  %1 = cast(%0, dtype="int32") /* span=cast:0:0 */;
  %2 = add(%1, %bias1) /* span=add1:0:0 */;
  %3 = cast(%0, dtype="int32") /* span=cast:0:0 */;
  %4 = add(%3, %bias2) /* span=add2:0:0 */;
  add(%2, %4) /* span=add3:0:0 */
}}""")
    rng = np.random.default_rng(0)
    args = (rng.integers(-3, 4, (1, 16, 7, 7), dtype=np.int8), rng.integers(-2, 3, (16, 16, 3, 3), dtype=np.int8),
            rng.integers(-100, 100, (16, 1, 1), dtype=np.int32), rng.integers(-100, 100, (16, 1, 1), dtype=np.int32))
    np.testing.assert_array_equal(interpret(out, *args), interpret(mod, *args))
    copy = out["main"].body.args[1].args[0]
    assert copy.ty == out["main"].body.args[0].args[0].ty  # the copy keeps the cast's type


X8 = "%x: Tensor[(4), int8] /* span=x:0:0 */"


def test_the_outer_use_is_counted_before_the_uses_inside_its_later_arguments():
    # TVM counts add's first argument before visiting exp(%0): the exp gets the copy
    mod, out = check_golden(
        f"""def @main({X8}) {{
  %0 = cast(%x, dtype="float32") /* span=c:0:0 */;
  %1 = exp(%0) /* span=exp:0:0 */;
  add(%0, %1) /* span=add:0:0 */
}}""",
        f"""def @main({X8}) {{
  %0 = cast(%x, dtype="float32") /* span=c:0:0 */;
  %1 = cast(%x, dtype="float32") /* span=c:0:0 */;
  %2 = exp(%1) /* span=exp:0:0 */;
  add(%0, %2) /* span=add:0:0 */
}}""")
    add, original = out["main"].body, mod["main"].body.args[0]
    assert add.args[0] is original and add.args[1].args[0] is not original
