"""EliminateCommonSubexpr and DeadCodeElimination beyond their golden cases: options
given as functions, opt levels, the purity analysis, spans with the SI builder off, and
the span invariant over the corpus. Their before/expected cases are golden files in tests/passes/cse_dce/ (format:
tests/passes/README.md), run by tests/test_golden_passes.py.

Golden texts mark origins with `/* span=NAME:0:0 */`; `layers()` keeps only those, so
`same()` compares structure and the frontend-layer origins of every annotated node.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import InterpreterError, interpret
from relaylens.compiler.ir import Call, LayerSpan, sequential
from relaylens.compiler.ir.functor import ExprMutator, post_order
from relaylens.compiler.ir.module import IRModule
from relaylens.compiler.ir.structural_equal import first_mismatch
from relaylens.compiler.ir.types import TensorType
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.dead_code_elimination import DeadCodeElimination, PurityAnalysis
from relaylens.compiler.transform.passes.eliminate_common_subexpr import EliminateCommonSubexpr
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(2, 3), float32]"


# --- helpers ---------------------------------------------------------------------------


def module(text: str) -> IRModule:
    result = parse(HEADER + text, "t.relay")
    assert not [d for d in result.diagnostics if d.is_error]
    assert [d for d in infer_types(result.module) if d.is_error] == [], "the test input must typecheck"
    return result.module


class _Layers(ExprMutator):
    """Every node with only the frontend-layer origins of its span (None if it has none)."""

    def visit_default(self, expr):
        new = self.rebuild(expr)
        span = sequential(*(o for o in (expr.span.origins() if expr.span else ()) if isinstance(o, LayerSpan)))
        return replace(new, span=span)

    visit_var = visit_constant = visit_call = visit_tuple = visit_tuple_get_item = visit_default
    visit_let = visit_if = visit_function = visit_ref_create = visit_ref_read = visit_ref_write = visit_default


def layers(mod: IRModule) -> IRModule:
    return mod.with_functions({gv: _Layers().visit(f) for gv, f in mod.functions.items()})


def run(p, mod: IRModule, opt_level: int = 3, **config) -> IRModule:
    with PassContext(opt_level=opt_level, config=config):
        out = p(mod)
    assert [d for d in infer_types(out) if d.is_error] == [], "the result must typecheck"
    assert spanless(out) == []
    return out


def same(after: IRModule, expected_text: str) -> None:
    mismatch = first_mismatch(layers(after), layers(module(expected_text)), spans=True)
    assert mismatch is None, str(mismatch)


class InputCannotRun(Exception):
    """The interpreter cannot run the module before the pass (so there is nothing to compare)."""


def flat(value):
    if isinstance(value, tuple):
        return [x for v in value for x in flat(v)]
    return [np.asarray(value)]


def assert_same_values(before: IRModule, after: IRModule, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    args = []
    for p in before["main"].params:
        assert isinstance(p.ty, TensorType)
        args.append(rng.standard_normal(tuple(int(d) for d in p.ty.shape)).astype(p.ty.dtype))
    try:
        want = flat(interpret(before, *args))
    except InterpreterError as e:
        raise InputCannotRun(str(e)) from e
    got = flat(interpret(after, *args))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def cse(text: str, expected: str | None = None, **kw) -> tuple[IRModule, IRModule, EliminateCommonSubexpr]:
    before = module(text)
    p = EliminateCommonSubexpr(**kw)
    after = run(p, before)
    if expected is not None:
        same(after, expected)
        assert_same_values(before, after)
    return before, after, p


def layer_text(span) -> str:
    """The frontend-layer origins of a span, as printed (`a:0:0` or `[a:0:0, b:0:0]`)."""
    return str(sequential(*(o for o in span.origins() if isinstance(o, LayerSpan))))


def calls(mod: IRModule, name: str) -> int:
    return sum(1 for n in post_order(mod["main"]) if isinstance(n, Call) and getattr(n.op, "name", None) == name)


# --- EliminateCommonSubexpr ------------------------------------------------------------


def test_fskip_keeps_what_it_names():
    text = (f"def @main(%x: {T}) {{\n  %0 = cast(%x, dtype=\"int32\");\n"
            "  %1 = cast(%x, dtype=\"int32\");\n  (%0, %1)\n}")
    _, after, _ = cse(text, fskip=lambda e: isinstance(e, Call) and e.op.name == "cast")
    assert calls(after, "cast") == 2
    _, after, _ = cse(text)
    assert calls(after, "cast") == 1


def test_cse_runs_at_opt_level_3_only():
    p = get_pass("EliminateCommonSubexpr")
    assert (p.opt_level, p.required) == (3, ("InferType",))
    mod = module(f"def @main(%x: {T}) {{\n  (exp(%x), exp(%x))\n}}")
    with PassContext(opt_level=2):
        assert p(mod) is mod
    assert calls(run(p, mod, opt_level=3), "exp") == 1


def test_cse_leaves_its_input_alone():
    text = f"def @main(%x: {T}) {{\n  %0 = exp(%x) /* span=e1:0:0 */;\n  (%0, exp(%x) /* span=e2:0:0 */)\n}}"
    before = module(text)
    run(EliminateCommonSubexpr(), before)
    assert first_mismatch(layers(before), layers(module(text)), spans=True) is None
    assert layer_text(before["main"].body.fields[0].span) == "e1:0:0"


def test_cse_with_si_builder_off_keeps_the_survivors_own_span():
    mod = module(f"def @main(%x: {T}) {{\n  %0 = exp(%x) /* span=e1:0:0 */;\n  (%0, exp(%x) /* span=e2:0:0 */)\n}}")
    out = run(EliminateCommonSubexpr(), mod, **{"ir.enable_si_builder": False})
    assert layer_text(out["main"].body.fields[0].span) == "e1:0:0"


# --- DeadCodeElimination ---------------------------------------------------------------


def dce(text: str, expected: str | None = None, numeric: bool = True,
        **kw) -> tuple[IRModule, IRModule, DeadCodeElimination]:
    before = module(text)
    p = DeadCodeElimination(**kw)
    after = run(p, before)
    if expected is not None:
        same(after, expected)
        if numeric:
            assert_same_values(before, after)
    return before, after, p


def test_corpus_034_is_left_as_it_is(corpus_dir):
    mod = check_text((corpus_dir / "034.relay").read_text()).module
    assert run(DeadCodeElimination(), mod, opt_level=1) is mod


def test_purity_analysis_marks_each_let():
    mod = module("def @main(%x: Tensor[(), int32]) {\n  let %r = ref(%x);\n  let %w = ref_write(%r, 5);\n"
                 "  let %v = ref_read(%r);\n  let %p = add(%x, 1);\n  %p\n}")
    purity = {v.name: pure for v, pure in PurityAnalysis(mod).run().items()}
    assert purity == {"r": True, "w": False, "v": False, "p": True}


def test_dce_registered_at_opt_level_1():
    p = get_pass("DeadCodeElimination")
    assert (p.opt_level, p.required, p.inline_once, p.ignore_impurity) == (1, ("InferType",), False, False)


# --- the passes together, and the corpus -----------------------------------------------


def test_cse_then_dce_leaves_one_binding():
    text = (f"def @main(%x: {T} /* span=x:0:0 */) {{\n  let %a = exp(%x) /* span=e1:0:0 */;\n"
            "  let %b = exp(%x) /* span=e2:0:0 */;\n  let %c = add(%a, 1f);\n  %a\n}")
    before = module(text)
    after = run(DeadCodeElimination(), run(EliminateCommonSubexpr(), before))
    same(after, f"def @main(%x: {T} /* span=x:0:0 */) {{\n  let %a = exp(%x) /* span=[e1:0:0, e2:0:0] */;\n  %a\n}}")


def _typed_corpus(corpus_dir):
    ok, skipped = [], []
    for path in sorted(corpus_dir.glob("*.relay")):
        result = check_text(path.read_text(), str(path))
        if any(d.is_error for d in result.diagnostics):
            skipped.append(path.name)
        else:
            ok.append((path.name, result.module))
    return ok, skipped


@pytest.mark.parametrize("make", [EliminateCommonSubexpr, DeadCodeElimination,
                                  lambda: DeadCodeElimination(inline_once=True)], ids=["cse", "dce", "dce-inline"])
def test_corpus_keeps_spans_and_types(corpus_dir, make):
    ok, skipped = _typed_corpus(corpus_dir)
    print(f"skipped {len(skipped)} files with type errors: {' '.join(skipped)}")
    assert len(ok) >= 40
    changed = []
    for name, mod in ok:
        out = run(make(), mod)
        if out is mod:
            continue
        changed.append(name)
        main = mod.functions.get(mod.global_vars.get("main"))
        if main is not None and all(isinstance(p.ty, TensorType) and all(isinstance(d, int) for d in p.ty.shape)
                                    and p.ty.dtype.startswith("float") for p in main.params):
            try:
                assert_same_values(mod, out)
            except InputCannotRun:  # e.g. it calls lowered functions the file does not hold
                pass
    print("changed:", " ".join(changed))
    assert changed, "the corpus has cases for every pass"


def test_an_alias_of_a_function_with_effects_is_impure_to_call():
    text = ("def @main(%x: Tensor[(), int32]) {\n  let %r = ref(%x);\n"
            "  let %f = fn (%i: Tensor[(), int32]) { ref_write(%r, %i) };\n  let %g = %f;\n"
            "  let %unused = %g(3);\n  %x\n}")
    before = module(text)
    assert run(DeadCodeElimination(), before) is before
