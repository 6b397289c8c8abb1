"""onnxruntime's QLinearAdd and QLinearConcat (domain com.microsoft) imported as TVM imports
them, interpreted and compiled, against onnxruntime (within one quantization step: both
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


def feeds(m, rng):
    out = {}
    for info in m.graph.input:
        shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
        dtype = np.uint8 if info.type.tensor_type.elem_type == U8 else np.int8
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
        out[info.name] = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return out


@pytest.mark.parametrize("make", [qlinear_add, lambda: qlinear_add(np.int8, TensorProto.INT8), qlinear_concat],
                         ids=["add-uint8", "add-int8", "concat"])
def test_matches_onnxruntime_interpreted_and_compiled(make, jit):  # noqa: F811
    m = make()
    given = feeds(m, np.random.default_rng(0))
    want = run_ort(m, given)
    imported = import_onnx(m)
    for got in (run_relay(imported, given), run_compiled(m, given, jit)):
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert np.max(np.abs(g.astype(np.int32) - w.astype(np.int32))) <= 1
            assert np.mean(g == w) > 0.9


def test_the_imported_text_is_tvms():
    add = print_module(import_onnx(qlinear_add()).module)
    assert "qnn.dequantize(%a, 0.0156863f" in add and 'qnn.quantize(%2, 0.0235294f, 128, out_dtype="uint8")' in add
    concat = print_module(import_onnx(qlinear_concat()).module)
    assert "qnn.concatenate(%0, %1, %2, 0.05f, 128, axis=1)" in concat


def test_another_contrib_op_is_refused_by_name():
    node = helper.make_node("QLinearSigmoid", ["a", "s", "z", "s", "z"], ["y"], domain="com.microsoft", name="qs")
    m = model([node], {"a": [2]}, [2], {"s": np.float32(0.1), "z": np.uint8(0)})
    with pytest.raises(OnnxImportError, match=r"QLinearSigmoid of domain 'com.microsoft' is not supported "
                                              r"\(of that domain: QLinearAdd, QLinearConcat\)"):
        import_onnx(m)
