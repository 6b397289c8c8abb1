"""The ONNX frontend on small real networks (built with onnx.helper, run with the
interpreter and as compiled code, both checked against onnxruntime), its span filling, its
errors, `relaylens import` then `relaylens run` end to end, and the light ResNet-50 of the
onnx package with seeded random weights (interpreted and compiled)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaylens.compiler.build import build_module  # noqa: E402
from relaylens.compiler.cli import main  # noqa: E402
from relaylens.compiler.frontend.onnx import OnnxImportError, import_onnx  # noqa: E402
from relaylens.compiler.interpreter import interpret  # noqa: E402
from relaylens.compiler.ir import ANY, Call, Constant, LayerSpan  # noqa: E402
from relaylens.compiler.ir.functor import post_order  # noqa: E402
from relaylens.compiler.ir.structural_equal import structural_equal  # noqa: E402
from relaylens.compiler.lower.pipeline import lower_build  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402
from relaylens.compiler.parser import parse  # noqa: E402
from relaylens.compiler.printer import print_module  # noqa: E402
from relaylens.compiler.transform.span_check import spanless  # noqa: E402
from relaylens.compiler.typing import infer_types  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
FLOAT = TensorProto.FLOAT


# --- building and running models ------------------------------------------------------------


class Graph:
    """A model under construction: `g.init(name, array)`, `g.node(op, inputs, **attrs)`."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def init(self, name: str, array) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name: str, *shape: int, scale: float | None = None) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        std = scale if scale is not None else np.sqrt(2.0 / fan_in)
        return self.init(name, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def node(self, op: str, inputs: list[str], outputs: int = 1, name: str | None = None, **attrs) -> str | list[str]:
        self.count += 1
        outs = [f"t{self.count}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name or "", **attrs))
        return outs[0] if outputs == 1 else outs

    def model(self, inputs: dict[str, list], output: str | list[str], opset: int = 17, elem=FLOAT):
        outputs = [output] if isinstance(output, str) else output
        graph = helper.make_graph(
            self.nodes, "test",
            [helper.make_tensor_value_info(n, elem, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(o, elem, None) for o in outputs], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def run_ort(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # not the warning about an unused initializer
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_relay(imported, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    given = {imported.inputs[k]: v for k, v in feeds.items()}
    main_fn = imported.module["main"]
    args = [given[p.name] if p.name in given else imported.params[p.name] for p in main_fn.params]
    result = interpret(imported.module, *args)
    return list(result) if isinstance(result, tuple) else [result]


def run_compiled(model, feeds: dict[str, np.ndarray], jit=None) -> list[np.ndarray]:
    """Import with the feeds' shapes (compiled code needs static shapes), then build,
    lower and run the executable."""
    imported = import_onnx(model, shapes={k: v.shape for k, v in feeds.items()})
    assert not [d for d in infer_types(imported.module) if d.is_error]
    built = build_module(imported.module, name=model.graph.name)
    assert built.ok, [d.message for d in built.diagnostics]
    lowered = lower_build(built, jit=jit)
    assert lowered.ok, [d.message for d in lowered.diagnostics]
    assert lowered.executable.mode == "aot"
    given = {imported.inputs[k]: v for k, v in feeds.items()}
    args = [given[p.name] if p.name in given else imported.params[p.name] for p in imported.module["main"].params]
    result = lowered.executable.run(*args)
    return list(result) if isinstance(result, tuple) else [result]


@pytest.fixture(scope="module")
def jit():
    return JIT()


def check_against_ort(model, feeds, jit, rtol=1e-5, atol=1e-5):
    """Interpreted and compiled, both against onnxruntime; the interpreter's import."""
    imported = import_onnx(model)
    assert not [d for d in infer_types(imported.module) if d.is_error]
    want = run_ort(model, feeds)
    for got, expected in zip(run_relay(imported, feeds), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    for got, expected in zip(run_compiled(model, feeds, jit), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    return imported


def calls(module) -> list[Call]:
    return [n for n in post_order(module["main"]) if isinstance(n, Call)]


def layers(node) -> list[str]:
    return [o.name for o in node.span.origins() if isinstance(o, LayerSpan)] if node.span else []


# --- three small networks -------------------------------------------------------------------


def basic_block(g: Graph, x: str, channels: int, out: int, stride: int, prefix: str) -> str:
    """A ResNet basic block: two 3x3 conv + BN, a projection shortcut when the shape changes."""

    def conv_bn(inp: str, cin: int, cout: int, k: int, s: int, name: str) -> str:
        w = g.weight(f"{name}.weight", cout, cin, k, k)
        conv = g.node("Conv", [inp, w], name=f"{name}/Conv", kernel_shape=[k, k], strides=[s, s],
                      pads=[k // 2] * 4)
        bn = [g.init(f"{name}.bn.{p}", v.astype(np.float32)) for p, v in (
            ("scale", g.rng.uniform(0.5, 1.5, cout)), ("bias", g.rng.normal(0, 0.1, cout)),
            ("mean", g.rng.normal(0, 0.1, cout)), ("var", g.rng.uniform(0.5, 1.5, cout)))]
        return g.node("BatchNormalization", [conv, *bn], name=f"{name}/BatchNormalization", epsilon=1e-5)

    y = g.node("Relu", [conv_bn(x, channels, out, 3, stride, f"{prefix}.conv1")], name=f"{prefix}/Relu")
    y = conv_bn(y, out, out, 3, 1, f"{prefix}.conv2")
    shortcut = x if stride == 1 and channels == out else conv_bn(x, channels, out, 1, stride, f"{prefix}.down")
    return g.node("Relu", [g.node("Add", [y, shortcut], name=f"{prefix}/Add")], name=f"{prefix}/Relu_1")


def resnet_blocks():
    g = Graph(1)
    y = basic_block(g, "x", 8, 8, 1, "layer1.0")
    y = basic_block(g, y, 8, 16, 2, "layer2.0")
    pooled = g.node("GlobalAveragePool", [y], name="/avgpool/GlobalAveragePool")
    return g.model({"x": ["N", 8, 16, 16]}, g.node("Flatten", [pooled], name="/Flatten", axis=1))


def mlp():
    g = Graph(2)
    h = g.node("Gemm", ["x", g.weight("fc1.weight", 32, 16), g.weight("fc1.bias", 32, scale=0.1)],
               name="/fc1/Gemm", transB=1)
    h = g.node("Gelu", [h], name="/act/Gelu")
    h = g.node("Gemm", [h, g.weight("fc2.weight", 32, 10), g.weight("fc2.bias", 10, scale=0.1)],
               name="/fc2/Gemm", alpha=0.5, beta=2.0)
    return g.model({"x": [4, 16]}, g.node("Softmax", [h], name="/Softmax", axis=-1), opset=20)


def attention(hidden=16, heads=2):
    """A transformer block's self-attention, the way PyTorch exports it: the head reshapes
    take their shape from Shape → Gather → Unsqueeze → Concat."""
    g = Graph(3)
    d = hidden // heads
    gamma, beta = g.weight("ln.weight", hidden, scale=1.0), g.weight("ln.bias", hidden, scale=0.1)
    x = g.node("LayerNormalization", ["x", gamma, beta],
               name="/ln/LayerNormalization", axis=-1, epsilon=1e-5)
    shape = g.node("Shape", [x], name="/attn/Shape")
    batch = g.node("Unsqueeze", [g.node("Gather", [shape, g.init("zero", np.array(0, np.int64))], axis=0),
                                 g.init("axes0", np.array([0], np.int64))])
    seq = g.node("Unsqueeze", [g.node("Gather", [shape, g.init("one", np.array(1, np.int64))], axis=0), "axes0"])
    split_shape = g.node("Concat", [batch, seq, g.init("heads", np.array([heads, d], np.int64))], axis=0)
    merged_shape = g.node("Concat", [batch, seq, g.init("hidden", np.array([hidden], np.int64))], axis=0)

    def project(name: str, perm: list[int]) -> str:
        y = g.node("MatMul", [x, g.weight(f"{name}.weight", hidden, hidden)], name=f"/attn/{name}/MatMul")
        y = g.node("Add", [y, g.weight(f"{name}.bias", hidden, scale=0.1)], name=f"/attn/{name}/Add")
        y = g.node("Reshape", [y, split_shape], name=f"/attn/{name}/Reshape")
        return g.node("Transpose", [y], name=f"/attn/{name}/Transpose", perm=perm)

    q, k, v = project("q", [0, 2, 1, 3]), project("k", [0, 2, 3, 1]), project("v", [0, 2, 1, 3])
    scale = g.init("scale", np.array(np.sqrt(d), np.float32))
    scores = g.node("Div", [g.node("MatMul", [q, k], name="/attn/MatMul"), scale], name="/attn/Div")
    probs = g.node("Softmax", [scores], name="/attn/Softmax", axis=-1)
    context = g.node("MatMul", [probs, v], name="/attn/MatMul_1")
    context = g.node("Transpose", [context], name="/attn/Transpose", perm=[0, 2, 1, 3])
    context = g.node("Reshape", [context, merged_shape], name="/attn/Reshape")
    out = g.node("MatMul", [context, g.weight("o.weight", hidden, hidden)], name="/attn/o/MatMul")
    return g.model({"x": [2, 5, hidden]}, g.node("Add", ["x", out], name="/attn/residual/Add"))


def test_resnet_basic_blocks_match_onnxruntime(jit):
    x = np.random.default_rng(0).standard_normal((2, 8, 16, 16)).astype(np.float32)
    imported = check_against_ort(resnet_blocks(), {"x": x}, jit, rtol=1e-4)
    assert imported.module["main"].params[0].type_annotation.shape[0] is ANY  # the symbolic N
    ops = {c.op.name for c in calls(imported.module)}
    assert {"nn.conv2d", "nn.batch_norm", "nn.relu", "add", "nn.global_avg_pool2d", "reshape"} <= ops


def test_mlp_with_gemm_matches_onnxruntime(jit):
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    imported = check_against_ort(mlp(), {"x": x}, jit)
    assert [c.op.name for c in calls(imported.module)].count("nn.dense") == 2


def test_attention_matches_onnxruntime_and_folds_the_shape_chain(jit):
    x = np.random.default_rng(0).standard_normal((2, 5, 16)).astype(np.float32)
    imported = check_against_ort(attention(), {"x": x}, jit, rtol=1e-4)
    reshapes = [c for c in calls(imported.module) if layers(c)[0].endswith("/Reshape")]
    assert sorted(tuple(int(d) for d in c.attrs["newshape"]) for c in reshapes) == [(2, 5, 2, 8)] * 3 + [(2, 5, 16)]
    names = {c.op.name for c in calls(imported.module)}
    assert "shape_of" not in names and "take" not in names  # folded into the reshapes' attributes
    assert {"nn.layer_norm", "nn.batch_matmul", "nn.softmax", "transpose"} <= names


# --- span filling ------------------------------------------------------------------------------


def node_names(model) -> set[str]:
    from relaylens.compiler.frontend.onnx.spans import node_names as names

    return set(names(model.graph.node))


@pytest.mark.parametrize("build", [resnet_blocks, mlp, attention])
def test_every_call_names_its_node(build):
    model = build()
    imported = import_onnx(model)
    known = node_names(model)
    for call in calls(imported.module):
        assert len(layers(call)) == 1 and layers(call)[0] in known, call
    assert spanless(imported.module) == []  # DESIGN.md's span invariant
    text = print_module(imported.module, spans=True)
    call_lines = [line for line in text.splitlines() if re.search(r"\b[a-z_.0-9]+\(", line) and "def @main" not in line]
    assert call_lines and all("span=" in line for line in call_lines)


@pytest.mark.parametrize("build", [resnet_blocks, mlp, attention])
def test_spans_round_trip_through_print_and_parse(build):
    imported = import_onnx(build())
    text = print_module(imported.module, spans=True)
    parsed = parse(text, "imported.relay")
    assert not [d for d in parsed.diagnostics if d.is_error]
    assert structural_equal(parsed.module["main"], imported.module["main"], spans=True)
    assert not [d for d in infer_types(parsed.module) if d.is_error]
    for call in calls(parsed.module):  # a document range, then the layer from the comment
        assert layers(call), call
    assert print_module(parsed.module, spans=True) == text


def test_one_to_many_conversions_tag_everything_they_create():
    imported = import_onnx(mlp())
    by_layer: dict[str, list[str]] = {}
    for call in calls(imported.module):
        by_layer.setdefault(layers(call)[0], []).append(call.op.name)
    assert sorted(by_layer["/act/Gelu"]) == sorted(["multiply", "erf", "add", "multiply", "multiply"])
    assert sorted(by_layer["/fc2/Gemm"]) == sorted(["nn.dense", "transpose", "multiply", "multiply", "add"])
    constants = [n for n in post_order(imported.module["main"]) if isinstance(n, Constant)]
    assert constants and all(layers(c) for c in constants)  # the scalars a conversion made


def test_inputs_and_weights_are_named_by_their_first_consumer():
    imported = import_onnx(resnet_blocks())
    params = {p.name: layers(p) for p in imported.module["main"].params}
    assert params["x"] == ["layer1.0.conv1/Conv.x"]
    assert params["layer2.0.conv1.weight"] == ["layer2.0.conv1/Conv.layer2.0.conv1.weight"]


def test_a_mended_name_never_takes_another_tensors_own_name(tmp_path, capsys):
    """The initializer `a b` (mended to `a_b`) was named before the graph input `a_b`, which
    became `%a_b_1`: `relaylens run --input a_b=x.npy` replaced the weight and said the input
    was missing.  A name a tensor has as it is stays that tensor's."""
    g = Graph()
    model = g.model({"a_b": [2, 3]}, g.node("Add", ["a_b", g.init("a b", np.full((2, 3), 5, np.float32))],
                                            name="add"))
    imported = import_onnx(model)
    assert imported.inputs == {"a_b": "a_b"}
    assert [p.name for p in imported.module["main"].params] == ["a_b", "a_b_1"]
    onnx.save(model, tmp_path / "m.onnx")
    assert relaylens(capsys, "import", tmp_path / "m.onnx", "-o", tmp_path / "m.relay")[0] == 0
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    status, out, err = relaylens(capsys, "run", tmp_path / "m.relay", "--input", f"a_b={tmp_path / 'x.npy'}",
                                 "-o", tmp_path / "out.npz")
    assert status == 0, err
    with np.load(tmp_path / "out.npz") as result:
        np.testing.assert_array_equal(result["output"], np.full((2, 3), 6, np.float32))


def test_unnamed_nodes_get_stable_names():
    g = Graph()
    a = g.node("Relu", ["x"])
    b = g.node("Relu", [a], name="Relu_0")  # a name the generator must not reuse
    c = g.node("Relu", [b])
    model = g.model({"x": [3]}, g.node("Sigmoid", [c]))
    first = import_onnx(model)
    assert [layers(call)[0] for call in calls(first.module)] == ["Relu_1", "Relu_0", "Relu_2", "Sigmoid_0"]
    assert print_module(import_onnx(model).module, spans=True) == print_module(first.module, spans=True)


# --- errors and --allow-unsupported -----------------------------------------------------------------


def test_unsupported_op_names_node_op_and_opset():
    g = Graph()
    y = g.node("Relu", ["x"])
    loss, _ = g.node("SoftmaxCrossEntropyLoss", [y, g.init("labels", np.array([2], np.int64))], 2, name="loss7")
    model = g.model({"x": [1, 4]}, loss, opset=13)
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    assert info.value.message == ("node 'loss7' (SoftmaxCrossEntropyLoss, opset 13): the op SoftmaxCrossEntropyLoss "
                                  "is not supported")


def test_unsupported_attribute_names_node_op_and_opset():
    g = Graph()
    model = g.model({"x": [1, 1, 4, 4]}, g.node("Pad", ["x", g.init("pads", np.array([0, 0, 1, 1] * 2, np.int64))],
                                             name="pad7", mode="wrap"), opset=19)
    with pytest.raises(OnnxImportError, match=r"^node 'pad7' \(Pad, opset 19\): mode=wrap is not supported"):
        import_onnx(model)


def test_run_time_shape_is_reported():
    g = Graph()
    model = g.model({"x": [2, 6], "s": [2]}, g.node("Reshape", ["x", "s"], name="r"))
    model.graph.input[1].type.tensor_type.elem_type = TensorProto.INT64
    with pytest.raises(OnnxImportError, match="node 'r' .*shape \\(input 1\\) must be known before run time") as info:
        import_onnx(model)
    assert info.value.needs_value == "s"


def test_a_shape_computed_from_a_dynamic_batch_names_the_input_and_the_shape_option():
    """PyTorch exports `x.view(x.size(0), -1)` with a dynamic batch as Shape -> Slice ->
    Concat -> Reshape; the refusal said only 'must be known before run time' (a ViT patch
    embedding exported with dynamic_axes); it now names the input and how to fix it."""
    g = Graph()
    batch = g.node("Slice", [g.node("Shape", ["x"]), g.init("zero", np.array([0], np.int64)),
                             g.init("one", np.array([1], np.int64))])
    shape = g.node("Concat", [batch, g.init("rest", np.array([-1], np.int64))], axis=0)
    model = g.model({"x": ["batch_size", 4, 2, 2]}, g.node("Reshape", ["x", shape], name="flat"))
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    assert info.value.message.endswith(
        "must be known before run time (a constant or an initializer, or computed from them and static "
        "shapes); it depends on graph input 'x', whose dimension 0 ('batch_size') is not fixed: give its "
        "shape, e.g. --shape x=1,4,2,2")
    imported = import_onnx(model, shapes={"x": (3, 4, 2, 2)})  # as the hint says
    x = np.arange(48, dtype=np.float32).reshape(3, 4, 2, 2)
    np.testing.assert_array_equal(run_relay(imported, {"x": x})[0], x.reshape(3, -1))


def test_a_matmul_over_two_unknown_batch_axes_is_one_dense_over_them():
    """A transformer's projection exported with a dynamic batch and sequence, (batch, seq,
    8) x (8, 4): flattened, the reshape back would need two unknown axes, which a newshape
    cannot say ('this reshape needs static dimensions'); nn.dense takes (..., K) whole."""
    g = Graph()
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    model = g.model({"x": ["batch", "seq", 8]}, g.node("MatMul", ["x", g.init("w", w)], name="proj"))
    imported = import_onnx(model)
    calls = [n.op.name for n in post_order(imported.module["main"].body) if isinstance(n, Call)]
    assert calls == ["transpose", "nn.dense"]
    x = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    np.testing.assert_allclose(run_relay(imported, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-6)
    g = Graph()
    one_unknown = import_onnx(g.model({"x": ["batch", 3, 8]}, g.node("MatMul", ["x", g.init("w", w)])))
    assert "reshape" in [n.op.name for n in post_order(one_unknown.module["main"].body) if isinstance(n, Call)]


def unsupported_model():
    """A node of two results whose op the frontend does not support (SoftmaxCrossEntropyLoss:
    the loss per row, and the log-probabilities)."""
    g = Graph()
    y = g.node("Relu", ["x"], name="relu")
    loss, log_prob = g.node("SoftmaxCrossEntropyLoss", [y, g.init("labels", np.array([0, 2, 4], np.int64))], 2,
                            name="loss", reduction="none")
    return g.model({"x": [3, 5]}, [g.node("Sigmoid", [loss], name="sig"), log_prob])


def test_allow_unsupported_stands_in_an_opaque_call():
    model = unsupported_model()
    imported = import_onnx(model, allow_unsupported=True)
    assert imported.stand_ins == ["loss"]
    stand_in = imported.module["main"].params[-1]
    assert stand_in.name == "onnx_SoftmaxCrossEntropyLoss" and layers(stand_in) == ["loss"]
    text = print_module(imported.module, spans=True)
    assert ("%onnx_SoftmaxCrossEntropyLoss: fn (Tensor[(3, 5), float32], Tensor[(3), int64]) -> "
            "(Tensor[(3), float32], Tensor[(3, 5), float32])") in text
    assert re.search(r"%onnx_SoftmaxCrossEntropyLoss\(%\d+, .*\) /\* span=loss:0:0 \*/", text)
    parsed = parse(text, "opaque.relay")
    assert not [d for d in parsed.diagnostics if d.is_error]
    assert not [d for d in infer_types(parsed.module) if d.is_error]
    sigmoid = [c for c in calls(parsed.module) if getattr(c.op, "name", "") == "sigmoid"][0]
    assert sigmoid.ty.shape == (3,)


# --- relaylens import ----------------------------------------------------------------------------


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_import_then_run(tmp_path, capsys):
    model = resnet_blocks()
    onnx.save(model, tmp_path / "net.onnx")
    x = np.random.default_rng(5).standard_normal((1, 8, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    status, out, err = relaylens(capsys, "import", tmp_path / "net.onnx", "-o", tmp_path / "net.relay")
    assert (status, out, err) == (0, "", "")
    text = (tmp_path / "net.relay").read_text()
    assert "%x: Tensor[(?, 8, 16, 16), float32]" in text
    with np.load(tmp_path / "net.npz") as params:
        assert "layer1.0.conv1.weight" in params.files
    status, out, err = relaylens(capsys, "run", tmp_path / "net.relay", "--params", tmp_path / "net.npz",
                                 "--input", f"x={tmp_path / 'x.npy'}", "--interp", "-o", tmp_path / "out.npz")
    assert status == 0, err
    with np.load(tmp_path / "out.npz") as result:
        np.testing.assert_allclose(result["output"], run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_cli_import_then_run_compiled_with_check(tmp_path, capsys):
    model = resnet_blocks()
    onnx.save(model, tmp_path / "net.onnx")
    x = np.random.default_rng(6).standard_normal((2, 8, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    status, _, err = relaylens(capsys, "import", tmp_path / "net.onnx", "--shape", "x=2,8,16,16",
                               "-o", tmp_path / "net.relay")
    assert status == 0, err
    status, out, err = relaylens(capsys, "run", tmp_path / "net.relay", "--params", tmp_path / "net.npz",
                                 "--input", f"x={tmp_path / 'x.npy'}", "--check", "-o", tmp_path / "out.npz")
    assert (status, out) == (0, ""), err
    assert re.fullmatch(r"check output: max abs error \S+, max rel error \S+(, worst at .*)? "
                        r"\(float32 tolerance 1e-05 \+ 1e-04 \* max\|reference\|\)\n", err)  # within tolerance
    with np.load(tmp_path / "out.npz") as result:
        np.testing.assert_allclose(result["output"], run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_cli_import_shape_and_stdout(tmp_path, capsys):
    onnx.save(resnet_blocks(), tmp_path / "net.onnx")
    status, out, err = relaylens(capsys, "import", tmp_path / "net.onnx", "--shape", "x=3,8,16,16",
                                 "--params", tmp_path / "p.npz", "--types")
    assert status == 0, err
    assert "%x: Tensor[(3, 8, 16, 16), float32]" in out and "ty=Tensor[(3, 16), float32]" in out
    assert (tmp_path / "p.npz").is_file()


@pytest.mark.parametrize("args, message", [
    (["--shape", "x=1,a"], "'a' is not a dimension"),
    (["--shape", "y=1,2"], "--shape names no graph input: y (the inputs: x)"),
    ([], "give --params OUT.npz"),
])
def test_cli_import_usage_errors(tmp_path, capsys, args, message):
    onnx.save(resnet_blocks(), tmp_path / "net.onnx")
    status, out, err = relaylens(capsys, "import", tmp_path / "net.onnx", *args)
    assert status in (1, 2) and message in err and "Traceback" not in err


def test_cli_import_bad_files(tmp_path, capsys):
    status, _, err = relaylens(capsys, "import", tmp_path / "missing.onnx", "-o", tmp_path / "m.relay")
    assert status == 2 and f"cannot read {tmp_path / 'missing.onnx'}: No such file" in err
    (tmp_path / "junk.onnx").write_bytes(b"\x01not a protobuf at all\xff" * 3)
    status, _, err = relaylens(capsys, "import", tmp_path / "junk.onnx", "-o", tmp_path / "m.relay")
    assert status == 1 and "not an ONNX model" in err and "Traceback" not in err


def test_cli_import_reports_unsupported_and_allows_it(tmp_path, capsys):
    model = unsupported_model()
    onnx.save(model, tmp_path / "loss.onnx")
    status, _, err = relaylens(capsys, "import", tmp_path / "loss.onnx", "-o", tmp_path / "t.relay")
    assert status == 1
    assert err == (f"{tmp_path / 'loss.onnx'}: error: node 'loss' (SoftmaxCrossEntropyLoss, opset 17): "
                   "the op SoftmaxCrossEntropyLoss is not supported\n")
    status, _, err = relaylens(capsys, "import", tmp_path / "loss.onnx", "-o", tmp_path / "t.relay",
                               "--allow-unsupported")
    assert status == 0 and "node 'loss' is imported as an opaque call" in err
    status, _, err = relaylens(capsys, "check", tmp_path / "t.relay")
    assert status == 0, err
    # it cannot run, and says why at the stand-in (it asked for an .npy input of a function,
    # or failed to draw a random one)
    for extra in ([], ["--input", f"x={tmp_path / 'x.npy'}"]):
        np.save(tmp_path / "x.npy", np.ones((3, 5), np.float32))
        status, _, err = relaylens(capsys, "run", tmp_path / "t.relay", *extra)
        assert status == 1 and "Traceback" not in err
        assert re.search(r"t\.relay:2:\d+: error: %onnx_SoftmaxCrossEntropyLoss is a function parameter "
                         r"\(fn \(.*\)\), which no --input or weights can give", err), err


# --- the light ResNet-50 of the onnx package, with random weights -------------------------------------


def randomized_light_resnet50(seed: int = 0):
    """light_resnet50.onnx builds every weight with ConstantOfShape(0.02); give each a seeded
    random initializer instead (He-scaled conv weights, BatchNorm statistics near 1)."""
    model = onnx.load(LIGHT / "light_resnet50.onnx")
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    kept = [n for n in model.graph.node if n.op_type != "ConstantOfShape"]
    weights = []
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape":
            continue
        name, shape = node.output[0], tuple(int(d) for d in shapes[node.input[0]])
        if len(shape) > 1:
            array = rng.standard_normal(shape) * np.sqrt(1.0 / np.prod(shape[1:]))
        elif name.endswith(("_riv_0", "_s_0")):
            array = rng.uniform(0.5, 1.5, shape)
        else:
            array = rng.normal(0, 0.1, shape)
        weights.append(numpy_helper.from_array(array.astype(np.float32), name))
    for t in model.graph.initializer:
        if not t.name.endswith("__SHAPE"):
            weights.append(t)
    inputs = [i for i in model.graph.input if i.name == "gpu_0/data_0"]
    graph = helper.make_graph(kept, model.graph.name, inputs, list(model.graph.output), weights)
    return helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=10)


def test_light_resnet50_with_random_weights_matches_onnxruntime(jit):
    model = randomized_light_resnet50()
    x = (np.arange(3 * 224 * 224, dtype=np.float32) / (3 * 224 * 224)).reshape(1, 3, 224, 224)
    imported = import_onnx(model)
    weights = {t.name for t in model.graph.initializer if len(t.dims) == 4}
    assert len(weights) == 53 and weights <= set(imported.params)
    assert not [d for d in infer_types(imported.module) if d.is_error]
    assert imported.module["main"].body.ty.shape == (1, 1000)
    want = run_ort(model, {"gpu_0/data_0": x})[0]
    assert len(np.unique(want)) > 900  # random weights: a meaningful reference
    got = run_relay(imported, {"gpu_0/data_0": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)
    compiled = run_compiled(model, {"gpu_0/data_0": x}, jit)[0]
    np.testing.assert_allclose(compiled, want, rtol=1e-4, atol=1e-7)
    assert all(layers(c) for c in calls(imported.module))
    parsed = parse(print_module(imported.module, spans=True), "resnet50.relay")
    assert not [d for d in parsed.diagnostics if d.is_error]
    assert structural_equal(parsed.module["main"], imported.module["main"], spans=True)


# --- the model cases shipped in the onnx wheel (PyTorch exports and simple graphs) ----------------

SHIPPED = Path(onnx.__file__).parent / "backend" / "test" / "data"
SHIPPED_UNSUPPORTED = {  # case name prefix → why it does not import
    "test_sequence_model": "sequence ops",
    "test_strnorm_model": "string tensors",
    "test_gradient_of_add": "the ai.onnx.preview.training domain",
    "test_expand_shape_model": "Expand's shape is a graph input, known only at run time",
}


def _shipped_cases() -> list[Path]:
    found = sorted(p.parent for p in SHIPPED.glob("*/*/model.onnx") if p.parent.parent.name != "node")
    return [p for p in found if not p.name.startswith(tuple(SHIPPED_UNSUPPORTED))]


@pytest.mark.parametrize("case", _shipped_cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_model_cases(case):
    model = onnx.load(case / "model.onnx")
    data = case / "test_data_set_0"
    arrays = [[numpy_helper.to_array(onnx.load_tensor(str(f))) for f in sorted(data.glob(f"{kind}_*.pb"))]
              for kind in ("input", "output")]
    imported = import_onnx(model)
    names = [i.name for i in model.graph.input if i.name in imported.inputs]
    got = run_relay(imported, dict(zip(names, arrays[0])))
    for g, want in zip(got, arrays[1], strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_shipped_unsupported_cases_say_why():
    for prefix in SHIPPED_UNSUPPORTED:
        for path in SHIPPED.glob(f"*/{prefix}*/model.onnx"):
            with pytest.raises(OnnxImportError, match=r"not supported|must be known before run time"):
                import_onnx(onnx.load(path))


def test_explain_and_profile_name_layers_not_the_weights_named_after_them(tmp_path, capsys):
    """A depthwise Conv -> BatchNormalization -> HardSwish of a MobileNetV3 block: `explain`
    listed `/bn/BatchNormalization.bn.mean` (and .var, .scale, .bias: the weights, named after
    their first consumer, folded into the kernel) among the frontend layers compiled into
    the kernel, and the profiler gave each a row share; only the three nodes are layers."""
    g = Graph(2)
    w = g.weight("dw.w", 8, 1, 3, 3)
    stats = [g.init(f"bn.{k}", np.linspace(0.5, 1.5, 8).astype(np.float32)) for k in ("scale", "bias", "mean", "var")]
    conv = g.node("Conv", ["x", w], name="/dw/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8)
    bn = g.node("BatchNormalization", [conv, *stats], name="/bn/BatchNormalization")
    onnx.save(g.model({"x": [1, 8, 8, 8]}, g.node("HardSwish", [bn], name="/act/HardSwish")), tmp_path / "m.onnx")
    relay = tmp_path / "m.relay"
    assert relaylens(capsys, "import", tmp_path / "m.onnx", "-o", relay)[0] == 0
    line = next(k for k, text in enumerate(relay.read_text().splitlines(), 1) if "nn.batch_norm(" in text)
    status, out, err = relaylens(capsys, "explain", f"{relay}:{line}:8")
    assert status == 0, err
    compiled_in = next(text for text in out.splitlines() if "frontend layers compiled into it" in text)
    assert compiled_in.split(": ", 1)[1] == "/dw/Conv, /bn/BatchNormalization, /act/HardSwish"
    status, out, err = relaylens(capsys, "profile", relay, "--runs", "1")
    assert status == 0, err
    assert "BatchNormalization." not in out and "/bn/BatchNormalization" in out
