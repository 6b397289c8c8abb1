"""How long RelayLens takes to compile a model to machine code, cold and after an edit.

    python bench/build.py [--runs N] [--models resnet50,mobilenet,gpt2] [--json out.json]
    python bench/build.py --emit mobilenet > mobilenet.relay     # look at an input

Inputs: three networks written with onnx.helper (seeded random weights), imported through
RelayLens's ONNX frontend and printed as fully typed Relay text with a `span=` comment
naming the ONNX node on every call; the weights are parameters of @main.  bench/run.py
runs the very same ONNX models in onnxruntime, so both sides run one graph.
  * ResNet-50: torchvision's layout, 1x3x224x224; Conv + BatchNormalization + Relu, 16
    bottleneck blocks [3, 4, 6, 3], GlobalAveragePool, Gemm to 1,000 classes.
  * MobileNet v2: torchvision's layout, 1x3x224x224; inverted residual blocks (1x1
    expansion, 3x3 depthwise, 1x1 projection, ReLU6 as Clip), 1,000 classes.
  * GPT-2 block: one transformer layer of GPT-2 small on 128 tokens of hidden states
    (1x128x768): LayerNormalization, attention with a causal mask (Gemm, Split, Reshape,
    Transpose, MatMul, Softmax), the tanh-GELU MLP spelled out, two residual adds.

Per model, median of N runs (default 3):
  * cold, parallel: one `compile()` with a fresh `JIT` and `LoweringCache`, its kernels
    lowered in forked processes as the CLI and the editor lower them (lower/parallel.py;
    RELAYLENS_COMPILE_JOBS, default the CPUs): the total only;
  * cold: the same with the kernels lowered one after another in this process, split
    into parse + check, the relay.build passes, compose (compute rules), schedule (the
    default schedule and its loop nest), LLVM IR (llvmlite.ir code generation, printed),
    O3 (LLVM's new pass manager), machine code (MCJIT), and the rest of lowering (the
    cache, the memory plan of @main, its AOT entry);
  * warm: `compile()` again with the cold build's cache and JIT, on
    the same text, then on the text with one layer edited: a constant (a batch norm's
    epsilon; GELU's 0.044715 in the GPT-2 block), an attribute (dilation 2 with padding
    2 in one 3x3 convolution, which keeps every shape; ln_2's epsilon in the GPT-2
    block), and a comment line inserted above the first binding (every later line
    moves); how many fused functions were lowered again (cache misses), and the time.
Run on an idle machine; on two cores, a test suite beside it moves the figures by tens of
percent.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

MODELS = ("resnet50", "mobilenet", "gpt2", "bert")
LABELS = {"resnet50": "ResNet-50", "mobilenet": "MobileNet v2", "gpt2": "GPT-2 block",
          "bert": "BERT-base encoder (12 layers, 128 tokens)"}


# --- the networks, as ONNX graphs -----------------------------------------------------------


class OnnxGraph:
    """An ONNX graph written node by node; weights seeded, scaled to keep activations near 1."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []

    def init(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name: str, shape: tuple[int, ...], fan_in: int | None = None) -> str:
        fan_in = fan_in or int(np.prod(shape[1:]))
        return self.init(name, (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32))

    def uniform(self, name: str, shape: tuple[int, ...], low: float, high: float) -> str:
        return self.init(name, self.rng.uniform(low, high, shape).astype(np.float32))

    def node(self, op: str, inputs: list[str], name: str, outputs: int = 1, **attrs) -> str | list[str]:
        from onnx import helper

        outs = [f"{name}_out{k}" if outputs > 1 else f"{name}_out" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def model(self, name: str, inputs: dict[str, tuple[int, ...]], output: str, out_shape: tuple[int, ...],
              opset: int = 17):
        from onnx import TensorProto, checker, helper

        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
        checker.check_model(model)
        return model


def _conv_bn(g: OnnxGraph, x: str, p: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
             conv: str = "conv", bn: str = "bn") -> str:
    w = g.weight(f"{p}{conv}.weight", (cout, cin // groups, k, k))
    y = g.node("Conv", [x, w], f"{p}{conv}/Conv", kernel_shape=[k, k], strides=[stride, stride],
               pads=[k // 2] * 4, group=groups)
    stats = [g.uniform(f"{p}{bn}.weight", (cout,), 0.5, 1.0), g.uniform(f"{p}{bn}.bias", (cout,), -0.1, 0.1),
             g.uniform(f"{p}{bn}.running_mean", (cout,), -0.1, 0.1),
             g.uniform(f"{p}{bn}.running_var", (cout,), 0.5, 1.5)]
    return g.node("BatchNormalization", [y, *stats], f"{p}{bn}/BatchNormalization", epsilon=1e-5)


def _classifier(g: OnnxGraph, x: str, channels: int) -> str:
    x = g.node("GlobalAveragePool", [x], "avgpool/GlobalAveragePool")
    x = g.node("Flatten", [x], "Flatten", axis=1)
    return g.node("Gemm", [x, g.weight("fc.weight", (1000, channels)), g.uniform("fc.bias", (1000,), -0.1, 0.1)],
                  "fc/Gemm", transB=1)


def resnet50_onnx():
    g = OnnxGraph(seed=50)
    x = _conv_bn(g, "input", "", 3, 64, 7, 2, conv="conv1", bn="bn1")
    x = g.node("Relu", [x], "relu/Relu")
    x = g.node("MaxPool", [x], "maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), start=1):
        for b in range(blocks):
            p = f"layer{stage}.{b}/"
            stride = 2 if b == 0 and stage > 1 else 1
            y = g.node("Relu", [_conv_bn(g, x, p, cin, width, 1, conv="conv1", bn="bn1")], f"{p}relu/Relu")
            y = g.node("Relu", [_conv_bn(g, y, p, width, width, 3, stride, conv="conv2", bn="bn2")],
                       f"{p}relu_1/Relu")
            y = _conv_bn(g, y, p, width, width * 4, 1, conv="conv3", bn="bn3")
            short = (_conv_bn(g, x, p, cin, width * 4, 1, stride, conv="downsample.0", bn="downsample.1")
                     if b == 0 else x)
            x = g.node("Relu", [g.node("Add", [y, short], f"{p}Add")], f"{p}relu_2/Relu")
            cin = width * 4
    return g.model("resnet50", {"input": (1, 3, 224, 224)}, _classifier(g, x, 2048), (1, 1000))


MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))  # expansion, channels, repeats, stride of the first


def mobilenet_onnx():
    g = OnnxGraph(seed=2)
    lo, hi = g.init("relu6_min", np.float32(0)), g.init("relu6_max", np.float32(6))

    def relu6(x: str, p: str) -> str:
        return g.node("Clip", [x, lo, hi], f"{p}/Clip")

    x = relu6(_conv_bn(g, "input", "features.0/", 3, 32, 3, 2), "features.0/relu6")
    cin, index = 32, 1
    for t, c, n, s in MOBILENET_V2:
        for i in range(n):
            p = f"features.{index}/"
            hidden = cin * t
            y = x
            if t != 1:
                y = relu6(_conv_bn(g, y, p, cin, hidden, 1, conv="expand", bn="expand_bn"), f"{p}expand_relu6")
            y = relu6(_conv_bn(g, y, p, hidden, hidden, 3, s if i == 0 else 1, groups=hidden, conv="dw",
                               bn="dw_bn"), f"{p}dw_relu6")
            y = _conv_bn(g, y, p, hidden, c, 1, conv="project", bn="project_bn")
            x = g.node("Add", [x, y], f"{p}Add") if i > 0 or (s == 1 and cin == c) else y
            cin, index = c, index + 1
    x = relu6(_conv_bn(g, x, f"features.{index}/", cin, 1280, 1), f"features.{index}/relu6")
    return g.model("mobilenet_v2", {"input": (1, 3, 224, 224)}, _classifier(g, x, 1280), (1, 1000))


class _Transformer:
    """The pieces of a transformer layer as exporters write them: 2-D Gemms between
    reshapes, heads split by Reshape + Transpose, LayerNormalization."""

    def __init__(self, g: OnnxGraph, tokens: int, d: int, heads: int) -> None:
        self.g, self.tokens, self.d, self.heads = g, tokens, d, heads

    def shape(self, name: str, dims: tuple[int, ...]) -> str:
        return self.g.init(name, np.array(dims, dtype=np.int64))

    def scalar(self, name: str, value: float) -> str:
        return self.g.init(name, np.float32(value))

    def layer_norm(self, x: str, p: str) -> str:
        g = self.g
        return g.node("LayerNormalization", [x, g.uniform(f"{p}.weight", (self.d,), 0.5, 1.5),
                                             g.uniform(f"{p}.bias", (self.d,), -0.1, 0.1)],
                      f"{p}/LayerNormalization", axis=-1, epsilon=1e-5)

    def linear(self, x: str, p: str, n_in: int, n_out: int) -> str:
        """x (1, tokens, n_in) -> (1, tokens, n_out) through a 2-D Gemm."""
        g, tokens = self.g, self.tokens
        flat = g.node("Reshape", [x, self.shape(f"{p}.shape_in", (tokens, n_in))], f"{p}/Reshape")
        y = g.node("Gemm", [flat, g.weight(f"{p}.weight", (n_out, n_in)),
                            g.uniform(f"{p}.bias", (n_out,), -0.1, 0.1)], f"{p}/Gemm", transB=1)
        return g.node("Reshape", [y, self.shape(f"{p}.shape_out", (1, tokens, n_out))], f"{p}/Reshape_1")

    def split_heads(self, x: str, p: str, perm: list[int]) -> str:
        hd = self.d // self.heads
        x = self.g.node("Reshape", [x, self.shape(f"{p}.heads", (1, self.tokens, self.heads, hd))], f"{p}/Reshape")
        return self.g.node("Transpose", [x], f"{p}/Transpose", perm=perm)

    def attention(self, q: str, k: str, v: str, p: str, mask: str | None = None) -> str:
        """Scaled dot-product attention over split heads, merged back to (1, tokens, d)."""
        g = self.g
        s = g.node("MatMul", [self.split_heads(q, f"{p}/q", [0, 2, 1, 3]),
                              self.split_heads(k, f"{p}/k", [0, 2, 3, 1])], f"{p}/MatMul")
        s = g.node("Div", [s, self.scalar(f"{p}.scale", (self.d // self.heads) ** 0.5)], f"{p}/Div")
        if mask is not None:
            s = g.node("Add", [s, mask], f"{p}/Add")
        s = g.node("Softmax", [s], f"{p}/Softmax", axis=-1)
        o = g.node("MatMul", [s, self.split_heads(v, f"{p}/v", [0, 2, 1, 3])], f"{p}/MatMul_1")
        o = g.node("Transpose", [o], f"{p}/Transpose", perm=[0, 2, 1, 3])
        return g.node("Reshape", [o, self.shape(f"{p}.merge", (1, self.tokens, self.d))], f"{p}/Reshape")


def gpt2_block_onnx(tokens: int = 128, d: int = 768, heads: int = 12):
    g = OnnxGraph(seed=2)
    t = _Transformer(g, tokens, d, heads)
    causal = np.triu(np.full((tokens, tokens), -1e4, dtype=np.float32), k=1)[None, None]
    x = "hidden_states"
    qkv = t.linear(t.layer_norm(x, "ln_1"), "attn.c_attn", d, 3 * d)
    q, k, v = g.node("Split", [qkv, t.shape("attn.split", (d, d, d))], "attn/Split", outputs=3, axis=2)
    o = t.attention(q, k, v, "attn", g.init("attn.causal_mask", causal))
    x = g.node("Add", [x, t.linear(o, "attn.c_proj", d, d)], "Add")
    m = t.linear(t.layer_norm(x, "ln_2"), "mlp.c_fc", d, 4 * d)
    cube = g.node("Pow", [m, t.scalar("gelu.three", 3.0)], "mlp/act/Pow")
    inner = g.node("Add", [m, g.node("Mul", [cube, t.scalar("gelu.c", 0.044715)], "mlp/act/Mul")], "mlp/act/Add")
    th = g.node("Tanh", [g.node("Mul", [inner, t.scalar("gelu.sqrt_2_pi", 0.7978845608)], "mlp/act/Mul_1")],
                "mlp/act/Tanh")
    th = g.node("Add", [th, t.scalar("gelu.one", 1.0)], "mlp/act/Add_1")
    gelu = g.node("Mul", [g.node("Mul", [m, t.scalar("gelu.half", 0.5)], "mlp/act/Mul_2"), th], "mlp/act/Mul_3")
    x = g.node("Add", [x, t.linear(gelu, "mlp.c_proj", 4 * d, d)], "Add_1")
    return g.model("gpt2_block", {"hidden_states": (1, tokens, d)}, x, (1, tokens, d))


def bert_base_onnx(layers: int = 12, tokens: int = 128, d: int = 768, heads: int = 12):
    """BERT-base's encoder (post-LayerNorm layers, GELU by erf), as Hugging Face's export
    writes it; the embeddings are left out: the input is the embedded sequence."""
    g = OnnxGraph(seed=3)
    t = _Transformer(g, tokens, d, heads)
    x = "hidden_states"
    for i in range(layers):
        p = f"encoder.layer.{i}"
        q, k, v = (t.linear(x, f"{p}.attention.self.{n}", d, d) for n in ("query", "key", "value"))
        o = t.linear(t.attention(q, k, v, f"{p}/attention/self"), f"{p}.attention.output.dense", d, d)
        x = t.layer_norm(g.node("Add", [o, x], f"{p}/attention/output/Add"), f"{p}.attention.output.LayerNorm")
        h = t.linear(x, f"{p}.intermediate.dense", d, 4 * d)
        e = g.node("Erf", [g.node("Div", [h, t.scalar(f"{p}.gelu.sqrt2", 2 ** 0.5)], f"{p}/intermediate/Div")],
                   f"{p}/intermediate/Erf")
        e = g.node("Add", [e, t.scalar(f"{p}.gelu.one", 1.0)], f"{p}/intermediate/Add")
        h = g.node("Mul", [g.node("Mul", [h, e], f"{p}/intermediate/Mul"), t.scalar(f"{p}.gelu.half", 0.5)],
                   f"{p}/intermediate/Mul_1")
        o = t.linear(h, f"{p}.output.dense", 4 * d, d)
        x = t.layer_norm(g.node("Add", [o, x], f"{p}/output/Add"), f"{p}.output.LayerNorm")
    return g.model("bert_base", {"hidden_states": (1, tokens, d)}, x, (1, tokens, d))


def require(package: str) -> None:
    """Stop with a clear message when an optional package the benchmark needs is missing."""
    import importlib.util

    if importlib.util.find_spec(package) is None:
        raise SystemExit(f"error: the benchmarks need the {package} package: "
                         f".venv/bin/pip install -e '.[test]' (or run `make bench`)")


ONNX_MODELS: dict[str, Callable] = {"resnet50": resnet50_onnx, "mobilenet": mobilenet_onnx, "gpt2": gpt2_block_onnx,
                                    "bert": bert_base_onnx}


@dataclass
class Model:
    """One benchmark network: its ONNX model, and the Relay text our frontend makes of it."""

    key: str
    onnx: object  # onnx.ModelProto
    text: str
    params: dict[str, np.ndarray]  # @main parameter -> initializer
    inputs: dict[str, str]  # ONNX graph input -> @main parameter
    param_order: list[str] = field(default_factory=list)  # @main's parameters, in order


def load_model(key: str) -> Model:
    """The ONNX model built, imported, and printed as typed Relay text with spans."""
    require("onnx")
    from relaylens.compiler.frontend.onnx import import_onnx
    from relaylens.compiler.printer import print_module

    model = ONNX_MODELS[key]()
    imported = import_onnx(model)
    text = print_module(imported.module, spans=True, types=True)
    order = [p.name for p in imported.module["main"].params]
    return Model(key, model, text, imported.params, imported.inputs, order)


# --- timing ---------------------------------------------------------------------------------

STAGES = ("parse + check", "passes", "compose", "schedule + loop nest", "LLVM IR (llvmlite.ir)", "O3",
          "machine code", "rest of lowering")


class StageClock:
    """Seconds per compile stage, summed over one build (see STAGES).  `measure()` wraps
    the lowering steps that pipeline.lower_function calls by name (compose,
    default_schedule, Schedule.lower, codegen_llvm.generate) for its duration; the LLVM IR
    stage includes printing the module to text.  O3 (`JIT.run_o3`) and machine code
    (`JIT.load_module`) are timed by `timed_jit()`, whose clock each build sets."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self._running: set[str] = set()  # a stage called inside itself counts once

    def timed(self, stage: str, fn: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            if stage in self._running:
                return fn(*args, **kwargs)
            self._running.add(stage)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - start
                self._running.discard(stage)
        return wrapper

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        from relaylens.compiler.lower import pipeline
        from relaylens.compiler.lower.codegen import llvm as codegen_llvm
        from relaylens.compiler.lower.schedule import primitives as schedule

        patched = [(pipeline, "compose", self.timed("compose", pipeline.compose)),
                   (pipeline, "default_schedule", self.timed("schedule + loop nest", pipeline.default_schedule)),
                   (schedule.Schedule, "lower", self.timed("schedule + loop nest", schedule.Schedule.lower)),
                   (codegen_llvm, "generate", self.timed("LLVM IR (llvmlite.ir)", codegen_llvm.generate)),
                   (pipeline, "module_text", self.timed("LLVM IR (llvmlite.ir)", pipeline.module_text))]
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
        try:
            for owner, name, fn in patched:
                setattr(owner, name, fn)
            yield
        finally:
            for owner, name, fn in saved:
                setattr(owner, name, fn)


def timed_jit():
    """A JIT whose run_o3 (O3) and load_module (machine code: what `load`,
    `optimize_and_load` and the lowering pipeline call) add to `jit.clock`."""
    from relaylens.compiler.lower.runtime.jit import JIT

    class TimedJIT(JIT):
        clock = StageClock()

        def run_o3(self, mod):
            return self.clock.timed("O3", super().run_o3)(mod)

        def load_module(self, mod):
            return self.clock.timed("machine code", super().load_module)(mod)

    return TimedJIT()


@dataclass
class Build:
    """One build and lowering: stage seconds, totals, and what the cache did."""

    seconds: dict[str, float]
    build_s: float  # parse + check + passes
    lower_s: float  # lowering to machine code
    functions: int  # fused functions in the build
    lowered: int  # of which lowered (cache misses)
    lowering: object = field(default=None, repr=False)
    cache: object = field(default=None, repr=False)

    @property
    def total_s(self) -> float:
        return self.build_s + self.lower_s

    def release(self) -> Build:
        """This build with its machine code and cache dropped; the figures stay."""
        self.lowering = self.cache = None
        return self


def compile_jobs() -> int:
    from relaylens.compiler.lower.parallel import compile_jobs as jobs

    return jobs()


@contextlib.contextmanager
def serial_lowering() -> Iterator[None]:
    """Kernels lowered one after another in this process, where the stage clocks see them."""
    import os

    from relaylens.compiler.lower.parallel import ENV

    saved = os.environ.get(ENV)
    os.environ[ENV] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ[ENV]
        else:
            os.environ[ENV] = saved


def compile_once(text: str, name: str, cache=None, jit=None) -> Build:
    """One `compile()` to machine code, timed by stage (the driver's progress marks where
    the passes and the lowering begin).  A fresh cache and JIT unless given (a given JIT
    comes from `timed_jit()`)."""
    from relaylens.compiler.driver import compile
    from relaylens.compiler.lower.pipeline import LoweringCache

    clock = StageClock()
    cache = cache if cache is not None else LoweringCache()
    jit = jit if jit is not None else timed_jit()
    jit.clock = clock
    marks: dict[str, float] = {}
    misses = cache.misses
    gc.collect()
    start = time.perf_counter()
    with clock.measure():
        result = compile(text, name, cache=cache, jit=jit,
                         progress=lambda step: marks.setdefault(step.stage, time.perf_counter()))
    done = time.perf_counter()
    lowering = result.lowered
    if lowering is None or not result.ok or result.executable is None:
        raise SystemExit(f"error: {name} does not build: {next(d for d in result.diagnostics if d.is_error).render()}")
    built = marks.get("llvm", done)
    s = clock.seconds
    s["parse + check"] = marks.get("passes", built) - start
    s["passes"] = built - start - s["parse + check"]
    s["rest of lowering"] = (done - built) - sum(s[k] for k in STAGES[2:-1])
    return Build(dict(s), built - start, done - built, len(lowering.functions), cache.misses - misses,
                 lowering, cache)


# --- edits ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Edit:
    """A change to one layer: on the line holding `marker`, `old` becomes `new`."""

    label: str
    marker: str
    old: str
    new: str

    def apply(self, text: str) -> str:
        lines = text.split("\n")
        hits = [k for k, line in enumerate(lines) if self.marker in line and self.old in line]
        if len(hits) != 1:
            raise SystemExit(f"error: edit {self.label!r} matches {len(hits)} lines, not one")
        lines[hits[0]] = lines[hits[0]].replace(self.old, self.new, 1)
        return "\n".join(lines)


SAME_LENGTH_DILATION = ("padding=[1, 1, 1, 1], dilation=[1, 1]", "padding=[2, 2, 2, 2], dilation=[2, 2]")
EDITS: dict[str, list[Edit]] = {
    "resnet50": [
        Edit("bn constant: epsilon of layer3.2/bn2", "span=layer3.2/bn2/BatchNormalization:", "1e-05f", "2e-05f"),
        Edit("conv attribute: dilation 2 in layer3.2/conv2", "span=layer3.2/conv2/Conv:", *SAME_LENGTH_DILATION),
    ],
    "mobilenet": [
        Edit("bn constant: epsilon of features.5/dw_bn", "span=features.5/dw_bn/BatchNormalization:",
             "1e-05f", "2e-05f"),
        Edit("conv attribute: dilation 2 in features.5/dw", "span=features.5/dw/Conv:", *SAME_LENGTH_DILATION),
    ],
    "gpt2": [
        Edit("constant: GELU's 0.044715", "span=mlp/act/Mul:", "0.044715f", "0.044716f"),
        Edit("attribute: epsilon of ln_2", "span=ln_2/LayerNormalization:", "1e-05f", "2e-05f"),
    ],
}
# An edit that moves every later line: source positions are part of each kernel (its debug
# locations), so this shows what a line inserted near the top costs.
LINE_ABOVE = Edit("a comment line inserted above the first binding", "  %0 = ", "  %0 = ", "  // edited\n  %0 = ")


# --- the machine ----------------------------------------------------------------------------


def machine(threads: int | None = None) -> dict[str, str]:
    """CPU, cores, memory and the versions that matter, for the table's footer and JSON."""
    import os
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import llvmlite.binding as llvm

    cpu, mhz = platform.processor() or platform.machine(), ""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/cpuinfo").read_text().split("\n\n")[0].splitlines()
                      if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        cpu, mhz = fields.get("model name", cpu), fields.get("cpu MHz", "")
        mem = next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
        memory = f"{int(mem.split()[1]) / 2**20:.1f} GiB"
    except (OSError, StopIteration):
        memory = "?"

    def ver(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {
        "cpu": cpu + (f" @ {float(mhz):,.0f} MHz" if mhz else ""),
        "cores": str(cores),
        "memory": memory,
        "host cpu (LLVM)": llvm.get_host_cpu_name(),
        "python": f"{platform.python_version()} ({platform.system()} {platform.release()})",
        "numpy": ver("numpy"),
        "llvmlite": f"{ver('llvmlite')} (LLVM {'.'.join(map(str, llvm.llvm_version_info))})",
        "onnx": ver("onnx"),
        "onnxruntime": ver("onnxruntime"),
        "relaylens": ver("relaylens"),
    }
    if threads is not None:
        info["threads"] = str(threads)
    return info


def machine_lines(info: dict[str, str]) -> list[str]:
    return [f"- {key}: {value}" for key, value in info.items()]


def load_note() -> str:
    """The load average, with a warning when something else is running."""
    import os

    one, five, _ = os.getloadavg()
    note = f"load average {one:.2f} (1 min), {five:.2f} (5 min)"
    if one > 0.5:
        note += ": NOT IDLE, the figures are measured under load"
    return note


WARM_UP = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 4), float32]) {
  nn.relu(add(%x, 1f))
}
"""


# --- the benchmark --------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def measure_model(model: Model, runs: int) -> dict:
    """Cold builds (median of `runs`) and, after each cold build, the warm rebuilds."""
    name = f"{model.key}.relay"
    edits = [("unchanged (the same text again)", None), *((e.label, e) for e in EDITS[model.key]),
             (LINE_ABOVE.label, LINE_ABOVE)]
    texts = {label: model.text if e is None else e.apply(model.text) for label, e in edits}
    cold: list[Build] = []
    warm: dict[str, list[Build]] = {label: [] for label, _ in edits}
    parallel: list[Build] = []
    for _ in range(runs):
        parallel.append(compile_once(model.text, name).release())
        with serial_lowering():
            first = compile_once(model.text, name)
        cache, jit = first.cache, first.lowering.jit
        cold.append(first.release())
        for label, _ in edits:
            warm[label].append(compile_once(texts[label], name, cache=cache, jit=jit).release())
        del cache, jit
    median = statistics.median
    return {
        "lines": model.text.count("\n"),
        "functions": cold[0].functions,
        "cold": {**{k: median(b.seconds[k] for b in cold) for k in STAGES},
                 "check + passes": median(b.build_s for b in cold), "lowering": median(b.lower_s for b in cold),
                 "total": median(b.total_s for b in cold),
                 "total, parallel": median(b.total_s for b in parallel), "jobs": compile_jobs()},
        "warm": [{"edit": label, "relowered": max(b.lowered for b in warm[label]),
                  "functions": warm[label][0].functions,
                  "check + passes": median(b.build_s for b in warm[label]),
                  "lowering": median(b.lower_s for b in warm[label]),
                  "total": median(b.total_s for b in warm[label])} for label, _ in edits],
    }


def tables(figures: dict[str, dict], runs: int) -> list[str]:
    keys = list(figures)
    out = [f"Cold compile (fresh JIT and LoweringCache), ms, median of {runs}:", "",
           "| stage | " + " | ".join(LABELS[k] for k in keys) + " |", "| --- |" + " ---: |" * len(keys)]
    for stage in STAGES:
        out.append(f"| {stage} | " + " | ".join(ms(figures[k]["cold"][stage]) for k in keys) + " |")
    out.append("| **total** | " + " | ".join(f"**{ms(figures[k]['cold']['total'])}**" for k in keys) + " |")
    out.append(f"| **total, kernels lowered in {figures[keys[0]]['cold']['jobs']} processes** | "
               + " | ".join(f"**{ms(figures[k]['cold']['total, parallel'])}**" for k in keys) + " |")
    out.append("| lines of Relay / fused functions | "
               + " | ".join(f"{figures[k]['lines']} / {figures[k]['functions']}" for k in keys) + " |")
    out += ["", "Warm rebuild after an edit (same LoweringCache and JIT), ms, median of %d:" % runs, "",
            "| model | edit | re-lowered | check + passes | lowering | total | of cold |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for k in keys:
        for w in figures[k]["warm"]:
            share = w["total"] / figures[k]["cold"]["total"]
            out.append(f"| {LABELS[k]} | {w['edit']} | {w['relowered']} of {w['functions']} | {ms(w['check + passes'])}"
                       f" | {ms(w['lowering'])} | {ms(w['total'])} | {share:.0%} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="cold builds per model (median); each followed by the edits")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {', '.join(MODELS)}")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--emit", choices=MODELS, help="print a model's Relay text and stop")
    args = ap.parse_args(argv)
    if args.emit:
        sys.stdout.write(load_model(args.emit).text)
        return 0
    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    unknown = [k for k in keys if k not in MODELS]
    if unknown or not keys:
        ap.error(f"unknown model(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(MODELS)}")
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    load = load_note()
    compile_once(WARM_UP, "warm_up.relay")  # grammar, LLVM targets, libgomp: once per process
    figures = {}
    for key in keys:
        figures[key] = measure_model(load_model(key), args.runs)
        print(f"  measured {LABELS[key]}", file=sys.stderr, flush=True)
    info = machine()
    print("\n".join(tables(figures, args.runs)))
    print(f"\nMachine ({load} before the run):\n" + "\n".join(machine_lines(info)))
    if args.json:
        args.json.write_text(json.dumps({"bench": "build", "runs": args.runs, "load": load, "machine": info,
                                         "models": figures}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
