"""The quantized ops of the ONNX domain (QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger) imported as
TVM imports them, interpreted and compiled, against onnxruntime.

Where the two round differently (a quantized result may then differ by one quantum, and
only there):
- QuantizeLinear and DynamicQuantizeLinear: ONNX rounds a tie (x / scale exactly k + 0.5)
  half to even, qnn.quantize away from zero;
- QLinearConv: onnxruntime requantizes in float (x_scale * w_scale / y_scale, rounded to
  nearest even), TVM's qnn.requantize by int64 fixed point rounding a tie upward; the
  products of two float32 scales also round differently from the fixed-point multiplier.
- QLinearMatMul likewise (TONEAREST in TVM's requantize).
So each quantized output is allowed one quantum (and at most a few percent of its values
off by it); the float outputs of DequantizeLinear and the int32 ones of the *Integer ops
are exact.
"""

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

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
        np.dtype(np.uint8): TensorProto.UINT8,
        np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32}


def model(node, feeds: dict, outputs: dict, inits: dict, opset=21):
    """A one-node graph; `outputs` maps names to (elem type, shape)."""
    graph = helper.make_graph(
        [node], node.op_type.lower(),
        [helper.make_tensor_value_info(n, ELEM[v.dtype], v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info(n, e, s) for n, (e, s) in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def check(m, feeds, jit, quanta=0, share=1.0):  # noqa: F811
    """Interpreted and compiled against onnxruntime: integers within `quanta`, and at
    least `share` of them equal; floats to float32 precision.  Every expression of the
    import has a span."""
    want = run_ort(m, feeds)
    imported = import_onnx(m)
    assert spanless(imported.module) == []  # every expression names its node
    for got in (run_relay(imported, feeds), run_compiled(m, feeds, jit)):
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
            else:
                assert np.max(np.abs(g.astype(np.int64) - w.astype(np.int64)), initial=0) <= quanta
                assert np.mean(g == w) >= share


def qtype(dtype):
    return np.uint8 if dtype == "uint8" else np.int8


def random_q(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


# ---- QuantizeLinear, DequantizeLinear -------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["per-tensor", "per-axis"])
def test_quantize_linear(dtype, per_axis, jit):  # noqa: F811
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)
    q = qtype(dtype)
    scale = np.float32([0.05, 0.02, 0.1]) if per_axis else np.float32(0.03)
    zp = q([10, 0, 3] if per_axis else 7) if dtype == "uint8" else q([-3, 0, 5] if per_axis else -2)
    node = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], name="quant", axis=1)
    m = model(node, {"x": x}, {"y": (ELEM[np.dtype(q)], x.shape)}, {"s": scale, "zp": zp})
    check(m, {"x": x}, jit, quanta=1, share=0.99)


def test_quantize_linear_of_float16(jit):  # noqa: F811
    x = (np.random.default_rng(13).standard_normal((3, 5)) * 40).astype(np.float16)
    node = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], name="quant")
    m = model(node, {"x": x}, {"y": (TensorProto.INT8, x.shape)}, {"s": np.float16(0.7), "zp": np.int8(3)})
    check(m, {"x": x}, jit, quanta=1, share=0.9)


def test_quantize_linear_without_zero_point_is_uint8_and_axis_counts_from_the_end(jit):  # noqa: F811
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="quant", axis=-1)
    m = model(node, {"x": x}, {"y": (TensorProto.UINT8, x.shape)}, {"s": np.float32([0.01, 0.02, 0.03, 0.04])})
    check(m, {"x": x}, jit, quanta=1, share=0.99)
    assert 'axis=1, out_dtype="uint8"' in print_module(import_onnx(m).module)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["per-tensor", "per-axis"])
