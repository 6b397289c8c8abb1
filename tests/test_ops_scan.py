"""cumsum and cumprod (ops/scan.py): shapes and errors as TVM's ScanopRel gives them, the
numpy reference (exclusive, dtype, flattened), the text format, and ONNX's CumProd
against onnxruntime, interpreted and compiled.  Compiled = reference is in lower_cases_nn
(test_lower_compiled); ONNX's own CumProd cases in test_onnx_node."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from test_onnx_import import Graph, calls, check_against_ort, layers  # noqa: E402
from test_typing import check, typed  # noqa: E402

from relaylens.compiler.ir.types import ANY, TensorType  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402
from relaylens.compiler.ops import AttrError, OpPattern, OpTypeError, get_op  # noqa: E402
from relaylens.compiler.parser import parse  # noqa: E402
from relaylens.compiler.printer import print_module  # noqa: E402


def T(*shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_shapes_dtypes_and_pattern(op):
    scan = get_op(op)
    assert scan.infer([T(2, 3)], {"axis": 1}) == T(2, 3)
    assert scan.infer([T(2, 3)], {}) == T(6)  # no axis: flattened
    assert scan.infer([T(2, ANY)], {}) == T(ANY)
    assert scan.infer([T(2, 3, dtype="int8")], {"axis": -1, "dtype": "int64"}) == T(2, 3, dtype="int64")
    assert scan.pattern is OpPattern.OPAQUE


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_errors_name_the_axis_and_the_dtype(op):
    with pytest.raises(OpTypeError) as info:
        get_op(op).infer([T(2, 3)], {"axis": 2})
    assert info.value.message == f"{op}: axis 2 is out of range for a tensor of rank 2 (expected -2 to 1)"
    with pytest.raises(OpTypeError) as info:
        get_op(op).infer([T(2, 3)], {"axis": 0, "dtype": "int33"})
    assert info.value.message.startswith("unknown dtype 'int33'")  # a file's report puts the op in front, once
    with pytest.raises(AttrError):
        get_op(op).infer([T(2, 3)], {"axis": 0, "exclusive": "yes"})


def test_references():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    assert get_op("cumprod").evaluate([x], {"axis": 1}).tolist() == [[1, 2, 6], [4, 20, 120]]
    assert get_op("cumprod").evaluate([x], {"axis": 0, "exclusive": True}).tolist() == [[1, 1, 1], [1, 2, 3]]
    assert get_op("cumsum").evaluate([x], {"axis": 1, "exclusive": True}).tolist() == [[0, 1, 3], [0, 4, 9]]
    assert get_op("cumsum").evaluate([x], {}).tolist() == [1, 3, 6, 10, 15, 21]
    big = get_op("cumprod").evaluate([np.full(3, 100, np.int8)], {"axis": 0, "dtype": "int64"})
    assert big.dtype == np.int64 and big.tolist() == [100, 10_000, 1_000_000]


def test_an_error_is_reported_at_its_call_in_a_file():
    _, found = check("def @main(%a: Tensor[(2, 3), float32]) {\n"
                     "  cumprod(%a, axis=3)\n"
                     "}\n")
    assert [(line, col, severity) for line, col, severity, _ in found] == [(2, 3, "error")]
    assert "cumprod: axis 3 is out of range" in found[0][3]


def test_printed_and_read_back():
    text = ('#[version = "0.0.5"]\n'
            'def @main(%a: Tensor[(2, 3), float32]) {\n'
            '  %0 = cumprod(%a, axis=1, exclusive=True);\n'
            '  cumsum(%0, dtype="float64")\n'
            '}\n')
    printed = print_module(typed(text.split("\n", 1)[1]))
    assert "cumprod(%a, axis=1, exclusive=True)" in printed and 'cumsum(%0, dtype="float64")' in printed
    assert print_module(parse(printed, "again.relay").module) == printed


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_onnx_cumprod_matches_onnxruntime(exclusive, reverse):
    g = Graph(3)
    out = g.node("CumProd", ["x", g.init("axis", np.array(-2, np.int64))], name="/decay/CumProd",
                 exclusive=exclusive, reverse=reverse)
    model = g.model({"x": [2, 5, 3]}, out, opset=26)
    x = np.random.default_rng(4).uniform(0.5, 1.5, (2, 5, 3)).astype(np.float32)
    imported = check_against_ort(model, {"x": x}, JIT(), rtol=1e-5, atol=1e-6)
    ops = [c.op.name for c in calls(imported.module)]
    assert ops == (["reverse", "cumprod", "reverse"] if reverse else ["cumprod"])
    assert all(layers(c) == ["/decay/CumProd"] for c in calls(imported.module))
    (scan,) = [c for c in calls(imported.module) if c.op.name == "cumprod"]
    attrs = get_op("cumprod").normalize_attrs(scan.attrs)
    assert attrs.axis == 1 and attrs.exclusive == bool(exclusive)
