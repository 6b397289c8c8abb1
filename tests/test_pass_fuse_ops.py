"""FuseOps beyond its golden cases: group size limits, the names of fused functions, and
what it does to spans.  The classic grouping cases (TVM's test_pass_fuse_ops.py shapes) are
CHECK cases in tests/passes/fuse_ops/ (format: tests/passes/README.md)."""

from __future__ import annotations

from relaylens.compiler.ir import Function, LayerSpan, SequentialSpan
from relaylens.compiler.parser import parse
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.fused_names import candidate_name, name_primitive_functions, primitive_functions
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(1, 16, 8, 8), float32]"
W = "Tensor[(16, 16, 3, 3), float32]"
B = "Tensor[(16, 1, 1), float32]"


def fuse(text: str, opt_level: int = 3, **config):
    mod = parse(HEADER + text, "t.relay").module
    assert infer_types(mod) == []
    with PassContext(opt_level=opt_level, config=config):
        out = get_pass("FuseOps")(mod)
    assert infer_types(out) == [], "the fused module must typecheck"
    return out


def groups(mod) -> list[str]:
    """The candidate name of every primitive function, in evaluation order."""
    return [candidate_name(f) for f in primitive_functions(mod)]


def test_max_depth_limits_group_size():
    chain = "".join(f"  %{i} = exp(%{i - 1});\n" for i in range(1, 6))
    out = fuse("def @main(%x: Tensor[(4), float32]) {\n  %0 = exp(%x);\n" + chain + "  %5\n}",
               **{"relay.FuseOps.max_depth": 2})
    assert all(n.count("exp") <= 2 for n in groups(out))
    assert sum(n.count("exp") for n in groups(out)) == 6


def test_spans_of_fused_functions_and_their_calls():
    out = fuse("def @main(%x: Tensor[(4), float32]) {\n"
               "  %0 = add(%x, %x) /* span=layer1/add:0:0 */;\n  exp(%0) /* span=layer1/exp:0:0 */\n}")
    call = out["main"].body
    assert isinstance(call.op, Function) and call.op.is_primitive
    layers = [o.name for o in call.span.origins() if isinstance(o, LayerSpan)]
    assert layers == ["layer1/add", "layer1/exp"]
    assert isinstance(call.span, SequentialSpan)
    fn_layers = [o.name for o in call.op.span.origins() if isinstance(o, LayerSpan)]
    assert fn_layers == ["layer1/add", "layer1/exp"]
    doc = [o for o in call.op.span.origins() if not isinstance(o, LayerSpan)]
    assert len(doc) == 1 and doc[0].line == 3  # one range covering lines 3-4 of the file
    assert spanless(out) == []


def test_names_through_the_name_supply():
    out = fuse(f"def @main(%x: {T}, %w: {W}, %b: {B}, %y: Tensor[(1, 16, 4, 4), float32]) {{\n"
               "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n  %1 = add(%0, %b);\n  %2 = nn.relu(%1);\n"
               "  %3 = nn.conv2d(%2, %w, padding=[1, 1]);\n  %4 = add(%3, %b);\n  %5 = nn.relu(%4);\n"
               "  %6 = nn.conv2d(%y, %w, padding=[1, 1]);\n  %7 = add(%6, %b);\n  %8 = nn.relu(%7);\n"
               "  (%5, %8)\n}")
    names = list(name_primitive_functions(out).values())
    assert names == ["tvmgen_default_fused_nn_conv2d_add_nn_relu",
                     "tvmgen_default_fused_nn_conv2d_add_nn_relu",  # same structure, same kernel
                     "tvmgen_default_fused_nn_conv2d_add_nn_relu_1"]  # other shapes


def test_long_names_are_cut_with_a_hash():
    ops = "".join(f"  %{i} = {'exp' if i % 2 else 'negative'}(%{i - 1});\n" for i in range(1, 20))
    out = fuse("def @main(%x: Tensor[(4), float32]) {\n  %0 = exp(%x);\n" + ops + "  %19\n}")
    name = groups(out)[0]
    assert len(name) == 80 + 1 + 16 + 1 and name.startswith("fused_exp_exp_negative_exp") and name.endswith("_")


def test_fuse_ops_records_no_spans_with_the_si_builder_off():
    out = fuse("def @main(%x: Tensor[(4), float32]) {\n  %0 = add(%x, %x);\n  exp(%0)\n}",
               **{"ir.enable_si_builder": False})
    call = out["main"].body
    assert call.span is None and call.op.span is None and call.op.params[0].span is None
