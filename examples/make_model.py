"""Write the demo's model and input: a small CNN for 28x28 grey images, as PyTorch would
export it, with seeded random weights.

    python examples/make_model.py [--out examples]

    small_cnn.onnx    input [batch, 1, 28, 28] → (Conv 3x3 → BatchNormalization → Relu →
                      MaxPool 2x2) x2 → Flatten → Gemm → logits [batch, 10]
                      (opset 17, ir_version 10: what onnxruntime reads; about 37 KB)
    digit.npy         one input, float32 [1, 1, 28, 28]: a seven drawn in strokes, plus noise

Nodes are named like a PyTorch export (`/conv1/Conv`, `/bn1/BatchNormalization`, ...), so
every Relay expression the importer makes names one of them.  The output is the same
bytes on every run (the tests check the committed files against this script).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20251122
OPSET, IR_VERSION = 17, 10
HERE = Path(__file__).resolve().parent


def build_model(seed: int = SEED) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, weights = [], []

    def weight(name: str, array: np.ndarray) -> str:
        weights.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def block(k: int, x: str, cin: int, cout: int) -> str:
        """Conv 3x3 (padding 1) → BatchNormalization → Relu → MaxPool 2x2."""
        w = weight(f"conv{k}.weight", rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9)))
        b = weight(f"conv{k}.bias", rng.normal(0, 0.1, cout))
        bn = [weight(f"bn{k}.{p}", v) for p, v in (
            ("weight", rng.uniform(0.5, 1.5, cout)), ("bias", rng.normal(0, 0.1, cout)),
            ("running_mean", rng.normal(0, 0.1, cout)), ("running_var", rng.uniform(0.5, 1.5, cout)))]
        nodes.append(helper.make_node("Conv", [x, w, b], [f"/conv{k}/Conv_output_0"], name=f"/conv{k}/Conv",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]))
        nodes.append(helper.make_node("BatchNormalization", [f"/conv{k}/Conv_output_0", *bn],
                                      [f"/bn{k}/BatchNormalization_output_0"],
                                      name=f"/bn{k}/BatchNormalization", epsilon=1e-5))
        nodes.append(helper.make_node("Relu", [f"/bn{k}/BatchNormalization_output_0"], [f"/relu{k}/Relu_output_0"],
                                      name=f"/relu{k}/Relu"))
        nodes.append(helper.make_node("MaxPool", [f"/relu{k}/Relu_output_0"], [f"/pool{k}/MaxPool_output_0"],
                                      name=f"/pool{k}/MaxPool", kernel_shape=[2, 2], strides=[2, 2]))
        return f"/pool{k}/MaxPool_output_0"

    y = block(1, "input", 1, 8)
    y = block(2, y, 8, 16)
    nodes.append(helper.make_node("Flatten", [y], ["/flatten/Flatten_output_0"], name="/flatten/Flatten", axis=1))
    fc_w = weight("fc.weight", rng.standard_normal((10, 16 * 7 * 7)) * np.sqrt(1.0 / (16 * 7 * 7)))
    fc_b = weight("fc.bias", rng.normal(0, 0.1, 10))
    nodes.append(helper.make_node("Gemm", ["/flatten/Flatten_output_0", fc_w, fc_b], ["logits"],
                                  name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1))
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 28, 28])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="relaylens examples/make_model.py")
    onnx.checker.check_model(model, full_check=True)
    return model


def digit(seed: int = SEED) -> np.ndarray:
    """A 7 in two strokes on a 28x28 canvas, values in [0, 1] plus a little noise."""
    image = np.zeros((28, 28), np.float32)
    image[5:8, 6:22] = 1.0  # the bar
    for row in range(8, 24):  # the diagonal, from the bar's right end down to the left
        col = 21 - (row - 8) * 10 // 16
        image[row, col - 1:col + 2] = 1.0
    noise = np.random.default_rng(seed).normal(0, 0.05, image.shape).astype(np.float32)
    return np.clip(image + noise, 0.0, 1.0).reshape(1, 1, 28, 28)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE), help=f"the folder to write into (default {HERE})")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "small_cnn.onnx").write_bytes(build_model().SerializeToString())
    np.save(out / "digit.npy", digit(), allow_pickle=False)
    print(f"wrote {out / 'small_cnn.onnx'} and {out / 'digit.npy'}")


if __name__ == "__main__":
    main()