def test_dequantize_linear(dtype, per_axis, jit):  # noqa: F811
    rng = np.random.default_rng(3)
    np_dtype = np.dtype(dtype).type
    x = random_q(rng, np_dtype, (2, 4, 3)) if dtype != "int32" else \
        rng.integers(-5000, 5000, (2, 4, 3)).astype(np.int32)
    scale = np.float32([0.5, 0.25, 0.125]) if per_axis else np.float32(0.0625)
    zp = np_dtype([1, 2, 3] if per_axis else 4) if dtype != "int32" else np_dtype([0, 0, 0] if per_axis else 0)
    node = helper.make_node("DequantizeLinear", ["x", "s", "zp"], ["y"], name="dequant", axis=2)
    m = model(node, {"x": x}, {"y": (TensorProto.FLOAT, x.shape)}, {"s": scale, "zp": zp})
    check(m, {"x": x}, jit)


def test_opset_10_quantize_dequantize_round_trip(jit):  # noqa: F811
    x = np.random.default_rng(4).standard_normal((5, 6)).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], name="dq")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 6])],
                              [numpy_helper.from_array(np.float32(0.02), "s"),
                               numpy_helper.from_array(np.uint8(128), "zp")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=10)
    want = run_ort(m, {"x": x})[0]
    for got in (run_relay(import_onnx(m), {"x": x})[0], run_compiled(m, {"x": x}, jit)[0]):
        assert np.max(np.abs(got - want)) <= 0.02 + 1e-6  # one quantum, at a tie


# ---- DynamicQuantizeLinear ------------------------------------------------------------------------

@pytest.mark.parametrize("low", [-2.0, 0.5, None], ids=["straddles-0", "positive", "all-zero"])
def test_dynamic_quantize_linear(low, jit):  # noqa: F811
    """All zero (a zero-initialised state, a padded row): onnxruntime's scale is 1, not 0 / 255."""
    x = np.zeros((4, 7), np.float32) if low is None else np.random.default_rng(5).uniform(low, 3.0, (4, 7)).astype(np.float32)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "zp"], name="dyn")
    m = model(node, {"x": x}, {"y": (TensorProto.UINT8, x.shape), "s": (TensorProto.FLOAT, []),
                               "zp": (TensorProto.UINT8, [])}, {})
    check(m, {"x": x}, jit, quanta=1, share=0.97)


# ---- QLinearConv, ConvInteger ---------------------------------------------------------------------

def conv_inits(rng, dtype, per_axis, channels=4, groups=1):
    q = qtype(dtype)
    w = random_q(rng, np.int8 if dtype == "int8" else np.uint8, (channels, 6 // groups, 3, 3))
    w_scale = np.float32(rng.uniform(0.002, 0.01, channels)) if per_axis else np.float32(0.004)
    w_zp = (np.zeros(channels, w.dtype) if dtype == "int8" else w.dtype.type(rng.integers(100, 150, channels))) \
        if per_axis else w.dtype.type(0 if dtype == "int8" else 128)
    return {"xs": np.float32(0.02), "xz": q(120 if dtype == "uint8" else -5), "w": w, "ws": w_scale, "wz": w_zp,
            "ys": np.float32(0.15), "yz": q(100 if dtype == "uint8" else 3),
            "b": rng.integers(-2000, 2000, channels).astype(np.int32)}


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["per-tensor", "per-axis"])
@pytest.mark.parametrize("attrs", [{"pads": [1, 1, 1, 1]}, {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
                                   {"group": 2, "dilations": [2, 1]}], ids=["pads", "same-stride", "groups"])
def test_qlinear_conv(dtype, per_axis, attrs, jit):  # noqa: F811
    rng = np.random.default_rng(6)
    inits = conv_inits(rng, dtype, per_axis, groups=attrs.get("group", 1))
    x = random_q(rng, qtype(dtype), (1, 6, 9, 8))
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            name="qconv", **attrs)
    out_shape = run_ort(model(node, {"x": x}, {"y": (ELEM[x.dtype], None)}, inits), {"x": x})[0].shape
    m = model(node, {"x": x}, {"y": (ELEM[x.dtype], out_shape)}, inits)
    check(m, {"x": x}, jit, quanta=1, share=0.97)


def conv_integer(w, w_zp):
    x = np.zeros((1, 6, 7, 7), np.uint8)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], name="convint", pads=[1, 0, 1, 2])
    return model(node, {"x": x}, {"y": (TensorProto.INT32, [1, w.shape[0], 7, 7])},
                 {"w": w, "xz": np.uint8(131), "wz": w_zp})


