"""FoldScaleAxis beyond its golden cases: spans of folded weights, the sequence it runs,
relay.build on the demo model, long chains, untyped input and the corpus.

TVM's test cases for the pass (tests/python/relay/test_pass_fold_scale_axis.py at v0.16.0)
and our own before/expected pairs are golden case files in tests/passes/fold_scale_axis/
(format: tests/passes/README.md), run by tests/test_golden_passes.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.check import check_text
from relaylens.compiler.interpreter import interpret
from relaylens.compiler.ir.structural_equal import assert_structural_equal
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.bind_params import bind_params_by_name
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

from conftest import CORPUS
from golden import draw

HEADER = '#[version = "0.0.5"]\n'


def parse_ok(text: str, name: str):
    result = parse(HEADER + text, name)
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert not errors, errors
    return result.module


def bound(text: str, name: str, bind: dict[str, str] | None = None):
    """`text` parsed, with the `bind` parameters bound to values drawn as golden cases draw them."""
    mod = parse_ok(text, name)
    rng = np.random.default_rng(sum(map(ord, name.split(".")[0])))
    params = {p.name: p for p in mod["main"].params}
    arrays = {pname: draw(kind, tuple(int(d) for d in params[pname].type_annotation.shape),
                          params[pname].type_annotation.dtype, rng) for pname, kind in (bind or {}).items()}
    mod, errors = bind_params_by_name(mod, arrays)
    assert not errors, [d.message for d in errors]
    return mod


def run(pass_name: str, mod):
    with PassContext(opt_level=3):
        return get_pass(pass_name)(mod)


# --- spans ----------------------------------------------------------------------------------


def check_spans(pass_name: str, before: str, expected: str, bind: dict[str, str]) -> None:
    before, expected = before + " /* span=main:0:0 */", expected + " /* span=main:0:0 */"
    out = run(pass_name, bound(before, "spans.relay", bind))
    assert_structural_equal(out, bound(expected, "spans.expected.relay", bind), spans=True)
    assert spanless(out) == []


def test_forward_fold_spans_name_the_multiply_and_the_consumer():
    params = ("%x: Tensor[(1, 2, 5, 5), float32] /* span=x:0:0 */, %w: Tensor[(3, 2, 3, 3), float32] /* span=w:0:0 */, "
              "%b: Tensor[(2, 1, 1), float32] /* span=b:0:0 */, %s: Tensor[(2, 1, 1), float32] /* span=s:0:0 */")
    check_spans("ForwardFoldScaleAxis", f"""def @main({params}) {{
  %0 = multiply(%x, %s) /* span=mul:0:0 */;
  %1 = nn.relu(%0) /* span=relu:0:0 */;
  %2 = add(%1, %b) /* span=add:0:0 */;
  nn.conv2d(%2, %w, channels=3, kernel_size=[3, 3]) /* span=conv:0:0 */
}}""", f"""def @main({params}) {{
  %0 = squeeze(%s, axis=[1, 2]) /* span=mul:0:0 */;
  %1 = nn.relu(%x) /* span=relu:0:0 */;
  %2 = expand_dims(%0, axis=1, num_newaxis=2) /* span=[add:0:0, mul:0:0] */;
  %3 = divide(%b, %2) /* span=[add:0:0, mul:0:0] */;
  %4 = add(%1, %3) /* span=add:0:0 */;
  %5 = expand_dims(%0, axis=1, num_newaxis=2) /* span=[conv:0:0, mul:0:0] */;
  %6 = multiply(%w, %5) /* span=[conv:0:0, mul:0:0] */;
  nn.conv2d(%4, %6, channels=3, kernel_size=[3, 3]) /* span=conv:0:0 */
}}""", {"s": "positive"})


def test_backward_fold_spans_name_the_multiply_and_the_producer():
    params = ("%x: Tensor[(1, 2, 5, 5), float32] /* span=x:0:0 */, %w: Tensor[(3, 2, 3, 3), float32] /* span=w:0:0 */, "
              "%b: Tensor[(3), float32] /* span=b:0:0 */")
    check_spans("BackwardFoldScaleAxis", f"""def @main({params}) {{
  %0 = nn.conv2d(%x, %w, channels=3, kernel_size=[3, 3]) /* span=conv:0:0 */;
  %1 = nn.bias_add(%0, %b) /* span=bias:0:0 */;
  %2 = nn.relu(%1) /* span=relu:0:0 */;
  multiply(%2, 2f /* span=two:0:0 */) /* span=mul:0:0 */
}}""", f"""def @main({params}) {{
  %0 = expand_dims(2f /* span=two:0:0 */, axis=0) /* span=mul:0:0 */;
  %1 = repeat(%0, repeats=3, axis=0) /* span=mul:0:0 */;
  %2 = expand_dims(%1, axis=1, num_newaxis=3) /* span=[conv:0:0, mul:0:0] */;
  %3 = multiply(%w, %2) /* span=[conv:0:0, mul:0:0] */;
  %4 = nn.conv2d(%x, %3, channels=3, kernel_size=[3, 3]) /* span=conv:0:0 */;
  %5 = multiply(%b, %1) /* span=[bias:0:0, mul:0:0] */;
  %6 = nn.bias_add(%4, %5) /* span=bias:0:0 */;
  nn.relu(%6) /* span=relu:0:0 */
}}""", {})


def test_without_si_builder_no_span_is_made():
    mod = bound("""def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, channels=3, kernel_size=[3, 3]) /* span=conv:0:0 */;
  multiply(%0, 2f) /* span=mul:0:0 */
}""", "off.relay")
    with PassContext(opt_level=3, config={"ir.enable_si_builder": False}):
        out = get_pass("BackwardFoldScaleAxis")(mod)
    weight = out["main"].body.args[1]
    assert weight.op.name == "multiply" and weight.span is None


# --- the sequence ------------------------------------------------------------------------------


SIMPLE_BWD = """def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32],
          %b: Tensor[(3, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, channels=3, kernel_size=[3, 3]) /* span=conv:0:0 */;
  %1 = add(%0, %b) /* span=add:0:0 */;
  %2 = nn.relu(%1) /* span=relu:0:0 */;
  multiply(%2, 2f) /* span=mul:0:0 */
}"""


def test_fold_scale_axis_computes_the_scaled_weights_of_bound_parameters():
    # TVM's test_fold_bwd_simple_constant with weights that are not zero
    mod = bound(SIMPLE_BWD, "values.relay", {"w": "normal", "b": "normal"})
    out = run("FoldScaleAxis", mod)
    relu = out["main"].body
    add = relu.args[0]
    conv, bias = add.args
    w_before, b_before = mod["main"].body.args[0].args[0].args[0].args[1], mod["main"].body.args[0].args[0].args[1]
    assert relu.op.name == "nn.relu" and conv.op.name == "nn.conv2d"
    np.testing.assert_allclose(conv.args[1].data, 2 * w_before.data, rtol=1e-6)
    np.testing.assert_allclose(bias.data, 2 * b_before.data, rtol=1e-6)
    assert {o.name for o in conv.args[1].span.origins()} >= {"conv", "mul"}
    assert spanless(out) == []


def test_fold_scale_axis_is_backward_forward_fold_constant_at_opt_level_3():
    from relaylens.compiler.transform import SnapshotRecorder

    ran = {}
    for level in (3, 2):
        recorder = SnapshotRecorder()
        with PassContext(opt_level=level, instruments=[recorder]):
            get_pass("FoldScaleAxis")(bound(SIMPLE_BWD, "seq.relay"))
        ran[level] = [s.pass_name for s in recorder.snapshots if s.pass_name != "InferType"]
    assert ran == {3: ["BackwardFoldScaleAxis", "ForwardFoldScaleAxis", "FoldConstant"], 2: ["FoldConstant"]}


def test_a_disabled_fold_scale_axis_does_not_run():
    mod = bound(SIMPLE_BWD, "off.relay")
    with PassContext(opt_level=3, disabled_pass=("FoldScaleAxis",)):
        assert get_pass("FoldScaleAxis")(mod) is mod
    with PassContext(opt_level=3, disabled_pass=("BackwardFoldScaleAxis",)):
        assert "multiply" in print_module(get_pass("FoldScaleAxis")(mod))


def test_pipeline_places_it_as_tvm_does():
    from relaylens.compiler.build import NOT_IMPLEMENTED, RELAY_BUILD_PIPELINE

    at = RELAY_BUILD_PIPELINE.index("FoldScaleAxis")
    assert RELAY_BUILD_PIPELINE[at - 1] == "FoldConstant" and RELAY_BUILD_PIPELINE[at + 1] == "SimplifyExpr"
    assert "FoldScaleAxis" not in NOT_IMPLEMENTED


# --- relay.build on the demo model ----------------------------------------------------------


def test_demo_model_batch_norm_folds_into_the_conv():
    onnx = pytest.importorskip("onnx")
    from relaylens.compiler.build import RELAY_BUILD_PIPELINE
    from relaylens.compiler.driver import compile
    from relaylens.compiler.frontend.onnx import import_onnx
    from relaylens.compiler.interpreter import Interpreter
    from relaylens.compiler.ir.span import LayerSpan

    imported = import_onnx(onnx.load(Path(__file__).parents[1] / "examples" / "small_cnn.onnx"),
                           {"input": (1, 1, 28, 28)})
    text = print_module(imported.module, spans=True)
    without = compile(text, "small_cnn.relay", params=imported.params, stop_after="passes", strict=True,
                      passes=[n for n in RELAY_BUILD_PIPELINE if n != "FoldScaleAxis"])
    assert "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_multiply_add_nn_relu" in without.fused_names.values()
    result = compile(text, "small_cnn.relay", params=imported.params, strict=True)
    assert result.ok, [d.message for d in result.diagnostics]
    # the batch norm's multiply went into the conv weight; its shift stays an add after the
    # conv's own bias (TVM's pipeline merges no add(add(x, c1), c2) after CanonicalizeOps)
    # (AlterOpLayout: NCHWc convolutions and a packed dense, weights packed at build time,
    # the input and the flattened result transformed at run time)
    assert sorted(set(result.fused_names.values())) == [
        "tvmgen_default_fused_layout_transform", "tvmgen_default_fused_layout_transform_reshape",
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_add_nn_relu",
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_add_nn_relu_1",
        "tvmgen_default_fused_nn_contrib_dense_pack_add", "tvmgen_default_fused_nn_max_pool2d",
        "tvmgen_default_fused_nn_max_pool2d_1"]
    folded = next(s.module for s in result.snapshots if s.pass_name == "BackwardFoldScaleAxis")
    weights = [c.args[1] for c in folded_convs(folded)]
    assert [sorted({o.name for o in w.span.origins() if isinstance(o, LayerSpan)} & {"/conv1/Conv", "/conv2/Conv",
            "/bn1/BatchNormalization", "/bn2/BatchNormalization"}) for w in weights] == [
        ["/bn1/BatchNormalization", "/conv1/Conv"], ["/bn2/BatchNormalization", "/conv2/Conv"]]
    x = np.random.default_rng(0).standard_normal((1, 1, 28, 28)).astype("float32")
    unbound = result.checked.module
    want = Interpreter(unbound).call("main", [x] + [imported.params[p.name] for p in unbound["main"].params[1:]])
    np.testing.assert_allclose(np.asarray(result.executable.run(x)), np.asarray(want), rtol=1e-4, atol=1e-5)


def folded_convs(mod):
    from relaylens.compiler.ir.functor import post_order

    return [n for n in post_order(mod["main"]) if getattr(getattr(n, "op", None), "name", None) == "nn.conv2d"]


# --- robustness --------------------------------------------------------------------------------


@pytest.mark.parametrize("adds, folds", [(150, True), (2000, False)])
def test_a_long_chain_folds_or_is_left_whole_without_exhausting_the_stack(adds, folds):
    lines = ["%0 = nn.conv2d(%x, %w, channels=3, kernel_size=[1, 1]);"]
    lines += [f"%{i} = add(%{i - 1}, %b);" for i in range(1, adds + 1)]
    text = ("def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 1, 1), float32], "
            f"%b: Tensor[(3, 1, 1), float32], %s: Tensor[(3, 1, 1), float32]) {{\n  " + "\n  ".join(lines)
            + f"\n  multiply(%{adds}, %s)\n}}")
    mod = parse_ok(text, "chain.relay")
    out = run("BackwardFoldScaleAxis", mod)
    assert (out["main"].body.op.name == "add") == folds
    if folds:
        rng = np.random.default_rng(0)
        args = [rng.standard_normal(tuple(p.type_annotation.shape)).astype("float32") for p in mod["main"].params]
        np.testing.assert_allclose(interpret(out, *args), interpret(mod, *args), rtol=1e-4, atol=1e-4)


def test_untyped_modules_are_left_alone():
    # a type error upstream: no call has a type, so nothing offers or asks for an axis
    mod = parse(HEADER + """def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32]) {
  %0 = multiply(%x, meta[relay.Constant][0]);
  %1 = nn.conv2d(%0, %w, channels=3, kernel_size=[3, 3]);
  multiply(%1, 2f)
}""", "untyped.relay").module
    assert run("FoldScaleAxis", mod) is mod


CORPUS_FILES = sorted(CORPUS.rglob("*.relay")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS_FILES, reason="shared/corpus is not beside the checkout")
def test_spans_and_types_kept_over_the_corpus():
    changed = []
    for path in CORPUS_FILES:
        result = check_text(path.read_text(), path.name)
        typed = not any(d.is_error for d in result.diagnostics)
        for name in ("BackwardFoldScaleAxis", "ForwardFoldScaleAxis"):
            out = run(name, result.module)  # must never raise, typed or not
            if out is result.module:
                continue
            changed.append(f"{path.name}:{name}")
            assert spanless(out) == [], path.name
            assert not typed or [d.message for d in infer_types(out) if d.is_error] == [], path.name
    print(f"rewritten: {changed}")


def test_a_conv_whose_weight_is_scaled_at_run_time_is_explained_by_its_own_function():
    # unbound weights: the scaled weight is computed by a fused function of its own, which
    # carries the conv's span too; the conv's fused function is the one with the conv
    from relaylens.compiler.build import build_text
    from relaylens.compiler.provenance import Provenance

    text = HEADER + """def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, channels=3, kernel_size=[3, 3]);
  multiply(%0, 2f)
}"""
    result = build_text(text, "unbound.relay", strict=True)
    names = sorted(set(result.fused_names.values()))
    assert names == ["tvmgen_default_fused_layout_transform", "tvmgen_default_fused_layout_transform_1",
                     "tvmgen_default_fused_multiply_layout_transform",
                     "tvmgen_default_fused_nn_contrib_conv2d_NCHWc"]  # AlterOpLayout's NCHW3c
    prov = Provenance(result)
    key = prov.key_at(text.index("nn.conv2d"))
    # the scaled weight, packed for the NCHWc conv, is computed in a kernel of its own
    assert prov.fused_function(key)[0] == "tvmgen_default_fused_multiply_layout_transform"
