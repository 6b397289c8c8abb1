"""Legalize and qnn.Legalize beyond their golden cases (tests/passes/legalize/,
tests/passes/qnn_legalize/): TVM's test_pass_legalize.py cases, which register rules of
their own for the test (TempOpAttr; here `temporary_legalize`), and the passes' place in
relay.build's pipeline."""

from __future__ import annotations

import numpy as np

from relaylens.compiler.build import NOT_IMPLEMENTED, RELAY_BUILD_PIPELINE, build_text
from relaylens.compiler.ir.expr import Call, Constant, Tuple
from relaylens.compiler.ir.structural_equal import assert_structural_equal
from relaylens.compiler.ir.types import TensorType, TupleType
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.passes.legalize import legalizations, temporary_legalize
from relaylens.compiler.transform.passes.simplify_expr_rules import make_call
from relaylens.compiler.transform.span_check import spanless

HEADER = '#[version = "0.0.5"]\n'
CONV = """def @main(%x: Tensor[(1, 64, 56, 56), float32], %weight: Tensor[(64, 64, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %weight, padding=[1, 1], channels=64, kernel_size=[3, 3]);
  nn.relu(%0)
}"""


def module(text: str):
    result = parse(HEADER + text, "t.relay")
    assert not [d for d in result.diagnostics if d.is_error], [d.message for d in result.diagnostics]
    return result.module


def legalize(mod):
    with PassContext(opt_level=3):
        return get_pass("Legalize")(mod)


def scalar(value: float) -> Constant:
    return Constant(np.array(value, "float32"))


def double_the_weight(call, args, types):
    """TVM's test rule: conv2d(data, multiply(weight, 2))."""
    data, weight = args
    return Call(call.op, (data, make_call("multiply", [weight, scalar(2.0)], span=None)), call.attrs)


def test_legalize_replaces_an_operator():
    with temporary_legalize("nn.conv2d", double_the_weight):
        got = legalize(module(CONV))
    expected = module("""def @main(%x: Tensor[(1, 64, 56, 56), float32], %weight: Tensor[(64, 64, 3, 3), float32]) {
  %0 = multiply(%weight, 2f);
  %1 = nn.conv2d(%x, %0, padding=[1, 1], channels=64, kernel_size=[3, 3]);
  nn.relu(%1)
}""")
    assert_structural_equal(got, expected)
    assert "nn.conv2d" not in legalizations()  # the temporary rule is gone


def test_a_rule_returning_none_keeps_the_call():
    called = []

    def nothing(call, args, types):
        called.append(call)
        return None

    mod = module("def @main(%x: Tensor[(1, 64, 56, 56), float32]) { nn.global_max_pool2d(%x) }")
    with temporary_legalize("nn.global_max_pool2d", nothing):
        assert legalize(mod) is mod
    assert len(called) == 1


def test_multiple_ops_are_legalized_bottom_up():
    def relu_rule(call, args, types):
        return Call(call.op, (make_call("add", [scalar(0.0), args[0]], span=None),))

    with temporary_legalize("nn.conv2d", double_the_weight), temporary_legalize("nn.relu", relu_rule):
        got = legalize(module(CONV))
    expected = module("""def @main(%x: Tensor[(1, 64, 56, 56), float32], %weight: Tensor[(64, 64, 3, 3), float32]) {
  %0 = multiply(%weight, 2f);
  %1 = nn.conv2d(%x, %0, padding=[1, 1], channels=64, kernel_size=[3, 3]);
  %2 = add(0f, %1);
  nn.relu(%2)
}""")
    assert_structural_equal(got, expected)


def test_a_tuple_input_arrives_as_one_argument_with_its_tuple_type():
    seen = []

    def look(call, args, types):
        seen.append((args, types))
        return None

    mod = module("""def @main(%x: Tensor[(1, 64, 56, 56), float32], %y: Tensor[(1, 64, 56, 20), float32], %z: Tensor[(1, 64, 56, 10), float32]) {
  concatenate((%x, %y, %z), axis=3)
}""")
    with temporary_legalize("concatenate", look):
        assert legalize(mod) is mod
    (args, types), = seen
    assert len(args) == 1 and isinstance(args[0], Tuple)
    assert len(types) == 2 and isinstance(types[0], TupleType) and isinstance(types[1], TensorType)


def test_the_pipeline_runs_them_after_basic_blocks_as_tvm_does():
    at = RELAY_BUILD_PIPELINE.index("ToBasicBlockNormalForm")
    assert RELAY_BUILD_PIPELINE[at + 1:at + 4] == ("qnn.Legalize", "Legalize", "SimplifyInference")
    assert "Legalize" not in NOT_IMPLEMENTED and "qnn.Legalize" not in NOT_IMPLEMENTED


def test_a_quantized_dense_builds_without_qnn_ops():
    result = build_text(HEADER + """def @main(%data: Tensor[(4, 16), uint8], %kernel: Tensor[(8, 16), int8]) {
  qnn.dense(%data, %kernel, 1, 2, 1f, 1f, units=8, out_dtype="int32")
}""", "q.relay")
    assert result.ok, [d.message for d in result.diagnostics]
    ran = [s.pass_name for s in result.snapshots]
    assert ran.index("QnnLegalize") < ran.index("QnnCanonicalize") < ran.index("Legalize")
    assert all("qnn.dense" not in str(name) for name in result.fused_names.values())
    assert any("nn_contrib_dense_pack" in name for name in result.fused_names.values())  # x86: packed
    for snap in result.snapshots:
        assert spanless(snap.module) == [], snap.pass_name
