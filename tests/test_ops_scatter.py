"""scatter_elements and scatter_nd (ops/scatter.py): shapes and errors of the relations,
the numpy reference (reductions, duplicates, negative and out-of-range indices), the text
format, and ONNX's ScatterElements and ScatterND against onnxruntime, interpreted and
compiled.  Compiled = reference on every reduction is in lower_cases_nn
(test_lower_compiled); ONNX's own cases in test_onnx_node."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402
from test_onnx_import import Graph, calls, check_against_ort, layers  # noqa: E402
from test_typing import check, typed  # noqa: E402

from relaylens.compiler.frontend.onnx import import_onnx  # noqa: E402
from relaylens.compiler.frontend.onnx.errors import OnnxImportError  # noqa: E402
from relaylens.compiler.ir.types import ANY, TensorType  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402
from relaylens.compiler.ops import OpPattern, OpTypeError, get_op  # noqa: E402
from relaylens.compiler.parser import parse  # noqa: E402
from relaylens.compiler.printer import print_module  # noqa: E402


def T(*shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def fails(op, types, attrs, message):
    with pytest.raises(OpTypeError) as info:
        get_op(op).infer(types, attrs)
    assert info.value.message == message


def test_results_have_datas_type_and_the_ops_are_opaque():
    assert get_op("scatter_elements").infer([T(4, 5), T(2, 3, dtype="int64"), T(2, 3)], {"axis": 1}) == T(4, 5)
    assert get_op("scatter_nd").infer([T(2, 8, 4), T(2, 3, dtype="int32"), T(3, 4)], {"mode": "add"}) == T(2, 8, 4)
    assert get_op("scatter_nd").infer([T(ANY, 4), T(1, ANY, dtype="int64"), T(ANY, 4)], {}) == T(ANY, 4)
    assert get_op("scatter_elements").pattern is OpPattern.OPAQUE and get_op("scatter_nd").pattern is OpPattern.OPAQUE


@pytest.mark.parametrize("types, attrs, message", [
    ([T(4, 5), T(2, 3), T(2, 3)], {},
     "scatter_elements: indices must be an integer tensor, found Tensor[(2, 3), float32]"),
    ([T(4, 5), T(2, 3, dtype="int64"), T(2, 3, dtype="float16")], {},
     "scatter_elements: updates have dtype float16 but data Tensor[(4, 5), float32]"),
    ([T(4, 5), T(3, dtype="int64"), T(3)], {},
     "scatter_elements: indices have rank 1 but data Tensor[(4, 5), float32] has rank 2"),
    ([T(4, 5), T(2, 3, dtype="int64"), T(2, 4)], {},
     "scatter_elements: updates Tensor[(2, 4), float32] and indices Tensor[(2, 3), int64] must have one shape"),
    ([T(4, 5), T(2, 6, dtype="int64"), T(2, 6)], {"axis": 0},
     "scatter_elements: indices have extent 6 on axis 1, more than data Tensor[(4, 5), float32]"),
    ([T(4, 5), T(2, 3, dtype="int64"), T(2, 3)], {"axis": 2},
     "scatter_elements: axis 2 is out of range for a tensor of rank 2 (expected -2 to 1)"),
    ([T(4, 5), T(2, 3, dtype="int64"), T(2, 3)], {"reduction": "mean"},
     "scatter_elements: reduction \"mean\" is not supported (expected one of update, add, mul, min, max)"),
])
def test_scatter_elements_errors(types, attrs, message):
    fails("scatter_elements", types, attrs, message)


@pytest.mark.parametrize("types, attrs, message", [
    ([T(4, 5), T(dtype="int64"), T()], {},
     "scatter_nd: indices must have an axis of index tuples, found a scalar int64"),
    ([T(4, 5), T(ANY, 2, dtype="int64"), T(2)], {},
     "scatter_nd: the first axis of indices Tensor[(?, 2), int64] must be static"),
    ([T(4, 5), T(0, 2, dtype="int64"), T(2, 4, 5)], {},
     "scatter_nd: indices Tensor[(0, 2), int64] hold index tuples of no axes"),
    ([T(4, 5), T(3, 2, dtype="int64"), T(2)], {},
     "scatter_nd: index tuples of 3 axes for data Tensor[(4, 5), float32] of rank 2"),
    ([T(4, 5), T(1, 3, dtype="int64"), T(3, 4)], {},
     "scatter_nd: updates Tensor[(3, 4), float32] must have shape (3, 5): indices' Tensor[(1, 3), int64] "
     "axes after the first, then data's Tensor[(4, 5), float32] from axis 1"),
    ([T(4, 5), T(1, 3, dtype="int64"), T(3, 5)], {"mode": "sub"},
     "scatter_nd: mode \"sub\" is not supported (expected one of update, add, mul, min, max)"),
])
def test_scatter_nd_errors(types, attrs, message):
    fails("scatter_nd", types, attrs, message)


def test_scatter_elements_reference():
    data = np.arange(10, dtype=np.float32).reshape(2, 5)
    indices = np.array([[1, 1, -1], [7, 0, 3]])  # a duplicate, a negative, one out of range
    updates = np.array([[10, 20, 30], [40, 50, 60]], np.float32)
    run = lambda reduction: get_op("scatter_elements").evaluate(  # noqa: E731
        [data, indices, updates], {"axis": 1, "reduction": reduction}).tolist()
    assert run("update") == [[0, 20, 2, 3, 30], [50, 6, 7, 60, 9]]  # the last of the duplicates
    assert run("add") == [[0, 31, 2, 3, 34], [55, 6, 7, 68, 9]]
    assert run("mul") == [[0, 200, 2, 3, 120], [250, 6, 7, 480, 9]]
    assert run("min") == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert run("max") == [[0, 20, 2, 3, 30], [50, 6, 7, 60, 9]]


def test_scatter_nd_reference():
    data = np.zeros((3, 2), np.int32)
    indices = np.array([[0, 2, 0, 5]])  # rows 0, 2, 0 again, and 5 (out of range)
    updates = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.int32)
    assert get_op("scatter_nd").evaluate([data, indices, updates], {}).tolist() == [[5, 6], [0, 0], [3, 4]]
    assert get_op("scatter_nd").evaluate([data, indices, updates], {"mode": "add"}).tolist() == [[6, 8], [0, 0], [3, 4]]
    pairs = np.array([[1, -1], [0, 1]])  # (1, 0) and (-1 = 2, 1)
    got = get_op("scatter_nd").evaluate([data, pairs, np.array([9, 8], np.int32)], {})
    assert got.tolist() == [[0, 0], [9, 0], [0, 8]]


def test_an_error_is_reported_at_its_call_in_a_file():
    _, found = check("def @main(%d: Tensor[(4, 5), float32], %i: Tensor[(1, 3), int64], "
                     "%u: Tensor[(3, 4), float32]) {\n"
                     "  scatter_nd(%d, %i, %u)\n"
                     "}\n")
    assert [(line, col, severity) for line, col, severity, _ in found] == [(2, 3, "error")]
    assert "scatter_nd: updates Tensor[(3, 4), float32] must have shape (3, 5)" in found[0][3]


def test_printed_and_read_back():
    text = ('#[version = "0.0.5"]\n'
            'def @main(%d: Tensor[(4, 5), float32], %i: Tensor[(4, 5), int64], %j: Tensor[(1, 3), int64], '
            '%u: Tensor[(3, 5), float32]) {\n'
            '  %0 = scatter_elements(%d, %i, %d, axis=1, reduction="add");\n'
            '  scatter_nd(%0, %j, %u, mode="update")\n'
            '}\n')
    printed = print_module(typed(text.split("\n", 1)[1]))
    assert 'scatter_elements(%d, %i, %d, axis=1, reduction="add")' in printed
    assert 'scatter_nd(%0, %j, %u, mode="update")' in printed
    assert print_module(parse(printed, "again.relay").module) == printed


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_onnx_scatter_elements_matches_onnxruntime(reduction):
    g = Graph(3)
    indices = g.init("indices", np.array([[1, 1, -1], [4, 0, 3], [2, 2, 2]], np.int64))  # duplicates
    out = g.node("ScatterElements", ["x", indices, "u"], name="/mask/ScatterElements", axis=1,
                 reduction=reduction)
    model = g.model({"x": [4, 5], "u": [3, 3]}, g.node("Relu", [out], name="/relu"), opset=18)
    rng = np.random.default_rng(7)
    feeds = {"x": rng.standard_normal((4, 5)).astype(np.float32), "u": rng.standard_normal((3, 3)).astype(np.float32)}
    imported = check_against_ort(model, feeds, JIT(), rtol=1e-5, atol=1e-6)
    (scatter,) = [c for c in calls(imported.module) if c.op.name == "scatter_elements"]
    assert layers(scatter) == ["/mask/ScatterElements"]
    attrs = get_op("scatter_elements").normalize_attrs(scatter.attrs)
    assert (attrs.axis, attrs.reduction) == (1, "update" if reduction == "none" else reduction)


def test_onnx_scatter_nd_kv_cache_update_matches_onnxruntime():
    """A KV cache (batch, heads, positions, dim) written at positions 2 and 5: index pairs
    (batch, head) select whole (positions, dim) slices; then an element-wise ScatterND
    with reduction add at (b, h, p) triples."""
    g = Graph(3)
    pairs = g.init("pairs", np.array([[0, 1], [1, 0], [-1, -2]], np.int64))  # (3, 2): three slices
    cache = g.node("ScatterND", ["cache", pairs, "new"], name="/kv/ScatterND")
    triples = g.init("triples", np.array([[[0, 0, 2], [1, 1, 5]], [[0, 0, 2], [1, 0, 7]]], np.int64))  # (2, 2, 3)
    out = g.node("ScatterND", [cache, triples, "bump"], name="/kv/ScatterND_1", reduction="add")
    model = g.model({"cache": [2, 2, 8, 4], "new": [3, 8, 4], "bump": [2, 2, 4]}, out, opset=18)
    rng = np.random.default_rng(1)
    feeds = {"cache": rng.standard_normal((2, 2, 8, 4)).astype(np.float32),
             "new": rng.standard_normal((3, 8, 4)).astype(np.float32),
             "bump": rng.standard_normal((2, 2, 4)).astype(np.float32)}
    imported = check_against_ort(model, feeds, JIT(), rtol=1e-5, atol=1e-6)
    scatters = [c for c in calls(imported.module) if c.op.name == "scatter_nd"]
    assert [layers(c) for c in scatters] == [["/kv/ScatterND"], ["/kv/ScatterND_1"]]
    assert [get_op("scatter_nd").normalize_attrs(c.attrs).mode for c in scatters] == ["update", "add"]


def test_onnx_scatter_nd_of_int32_data_matches_onnxruntime():
    g = Graph(3)
    out = g.node("ScatterND", ["x", g.init("at", np.array([[3], [0], [3]], np.int64)), "u"],
                 name="/ids/ScatterND", reduction="mul")
    model = g.model({"x": [5, 2], "u": [3, 2]}, out, opset=18, elem=TensorProto.INT32)
    feeds = {"x": np.arange(10, dtype=np.int32).reshape(5, 2), "u": np.array([[2, 3], [4, 5], [6, 7]], np.int32)}
    check_against_ort(model, feeds, JIT(), rtol=0, atol=0)


def test_onnx_unknown_reduction_is_refused_at_the_node():
    g = Graph(3)
    out = g.node("ScatterElements", ["x", g.init("i", np.zeros((1, 2), np.int64)), "u"],
                 name="/bad/ScatterElements", reduction="mean")
    model = g.model({"x": [2, 2], "u": [1, 2]}, out, opset=18)
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    assert "/bad/ScatterElements" in str(info.value)
    assert 'reduction="mean" is not supported (none, add, mul, max or min)' in str(info.value)
