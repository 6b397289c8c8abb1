"""PlanDevices for one device: TVM's test_pass_plan_devices.py cases read for a
homogeneous build (TVM's CPU and GPU both the one device, `meta[VirtualDevice][0]`),
idempotence (TVM's `exercise` runs the pass on its expected output too), values with the
interpreter, what is left alone, spans, and the corpus.  The cases whose only check is
before/expected are golden files in tests/passes/plan_devices/ (tests/passes/README.md)."""

from __future__ import annotations

import numpy as np

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir import LayerSpan
from relaylens.compiler.ir.expr import Call
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.ir.structural import assert_structural_equal
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.span_check import spanless

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


def exercise(before: str, expected: str, args=None):
    mod = parse(before, "before.relay")
    printed = print_module(mod, spans=True)
    out = plan(mod)
    assert print_module(mod, spans=True) == printed, "the input module changed"
    want = parse(expected, "expected.relay")
    assert_structural_equal(out, want)
    assert plan(out) is out, "not idempotent"
    assert_structural_equal(plan(want), want)
    assert spanless(out) == []
    if args is not None:
        np.testing.assert_allclose(interpret(out, *args), interpret(mod, *args))
    return out


def rands(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.random((5, 7), dtype=np.float32) for _ in range(n)]


def test_let_on_cpu():
    out = exercise(f"""def @main(%a: {T}, %b: {T}, %c: {T}, %d: {T}) {{
  let %l = add(%a, %b) /* span=l:0:0 */;
  let %r = add(%c, %d);
  %0 = on_device(%l, virtual_device={D});
  subtract(%0, %r)
}}""", f"""def @main(%a {{virtual_device={D}}}: {T}, %b {{virtual_device={D}}}: {T},
          %c {{virtual_device={D}}}: {T}, %d {{virtual_device={D}}}: {T}, virtual_device={D}) {{
  %0 = add(%a, %b);
  let %l = on_device(%0, virtual_device={D}, constrain_result=True);
  let %r = on_device(add(%c, %d), virtual_device={D}, constrain_result=True);
  subtract(%l, %r)
}}""", rands(4))
    first = out["main"].body.value
    assert [str(o) for o in first.span.origins() if isinstance(o, LayerSpan)] == ["l:0:0"]


def test_conditional():
    x, y, z = np.array(True), *rands(2)
    out = exercise(f"""def @main(%x: bool, %y: {T}, %z: {T}) {{
  let %f = fn (%a: {T}) {{
    %0 = on_device(%y, virtual_device={D}, constrain_result=True);
    add(%a, %0)
  }};
  let %g = fn (%a1: {T}) {{
    subtract(%a1, %y)
  }};
  let %h = if (%x) {{
    %f
  }} else {{
    %g
  }};
  %h(%z)
}}""", f"""def @main(%x {{virtual_device={D}}}: bool, %y {{virtual_device={D}}}: {T}, %z {{virtual_device={D}}}: {T},
          virtual_device={D}) {{
  let %f = fn (%a {{virtual_device={D}}}: {T}, virtual_device={D}) {{
    add(%a, %y)
  }};
  let %g = fn (%a1 {{virtual_device={D}}}: {T}, virtual_device={D}) {{
    subtract(%a1, %y)
  }};
  let %h = on_device(if (%x) {{
    %f
  }} else {{
    %g
  }}, virtual_device={D}, constrain_result=True);
  %h(%z)
}}""", [x, y, z])
    assert plan(out) is out


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
