"""bitwise_and / bitwise_or / bitwise_xor / bitwise_not (ops/binary.py, ops/elemwise.py):
the relation (integers or bool only), the numpy reference, the text format, and ONNX's
Bitwise* against onnxruntime, interpreted and compiled.  Compiled = reference on every
dtype is in lower_cases_elemwise (test_lower_compiled); ONNX's own cases in test_onnx_node."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402
from test_onnx_import import Graph, calls, check_against_ort, layers  # noqa: E402
from test_typing import check, typed  # noqa: E402

from relaylens.compiler.ir.types import TensorType  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402
from relaylens.compiler.ops import OpPattern, OpTypeError, get_op  # noqa: E402
from relaylens.compiler.parser import parse  # noqa: E402
from relaylens.compiler.printer import print_module  # noqa: E402

BINARY = ("bitwise_and", "bitwise_or", "bitwise_xor")


def T(*shape, dtype="int32"):
    return TensorType(tuple(shape), dtype)


@pytest.mark.parametrize("op", BINARY)
def test_binary_broadcasts_and_keeps_the_dtype(op):
    assert get_op(op).infer([T(2, 1, 4, dtype="uint8"), T(3, 1, dtype="uint8")], {}) == T(2, 3, 4, dtype="uint8")
    assert get_op(op).infer([T(3, dtype="bool"), T(3, dtype="bool")], {}) == T(3, dtype="bool")
    assert get_op(op).pattern is OpPattern.BROADCAST


def test_not_keeps_the_type_and_is_elementwise():
    assert get_op("bitwise_not").infer([T(2, 3, dtype="int64")], {}) == T(2, 3, dtype="int64")
    assert get_op("bitwise_not").pattern is OpPattern.ELEMWISE


@pytest.mark.parametrize("op", BINARY)
def test_floats_and_mixed_dtypes_are_refused(op):
    with pytest.raises(OpTypeError) as info:
        get_op(op).infer([T(3, dtype="float32"), T(3, dtype="float32")], {})
    assert info.value.message == f"{op} expects integer or bool operands, found Tensor[(3), float32]"
    with pytest.raises(OpTypeError) as info:
        get_op(op).infer([T(3, dtype="int32"), T(3, dtype="int64")], {})
    assert "int64" in info.value.message and "int32" in info.value.message


def test_not_refuses_floats():
    with pytest.raises(OpTypeError) as info:
        get_op("bitwise_not").infer([T(3, dtype="float16")], {})
    assert info.value.message == "bitwise_not expects an integer or bool tensor, found Tensor[(3), float16]"


def test_references_work_on_the_bits():
    a = np.array([0xF0, 0x0F, 0xFF], np.uint8)
    b = np.array([0x3C], np.uint8)
    assert get_op("bitwise_and").evaluate([a, b], {}).tolist() == [0x30, 0x0C, 0x3C]
    assert get_op("bitwise_or").evaluate([a, b], {}).tolist() == [0xFC, 0x3F, 0xFF]
    assert get_op("bitwise_xor").evaluate([a, b], {}).tolist() == [0xCC, 0x33, 0xC3]
    assert get_op("bitwise_not").evaluate([a], {}).tolist() == [0x0F, 0xF0, 0x00]
    assert get_op("bitwise_not").evaluate([np.array([0, -1, 5], np.int32)], {}).tolist() == [-1, 0, -6]
    assert get_op("bitwise_not").evaluate([np.array([True, False])], {}).tolist() == [False, True]


def test_an_error_is_reported_at_its_call_in_a_file():
    _, found = check("def @main(%a: Tensor[(3), float32]) {\n"
                     "  bitwise_not(%a)\n"
                     "}\n")
    assert [(line, col, severity) for line, col, severity, _ in found] == [(2, 3, "error")]
    assert "bitwise_not expects an integer or bool tensor" in found[0][3]


def test_printed_and_read_back():
    text = ('#[version = "0.0.5"]\n'
            'def @main(%a: Tensor[(2, 3), int32], %b: Tensor[(3), int32]) {\n'
            '  %0 = bitwise_and(%a, %b);\n'
            '  %1 = bitwise_or(%0, %b);\n'
            '  %2 = bitwise_xor(%1, %a);\n'
            '  bitwise_not(%2)\n'
            '}\n')
    printed = print_module(typed(text.split("\n", 1)[1]))
    for op in (*BINARY, "bitwise_not"):
        assert f"{op}(" in printed
    assert print_module(parse(printed, "again.relay").module) == printed


@pytest.mark.parametrize("elem, dtype", [(TensorProto.UINT8, np.uint8), (TensorProto.INT32, np.int32),
                                         (TensorProto.INT64, np.int64)])
def test_onnx_bitwise_matches_onnxruntime(elem, dtype):
    g = Graph(3)
    both = g.node("BitwiseAnd", ["x", "y"], name="/mask/And")
    either = g.node("BitwiseOr", [both, "y"], name="/mask/Or")
    differ = g.node("BitwiseXor", [either, "x"], name="/mask/Xor")
    out = g.node("BitwiseNot", [differ], name="/mask/Not")
    model = g.model({"x": [2, 3], "y": [3]}, out, opset=18, elem=elem)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    feeds = {"x": rng.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True),
             "y": rng.integers(info.min, info.max, (3,), dtype=dtype, endpoint=True)}
    imported = check_against_ort(model, feeds, JIT(), rtol=0, atol=0)
    spans = {c.op.name: layers(c) for c in calls(imported.module)}
    assert spans == {"bitwise_and": ["/mask/And"], "bitwise_or": ["/mask/Or"], "bitwise_xor": ["/mask/Xor"],
                     "bitwise_not": ["/mask/Not"]}
