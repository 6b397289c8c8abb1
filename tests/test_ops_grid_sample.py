"""image.grid_sample (ops/grid_sample.py): shapes and errors of the relation, the numpy
reference (reflection, rounding), the text format, and ONNX's GridSample against
onnxruntime on every method, padding mode and align_corners, interpreted and compiled.
Compiled = reference is in lower_cases_nn (test_lower_compiled); ONNX's own cases in
test_onnx_node (3-D there is an expected failure: refused at the node)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from test_onnx_import import Graph, calls, check_against_ort, layers  # noqa: E402
from test_typing import check, typed  # noqa: E402

from relaylens.compiler.frontend.onnx import import_onnx  # noqa: E402
from relaylens.compiler.frontend.onnx.errors import OnnxImportError  # noqa: E402
from relaylens.compiler.ir.types import ANY, TensorType  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402
from relaylens.compiler.ops import OpPattern, OpTypeError, get_op  # noqa: E402
from relaylens.compiler.ops.grid_sample import reflect  # noqa: E402
from relaylens.compiler.parser import parse  # noqa: E402
from relaylens.compiler.printer import print_module  # noqa: E402

OP = "image.grid_sample"


def T(*shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def test_the_result_takes_the_grids_extent():
    assert get_op(OP).infer([T(2, 3, 8, 9), T(2, 2, 4, 5)], {}) == T(2, 3, 4, 5)
    assert get_op(OP).infer([T(ANY, 3, 8, 9), T(2, 2, ANY, 5)], {}) == T(ANY, 3, ANY, 5)
    assert get_op(OP).pattern is OpPattern.INJECTIVE


@pytest.mark.parametrize("types, attrs, message", [
    ([T(1, 3, 8, 9), T(1, 2, 4, 5)], {"method": "cubic"},
     "image.grid_sample: method \"cubic\" is not supported (bilinear, nearest or bicubic)"),
    ([T(1, 3, 8, 9), T(1, 2, 4, 5)], {"padding_mode": "wrap"},
     "image.grid_sample: padding_mode \"wrap\" is not supported (zeros, border or reflection)"),
    ([T(1, 8, 9, 3), T(1, 2, 4, 5)], {"layout": "NHWC"},
     "image.grid_sample: layout \"NHWC\" is not supported (NCHW only)"),
    ([T(1, 3, 2, 8, 9), T(1, 3, 2, 4, 5)], {},
     "image.grid_sample: data must be 4-D (N, C, H, W), found Tensor[(1, 3, 2, 8, 9), float32] "
     "(the 3-D form is not supported)"),
    ([T(1, 3, 8, 9, dtype="int32"), T(1, 2, 4, 5)], {},
     "image.grid_sample: data must be a float tensor, found Tensor[(1, 3, 8, 9), int32]"),
    ([T(1, 3, 8, 9), T(1, 4, 5, 2)], {},
     "image.grid_sample: grid must be a float tensor (N, 2, Ho, Wo), found Tensor[(1, 4, 5, 2), float32]"),
    ([T(2, 3, 8, 9), T(3, 2, 4, 5)], {},
     "image.grid_sample: grid Tensor[(3, 2, 4, 5), float32] and data Tensor[(2, 3, 8, 9), float32] differ in batch"),
])
def test_errors(types, attrs, message):
    with pytest.raises(OpTypeError) as info:
        get_op(OP).infer(types, attrs)
    assert info.value.message == message


def test_reflection_folds_again_and_again():
    x = np.array([-0.5, -1.0, 4.5, 9.0, 10.5], np.float32)  # edges -0.5 and 4.5 (size 5, outer edges)
    assert reflect(x, 5, False).tolist() == [-0.5, 0.0, 4.5, 0.0, 0.5]
    assert reflect(np.array([-1.0, 5.0, 9.0], np.float32), 5, True).tolist() == [1.0, 3.0, 1.0]  # edges 0 and 4


def test_nearest_rounds_halves_to_even():
    data = np.arange(5, dtype=np.float32).reshape(1, 1, 1, 5)
    grid = np.array([-0.75, -0.25, 0.25, 0.75, 0, 0, 0, 0], np.float32).reshape(1, 2, 1, 4)  # x 0.5 .. 3.5
    got = get_op(OP).evaluate([data, grid], {"method": "nearest"})
    assert got.reshape(-1).tolist() == [0, 2, 2, 4]


def test_an_error_is_reported_at_its_call_in_a_file():
    _, found = check("def @main(%d: Tensor[(1, 3, 8, 9), float32], %g: Tensor[(1, 2, 4, 5), float32]) {\n"
                     "  image.grid_sample(%d, %g, method=\"bicubic\", padding_mode=\"wrap\")\n"
                     "}\n")
    assert [(line, col, severity) for line, col, severity, _ in found] == [(2, 3, "error")]
    assert "padding_mode \"wrap\" is not supported" in found[0][3]


def test_printed_and_read_back():
    text = ('#[version = "0.0.5"]\n'
            'def @main(%d: Tensor[(1, 3, 8, 9), float32], %g: Tensor[(1, 2, 4, 5), float32]) {\n'
            '  image.grid_sample(%d, %g, method="nearest", layout="NCHW", padding_mode="border", '
            'align_corners=False)\n'
            '}\n')
    printed = print_module(typed(text.split("\n", 1)[1]))
    assert ('image.grid_sample(%d, %g, method="nearest", layout="NCHW", padding_mode="border", '
            'align_corners=False)') in printed
    assert print_module(parse(printed, "again.relay").module) == printed


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_onnx_grid_sample_matches_onnxruntime(mode, padding, align):
    g = Graph(3)
    out = g.node("GridSample", ["x", "grid"], name="/warp/GridSample", mode=mode, padding_mode=padding,
                 align_corners=align)
    model = g.model({"x": [2, 3, 6, 7], "grid": [2, 5, 4, 2]}, g.node("Relu", [out], name="/relu"), opset=16)
    rng = np.random.default_rng(11)
    feeds = {"x": rng.standard_normal((2, 3, 6, 7)).astype(np.float32),
             "grid": rng.uniform(-2.5, 2.5, (2, 5, 4, 2)).astype(np.float32)}
    imported = check_against_ort(model, feeds, JIT(), rtol=1e-5, atol=1e-5)
    (sample,) = [c for c in calls(imported.module) if c.op.name == OP]
    assert layers(sample) == ["/warp/GridSample"]
    attrs = get_op(OP).normalize_attrs(sample.attrs)
    assert (attrs.method, attrs.padding_mode, attrs.align_corners) == (mode, padding, bool(align))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_onnx_opset_20_names_the_modes_anew(mode):
    g = Graph(3)
    out = g.node("GridSample", ["x", "grid"], name="/warp/GridSample", mode=mode)
    model = g.model({"x": [1, 2, 4, 4], "grid": [1, 3, 3, 2]}, out, opset=20)
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((1, 2, 4, 4)).astype(np.float32),
             "grid": rng.uniform(-1.2, 1.2, (1, 3, 3, 2)).astype(np.float32)}
    check_against_ort(model, feeds, JIT(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, shapes, message", [
    ("quintic", ([1, 2, 4, 4], [1, 3, 3, 2]),
     "mode=quintic is not supported (linear, nearest or cubic; bilinear, bicubic before opset 20)"),
    ("linear", ([1, 2, 4, 4, 4], [1, 3, 3, 3, 3]), "only 4-D data (N, C, H, W) is supported, found rank 5"),
])
def test_onnx_refusals_name_the_node(mode, shapes, message):
    g = Graph(3)
    out = g.node("GridSample", ["x", "grid"], name="/warp/GridSample", mode=mode)
    model = g.model({"x": shapes[0], "grid": shapes[1]}, out, opset=20)
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    assert "/warp/GridSample" in str(info.value) and message in str(info.value)
