"""LSTM, GRU and RNN (frontend/onnx/convert_rnn.py), unrolled: against onnxruntime,
interpreted and compiled, in every direction and with every option the converter reads;
errors name the node."""

from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from onnx import ModelProto, TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_import import calls, check_against_ort, layers, run_compiled, run_relay  # noqa: E402

from relaylens.compiler.build import build_module  # noqa: E402
from relaylens.compiler.frontend.onnx import OnnxImportError, import_onnx  # noqa: E402
from relaylens.compiler.ir import Call  # noqa: E402
from relaylens.compiler.ir.functor import post_order  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


@pytest.fixture(scope="module")
def jit():
    return JIT()


def rnn_model(op, seq=5, batch=3, inputs=4, hidden=6, directions=1, bias=True, initial=True, peepholes=False,
              lengths=None, layout=0, seed=0, **attrs):
    rng = np.random.default_rng(seed)
    gates = GATES[op]

    def init(name, *shape, scale=0.4):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    inits: list = []
    names = ["x", init("W", directions, gates * hidden, inputs), init("R", directions, gates * hidden, hidden)]
    names.append(init("B", directions, 2 * gates * hidden, scale=0.2) if bias else "")
    if lengths is not None:
        inits.append(numpy_helper.from_array(np.array(lengths, np.int32), "lengths"))
    names.append("lengths" if lengths is not None else "")
    if initial or peepholes:
        names.append(init("h0", directions, batch, hidden, scale=0.5) if initial else "")
        if op == "LSTM":
            names.append(init("c0", directions, batch, hidden, scale=0.5) if initial else "")
    if peepholes:
        names.append(init("P", directions, 3 * hidden, scale=0.3))
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    attrs.setdefault("direction", "bidirectional" if directions == 2 else "forward")
    node = helper.make_node(op, names, outs, hidden_size=hidden, name=f"/rnn/{op}", layout=layout, **attrs)
    shape = [seq, batch, inputs] if layout == 0 else [batch, seq, inputs]
    graph = helper.make_graph([node], "rnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=10)
    return model, rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op, options", [
    ("LSTM", {}),
    ("LSTM", dict(directions=2)),
    ("LSTM", dict(direction="reverse")),
    ("LSTM", dict(peepholes=True)),
    ("LSTM", dict(peepholes=True, initial=False)),
    ("LSTM", dict(input_forget=1)),
    ("LSTM", dict(clip=0.5)),
    ("LSTM", dict(activations=["HardSigmoid", "LeakyRelu", "Softplus"], activation_alpha=[0.3, 0.1],
                  activation_beta=[0.4])),
    ("LSTM", dict(lengths=[5, 5, 5])),
    ("GRU", {}),
    ("GRU", dict(linear_before_reset=1)),
    ("GRU", dict(directions=2, linear_before_reset=1)),
    ("GRU", dict(bias=False, initial=False)),
    ("GRU", dict(clip=0.3, activations=["Sigmoid", "ScaledTanh"], activation_alpha=[0.8], activation_beta=[1.2])),
    ("RNN", {}),
    ("RNN", dict(directions=2)),
    ("RNN", dict(activations=["Relu"])),
], ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={v[k]}" for k in v) or "defaults")
def test_matches_onnxruntime(jit, op, options):
    model, x = rnn_model(op, **options)
    imported = check_against_ort(model, {"x": x}, jit, rtol=1e-5, atol=1e-5)
    products = [c for c in calls(imported.module) if c.op.name == "nn.dense"]
    directions = options.get("directions", 1)
    assert len(products) >= directions * 6  # unrolled: one per step and direction, and the inputs'
    assert all(layers(c) == [f"/rnn/{op}"] for c in products)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_batch_first_layout_is_the_same_cell_transposed(jit, op):
    """onnxruntime has no batch-first LSTM or GRU: the same weights with layout 0 on the
    transposed input give the reference."""
    model, x = rnn_model(op, directions=2, layout=1)
    ours = run_compiled(model, {"x": x}, jit)
    interpreted = run_relay(import_onnx(model), {"x": x})
    reference = ModelProto()
    reference.CopyFrom(model)
    for attr in reference.graph.node[0].attribute:
        if attr.name == "layout":
            attr.i = 0
    dims = reference.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_value, dims[1].dim_value = x.shape[1], x.shape[0]
    session = ort.InferenceSession(reference.SerializeToString(), providers=["CPUExecutionProvider"])
    y, *states = session.run(None, {"x": x.transpose(1, 0, 2)})
    want = [y.transpose(2, 0, 1, 3)] + [s.transpose(1, 0, 2) for s in states]
    for got in (ours, interpreted):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_a_gru_on_zeros_gives_zeros_not_nan(jit, linear_before_reset):
    """h = (1 - z) * n + z * h feeds the next step's product: ForwardFoldScaleAxis may not
    carry n = tanh(..) across the add, which divides z * h by it (0 here: TVM gave NaN)."""
    model, x = rnn_model("GRU", batch=1, bias=False, initial=False, linear_before_reset=linear_before_reset)
    for got in run_compiled(model, {"x": np.zeros_like(x)}, jit):
        np.testing.assert_array_equal(got, np.zeros_like(got))


@pytest.mark.parametrize("op, options", [("LSTM", dict(directions=2)), ("GRU", dict(linear_before_reset=1)),
                                         ("GRU", {})])
def test_bound_recurrent_weights_are_packed_once_at_batch_1(op, options):
    """With one row, a gate (o * tanh(c), GRU's reset) broadcasts onto the product's axis,
    and TVM's FoldScaleAxis would scale the bound weight by it, re-packing the weight at
    every step; it stays a constant, packed at build time: no kernel makes a packed weight."""
    from relaylens.compiler.ir.expr import Function
    from relaylens.compiler.transform.bind_params import bind_params_by_name

    model, _ = rnn_model(op, batch=1, **options)
    del model.graph.output[0]  # Y: each h feeds the next step's product alone
    imported = import_onnx(model)
    bound, errors = bind_params_by_name(imported.module, imported.params)
    assert not errors
    built = build_module(bound, name="rnn", strict=True)
    fused = [n for n in post_order(built.module["main"]) if isinstance(n, Function)]
    packing = [f for f in fused if isinstance(f.body, Call) and getattr(f.body.op, "name", None) == "layout_transform"]
    inner = [n for f in fused for n in post_order(f.body) if isinstance(n, Call) and hasattr(n.op, "name")]
    assert sum(c.op.name == "nn.contrib_dense_pack" for c in inner) >= 5  # a product a step
    assert packing == []


@pytest.mark.parametrize("op, options, message", [
    ("LSTM", dict(activations=["Sigmoid", "Gelu", "Tanh"]), "activation Gelu is not supported"),
    ("GRU", dict(activations=["Sigmoid"]), "activations lists 1 functions; GRU with 1 direction(s) takes 2"),
    ("LSTM", dict(lengths=[5, 3, 5]), "sequence_lens [5, 3, 5] shorter than the sequence (5) are not supported"),
    ("RNN", dict(direction="sideways"), "direction=sideways is not supported"),
])
def test_errors_name_the_node(op, options, message):
    model, _ = rnn_model(op, **options)
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    assert info.value.message.startswith(f"node '/rnn/{op}' ({op}, opset 14): ")
    assert message in info.value.message
