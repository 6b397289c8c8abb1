"""The ONNX frontend's detection layers (convert_vision.py): RoiAlign, MaxRoiPool and
DeformConv imported with their spans, interpreted and compiled, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402
from test_onnx_import import Graph, calls, check_against_ort, layers  # noqa: E402

from relaylens.compiler.frontend.onnx import OnnxImportError, import_onnx  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402

RNG = np.random.default_rng(14)


@pytest.fixture(scope="module")
def jit():
    return JIT()


def _rois_model(op: str, opset: int, **attrs):
    g = Graph()
    inputs = {"x": [2, 3, 10, 12], "rois": [4, 4 if op == "RoiAlign" else 5]}
    args = ["x", "rois"]
    if op == "RoiAlign":
        args.append("batch")
    out = g.node(op, args, name=f"/head/{op}", **attrs)
    model = g.model(inputs, out, opset=opset)
    if op == "RoiAlign":  # the batch indices are int64
        model.graph.input.append(onnx.helper.make_tensor_value_info("batch", TensorProto.INT64, [4]))
    return model


# rois at least 2 feature pixels wide (onnxruntime does not force narrow ones to 1 pixel in
# half_pixel mode; Relay does), some reaching past the data's edges
ROIS = np.array([[1.0, 2.0, 15.0, 13.0], [-4.0, -3.0, 8.0, 9.0], [6.0, 4.0, 26.0, 22.0], [0.0, 0.0, 24.0, 20.0]],
                np.float32)


@pytest.mark.parametrize("opset, mode_attrs", [
    (10, {}),
    (16, {}),  # half_pixel
    (16, {"coordinate_transformation_mode": "output_half_pixel", "sampling_ratio": 2}),
])
def test_roi_align_matches_onnxruntime(jit, opset, mode_attrs):
    model = _rois_model("RoiAlign", opset, output_height=3, output_width=4, spatial_scale=0.5, **mode_attrs)
    feeds = {"x": RNG.standard_normal((2, 3, 10, 12)).astype(np.float32), "rois": ROIS,
             "batch": np.array([0, 1, 1, 0], np.int64)}
    imported = check_against_ort(model, feeds, jit)
    align = [c for c in calls(imported.module) if c.op.name == "vision.roi_align"]
    assert len(align) == 1 and layers(align[0]) == ["/head/RoiAlign"]


def test_roi_pool_matches_onnxruntime(jit):
    model = _rois_model("MaxRoiPool", 13, pooled_shape=[3, 2], spatial_scale=0.5)
    rois = np.concatenate([np.array([[0], [1], [1], [0]], np.float32), ROIS], axis=1)
    feeds = {"x": RNG.standard_normal((2, 3, 10, 12)).astype(np.float32), "rois": rois}
    imported = check_against_ort(model, feeds, jit)
    pool = [c for c in calls(imported.module) if c.op.name == "vision.roi_pool"]
    assert len(pool) == 1 and layers(pool[0]) == ["/head/MaxRoiPool"]


def _deform_model(with_bias: bool, **attrs):
    g = Graph(5)
    w = g.weight("w", 6, 2, 3, 3)
    args = ["x", w, "offset"] + ([g.weight("b", 6, scale=0.1)] if with_bias else [])
    out = g.node("DeformConv", args, name="/dcn/DeformConv", **attrs)
    return g.model({"x": [1, 4, 7, 8], "offset": [1, 36, 6, 7]}, out, opset=19)


def test_deform_conv_matches_onnxruntime(jit):
    model = _deform_model(True, group=2, offset_group=2, pads=[0, 0, 1, 1], kernel_shape=[3, 3])
    # offsets in [0, 0.9) and padding only after: no point lands in (-1, 0), where Relay reads 0
    # and ONNX interpolates with the first row or column
    feeds = {"x": RNG.standard_normal((1, 4, 7, 8)).astype(np.float32),
             "offset": (RNG.random((1, 36, 6, 7)) * 0.9).astype(np.float32)}
    imported = check_against_ort(model, feeds, jit, rtol=1e-4)
    conv = [c for c in calls(imported.module) if c.op.name == "nn.deformable_conv2d"]
    assert len(conv) == 1 and layers(conv[0]) == ["/dcn/DeformConv"]
    assert conv[0].attrs["deformable_groups"].value == 2 and conv[0].attrs["groups"].value == 2


def test_deform_conv_mask_is_an_error_at_the_node():
    g = Graph(5)
    w = g.weight("w", 6, 4, 3, 3)
    out = g.node("DeformConv", ["x", w, "offset", "", "mask"], name="/dcn/Masked")
    model = g.model({"x": [1, 4, 7, 8], "offset": [1, 18, 5, 6], "mask": [1, 9, 5, 6]}, out, opset=19)
    with pytest.raises(OnnxImportError, match="/dcn/Masked.*mask"):
        import_onnx(model)
