"""FuseOps on the classic cases (TVM's test_pass_fuse_ops.py shapes, our own texts), its
names, and what it does to spans."""

from __future__ import annotations

from relaylens.compiler.ir import Call, Function, LayerSpan, Op, SequentialSpan
from relaylens.compiler.ir.functor import children, post_order
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


def unfused_ops(mod) -> list[str]:
    """Operator calls left outside primitive functions (there should be none)."""
    def outside(e):
        return () if isinstance(e, Function) and e.is_primitive else children(e)

    found = []
    for node in post_order(mod["main"], outside):
        if isinstance(node, Call) and isinstance(node.op, Op):
            found.append(node.op.name)
    return found


def test_conv_bias_relu_fuse_into_one_function():
    out = fuse(f"def @main(%x: {T}, %w: {W}, %b: {B}) {{\n"
               "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n  %1 = add(%0, %b);\n  nn.relu(%1)\n}")
    assert groups(out) == ["fused_nn.conv2d_add_nn.relu"]
    assert unfused_ops(out) == []
    fn = primitive_functions(out)[0]
    assert [p.name for p in fn.params] == ["p0", "p1", "p2"]
    assert int(fn.attrs["Primitive"]) == 1


def test_two_convolutions_never_fuse_together():
    out = fuse(f"def @main(%x: {T}, %w: {W}, %v: {W}, %b: {B}) {{\n"
               "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n  %1 = add(%0, %b);\n  %2 = nn.relu(%1);\n"
               "  %3 = nn.conv2d(%2, %v, padding=[1, 1]);\n  add(%3, %b)\n}")
    assert groups(out) == ["fused_nn.conv2d_add_nn.relu", "fused_nn.conv2d_add"]


def test_diamond_of_elementwise_ops_is_one_group():
    out = fuse("def @main(%x: Tensor[(4, 4), float32], %y: Tensor[(4, 4), float32]) {\n"
               "  %0 = add(%x, %y);\n  %1 = exp(%0);\n  %2 = multiply(%1, 2f);\n  %3 = sqrt(%0);\n"
               "  %4 = add(%2, %3);\n  negative(%4)\n}")
    assert groups(out) == ["fused_add_exp_multiply_sqrt_add_negative"]
    fn = primitive_functions(out)[0]
    assert len(fn.params) == 2  # the scalar constant 2f is fused in, not a parameter


def test_residual_block_fuses_the_second_add_into_the_conv():
    out = fuse(f"def @main(%x: {T}, %w: {W}, %b: {B}) {{\n"
               "  %0 = nn.relu(%x);\n  %1 = nn.conv2d(%0, %w, padding=[1, 1]);\n  %2 = add(%1, %b);\n"
               "  %3 = add(%2, %0);\n  nn.relu(%3)\n}")
    assert groups(out) == ["fused_nn.relu", "fused_nn.conv2d_add_add_nn.relu"]


def test_reduction_absorbs_its_producers_but_starts_no_merge():
    out = fuse("def @main(%x: Tensor[(4, 8), float32]) {\n"
               "  %0 = exp(%x);\n  %1 = sum(%0, axis=[1]);\n  sqrt(%1)\n}")
    assert groups(out) == ["fused_exp_sum", "fused_sqrt"]


def test_concatenate_of_a_tuple_fuses_injective_producers():
    out = fuse("def @main(%x: Tensor[(1, 16, 8, 8), float32]) {\n"
               "  %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);\n"
               "  %1 = nn.upsampling(%0, scale_h=2f, scale_w=2f);\n"
               "  %2 = (%1, %x);\n  %3 = concatenate(%2, axis=1);\n  add(%3, 1f)\n}")
    assert groups(out) == ["fused_nn.max_pool2d", "fused_nn.upsampling_concatenate_add"]


def test_tuple_output_is_not_fused():
    out = fuse("def @main(%x: Tensor[(4), float32]) {\n  %0 = exp(%x);\n  %1 = negative(%x);\n  (%0, %1)\n}")
    assert groups(out) == ["fused_exp", "fused_negative"]


def test_opaque_ops_stay_alone_and_stop_fusion_is_a_barrier():
    out = fuse("def @main(%x: Tensor[(1, 16, 8, 8), float32]) {\n"
               "  %0 = add(%x, 1f);\n  %1 = annotation.stop_fusion(%0);\n  %2 = exp(%1);\n"
               "  %3 = nn.lrn(%2);\n  negative(%3)\n}")
    assert groups(out) == ["fused_add", "fused_exp", "fused_nn.lrn", "fused_negative"]
    assert "annotation.stop_fusion" not in unfused_ops(out)


def test_opt_level_zero_makes_one_function_per_op():
    out = fuse(f"def @main(%x: {T}, %w: {W}, %b: {B}) {{\n"
               "  %0 = nn.conv2d(%x, %w, padding=[1, 1]);\n  %1 = add(%0, %b);\n  nn.relu(%1)\n}", opt_level=0)
    assert groups(out) == ["fused_nn.conv2d", "fused_add", "fused_nn.relu"]


def test_max_depth_limits_group_size():
    chain = "".join(f"  %{i} = exp(%{i - 1});\n" for i in range(1, 6))
    out = fuse("def @main(%x: Tensor[(4), float32]) {\n  %0 = exp(%x);\n" + chain + "  %5\n}",
               **{"relay.FuseOps.max_depth": 2})
    assert all(n.count("exp") <= 2 for n in groups(out))
    assert sum(n.count("exp") for n in groups(out)) == 6


def test_reshape_only_functions_are_marked():
    out = fuse("def @main(%x: Tensor[(4, 4), float32]) {\n  %0 = reshape(%x, newshape=[16]);\n"
               "  %1 = expand_dims(%0, axis=0);\n  exp(%1)\n}")
    assert groups(out) == ["fused_reshape_expand_dims_exp"]
    out = fuse("def @main(%x: Tensor[(4, 4), float32]) {\n  %0 = reshape(%x, newshape=[16]);\n"
               "  %1 = exp(%x);\n  (%0, %1)\n}")
    reshape_fn = primitive_functions(out)[0]
    assert int(reshape_fn.attrs["relay.reshape_only"]) == 1


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


def test_input_module_is_untouched_and_primitive_functions_are_kept():
    text = ("def @main(%x: Tensor[(4), float32]) {\n  %0 = fn (%p0: Tensor[(4), float32], Primitive=1) {\n"
            "    exp(%p0)\n  };\n  %1 = %0(%x);\n  negative(%1)\n}")
    mod = parse(HEADER + text, "t.relay").module
    infer_types(mod)
    before = mod["main"]
    with PassContext(opt_level=3):
        out = get_pass("FuseOps")(mod)
    assert mod["main"] is before
    assert groups(out) == ["fused_exp", "fused_negative"]


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


def test_non_computational_annotations_stay_outside_around_fused_calls():
    # TVM's FuseMutator leaves TNonComputational calls (on_device) where they are
    out = fuse(f"def @main(%x: {T}) {{\n  let %v = on_device(nn.relu(exp(%x)), virtual_device=meta[VirtualDevice][0], "
               "constrain_result=True);\n  negative(%v)\n}")
    assert groups(out) == ["fused_exp_nn.relu", "fused_negative"]
    assert unfused_ops(out) == ["on_device"]
    wrapped = out["main"].body.value
    assert wrapped.op.name == "on_device" and wrapped.args[0].op.is_primitive
