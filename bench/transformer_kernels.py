"""The kernels of the GPT-2 block and BERT-base as the models build them, for bench/run.py's
kernel table: each a small Relay graph, the weights bound as constants (so a dense is the
packed dense of the models), its kernel called on aligned buffers (layer_norm's three
kernels: the AOT entry, its output allocated once, as in a model) beside onnxruntime's matching node (weights as initializers, which it pre-packs as it does
in the models).

    GraphCase(label, kind, shape)
      dense         (M, K, N)       x (M, K) times a bound weight (N, K), plus a bound bias
      batch_matmul  (B, M, K, N)    (B, M, K) times (B, K, N): attention's two products
      softmax       (B, H, T, T)    along the last axis
      layer_norm    (T, D)          along the last axis, bound gamma and beta
      gelu_tanh     (T, D)          GPT-2's 0.5 x (1 + tanh(0.79788 (x + 0.044715 x^3)))
      gelu_erf      (T, D)          BERT's x (1 + erf(x / sqrt 2)) / 2

GFLOP counts 2 per multiply-add for the products; for the others one operation per
element per pass (softmax 4: max, exp, sum, divide; layer_norm 5: mean, variance, the
normalisation, scale, shift; a GELU 1), the same count on both sides, so only the ratio
means anything there.  onnxruntime runs its fused operators where the models give it them
after optimisation (FastGelu, Gelu: com.microsoft), as the whole models do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GraphCase:
    label: str
    kind: str
    shape: tuple[int, ...]

    @property
    def flops(self) -> float:
        n = float(np.prod(self.shape))
        if self.kind == "dense":
            return 2.0 * n
        if self.kind == "batch_matmul":
            return 2.0 * n
        return n * {"softmax": 4, "layer_norm": 5}.get(self.kind, 1)

    def _shapes(self) -> tuple[list[tuple[int, ...]], dict[str, tuple[int, ...]]]:
        """(the runtime inputs' shapes, the bound weights' shapes by name)."""
        s = self.shape
        if self.kind == "dense":
            m, k, n = s
            return [(m, k)], {"w": (n, k), "b": (n,)}
        if self.kind == "batch_matmul":
            b, m, k, n = s
            return [(b, m, k), (b, k, n)], {}
        if self.kind == "layer_norm":
            return [s], {"g": (s[-1],), "b": (s[-1],)}
        return [s], {}

    def arrays(self) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        rng = np.random.default_rng(5)
        inputs, weights = self._shapes()
        xs = [rng.standard_normal(shape).astype(np.float32) for shape in inputs]
        bound = {name: (rng.standard_normal(shape) / (np.sqrt(shape[-1]) if name == "w" else 1)).astype(np.float32)
                 for name, shape in weights.items()}
        return xs, bound

    def relay(self) -> str:
        inputs, weights = self._shapes()
        names = ["x", "y"][:len(inputs)]
        params = [f"%{n}: Tensor[({', '.join(map(str, s))}), float32]" for n, s in zip(names, inputs)]
        params += [f"%{n}: Tensor[({', '.join(map(str, s))}), float32]" for n, s in weights.items()]
        body = {
            "dense": f"add(nn.dense(%x, %w, units={self.shape[-1]}), %b)",
            "batch_matmul": "nn.batch_matmul(%x, %y, transpose_a=False, transpose_b=False)",
            "softmax": "nn.softmax(%x, axis=-1)",
            "layer_norm": "nn.layer_norm(%x, %g, %b, axis=-1, epsilon=1e-05f)",
            "gelu_tanh": ("multiply(multiply(%x, 0.5f), add(tanh(multiply(add(%x, multiply(power(%x, 3f), "
                          "0.044715f)), 0.797885f)), 1f))"),
            "gelu_erf": "multiply(multiply(%x, add(erf(divide(%x, 1.41421f)), 1f)), 0.5f)",
        }[self.kind]
        return f'#[version = "0.0.5"]\ndef @main({", ".join(params)}) {{\n  {body}\n}}\n'

    def onnx(self, bound: dict[str, np.ndarray]):
        from onnx import TensorProto, helper, numpy_helper

        inputs, _ = self._shapes()
        names = ["x", "y"][:len(inputs)]
        node = {
            "dense": lambda: helper.make_node("Gemm", ["x", "w", "b"], ["out"], transB=1),
            "batch_matmul": lambda: helper.make_node("MatMul", ["x", "y"], ["out"]),
            "softmax": lambda: helper.make_node("Softmax", ["x"], ["out"], axis=-1),
            "layer_norm": lambda: helper.make_node("LayerNormalization", ["x", "g", "b"], ["out"], axis=-1,
                                                   epsilon=1e-5),
            "gelu_tanh": lambda: helper.make_node("FastGelu", ["x"], ["out"], domain="com.microsoft"),
            "gelu_erf": lambda: helper.make_node("Gelu", ["x"], ["out"], domain="com.microsoft"),
        }[self.kind]()
        graph = helper.make_graph(
            [node], self.kind, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, inputs)],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(a, n) for n, a in bound.items()])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                       helper.make_opsetid("com.microsoft", 1)], ir_version=10)

    def feeds(self, xs: list[np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(["x", "y"], xs))


CASES = (
    GraphCase("dense 128x768 -> 3072, weight bound (GPT-2 mlp.c_fc as built)", "dense", (128, 768, 3072)),
    GraphCase("dense 128x3072 -> 768, weight bound (GPT-2 mlp.c_proj)", "dense", (128, 3072, 768)),
    GraphCase("dense 128x768 -> 768, weight bound (BERT's four per layer)", "dense", (128, 768, 768)),
    GraphCase("batch_matmul 12x128x64 by 12x64x128 (attention scores)", "batch_matmul", (12, 128, 64, 128)),
    GraphCase("batch_matmul 12x128x128 by 12x128x64 (attention values)", "batch_matmul", (12, 128, 128, 64)),
    GraphCase("softmax 1x12x128x128", "softmax", (1, 12, 128, 128)),
    GraphCase("layer_norm 128x768", "layer_norm", (128, 768)),
    GraphCase("GELU (tanh) 128x3072", "gelu_tanh", (128, 3072)),
    GraphCase("GELU (erf) 128x3072", "gelu_erf", (128, 3072)),
)