def test_conv_integer(jit):  # noqa: F811
    rng = np.random.default_rng(7)
    feeds = {"x": random_q(rng, np.uint8, (1, 6, 7, 7))}
    check(conv_integer(random_q(rng, np.uint8, (4, 6, 3, 3)), np.uint8(127)), feeds, jit)


def test_conv_integer_with_a_zero_point_per_output_channel(jit):  # noqa: F811
    """onnxruntime takes only a per-tensor weight zero point: the expected result is its
    convolution of each output channel with that channel's zero point."""
    rng = np.random.default_rng(7)
    feeds = {"x": random_q(rng, np.uint8, (1, 6, 7, 7))}
    w, w_zp = random_q(rng, np.uint8, (4, 6, 3, 3)), np.uint8([120, 128, 130, 2])
    want = np.concatenate([run_ort(conv_integer(w[c:c + 1], w_zp[c]), feeds)[0] for c in range(4)], axis=1)
    m = conv_integer(w, w_zp)
    for got in (run_relay(import_onnx(m), feeds)[0], run_compiled(m, feeds, jit)[0]):
        np.testing.assert_array_equal(got, want)


# ---- QLinearMatMul, MatMulInteger -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["per-tensor", "per-column"])
@pytest.mark.parametrize("a_shape", [(5, 16), (2, 3, 16), (16,)], ids=["2d", "3d", "1d"])
def test_qlinear_matmul(dtype, per_axis, a_shape, jit):  # noqa: F811
    rng = np.random.default_rng(8)
    q = qtype(dtype)
    a = random_q(rng, q, a_shape)
    b = random_q(rng, q, (16, 6))
    inits = {"as": np.float32(0.03), "az": q(128 if dtype == "uint8" else 1), "b": b,
             "bs": np.float32(rng.uniform(0.01, 0.03, 6)) if per_axis else np.float32(0.02),
             "bz": (q(rng.integers(120, 136, 6)) if dtype == "uint8" else np.zeros(6, q)) if per_axis
             else q(125 if dtype == "uint8" else -2),
             "ys": np.float32(0.9), "yz": q(128 if dtype == "uint8" else 0)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")
    m = model(node, {"a": a}, {"y": (ELEM[a.dtype], (*a_shape[:-1], 6))}, inits)
    check(m, {"a": a}, jit, quanta=1, share=0.97)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("shapes", [((2, 3, 16), (2, 16, 5)), ((2, 1, 4, 16), (3, 16, 5))],
                         ids=["3d", "broadcast-4d"])
def test_qlinear_matmul_of_two_activations(dtype, shapes, jit):  # noqa: F811
    """A batched B (attention's scores and context) is a qnn.batch_matmul."""
    rng = np.random.default_rng(11)
    q = qtype(dtype)
    feeds = {"a": random_q(rng, q, shapes[0]), "b": random_q(rng, q, shapes[1])}
    inits = {"as": np.float32(0.03), "az": q(128 if dtype == "uint8" else 1), "bs": np.float32(0.02),
             "bz": q(125 if dtype == "uint8" else -2), "ys": np.float32(0.9), "yz": q(128 if dtype == "uint8" else 0)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")
    out_shape = np.broadcast_shapes(shapes[0][:-2], shapes[1][:-2]) + (shapes[0][-2], 5)
    m = model(node, feeds, {"y": (ELEM[np.dtype(q)], out_shape)}, inits)
    check(m, feeds, jit, quanta=1, share=0.97)
    assert "qnn.batch_matmul(" in print_module(import_onnx(m).module)


@pytest.mark.parametrize("b_dtype", [np.uint8, np.int8])
def test_matmul_integer(b_dtype, jit):  # noqa: F811
    """quantize_dynamic's product: uint8 activations, uint8 or int8 weights, per-column weight
    zero points.  int8 weights are kept to 7 bits (quantize_dynamic's reduce_range): on a CPU
    without VNNI onnxruntime multiplies uint8 by int8 with vpmaddubsw, which saturates the sum
    of two products to int16, so with full-range weights it is off by thousands where this
    (exact) result is not."""
    rng = np.random.default_rng(9)
    a = random_q(rng, np.uint8, (2, 3, 10))
    b = random_q(rng, b_dtype, (10, 5)) if b_dtype == np.uint8 else rng.integers(-64, 64, (10, 5)).astype(np.int8)
    inits = {"b": b, "az": np.uint8(129), "bz": b_dtype([1, 2, 3, 4, 5])}
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], name="mmint")
    m = model(node, {"a": a}, {"y": (TensorProto.INT32, (2, 3, 5))}, inits)
    check(m, {"a": a}, jit)


