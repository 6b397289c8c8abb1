"""Patterns that PyTorch's exporters write, found by importing torchvision models
(docs/onnx.md, "Models exported by PyTorch"), each rebuilt here with onnx.helper so that
no test needs torch: imported, compiled and checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from test_onnx_import import Graph, run_compiled, run_ort  # noqa: E402

from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402


@pytest.fixture(scope="module")
def jit():
    return JIT()


def squeeze_excite(channels: int, squeezed: int, size: int = 7):
    """MobileNet v3's and EfficientNet's squeeze-and-excitation block: the 1x1 convs run
    on the pooled (N, C, 1, 1) plane."""
    g = Graph()
    pooled = g.node("GlobalAveragePool", ["x"])
    h = g.node("Conv", [pooled, g.weight("w1", squeezed, channels, 1, 1), g.weight("b1", squeezed, scale=0.1)])
    h = g.node("Relu", [h])
    h = g.node("Conv", [h, g.weight("w2", channels, squeezed, 1, 1), g.weight("b2", channels, scale=0.1)])
    h = g.node("HardSigmoid", [h], alpha=1 / 6, beta=0.5)
    return g.model({"x": [1, channels, size, size]}, g.node("Mul", ["x", h]))


@pytest.mark.parametrize("channels,squeezed", [(576, 144), (240, 64)])
def test_squeeze_excite_on_a_one_by_one_plane_compiles(jit, channels, squeezed):
    # filters of 32 KiB and more over a plane smaller than one tile: the weight prefetch
    # divided by the tile loop's 0 iterations (ZeroDivisionError, mobilenet_v3_small and
    # efficientnet_b0 did not build)
    model = squeeze_excite(channels, squeezed)
    x = np.random.default_rng(0).standard_normal((1, channels, 7, 7)).astype(np.float32)
    ours, = run_compiled(model, {"x": x}, jit)
    ref, = run_ort(model, {"x": x})
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)


def test_build_of_a_dynamic_batch_says_once_how_to_fix_the_shape(tmp_path, capsys):
    # torch.onnx.export(..., dynamic_axes={"x": {0: "batch"}}): `relaylens build` wrote an
    # error at every kernel (24 for ResNet-18) and not what to do about them
    from relaylens.compiler.cli import main

    g = Graph()
    h = g.node("Conv", ["x", g.weight("w", 8, 3, 3, 3)], pads=[1, 1, 1, 1])
    h = g.node("Relu", [h])
    model = g.model({"x": ["batch", 3, 8, 8]}, g.node("GlobalAveragePool", [h]))
    onnx_path, relay_path = tmp_path / "net.onnx", tmp_path / "net.relay"
    onnx_path.write_bytes(model.SerializeToString())
    assert main(["import", str(onnx_path), "-o", str(relay_path)]) == 0
    capsys.readouterr()
    assert main(["build", str(relay_path), "-o", str(tmp_path / "build")]) == 1
    err = capsys.readouterr().err
    assert "lowering needs static shapes" in err and "Traceback" not in err
    [note] = [line for line in err.splitlines() if "note:" in line]
    assert "%x is Tensor[(?, 3, 8, 8), float32]" in note and "re-import the model with --shape x=1,3,8,8" in note


def test_swin_window_pad_of_zero_after_layer_norm_builds(jit):
    # torchvision swin_t: LayerNormalization over channels-last, then F.pad to a multiple of
    # the window (zeros when 56 % 7 == 0), then the shifted window's Slice + Concat.
    # AlterOpLayout rewrote the pad's widths by the letters of the layer norm's undefined
    # layout and left none ('nn.pad: pad_width has 0 pairs but data has rank 4')
    g = Graph()
    h = g.node("LayerNormalization", ["x", g.weight("gamma", 16, scale=1.0), g.weight("beta", 16, scale=0.1)],
               axis=-1, epsilon=1e-5)
    h = g.node("Pad", [h, g.init("pads", np.zeros(8, np.int64)), g.init("value", np.zeros((), np.float32))])
    right = g.node("Slice", [h, g.init("s1", np.array([3])), g.init("e1", np.array([8])), g.init("a1", np.array([1]))])
    left = g.node("Slice", [h, g.init("s0", np.array([0])), g.init("e0", np.array([3])), g.init("a0", np.array([1]))])
    model = g.model({"x": [1, 8, 8, 16]}, g.node("Concat", [right, left], axis=1))
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 16)).astype(np.float32)
    ours, = run_compiled(model, {"x": x}, jit)
    ref, = run_ort(model, {"x": x})
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)
