"""Why FuseOps fused each call or kept it apart: the rule recorded per expression
(`FuseOps.fusion_reasons`), carried into the provenance, the build report and the hover."""

from __future__ import annotations

from relaylens.compiler.build import build_text
from relaylens.compiler.ir import Call, Op, Tuple
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.fused_names import candidate_name, primitive_functions
from relaylens.compiler.typing import infer_types
from relaylens.server.features.provenance_hover import describe
from relaylens.server.slow.report import ExprReport
from relaylens.server.slow.reporting import build_report

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(1, 16, 8, 8), float32]"
W = "Tensor[(16, 16, 3, 3), float32]"
B = "Tensor[(16, 1, 1), float32]"
CONV_BIAS_RELU = (f"def @main(%x: {T}, %w: {W}, %b: {B}) {{\n"
                  "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n  %1 = add(%0, %b);\n  nn.relu(%1)\n}")
LEAVES = "the function's result, or used by a let/if/match/function"


def reasons(text: str, opt_level: int = 3, **config) -> tuple[list[tuple[str, str]], list[str]]:
    """(what, why) for each recorded expression in evaluation order, and the fused groups."""
    mod = parse(HEADER + text, "t.relay").module
    assert infer_types(mod) == []
    fuse = get_pass("FuseOps")
    with PassContext(opt_level=opt_level, config=config):
        out = fuse(mod)
    named = [(e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else type(e).__name__, why)
             for e, why in fuse.fusion_reasons.items()]
    return named, [candidate_name(f) for f in primitive_functions(out)]


def test_conv_bias_relu_fuse_by_the_out_elemwise_rule() -> None:
    found, groups = reasons(CONV_BIAS_RELU)
    assert groups == ["fused_nn.conv2d_add_nn.relu"]
    assert found == [
        ("nn.conv2d", "fused into add's group: OutEWiseFusable followed by elemwise ops (phase 0)"),
        ("add", "fused into nn.relu's group: Broadcast after OutEWiseFusable (phase 0)"),
        ("nn.relu", "root of its group (anchor: nn.conv2d, OutEWiseFusable); not fused further: "
                    f"its value leaves the dataflow ({LEAVES})"),
    ]


def test_a_group_with_an_anchor_joins_no_out_elemwise_consumer() -> None:
    found, groups = reasons(f"def @main(%x: {T}, %w: {W}) {{\n  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n"
                            "  %1 = nn.relu(%0);\n  nn.max_pool2d(%1, pool_size=[2, 2])\n}")
    assert groups == ["fused_nn.conv2d_nn.relu", "fused_nn.max_pool2d"]
    assert found[1:] == [
        ("nn.relu", "root of its group (anchor: nn.conv2d, OutEWiseFusable); not fused further: a group with an "
                    "OutEWiseFusable anchor (nn.conv2d) joins only an elemwise consumer; the way to "
                    "nn.max_pool2d is OutEWiseFusable"),
        ("nn.max_pool2d", f"not fused: its value leaves the dataflow ({LEAVES})"),
    ]


def test_an_elemwise_op_joins_the_reduction_after_it_which_joins_nothing() -> None:
    found, groups = reasons(f"def @main(%x: {T}) {{\n  %0 = exp(%x);\n  %1 = sum(%0, axis=[1]);\n  sqrt(%1)\n}}")
    assert groups == ["fused_exp_sum", "fused_sqrt"]
    assert found == [
        ("exp", "fused into sum's group: ElemWise before CommReduce (phase 0)"),
        ("sum", "root of its group (CommReduce); not fused further: "
                "a CommReduce op absorbs its producers but never joins its consumers"),
        ("sqrt", f"not fused: its value leaves the dataflow ({LEAVES})"),
    ]


def test_an_opaque_op_is_never_fused_and_keeps_its_producer_out() -> None:
    found, _ = reasons(f"def @main(%x: {T}) {{\n  %0 = exp(%x);\n  nn.lrn(%0)\n}}")
    assert found == [
        ("exp", "not fused: the way to its post-dominator nn.lrn is Opaque"),
        ("nn.lrn", "not fused: Opaque op"),
    ]


def test_a_path_through_a_group_with_an_anchor_keeps_an_elemwise_op_out() -> None:
    found, groups = reasons(f"def @main(%x: {T}, %w: {W}, %y: {T}) {{\n"
                            "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n  %1 = exp(%y);\n"
                            "  %2 = add(%0, %1);\n  add(%2, %1)\n}")
    assert groups == ["fused_exp", "fused_nn.conv2d_add_add"]
    assert found[1] == ("exp", "not fused: the path to its post-dominator add passes through add, in a group "
                               "of pattern OutEWiseFusable, anchor nn.conv2d, which phase 1 does not allow "
                               "(only Injective or lower on the way)")
    assert found[2] == ("add", "fused into add's group: Broadcast after OutEWiseFusable (phase 0)")


