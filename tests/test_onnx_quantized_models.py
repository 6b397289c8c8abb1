"""Models quantized by onnxruntime's own tool, imported, run interpreted and compiled, and
compared with onnxruntime: a small CNN (Conv, Relu, a residual Add, MaxPool, Gemm) and an
attention block with an MLP (MatMul projections, scores and context, Softmax, residual
Add), each quantized by `quantize_static` in the QDQ format (QuantizeLinear /
DequantizeLinear around float ops), in the QOperator format (QLinearConv, QLinearMatMul,
QLinearAdd, QGemm, QLinearSoftmax...; a calibration reader over random inputs), and by
`quantize_dynamic` (DynamicQuantizeLinear, ConvInteger, MatMulInteger).

Tolerance: the static models end in a DequantizeLinear, so their outputs are multiples of
its scale; they may differ by one of those quanta where a tie rounds differently
(QuantizeLinear halves to even in onnxruntime, away from zero here; requantizing is in
float there, by fixed point here).  On these inputs they are equal.  The dynamic models
compute in float after the integer products: float32 rounding apart.

quantize_dynamic is run with reduce_range=True (7-bit int8 weights): with full-range
int8 weights onnxruntime's uint8 x int8 MatMulInteger saturates pairs of products to
int16 on a CPU without VNNI (vpmaddubsw), and differs from the exact product computed
here (test_onnx_qdq.py::test_matmul_integer shows it on one node).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaylens.compiler.frontend.onnx import import_onnx  # noqa: E402
from relaylens.compiler.transform.span_check import spanless  # noqa: E402
from test_onnx_import import jit, run_compiled, run_ort, run_relay  # noqa: E402,F401


def _weight(rng, name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def cnn():
    rng = np.random.default_rng(0)
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             n("Relu", ["c1"], ["r1"], name="relu1"),
             n("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             n("Relu", ["c2"], ["r2"], name="relu2"),
             n("Add", ["r1", "r2"], ["s"], name="residual"),
             n("MaxPool", ["s"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             n("Flatten", ["p"], ["f"], name="flatten"),
             n("Gemm", ["f", "wg", "bg"], ["y"], name="fc", transB=1)]
    weights = [_weight(rng, "w1", (8, 3, 3, 3), 0.3), _weight(rng, "b1", (8,), 0.1),
               _weight(rng, "w2", (8, 8, 3, 3), 0.15), _weight(rng, "b2", (8,), 0.1),
               _weight(rng, "wg", (10, 8 * 8 * 8), 0.05), _weight(rng, "bg", (10,), 0.1)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def attention():
    rng = np.random.default_rng(1)
    n = helper.make_node
    nodes = [n("MatMul", ["x", "wq"], ["q"], name="q_proj"),
             n("MatMul", ["x", "wk"], ["k"], name="k_proj"),
             n("MatMul", ["x", "wv"], ["v"], name="v_proj"),
             n("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
             n("MatMul", ["q", "kt"], ["scores"], name="scores"),
             n("Mul", ["scores", "scale"], ["scaled"], name="scale"),
             n("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1),
             n("MatMul", ["attn", "v"], ["ctx"], name="context"),
             n("MatMul", ["ctx", "wo"], ["o"], name="o_proj"),
             n("Add", ["o", "x"], ["h"], name="residual"),
             n("MatMul", ["h", "w1"], ["m1"], name="fc1"),
             n("Add", ["m1", "b1"], ["m1b"], name="fc1_bias"),
             n("Relu", ["m1b"], ["m1r"], name="relu"),
             n("MatMul", ["m1r", "w2"], ["y"], name="fc2")]
    weights = [_weight(rng, k, (16, 16), 0.3) for k in ("wq", "wk", "wv", "wo")] + [
        numpy_helper.from_array(np.float32(0.25), "scale"), _weight(rng, "w1", (16, 32), 0.3),
        _weight(rng, "b1", (32,), 0.1), _weight(rng, "w2", (32, 16), 0.3)]
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


class RandomInputs:
    """quantize_static's calibration data: 16 standard normal inputs."""

    def __init__(self, shape):
        rng = np.random.default_rng(2)
        self.batches = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(16)])

    def get_next(self):
        return next(self.batches, None)


def quantized(make, how: str, tmp_path):
    m = make()
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    src, dst = tmp_path / "float.onnx", tmp_path / f"{how}.onnx"
    onnx.save(m, src)
    logging.disable(logging.WARNING)  # the tool's advice to pre-process the model
    try:
        if how == "dynamic":
            quantization.quantize_dynamic(src, dst, reduce_range=True)
        else:
            formats = {"qdq": quantization.QuantFormat.QDQ, "qoperator": quantization.QuantFormat.QOperator}
            quantization.quantize_static(src, dst, RandomInputs(shape), quant_format=formats[how])
    finally:
        logging.disable(logging.NOTSET)
    return onnx.load(dst), shape


EXPECTED_OPS = {
    ("cnn", "qdq"): {"QuantizeLinear", "DequantizeLinear", "Conv", "Gemm"},
    ("cnn", "qoperator"): {"QLinearConv", "QLinearAdd", "QGemm"},
    ("cnn", "dynamic"): {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"},
    ("attention", "qdq"): {"QuantizeLinear", "DequantizeLinear", "MatMul"},
    ("attention", "qoperator"): {"QLinearMatMul", "QLinearMul", "QLinearSoftmax", "QLinearAdd"},
    ("attention", "dynamic"): {"DynamicQuantizeLinear", "MatMulInteger"},
}


@pytest.mark.parametrize("how", ["qdq", "qoperator", "dynamic"])
@pytest.mark.parametrize("make", [cnn, attention])
def test_a_quantized_model_matches_onnxruntime(make, how, tmp_path, jit):  # noqa: F811
    m, shape = quantized(make, how, tmp_path)
    assert EXPECTED_OPS[make.__name__, how] <= {n.op_type for n in m.graph.node}
    feeds = {"x": np.random.default_rng(7).standard_normal(shape).astype(np.float32)}
    want = run_ort(m, feeds)[0]
    if how == "dynamic":
        tolerance = 1e-5 * float(np.abs(want).max())
    else:
        last = next(n for n in reversed(m.graph.node) if n.op_type == "DequantizeLinear")
        scale = next(i for i in m.graph.initializer if i.name == last.input[1])
        tolerance = float(numpy_helper.to_array(scale)) * 1.001  # one quantum
    imported = import_onnx(m)
    assert spanless(imported.module) == []
    for got in (run_relay(imported, feeds)[0], run_compiled(m, feeds, jit)[0]):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.max(np.abs(got - want)) <= tolerance
