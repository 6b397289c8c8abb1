"""onnxruntime's quantized contrib ops (domain com.microsoft: QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat, QGemm) imported as TVM
imports them, interpreted and compiled, against onnxruntime (within one quantization step: both
round the same real numbers, onnxruntime halves to even, TVM's quantize away from zero,
its requantize upward)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaylens.compiler.frontend.onnx import OnnxImportError, import_onnx  # noqa: E402
from relaylens.compiler.printer import print_module  # noqa: E402
from relaylens.compiler.transform.span_check import spanless  # noqa: E402
from test_onnx_import import jit, run_compiled, run_ort, run_relay  # noqa: E402,F401

U8 = TensorProto.UINT8


def model(nodes, inputs: dict, output_shape, inits, elem=U8):
    graph = helper.make_graph(nodes, "qlinear", [helper.make_tensor_value_info(n, elem, s) for n, s in inputs.items()],
                              [helper.make_tensor_value_info("y", elem, output_shape)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def qlinear_add(dtype=np.uint8, elem=U8):
    inits = {"sa": np.float32(0.0156863), "za": dtype(127 if dtype == np.uint8 else -1),
             "sb": np.float32(0.0117647), "zb": dtype(85 if dtype == np.uint8 else 3),
             "sc": np.float32(0.0235294), "zc": dtype(128 if dtype == np.uint8 else 0)}
    node = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"], domain="com.microsoft",
                            name="qadd")
    return model([node], {"a": [2, 3, 8], "b": [3, 8]}, [2, 3, 8], inits, elem)


def qlinear_concat():
    inits = {"sy": np.float32(0.05), "zy": np.uint8(128), "s1": np.float32(0.05), "z1": np.uint8(128),
             "s2": np.float32(0.1), "z2": np.uint8(120)}
    node = helper.make_node("QLinearConcat", ["sy", "zy", "a", "s1", "z1", "b", "s2", "z2"], ["y"],
                            domain="com.microsoft", name="qconcat", axis=1)
    return model([node], {"a": [2, 3, 4], "b": [2, 5, 4]}, [2, 8, 4], inits)


def qlinear_mul():
    inits = {"sa": np.float32(0.02), "za": np.uint8(120), "sb": np.float32(0.03), "zb": np.uint8(130),
             "sy": np.float32(0.05), "zy": np.uint8(128)}
    node = helper.make_node("QLinearMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"], domain="com.microsoft",
                            name="qmul")
    return model([node], {"a": [2, 3, 8], "b": [8]}, [2, 3, 8], inits)


def qlinear_unary(op_type, **attrs):
    def make():
        inits = {"sx": np.float32(0.05), "zx": np.int8(-3), "sy": np.float32(1 / 256), "zy": np.int8(-128)}
        if op_type == "QLinearLeakyRelu":
            inits["sy"], inits["zy"] = np.float32(0.04), np.int8(10)
        node = helper.make_node(op_type, ["a", "sx", "zx", "sy", "zy"], ["y"], domain="com.microsoft", name="q",
                                **attrs)
        return model([node], {"a": [3, 10]}, [3, 10], inits, TensorProto.INT8)
    return make


def qlinear_pool(op_type, **attrs):
    def make():
        inits = {"sx": np.float32(0.05), "zx": np.uint8(100), "sy": np.float32(0.03), "zy": np.uint8(110)}
        node = helper.make_node(op_type, ["a", "sx", "zx", "sy", "zy"], ["y"], domain="com.microsoft", name="qpool",
                                **attrs)
        out = run_ort(model([node], {"a": [1, 3, 7, 6]}, None, inits), {"a": np.zeros((1, 3, 7, 6), np.uint8)})[0]
        return model([node], {"a": [1, 3, 7, 6]}, list(out.shape), inits)
    return make


def qgemm(per_column=False, float_out=False, trans_b=1):
    """onnxruntime's QGemm as quantize_static writes it for a Gemm (uint8 A, int8 B, int32 C)."""
    def make():
        rng = np.random.default_rng(5)
        b = rng.integers(-64, 64, (6, 12) if trans_b else (12, 6)).astype(np.int8)  # 7 bits: see test_onnx_qdq.py
        inits = {"sa": np.float32(0.02), "za": np.uint8(125), "b": b,
                 "sb": np.float32(rng.uniform(0.01, 0.02, 6)) if per_column else np.float32(0.015),
                 "zb": np.zeros(6, np.int8) if per_column else np.int8(0),
                 "c": rng.integers(-3000, 3000, 6).astype(np.int32), "sy": np.float32(0.3), "zy": np.uint8(128)}
        names = ["a", "sa", "za", "b", "sb", "zb", "c"] + ([] if float_out else ["sy", "zy"])
        node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", name="qgemm", transB=trans_b,
                                alpha=0.5)
        graph = helper.make_graph([node], "qgemm", [helper.make_tensor_value_info("a", U8, [4, 12])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT if float_out else U8, [4, 6])],
                                  [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
        return helper.make_model(graph, opset_imports=opsets, ir_version=10)
    return make


def feeds(m, rng):
    out = {}
    for info in m.graph.input:
        shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
        dtype = np.uint8 if info.type.tensor_type.elem_type == U8 else np.int8
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
        out[info.name] = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return out


@pytest.mark.parametrize("make", [
    qlinear_add, lambda: qlinear_add(np.int8, TensorProto.INT8), qlinear_concat, qlinear_mul,
    qlinear_unary("QLinearSigmoid"), qlinear_unary("QLinearLeakyRelu", alpha=0.1),
    qlinear_unary("QLinearSoftmax", axis=-1, opset=13), qlinear_pool("QLinearGlobalAveragePool"),
    qlinear_pool("QLinearAveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    qlinear_pool("QLinearAveragePool", kernel_shape=[2, 2], count_include_pad=1, pads=[0, 0, 1, 1]),
    qgemm(), qgemm(per_column=True), qgemm(trans_b=0),
    qgemm(float_out=True)],
    ids=["add-uint8", "add-int8", "concat", "mul", "sigmoid", "leaky-relu", "softmax", "global-avg-pool",
         "avg-pool", "avg-pool-count-pad", "gemm", "gemm-per-column",
         "gemm-b-not-transposed", "gemm-float-out"])
def test_matches_onnxruntime_interpreted_and_compiled(make, jit):  # noqa: F811
    """QGemm requantizes in float in onnxruntime, by fixed point here (one quantum apart at
    a tie); its float output is exact up to float32 rounding."""
    m = make()
    given = feeds(m, np.random.default_rng(0))
    want = run_ort(m, given)
    imported = import_onnx(m)
    assert spanless(imported.module) == []
    for got in (run_relay(imported, given), run_compiled(m, given, jit)):
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=1e-6)
                continue
            assert np.max(np.abs(g.astype(np.int32) - w.astype(np.int32))) <= 1
            assert np.mean(g == w) > 0.9


def test_the_imported_text_is_tvms():
    add = print_module(import_onnx(qlinear_add()).module)
    assert "qnn.dequantize(%a, 0.0156863f" in add and 'qnn.quantize(%2, 0.0235294f, 128, out_dtype="uint8")' in add
    concat = print_module(import_onnx(qlinear_concat()).module)
    assert "qnn.concatenate(%0, %1, %2, 0.05f, 128, axis=1)" in concat


def test_another_contrib_op_is_refused_by_name():
    node = helper.make_node("QLinearReduceMean", ["a", "s", "z", "s", "z"], ["y"], domain="com.microsoft",
                            name="qs")
    m = model([node], {"a": [1, 2, 3, 3]}, [1, 2, 1, 1], {"s": np.float32(0.1), "z": np.uint8(0)})
    with pytest.raises(OnnxImportError, match=r"QLinearReduceMean of domain 'com.microsoft' is not supported "
                                              r"\(of that domain: QGemm, QLinearAdd, QLinearAveragePool, "
                                              r"QLinearConcat, QLinearGlobalAveragePool, QLinearLeakyRelu, "
                                              r"QLinearMul, QLinearSigmoid, QLinearSoftmax\)"):
        import_onnx(m)
