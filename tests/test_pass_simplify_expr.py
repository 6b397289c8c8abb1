"""SimplifyExpr beyond its golden cases: the lossless cast table, bounded spans of long
chains, the walker, the SI builder off, untyped calls, and spans, types and values over
the corpus. Their before/expected cases are golden files in tests/passes/simplify_expr/ (format:
tests/passes/README.md), run by tests/test_golden_passes.py.

Golden texts mark origins with `/* span=NAME:0:0 */` comments; `layers()` keeps only
those (document positions differ between two texts), so `same()` compares structure and
the frontend-layer origins of every annotated node.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir import LayerSpan, sequential
from relaylens.compiler.ir.span import MAX_ORIGINS
from relaylens.compiler.ir.functor import ExprMutator
from relaylens.compiler.ir.module import IRModule
from relaylens.compiler.ir.structural_equal import first_mismatch
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.simplify_expr import SimplifyExpr
from relaylens.compiler.transform.passes.simplify_expr_rules import is_lossless_cast, lossless_on_range
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

HEADER = '#[version = "0.0.5"]\n'


# --- helpers ---------------------------------------------------------------------------


def module(text: str) -> IRModule:
    result = parse(HEADER + text, "t.relay")
    assert not [d for d in result.diagnostics if d.is_error]
    assert infer_types(result.module) == [], "the test input must typecheck"
    return result.module


class _Layers(ExprMutator):
    """Every node with only the frontend-layer origins of its span (None if it has none)."""

    def visit_default(self, expr):
        new = self.rebuild(expr)
        span = sequential(*(o for o in (expr.span.origins() if expr.span else ()) if isinstance(o, LayerSpan)))
        return replace(new, span=span)

    visit_var = visit_constant = visit_call = visit_tuple = visit_tuple_get_item = visit_default
    visit_let = visit_if = visit_function = visit_default


def layers(mod: IRModule) -> IRModule:
    return mod.with_functions({gv: _Layers().visit(f) for gv, f in mod.functions.items()})


def simplify(mod: IRModule, **config) -> tuple[IRModule, SimplifyExpr]:
    p = SimplifyExpr()
    with PassContext(opt_level=3, config=config):
        out = p(mod)
    assert [d for d in infer_types(out) if d.is_error] == [], "the simplified module must typecheck"
    assert spanless(out) == []
    return out, p


def random_args(func, rng):
    args = []
    for p in func.params:
        ty = p.ty
        assert isinstance(ty, TensorType)
        shape = tuple(int(d) for d in ty.shape)
        if ty.dtype.startswith("float"):
            args.append(rng.standard_normal(shape).astype(ty.dtype))
        elif ty.dtype == "bool":
            args.append(rng.integers(0, 2, shape).astype(bool))
        else:
            info = np.iinfo(ty.dtype)
            low, high = max(info.min, -1000), min(info.max, 1000)
            args.append(rng.integers(low, high, shape, endpoint=True).astype(ty.dtype))
    return args


def flat(value):
    if isinstance(value, tuple):
        return [x for v in value for x in flat(v)]
    return [np.asarray(value)]


def assert_same_values(before: IRModule, after: IRModule, rtol: float = 1e-5, seeds=(0, 1)) -> None:
    for seed in seeds:
        args = random_args(before["main"], np.random.default_rng(seed))
        want, got = flat(interpret(before, *args)), flat(interpret(after, *args))
        assert len(want) == len(got)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and w.shape == g.shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


def same(after: IRModule, expected_text: str) -> None:
    expected = module(expected_text)
    mismatch = first_mismatch(layers(after), layers(expected), spans=True)
    assert mismatch is None, str(mismatch)


def golden(before_text: str, expected_text: str, fired: str | None = None, rtol: float = 1e-5) -> None:
    before = module(before_text)
    after, p = simplify(before)
    same(after, expected_text)
    if fired is not None:
        assert fired in p.fired, p.fired
    assert_same_values(before, after, rtol)


def unchanged(text: str) -> None:
    before = module(text)
    after, p = simplify(before)
    assert after is before, f"expected no rewrite, rules fired: {p.fired}"


T = "Tensor[(2, 3), float32]"


# --- transposes ------------------------------------------------------------------------


def test_a_shared_inner_transpose_stays_for_its_other_user():
    before = module(f"def @main(%x: {T}) {{\n  %0 = transpose(%x);\n  %1 = transpose(%0);\n  (%0, %1)\n}}")
    after, _ = simplify(before)
    same(after, f"def @main(%x: {T}) {{\n  %0 = transpose(%x);\n  (%0, %x)\n}}")


# --- casts -----------------------------------------------------------------------------


def test_the_casts_tvm_would_merge_do_change_values():
    """Why we are stricter than TVM: the merged chain would compute something else."""
    mod = module("def @main(%x: Tensor[(2), int32]) {\n"
                 "  %0 = cast(%x, dtype=\"float32\");\n  cast(%0, dtype=\"int32\")\n}")
    x = np.array([16777217, -1], dtype="int32")
    assert interpret(mod, x).tolist() == [16777216, -1]  # not x
    mod = module("def @main(%x: Tensor[(1), int8]) {\n"
                 "  %0 = cast(%x, dtype=\"uint8\");\n  cast(%0, dtype=\"int32\")\n}")
    assert interpret(mod, np.array([-1], dtype="int8")).tolist() == [255]  # not -1


def test_lossless_cast_table():
    assert is_lossless_cast("int8", "int16") and is_lossless_cast("uint8", "int16")
    assert is_lossless_cast("int16", "float32") and is_lossless_cast("int32", "float64")
    assert is_lossless_cast("bool", "int8") and is_lossless_cast("bool", "float16")
    assert is_lossless_cast("float16", "float64") and not is_lossless_cast("float64", "float32")
    assert not is_lossless_cast("uint8", "int8") and not is_lossless_cast("int16", "float16")
    assert not is_lossless_cast("float32", "int64") and not is_lossless_cast("bfloat16", "float32")
    assert lossless_on_range("int32", 0.0, 255.0, "uint8") and not lossless_on_range("int32", -1.0, 255.0, "uint8")
    assert not lossless_on_range("float32", 0.0, 255.0, "uint8")


# --- x * 1, x + 0 and kin -------------------------------------------------------------


def test_identity_with_a_dynamic_shape_only_when_the_unit_is_a_scalar():
    before = module("def @main(%x: Tensor[(?, 3), float32]) {\n  multiply(%x, 1f)\n}")
    after, _ = simplify(before)
    same(after, "def @main(%x: Tensor[(?, 3), float32]) {\n  %x\n}")
    unchanged("def @main(%x: Tensor[(?, 3), float32]) {\n  multiply(%x, ones(shape=[4, 3], dtype=\"float32\"))\n}")


# --- the other TVM rules ---------------------------------------------------------------


def test_a_long_chain_folds_into_one_node_with_a_bounded_span():
    """x + x + ... (n times) becomes x * 2^n: the node names its first MAX_ORIGINS
    origins (the latest statements), and the fold stays linear in n."""
    n = MAX_ORIGINS + 300
    lines = [f"  %{k} = add(%{k - 1}, %{k - 1}) /* span=s{k}:0:0 */;" for k in range(1, n)]
    before = module(f"def @main(%x: Tensor[(4), float64]) {{\n  %0 = add(%x, %x) /* span=s0:0:0 */;\n"
                    + "\n".join(lines) + f"\n  %{n - 1}\n}}")
    after, _ = simplify(before)
    body = after.functions[after.get_global_var("main")].body
    assert body.op.name == "multiply" and body.args[0] is after.functions[after.get_global_var("main")].params[0]
    names = [o.name for o in body.span.origins() if isinstance(o, LayerSpan)]
    assert len(body.span.origins()) == MAX_ORIGINS
    assert names[0] == f"s{n - 1}" and f"s{n - 2}" in names
    assert_same_values(before, after)


def test_rules_apply_again_to_what_a_rule_built():
    # (x + 1) * 2 switches to x * 2 + 2; doubling that (x + x) gives (x * 2 + 2) * 2, which
    # switches again, and the two multiplies then fold: x * 4 + 4.
    before = module(f"def @main(%x: {T}) {{\n  %0 = add(%x, 1f);\n  %1 = multiply(%0, 2f);\n  add(%1, %1)\n}}")
    after, _ = simplify(before)
    same(after, f"def @main(%x: {T}) {{\n  %0 = multiply(%x, 4f);\n  add(%0, 4f)\n}}")
    assert_same_values(before, after)


# --- clip ------------------------------------------------------------------------------


def test_casts_after_a_clip_that_may_change_values_stay():
    # float data: the int cast drops fractions
    unchanged("def @main(%x: Tensor[(4), float32]) {\n  %0 = clip(%x, a_min=0f, a_max=255f);\n"
              "  %1 = cast(%0, dtype=\"int32\");\n  cast(%1, dtype=\"float32\")\n}")
    # a cast that wraps (int8 holds no 1000) makes every later cast matter, although
    # uint16 and int32 hold [0, 1000]: TVM would drop those two
    text = ("def @main(%x: Tensor[(4), int32]) {\n  %0 = clip(%x, a_min=0f, a_max=1000f);\n"
            "  %1 = cast(%0, dtype=\"int8\");\n  %2 = cast(%1, dtype=\"uint16\");\n  cast(%2, dtype=\"int32\")\n}")
    unchanged(text)
    assert interpret(module(text), np.array([200, 5, 0, 1000], "int32")).tolist() == [65480, 5, 0, 65512]


# --- the walker, the pass --------------------------------------------------------------


def test_rewrites_inside_nested_functions_and_lets():
    before = module(f"def @main(%x: {T}) {{\n  let %f = fn (%z: {T}) {{ multiply(%z, 1f) }};\n"
                    "  let %y = transpose(transpose(%x));\n  %f(%y)\n}")
    after, _ = simplify(before)
    same(after, f"def @main(%x: {T}) {{\n  let %f = fn (%z: {T}) {{ %z }};\n  let %y = %x;\n  %f(%y)\n}}")


def test_the_input_module_is_not_changed():
    text = (f"def @main(%x: {T} /* span=x:0:0 */) {{\n  %0 = transpose(%x) /* span=t1:0:0 */;\n"
            "  transpose(%0, axes=[1, 0])\n}")
    before = module(text)
    simplify(before)
    assert first_mismatch(layers(before), layers(module(text)), spans=True, types=True) is None


def test_with_si_builder_off_new_nodes_have_no_span():
    before = module("def @main(%x: Tensor[(2, 3, 4), float32] /* span=x:0:0 */) {\n"
                    "  %0 = transpose(%x, axes=[1, 2, 0]) /* span=t1:0:0 */;\n"
                    "  transpose(%0, axes=[1, 2, 0]) /* span=t2:0:0 */\n}")
    p = SimplifyExpr()
    with PassContext(config={"ir.enable_si_builder": False}):
        after = p(before)
    assert after["main"].body.span is None


def test_registered_at_opt_level_0():
    p = get_pass("SimplifyExpr")
    assert (p.name, p.opt_level, p.required) == ("SimplifyExpr", 0, ("InferType",))


def test_untyped_calls_are_left_alone():
    from relaylens.compiler.parser import parse as raw_parse

    mod = raw_parse(HEADER + "def @main(%x) {\n  %0 = transpose(%x);\n  transpose(%0)\n}", "t.relay").module
    assert SimplifyExpr().run(mod, PassContext()) is mod  # run() skips InferType: no types


# --- the corpus ------------------------------------------------------------------------


def _typed_corpus(corpus_dir):
    ok, skipped = [], []
    for path in sorted(corpus_dir.glob("*.relay")):
        result = check_text(path.read_text(), str(path))
        (skipped if any(d.is_error for d in result.diagnostics) else ok).append((path.name, result.module))
    return ok, [name for name, _ in skipped]


def _numeric_inputs_ok(mod: IRModule) -> bool:
    main = mod.functions.get(mod.global_vars.get("main"))
    return main is not None and all(
        isinstance(p.ty, TensorType) and all(isinstance(d, int) for d in p.ty.shape) for p in main.params)


def test_corpus_keeps_spans_types_and_values(corpus_dir):
    ok, skipped = _typed_corpus(corpus_dir)
    print(f"skipped {len(skipped)} files with type errors: {' '.join(skipped)}")
    assert len(ok) >= 40
    ran = 0
    for name, mod in ok:
        after, p = simplify(mod)
        if after is mod or not _numeric_inputs_ok(mod):
            continue
        try:
            assert_same_values(mod, after, rtol=1e-4, seeds=(0,))
        except Exception as e:  # noqa: BLE001
            if "InterpreterError" in type(e).__name__:  # the model itself cannot run here
                continue
            raise AssertionError(f"{name}: {e}") from e
        ran += 1
    print(f"values compared on {ran} rewritten corpus models")
