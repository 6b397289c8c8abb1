"""PlanDevices for one device: TVM's test_pass_plan_devices.py cases read for a
homogeneous build (TVM's CPU and GPU both the one device, `meta[VirtualDevice][0]`),
idempotence (TVM's `exercise` runs the pass on its expected output too), values with the
interpreter, what is left alone, spans, and the corpus.  The cases whose only check is
before/expected are golden files in tests/passes/plan_devices/ (tests/passes/README.md)."""

from __future__ import annotations

import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.ir.expr import Call
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.ir.structural_equal import assert_structural_equal
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.span_check import spanless

import golden
from conftest import CORPUS

HEADER = '#[version = "0.0.5"]\n'
D = "meta[VirtualDevice][0]"
T = "Tensor[(5, 7), float32]"


def parse(text: str, name: str = "pd.relay"):
    checked = check_text(HEADER + text, name)
    errors = [d.message for d in checked.diagnostics if d.is_error]
    assert not errors, errors
    return checked.module


def plan(mod):
    with PassContext(opt_level=3):
        return get_pass("PlanDevices")(mod)


GOLDEN = sorted((golden.CASES / "plan_devices").glob("*.relay"))


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_cases_are_planned_once(path):
    """TVM's `exercise` also plans the result and the expected module again: nothing moves."""
    case = golden.load_case(path)
    out = golden.run_passes(case, golden.read_module(case, case.input, "input", 1))
    assert plan(out) is out, "not idempotent"
    if case.expected is not None:
        want = golden.read_module(case, case.expected, "expected module", case.expected_line)
        assert_structural_equal(plan(want), want)


def test_primitive_and_external_functions_are_left_alone():
    text = f"""def @ext(%a: {T}, Compiler="ccompiler") {{
  negative(on_device(%a, virtual_device={D}))
}}
def @main(%x: {T}) {{
  %0 = fn (%p: {T}, Primitive=1) {{
    let %v = on_device(negative(%p), virtual_device={D});
    %v
  }};
  @ext(%0(%x))
}}"""
    mod = parse(text)
    out = plan(mod)
    assert out["ext"] is mod["ext"]  # external: not an optimizable function
    main = out["main"]
    assert main.attrs["virtual_device"] == main.params[0].virtual_device != None  # noqa: E711
    inner = main.body.args[0].op
    assert inner is mod["main"].body.args[0].op  # primitive: not entered


def test_registered_at_opt_level_0_and_in_the_pipeline_before_fuse_ops():
    from relaylens.compiler.build import RELAY_BUILD_PIPELINE

    names = list(RELAY_BUILD_PIPELINE)
    assert names.index("SimplifyExprPostAlterOp") < names.index("PlanDevices") < names.index("FuseOps")
    assert get_pass("PlanDevices").opt_level == 0


def test_corpus_files_keep_values_spans_and_are_planned_once(corpus_dir):
    planned = 0
    for path in sorted(CORPUS.glob("*.relay")):
        checked = check_text(path.read_text(), str(path))
        if any(d.is_error for d in checked.diagnostics):
            continue
        out = plan(checked.module)
        assert spanless(out) == [], path.name
        assert plan(out) is out, path.name
        for func in out.functions.values():
            for node in post_order(func):
                if isinstance(node, Call) and getattr(node.op, "name", None) == "device_copy":
                    raise AssertionError(f"{path.name}: a device_copy is left")
        planned += 1
    assert planned > 50
