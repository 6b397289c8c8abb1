"""The ONNX frontend's TopK (to `topk`) and Resize on 3-D tensors (to `image.resize1d`):
small models checked against onnxruntime, interpreted and compiled, with the spans that
name their nodes, and the errors of what they cannot take."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from test_onnx_import import Graph, calls, check_against_ort, layers, run_compiled, run_relay  # noqa: E402

from relaylens.compiler.frontend.onnx import OnnxImportError, import_onnx  # noqa: E402
from relaylens.compiler.ir import TupleGetItem  # noqa: E402
from relaylens.compiler.ir.functor import post_order  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402


@pytest.fixture(scope="module")
def jit():
    return JIT()


def topk_model(k: int, axis: int, largest: int, shape: list[int], opset: int = 17):
    g = Graph(4)
    y = g.node("Relu", ["x"], name="/relu/Relu")
    values, indices = g.node("TopK", [y, g.init("k", np.array([k], np.int64))], 2, name="/head/TopK",
                             axis=axis, largest=largest)
    model = g.model({"x": shape}, [g.node("Neg", [values], name="/neg/Neg"), indices], opset=opset)
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.INT64
    return model


@pytest.mark.parametrize("k, axis, largest", [(3, -1, 1), (2, 1, 0), (5, 0, 1)])
def test_topk_matches_onnxruntime(jit, k, axis, largest):
    model = topk_model(k, axis, largest, [5, 6, 4])
    # whole numbers in a small range: many ties, which ONNX orders lower index first
    x = np.random.default_rng(k).integers(-3, 4, size=(5, 6, 4)).astype(np.float32)
    imported = check_against_ort(model, {"x": x}, jit, rtol=0, atol=0)
    (topk,) = [c for c in calls(imported.module) if c.op.name == "topk"]
    assert topk.attrs["k"].value == k and topk.attrs["is_ascend"] is (largest == 0)
    assert topk.attrs["dtype"] == "int64" and layers(topk) == ["/head/TopK"]
    items = [n for n in post_order(imported.module["main"]) if isinstance(n, TupleGetItem)]
    assert len(items) == 2 and all(layers(n) == ["/head/TopK"] for n in items)


def test_topk_before_opset_10_takes_k_as_an_attribute(jit):
    g = Graph()
    values, indices = g.node("TopK", ["x"], 2, name="top", k=2, axis=1)
    model = g.model({"x": [3, 7]}, [values, indices], opset=9)
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.INT64
    x = np.random.default_rng(1).standard_normal((3, 7)).astype(np.float32)
    check_against_ort(model, {"x": x}, jit, rtol=0, atol=0)


@pytest.mark.parametrize("k, message", [
    (0, "k=0 is not supported (topk keeps at least one element)"),
    (9, "topk: k=9 is larger than the extent 6 of axis 1 (data Tensor[(5, 6, 4), float32])"),
])
def test_topk_errors_name_the_node(k, message):
    with pytest.raises(OnnxImportError) as info:
        import_onnx(topk_model(k, 1, 1, [5, 6, 4]))
    assert info.value.message == f"node '/head/TopK' (TopK, opset 17): {message}"


def test_topk_with_k_known_at_run_time_only_is_refused():
    g = Graph()
    values, _ = g.node("TopK", ["x", "k"], 2, name="top")
    model = g.model({"x": [3, 7], "k": [1]}, values)
    model.graph.input[1].type.tensor_type.elem_type = TensorProto.INT64
    with pytest.raises(OnnxImportError, match=r"node 'top' .*k \(input 1\) must be known before run time") as info:
        import_onnx(model)
    assert info.value.needs_value == "k"


RESIZE_CASES = [
    # mode, coordinate_transformation_mode, nearest_mode, extra attributes, sizes or scales
    ("linear", "half_pixel", None, {}, {"sizes": [2, 3, 11]}),
    ("linear", "align_corners", None, {}, {"sizes": [2, 3, 4]}),
    ("nearest", "asymmetric", "floor", {}, {"scales": [1.0, 1.0, 3.0]}),
    ("nearest", "half_pixel", "round_prefer_ceil", {}, {"sizes": [2, 3, 9]}),
    ("nearest", "tf_half_pixel_for_nn", "round_prefer_floor", {}, {"sizes": [2, 3, 5]}),
    ("linear", "tf_crop_and_resize", None, {"extrapolation_value": 2.5}, {"sizes": [2, 3, 8]}),
]


@pytest.mark.parametrize("mode, coordinates, nearest, extra, given", RESIZE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in RESIZE_CASES])
def test_resize_of_a_3d_tensor_is_resize1d_and_matches_onnxruntime(jit, mode, coordinates, nearest, extra, given):
    g = Graph()
    roi = g.init("roi", np.array([0, 0, -0.1, 1, 1, 1.2], np.float32)) if coordinates == "tf_crop_and_resize" else ""
    scales = g.init("scales", np.array(given["scales"], np.float32)) if "scales" in given else ""
    sizes = [g.init("sizes", np.array(given["sizes"], np.int64))] if "sizes" in given else []
    attrs = dict(mode=mode, coordinate_transformation_mode=coordinates, **extra)
    if nearest:
        attrs["nearest_mode"] = nearest
    y = g.node("Resize", ["x", roi, scales, *sizes], name="/up/Resize", **attrs)
    model = g.model({"x": [2, 3, 6]}, y, opset=19)
    x = np.random.default_rng(3).standard_normal((2, 3, 6)).astype(np.float32)
    imported = check_against_ort(model, {"x": x}, jit, rtol=1e-5, atol=1e-5)
    (resize,) = [c for c in calls(imported.module) if c.op.name.startswith("image.")]
    assert resize.op.name == "image.resize1d" and resize.attrs["layout"] == "NCW"
    assert layers(resize) == ["/up/Resize"]


def test_cubic_resize_of_a_3d_tensor_matches_the_onnx_reference(jit):
    """onnxruntime does cubic on 2-D and 4-D inputs only; onnx's reference evaluator does
    it on 3-D ones too."""
    g = Graph()
    y = g.node("Resize", ["x", "", "", g.init("sizes", np.array([2, 3, 13], np.int64))], name="/up/Resize",
               mode="cubic", coordinate_transformation_mode="pytorch_half_pixel", cubic_coeff_a=-0.5,
               exclude_outside=1)
    model = g.model({"x": [2, 3, 6]}, y, opset=19)
    x = np.random.default_rng(4).standard_normal((2, 3, 6)).astype(np.float32)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    imported = import_onnx(model)
    np.testing.assert_allclose(run_relay(imported, {"x": x})[0], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run_compiled(model, {"x": x}, jit)[0], want, rtol=1e-5, atol=1e-5)


def test_resize_of_a_5d_tensor_is_refused():
    g = Graph()
    y = g.node("Resize", ["x", "", g.init("scales", np.array([1, 1, 2, 2, 2], np.float32))], name="r")
    with pytest.raises(OnnxImportError, match=r"node 'r' .*only 3-D \(NCW\) and 4-D \(NCHW\) inputs are "
                                              r"supported, found rank 5"):
        import_onnx(g.model({"x": [1, 1, 2, 2, 2]}, y, opset=19))


def test_resize_keeps_an_unknown_batch(jit):
    """A model exported with a dynamic batch axis (a UNet's decoder): Resize by scales needs
    static extents only on the axes it resizes; it refused the whole import before."""
    g = Graph()
    y = g.node("Resize", ["x", "", g.init("scales", np.array([1, 1, 2, 0.5], np.float32))], name="/up/Resize",
               mode="linear", coordinate_transformation_mode="half_pixel")
    model = g.model({"x": ["batch", 2, 5, 8]}, y, opset=17)
    x = np.random.default_rng(5).standard_normal((3, 2, 5, 8)).astype(np.float32)
    imported = check_against_ort(model, {"x": x}, jit, rtol=1e-5, atol=1e-5)
    (resize,) = [c for c in calls(imported.module) if c.op.name == "image.resize2d"]
    assert [int(d) for d in resize.attrs["size"]] == [10, 4] and layers(resize) == ["/up/Resize"]


@pytest.mark.parametrize("given, message", [
    ({"sizes": [3, 2, 10, 3]}, r"Resize with sizes needs a static shape, found Tensor\[\(\?, 2, 5, 7\)"),
    ({"scales": [2, 1, 2, 2]}, r"resizing the N or C axis"),
])
def test_resize_of_an_unknown_batch_that_would_change_it_is_refused(given, message):
    g = Graph()
    inputs = ["", g.init("scales", np.array(given["scales"], np.float32))] if "scales" in given else \
        ["", "", g.init("sizes", np.array(given["sizes"], np.int64))]
    y = g.node("Resize", ["x", *inputs], name="r")
    with pytest.raises(OnnxImportError, match=r"node 'r' .*" + message):
        import_onnx(g.model({"x": ["batch", 2, 5, 7]}, y, opset=17))
