"""AlterOpLayout through the whole relay.build pipeline: TVM's tests that build a model
rather than compare graphs, and models with denses (the GPT-2 block of bench/build.py):
the layouts the pass chooses must lower, and the compiled result equal the interpreter's
on the original module."""

import numpy as np
import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.interpreter import Interpreter

AXIS_SEMANTIC_CHANGE = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1, 24, 48), float32], %w1: Tensor[(1, 1, 1, 1), float32], %w2: Tensor[(1, 1, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[0, 0, 0, 0], channels=1, kernel_size=[1, 1]);
  %1 = transpose(%0, axes=[0, 1, 3, 2]);
  nn.conv2d(%1, %w2, padding=[0, 0, 0, 0], channels=1, kernel_size=[1, 1])
}"""

REDUCE_CHANNELS = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 8, 48, 48), float32], %weight: Tensor[(8, 8, 1, 1), float32]) {
  %0 = nn.conv2d(%data, %weight, strides=[47, 47], padding=[0, 0, 0, 0], channels=8, kernel_size=[1, 1]);
  argmin(%0, axis=[1])
}"""

RESPECT_INPUT_LAYOUTS = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 1, 1), float32], %w: Tensor[(16, 16, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0], channels=16, kernel_size=[1, 1]);
  %1 = min(%0, axis=[2]);
  %2 = min(%0, axis=[3]);
  add(%1, %2)
}"""

DENSE_AFTER_CONV = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 32, 8, 8), float32], %cw: Tensor[(32, 32, 3, 3), float32], %dw: Tensor[(40, 32), float32]) {
  %0 = nn.conv2d(%x, %cw, padding=[1, 1, 1, 1], channels=32, kernel_size=[3, 3]);
  %1 = nn.avg_pool2d(%0, pool_size=[8, 8], padding=[0, 0, 0, 0]);
  %2 = squeeze(%1, axis=[2, 3]);
  %3 = sum(%0, axis=[1], keepdims=True);
  %4 = nn.pad(%0, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]);
  (nn.dense(%2, %dw, units=40), %3, %4)
}"""

ALTER_WITH_REDUCE = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1, 1, 1), float32]) {
  %0 = image.resize2d(%x, size=[2, 4], roi=[0f, 0f, 0f, 0f], rounding_method="");
  %1 = mean(%0, axis=[0]);
  image.resize1d(%1, size=[1], roi=[0f, 0f], rounding_method="")
}"""

LAYOUT_PASS_OPS = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(32, 16, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=32, kernel_size=[3, 3]);
  %1 = slice_like(%0, %0, axes=[2, 3]);
  %2 = topk(%1, k=3, axis=3);
  %3 = %2.0;
  %4 = mean(%3, axis=[2]);
  %5 = image.resize1d(%4, size=[5], method="cubic");
  (%5, %2.1)
}"""


@pytest.mark.parametrize("text,opt_level,bound", [
    (AXIS_SEMANTIC_CHANGE, 3, ("w1", "w2")),  # TVM test_axis_semantic_change
    (REDUCE_CHANNELS, 3, ("weight",)),  # TVM test_conv2d_reduce_channels
    (RESPECT_INPUT_LAYOUTS, 4, ()),  # TVM test_broadcast_respect_input_layouts (x86 rules)
    (DENSE_AFTER_CONV, 3, ("cw", "dw")),  # NCHWc conv, pool, squeeze, sum, pad, dense_pack
    (ALTER_WITH_REDUCE, 4, ()),  # TVM test_alter_with_reduce
    (LAYOUT_PASS_OPS, 3, ("w",)),  # slice_like and topk after an NCHW16c conv, then resize1d
], ids=["axis_semantic_change", "conv2d_reduce_channels", "broadcast_respect_input_layouts",
                              "dense_after_conv", "alter_with_reduce", "layout_pass_ops"])
def test_relay_build_equals_interpreter(text, opt_level, bound):
    rng = np.random.default_rng(11)
    checked = compile(text, "case.relay", stop_after="check")
    params = {p.name: rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
              for p in checked.checked.module["main"].params}
    weights = {k: v for k, v in params.items() if k in bound}
    inputs = [v for k, v in params.items() if k not in bound]
    result = compile(text, "case.relay", params=weights, opt_level=opt_level)
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    want = Interpreter(checked.checked.module).call("main", list(params.values()))
    got = result.executable.run(*inputs)
    wants = want if isinstance(want, (list, tuple)) else [want]
    gots = got if isinstance(got, (list, tuple)) else [got]
    assert len(wants) == len(gots)
    for g, w in zip(gots, wants):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)


def test_a_gpt2_block_runs_its_denses_packed_and_equals_the_interpreter():
    """bench/build.py's GPT-2 block (ONNX, imported), its weights bound as relay.build binds
    them: every 2-D dense becomes x86's nn.contrib_dense_pack, its weight packed at build time
    (no layout_transform kernel left), and the compiled block equals the interpreter."""
    pytest.importorskip("onnx")
    import importlib.util
    import sys
    from pathlib import Path

    from relaylens.compiler.transform.bind_params import bind_params_by_name

    path = Path(__file__).resolve().parents[1] / "bench" / "build.py"
    spec = importlib.util.spec_from_file_location("bench_build", path)
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_build"] = bench
    spec.loader.exec_module(bench)
    model = bench.load_model("gpt2")
    result = compile(model.text, "gpt2.relay", params=model.params)
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    names = list(result.fused_names.values())
    assert sum("nn_contrib_dense_pack" in n for n in names) == 4
    assert not any("nn_dense" in n or "layout_transform" in n for n in names), names
    bound, _ = bind_params_by_name(result.checked.module, model.params)
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
              for p in bound["main"].params]
    got = result.executable.run(*inputs)
    want = Interpreter(bound).call("main", inputs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
