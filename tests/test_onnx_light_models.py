"""The real-model graphs the onnx wheel ships (`backend/test/data/light/`: AlexNet, DenseNet,
Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512), with their
ConstantOfShape weights replaced by seeded random initializers so that outputs mean
something: imported with span filling, compiled, and compared with onnxruntime.
(ResNet-50 is also checked through the interpreter in test_onnx_import.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402
from test_onnx_import import calls, layers, run_compiled, run_ort  # noqa: E402

from relaylens.compiler.frontend.onnx import import_onnx  # noqa: E402
from relaylens.compiler.lower.runtime.jit import JIT  # noqa: E402
from relaylens.compiler.numerics.compare import compare  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = sorted(p.stem for p in LIGHT.glob("light_*.onnx") if p.stem != "light_resnet50")


def randomized(name: str, seed: int = 0):
    """The light model with every ConstantOfShape weight a seeded random initializer:
    fan-in-scaled normal weights, 1-D parameters in [0.5, 1.5] (valid as batch-norm
    scales and variances, harmless as means and biases)."""
    model = onnx.load(LIGHT / f"{name}.onnx")
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    weights, produced = [], set()
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            continue
        shape = tuple(int(d) for d in shapes[node.input[0]])
        if len(shape) > 1:
            array = rng.standard_normal(shape) * np.sqrt(1.0 / np.prod(shape[1:]))
        else:
            array = rng.uniform(0.5, 1.5, shape)
        weights.append(numpy_helper.from_array(array.astype(np.float32), node.output[0]))
        produced.add(node.output[0])
    kept = [n for n in model.graph.node if not (n.op_type == "ConstantOfShape" and n.output[0] in produced)]
    used = {i for n in kept for i in n.input}
    weights += [t for t in model.graph.initializer if t.name in used]
    known = {t.name for t in weights}
    inputs = [i for i in model.graph.input if i.name not in known and i.name in used]
    graph = helper.make_graph(kept, model.graph.name, inputs, list(model.graph.output), weights)
    return helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=10)


def feeds_of(model) -> dict[str, np.ndarray]:
    """The onnx runner's input, arange(n)/n, for each graph input."""
    feeds = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        n = int(np.prod(shape))
        feeds[i.name] = (np.arange(n, dtype=np.float32) / n).reshape(shape)
    return feeds


@pytest.fixture(scope="module")
def jit():
    return JIT()


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_light_model_compiled_matches_onnxruntime(name, jit):
    model = randomized(name)
    feeds = feeds_of(model)
    want = run_ort(model, feeds)
    assert len(np.unique(want[0])) > 10  # random weights: a meaningful reference
    got = run_compiled(model, feeds, jit)
    assert len(got) == len(want)
    for g, w in zip(got, want):  # run --check's tolerance: float32 rounding relative to the output's scale
        result = compare(g, w)
        assert result.ok, result
    imported = import_onnx(model, shapes={k: v.shape for k, v in feeds.items()})
    node_names = {n.name for n in model.graph.node if n.name}
    assert all(layers(c) for c in calls(imported.module))  # every call names its ONNX node
    assert {name for c in calls(imported.module) for name in layers(c)} & node_names or not node_names


def test_every_light_model_is_listed():
    assert len(MODELS) == 8