# ---- the imported text, its spans, and what is refused ---------------------------------------------

def test_the_imported_text_is_tvms_and_every_expression_has_the_nodes_span():
    rng = np.random.default_rng(10)
    x = random_q(rng, np.uint8, (1, 6, 5, 5))
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], name="qconv")
    imported = import_onnx(model(node, {"x": x}, {"y": (TensorProto.UINT8, [1, 4, 3, 3])},
                                 conv_inits(rng, "uint8", False)))
    assert spanless(imported.module) == []
    text = print_module(imported.module)
    assert ("qnn.conv2d(%x, %w, 120, 128, 0.02f, 0.004f, kernel_size=[3, 3], channels=4, strides=[1, 1], "
            "padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)") in text, text
    assert "multiply(0.02f, 0.004f)" in text, text
    assert 'qnn.requantize(%1, %2, 0, 0.15f, 100, axis=1, out_dtype="uint8")' in text, text
    assert "/* span=qconv:0:0 */;\n  %1 = nn.bias_add" in print_module(imported.module, spans=True)


def quantize_node(**attrs):
    return helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], name="q1", **attrs)


@pytest.mark.parametrize("zp, elem, why", [
    (helper.make_tensor("zp", TensorProto.INT4, [], [1]), TensorProto.INT4, "tensors of type INT4 are not supported"),
    (helper.make_tensor("zp", TensorProto.FLOAT8E4M3FN, [], [0.0]), TensorProto.FLOAT8E4M3FN,
     "tensors of type FLOAT8E4M3FN are not supported")], ids=["int4", "float8"])
def test_an_unsupported_zero_point_type_is_refused_at_the_node(zp, elem, why):
    graph = helper.make_graph([quantize_node()], "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", elem, [4])],
                              [numpy_helper.from_array(np.float32(0.1), "s"), zp])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(OnnxImportError, match=rf"node 'q1' \(QuantizeLinear, opset 21\): input 2 "
                                              rf"\(initializer 'zp'\): {why}"):
        import_onnx(m)


def test_blocked_quantization_is_refused_at_the_node():
    x = np.zeros((4, 6), np.float32)
    m = model(quantize_node(axis=1, block_size=2), {"x": x}, {"y": (TensorProto.UINT8, x.shape)},
              {"s": np.full((4, 3), 0.1, np.float32), "zp": np.zeros((4, 3), np.uint8)})
    with pytest.raises(OnnxImportError, match=r"node 'q1' \(QuantizeLinear, opset 21\): blocked quantization "
                                              r"\(block_size=2\) is not supported"):
        import_onnx(m)