def test_a_tuple_joins_its_injective_consumer_and_its_fields_follow_in_phase_2() -> None:
    found, groups = reasons(f"def @main(%x: {T}) {{\n  %0 = exp(%x);\n  %1 = (%0, %0);\n  concatenate(%1)\n}}")
    assert groups == ["fused_exp_concatenate"]
    assert found == [
        ("exp", "fused into concatenate's group: ElemWise into a tuple that was fused into later "
                "injective ops (phase 2)"),
        ("Tuple", "fused into concatenate's group: Tuple, every path Injective or lower (phase 1)"),
        ("concatenate", f"root of its group (Injective); not fused further: its value leaves the dataflow ({LEAVES})"),
    ]


def test_an_output_tuple_takes_no_producers() -> None:
    found, _ = reasons(f"def @main(%x: {T}) {{\n  %0 = exp(%x);\n  (%0, %x)\n}}")
    assert found == [
        ("exp", "not fused: its post-dominator is a tuple that was not fused into later injective ops (phase 2)"),
        ("Tuple", f"not fused: its value leaves the dataflow ({LEAVES})"),
    ]


def test_max_depth_cuts_a_chain_and_says_so() -> None:
    chain = f"def @main(%x: {T}) {{\n  %0 = exp(%x);\n  %1 = sqrt(%0);\n  %2 = exp(%1);\n  sqrt(%2)\n}}"
    found, groups = reasons(chain, **{"relay.FuseOps.max_depth": 2})
    assert groups == ["fused_exp_sqrt", "fused_exp_sqrt"]
    cut = "the group would exceed max_depth 2 (relay.FuseOps.max_depth)"
    assert [why for _, why in found] == [
        "fused into sqrt's group: ElemWise before ElemWise (phase 0)",
        f"root of its group (ElemWise); not fused further: {cut}",
        "fused into sqrt's group: ElemWise before ElemWise (phase 0)",
        f"root of its group (ElemWise); not fused further: its value leaves the dataflow ({LEAVES})",
    ]
    unlimited, groups = reasons(chain)
    assert groups == ["fused_exp_sqrt_exp_sqrt"] and cut not in str(unlimited)


def test_max_function_args_cuts_a_group_and_says_so() -> None:
    text = f"def @main(%x: {T}, %y: {T}, %z: {T}) {{\n  %0 = add(%x, %y);\n  add(%0, %z)\n}}"
    found, groups = reasons(text, **{"relay.FuseOps.max_function_args": 2})
    assert groups == ["fused_add", "fused_add"]
    assert found[0] == ("add", "not fused: the group would exceed max_function_args 2 "
                               "(relay.FuseOps.max_function_args)")


def test_opt_level_0_fuses_nothing_and_says_so() -> None:
    found, _ = reasons(CONV_BIAS_RELU, opt_level=0)
    assert {why for _, why in found} == {"not fused: opt_level 0 fuses nothing (each call is its own function)"}


def test_recording_is_deterministic() -> None:
    assert reasons(CONV_BIAS_RELU) == reasons(CONV_BIAS_RELU)


def test_the_provenance_and_the_report_carry_the_reason_to_the_source_expression() -> None:
    text = HEADER + CONV_BIAS_RELU
    conv = text.index("nn.conv2d(")
    prov = build_text(text, "t.relay").provenance
    key = prov.key_at(conv + 2)
    assert prov.fusion_reason(key) == "fused into add's group: OutEWiseFusable followed by elemwise ops (phase 0)"
    report = build_report("file:///t.relay", 1, text)
    expr = report.expr_at(conv + 2)
    assert expr.fusion == prov.fusion_reason(key)
    relu = report.expr_at(text.index("nn.relu(") + 2)
    assert relu.fusion.startswith("root of its group (anchor: nn.contrib_conv2d_NCHWc, OutEWiseFusable)")  # AlterOpLayout


def test_the_hover_shows_why_under_the_fused_function_line() -> None:
    text = HEADER + CONV_BIAS_RELU
    report = build_report("file:///t.relay", 1, text)
    expr = report.expr_at(text.index("add(") + 1)
    shown = describe(expr, report.uri, report.version, report.function(expr.fused))
    fused_line = f"**fused into** conv2d + add + relu  \n`{expr.fused}`"
    assert fused_line in shown
    after = shown.split(fused_line, 1)[1].split("\n\n", 1)[0]
    assert after.endswith("  \nwhy: fused into nn.relu's group: Broadcast after OutEWiseFusable (phase 0)")


def test_the_hover_shows_why_alone_for_an_expression_in_no_fused_function() -> None:
    expr = ExprReport((0, 5), (), (), None, "not fused: on_device is not computational and stays outside")
    shown = describe(expr, "file:///t.relay", 1, None)
    assert shown.split("\n\n")[0] == "why: not fused: on_device is not computational and stays outside"
    assert "why:" not in describe(ExprReport((0, 5), (), (), None), "file:///t.relay", 1, None)