def test_a_4_bit_output_dtype_is_refused_at_the_node():
    x = np.zeros((4,), np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q1", output_dtype=TensorProto.UINT4)
    m = model(node, {"x": x}, {"y": (TensorProto.UINT4, x.shape)}, {"s": np.float32(0.1)})
    with pytest.raises(OnnxImportError, match=r"node 'q1' \(QuantizeLinear, opset 21\): output_dtype UINT4 is "
                                              r"not supported"):
        import_onnx(m)


def test_a_per_axis_scale_along_an_axis_of_unknown_extent():
    x = np.random.default_rng(12).standard_normal((3, 4)).astype(np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], name="quant", axis=0)
    m = model(node, {"x": x}, {"y": (TensorProto.INT8, ["N", 4])}, {"s": np.float32([0.1, 0.2, 0.3]),
                                                                   "zp": np.int8([0, 1, 2])})
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    want = run_ort(m, {"x": x})[0]
    got = run_relay(import_onnx(m), {"x": x})[0]
    assert np.max(np.abs(got.astype(np.int32) - want)) <= 1


def bad(node, feeds, inits, out_elem=TensorProto.UINT8):
    return model(node, feeds, {"y": (out_elem, None)}, inits)


@pytest.mark.parametrize("m, message", [
    (bad(helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], name="n", axis=1),
         {"x": np.zeros((2, 3), np.float32)}, {"s": np.float32([0.1, 0.2]), "zp": np.uint8(0)}),
     r"node 'n' \(QuantizeLinear, opset 21\): y_scale \(input 1\) must be a scalar or a vector of 3 values "
     r"\(one per channel\), found shape \[2\]"),
    (bad(helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], name="n"),
         {"x": np.zeros((2, 3), np.float32)}, {"s": np.full((2, 3), 0.1, np.float32), "zp": np.uint8(0)}),
     r"node 'n' \(QuantizeLinear, opset 21\): y_scale \(input 1\) must be a scalar or a vector"),
    (bad(helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="n"), {"x": np.zeros((2, 3), np.float32)},
         {"s": np.float32(0.1)}, TensorProto.FLOAT),
     r"node 'n' \(DequantizeLinear, opset 21\): dequantizing float32 is not supported"),
    (bad(helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"], name="n"),
         {"x": np.zeros((2, 3), np.int32)}, {}),
     r"node 'n' \(DynamicQuantizeLinear, opset 21\): x must be float32, found int32"),
    (bad(helper.make_node("QLinearConv", ["x", "s", "z", "w", "s", "z", "s", "z"], ["y"], name="n"),
         {"x": np.zeros((1, 2, 4, 4), np.float32)}, {"s": np.float32(0.1), "z": np.uint8(0),
                                                     "w": np.zeros((3, 2, 1, 1), np.uint8)}),
     r"node 'n' \(QLinearConv, opset 21\): x \(input 0\) must be int8 or uint8, found float32"),
    (bad(helper.make_node("QLinearConv", ["x", "s", "z", "w", "ws", "z", "s", "z"], ["y"], name="n"),
         {"x": np.zeros((1, 2, 4, 4), np.uint8)}, {"s": np.float32(0.1), "z": np.uint8(0),
                                                   "w": np.zeros((3, 2, 1, 1), np.uint8),
                                                   "ws": np.float32([0.1, 0.2])}),
     r"node 'n' \(QLinearConv, opset 21\): w_scale \(input 4\) must be a scalar or a vector of 3 values"),
    (bad(helper.make_node("ConvInteger", ["x", "w"], ["y"], name="n"),
         {"x": np.zeros((1, 2, 4), np.uint8)}, {"w": np.zeros((3, 2, 1), np.uint8)}, TensorProto.INT32),
     r"node 'n' \(ConvInteger, opset 21\): only 2-D convolutions are supported"),
    (bad(helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"], name="n"),
         {"a": np.zeros((2, 4), np.uint8)}, {"b": np.zeros((4, 3), np.uint8), "az": np.uint8([1, 2])},
         TensorProto.INT32),
     r"node 'n' \(MatMulInteger, opset 21\): a_zero_point \(input 2\) must be a scalar, found shape \[2\]"),
], ids=["scale-length", "scale-2d", "dequantize-float", "dynamic-int", "conv-float", "conv-w-scale", "conv-1d",
        "matmul-per-row-zp"])
def test_bad_input_is_refused_at_the_node(m, message):
    with pytest.raises(OnnxImportError, match=message):
        import_onnx(m)
