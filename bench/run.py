"""How fast RelayLens's compiled code runs, beside numpy, our interpreter and onnxruntime.

    python bench/run.py [--runs N] [--interp-runs N] [--models resnet50,mobilenet,gpt2,bert]
                        [--skip-models] [--skip-micro] [--kernels WORDS] [--cpu-time] [--json out.json]

Threads: RelayLens's parallel loops run on RELAYLENS_NUM_THREADS threads (default: the
CPUs), and onnxruntime gets the same number (intra_op_num_threads; inter_op 1, sequential).
numpy's element-wise functions use one thread; its BLAS (the dense reference) its own pool.

1. Models (bench/build.py's networks: the ONNX model and the Relay text our frontend
   makes of it, so all sides run one graph), median of N runs after 2 warm-ups:
   * compiled: built with the weights bound (`compile(text, params=weights)`, as
     `relay.build(mod, params=...)` and `relaylens build --params`), so they are constants
     folded and packed at build time; `lowered.executable.run(input)` calls the AOT entry
     with the real input alone;
   * interpreter: the reference interpreter (numpy, one op at a time) on the checked
     module, `--interp-runs` times (default 1: it is slow);
   * onnxruntime: an InferenceSession of the ONNX model (all graph optimisations on), the
     weights initializers.  The largest difference between its output and ours is shown;
   * the `--top` slowest fused kernels, each timed alone on random inputs, times its calls;
   * the model's GFLOP (compiler/profile/cost.py's textbook counts over the checked module,
     before any rewrite, so the same for both sides) and each side's GFLOP/s against the
     peak (below), the limit the issue asks the whole model to be measured against.
2. A fused element-wise chain over 1,000,000 floats, add -> multiply -> relu (-> tanh),
   one fused kernel, against numpy written plainly (temporaries) and in place (`out=`).
   The kernel is called on aligned inputs with its output given; `run()` adds the copy-in
   and the output allocation of the executable.  Also with 1 thread, as numpy has.
3. Kernels in GFLOP/s (2 x multiply-adds / time, bias and relu not counted; pools one
   operation per window position; built without AlterOpLayout, so that each is one
   kernel): conv2d 3x3 of ResNet-50 (layer1 and layer3) with bias and relu, dense with
   bias (ResNet-50's fc, a 64x512x512 and GPT-2's 128x768 -> 3072), MobileNet v2's
   depthwise 3x3 convolutions with bias and relu (NCHW, and NCHW16c as AlterOpLayout
   leaves them in the model: nn.contrib_depthwise_conv2d_NCHWc on blocked arrays; NCHW8c
   on AVX2), a deformable 3x3 convolution beside onnxruntime's DeformConv,
   ResNet-50's max pool (NCHW and NCHW16c), a 3x3 average pool and the global average
   pools of ResNet-50 and MobileNet v2, each a single fused function called on aligned
   buffers; beside onnxruntime's Conv / Gemm / pool node on the NCHW arrays and numpy's
   BLAS (`x @ w.T + b`).  Then the CNNs' convolutions as the models build them
   (bench/cnn_kernels.py: NCHW8c with the weight packed, or Winograd; the convolution's
   kernel alone beside onnxruntime's profiled NCHWc node), and the transformers' kernels as the models build them
   (bench/transformer_kernels.py: the packed dense with its weight bound, batch_matmul,
   softmax, layer_norm, the two GELUs), each a small graph run whole, beside onnxruntime's
   matching node.  The peak is cores x measured clock x FMA units x datapath
   lanes x 2 (compiler/profile/peak.py).
Goals (issue 5): fused element-wise chains faster than numpy; ResNet-50 within 3x of
onnxruntime at the same thread count.  The lines under the tables say whether this run
meets them.  Run on an idle machine: with two cores shared, every parallel kernel waits
for a descheduled thread at its barrier, and the figures mean nothing.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import importlib.util
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
WARM_UPS = 2
GOAL_RESNET_RATIO = 3.0
ELEMENTS = 1_000_000


def _build_bench():
    spec = importlib.util.spec_from_file_location("bench_build", HERE / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_build"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


B = _build_bench()


# --- timing ---------------------------------------------------------------------------------


CLOCK = time.perf_counter  # --cpu-time: time.thread_time
OPT_LEVEL = 3  # --opt-level: relay.build's, for our builds (4 adds FastMath, as TVM's level 4)


def median_s(fn: Callable[[], Any], runs: int, warm_ups: int = WARM_UPS, min_sample_s: float = 0.0) -> float:
    """Median seconds of one call over `runs` samples, after `warm_ups` calls; a sample
    repeats the call until it lasts `min_sample_s` (for kernels of microseconds).  Wall
    time, or with --cpu-time the CPU time of the calling thread (CLOCK)."""
    for _ in range(warm_ups):
        fn()
    start = CLOCK()
    fn()
    once = CLOCK() - start
    repeat = max(1, int(min_sample_s / once)) if once > 0 else 1
    samples = []
    for _ in range(runs):
        gc.collect()
        start = CLOCK()
        for _ in range(repeat):
            fn()
        samples.append((CLOCK() - start) / repeat)
    return statistics.median(samples)


def paired_ratio(ours: Callable[[], Any], theirs: Callable[[], Any], runs: int) -> float:
    """The median over `runs` pairs of (our call's time ÷ onnxruntime's), the two called
    one right after the other: this VM's speed drifts by 20-70% within a minute, and the
    two medians of `median_s`, taken one block after the other, each land in a different
    phase of it (one build gave 0.68x and 1.23x of onnxruntime in two runs at 2 threads);
    a pair shares its phase.  Each call starts after the same pause (onnxruntime's spin
    ends in it, see `after_onnxruntime`), so neither side runs on cores the other has
    just warmed up or left busy."""
    ratios = []
    for _ in range(runs):
        times = []
        for fn in (ours, theirs):
            after_onnxruntime()
            gc.collect()
            start = CLOCK()
            fn()
            times.append(CLOCK() - start)
        ratios.append(times[0] / times[1])
    return statistics.median(ratios)


ONNXRUNTIME_SPIN_S = 0.1
PAIRED_RUNS = 30  # turns of a convolution's paired ratio (cnn_kernels.py paired_node_ratio): 0.2 s each


def after_onnxruntime() -> None:
    """Wait until onnxruntime's thread pool stops spinning: after each `session.run` its
    worker spins on for about 40 ms (35-41 ms of CPU measured), and anything of ours timed
    in that window runs with a core taken (a dense right after it ran at 1-thread speed in
    half the samples).  Called before timing ours whenever onnxruntime ran last."""
    time.sleep(ONNXRUNTIME_SPIN_S)


def ort_session(model, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def compile_text(text: str, name: str, threads: int | None = None, params: dict | None = None,
                 passes: list[str] | None = None):
    """Compile Relay text to machine code, `params` bound (raises SystemExit with the first error)."""
    from relaylens.compiler.driver import compile
    from relaylens.compiler.lower.runtime.jit import JIT

    result = compile(text, name, params=params, passes=passes, opt_level=OPT_LEVEL, jit=JIT(num_threads=threads))
    if result.executable is None:
        raise SystemExit(f"error: {name} does not build: {next(d for d in result.diagnostics if d.is_error).render()}")
    return result, result.lowered


# --- 1. models ------------------------------------------------------------------------------


def model_inputs(model) -> dict[str, np.ndarray]:
    """Seeded random values for the ONNX graph's inputs."""
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.onnx.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def measure_model(model, threads: int, runs: int, interp_runs: int, top: int) -> dict:
    from relaylens.compiler.interpreter import Interpreter
    from relaylens.compiler.profile.cost import function_flops

    started = time.perf_counter()
    result, lowering = compile_text(model.text, f"{model.key}.relay", threads, params=model.params)
    build_s = time.perf_counter() - started
    feeds = model_inputs(model)
    by_param = {model.inputs[name]: value for name, value in feeds.items()}
    inputs = [by_param[p.name] for p in result.snapshots[0].module["main"].params]  # what binding left
    exe = lowering.executable
    ours = exe.run(*inputs)
    session = ort_session(model.onnx, threads)
    reference = session.run(None, feeds)[0]
    after_onnxruntime()
    figures = {
        "compiled_s": median_s(lambda: exe.run(*inputs), runs),
        "build_s": build_s,
        "onnxruntime_s": median_s(lambda: session.run(None, feeds), runs),
        "max_abs_diff": float(np.abs(ours - reference).max()),
        "max_abs_output": float(np.abs(reference).max()),
        "weights_mib": sum(a.nbytes for a in model.params.values()) / 2**20,
        "gflop": function_flops(result.snapshots[0].module["main"]) / 1e9,  # the model as written
        "paired_ratio": paired_ratio(lambda: exe.run(*inputs), lambda: session.run(None, feeds), runs),
    }
    if top:
        after_onnxruntime()
        figures["kernels"] = kernel_profile(lowering, runs)[:top]
    if interp_runs:
        module = result.snapshots[0].module  # the checked input, weights bound, as `relaylens run --interp`
        figures["interpreter_s"] = median_s(lambda: Interpreter(module).call("main", inputs), interp_runs,
                                            warm_ups=0)
    figures["ratio_to_onnxruntime"] = figures["compiled_s"] / figures["onnxruntime_s"]
    return figures


def kernel_profile(lowering, runs: int) -> list[dict]:
    """Each fused kernel of the plan timed alone on random inputs (integers 0, which are
    safe indices), times its calls per inference, slowest first."""
    from collections import Counter

    from relaylens.compiler.support import aligned_empty

    calls = Counter(step.kernel for step in lowering.executable.plan.steps)
    rng = np.random.default_rng(3)
    rows = []
    for name, count in calls.items():
        kernel = lowering.jit.kernel(lowering.functions[name].prim)
        inputs = []
        for buf in kernel.func.inputs:
            a = aligned_empty(tuple(buf.shape), buf.dtype)
            a[...] = rng.standard_normal(a.shape) if a.dtype.kind == "f" else 0
            inputs.append(a)
        outs = [aligned_empty(tuple(b.shape), b.dtype) for b in kernel.func.outputs]
        seconds = median_s(lambda: kernel(*inputs, out=outs), runs, warm_ups=1, min_sample_s=0.005)
        rows.append({"function": name, "calls": count, "seconds": seconds * count,
                     "inputs": [list(b.shape) for b in kernel.func.inputs]})
    return sorted(rows, key=lambda r: -r["seconds"])


# --- 2. element-wise chains -----------------------------------------------------------------

CHAINS = {
    "add → multiply → relu": ("nn.relu(multiply(add(%x, %y), 0.5f))",
                              lambda x, y: np.maximum((x + y) * np.float32(0.5), np.float32(0))),
    "add → multiply → relu → tanh": ("tanh(nn.relu(multiply(add(%x, %y), 0.5f)))",
                                     lambda x, y: np.tanh(np.maximum((x + y) * np.float32(0.5), np.float32(0)))),
}


def chain_text(body: str, n: int) -> str:
    t = f"Tensor[({n}), float32]"
    return f'#[version = "0.0.5"]\ndef @main(%x: {t}, %y: {t}) {{\n  {body}\n}}\n'


def numpy_in_place(x: np.ndarray, y: np.ndarray, out: np.ndarray, tanh: bool) -> None:
    np.add(x, y, out=out)
    np.multiply(out, np.float32(0.5), out=out)
    np.maximum(out, np.float32(0), out=out)
    if tanh:
        np.tanh(out, out=out)


def single_kernel(lowering):
    """The one fused kernel of a lowered module, callable on numpy arrays."""
    if len(lowering.functions) != 1:
        raise SystemExit(f"error: expected one fused function, got {', '.join(lowering.functions)}")
    fn = next(iter(lowering.functions.values()))
    return lowering.jit.kernel(fn.prim), fn.name


def measure_chain(label: str, threads: int, runs: int) -> dict:
    from relaylens.compiler.support import aligned_empty

    body, reference = CHAINS[label]
    text = chain_text(body, ELEMENTS)
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(ELEMENTS).astype(np.float32) for _ in range(2))
    ax, ay, out = aligned_empty(x.shape, x.dtype), aligned_empty(y.shape, y.dtype), aligned_empty(x.shape, x.dtype)
    ax[...], ay[...] = x, y
    figures: dict[str, Any] = {"elements": ELEMENTS}
    for key, n in (("kernel_s", threads), ("kernel_1thread_s", 1))[:1 if threads == 1 else 2]:
        _, lowering = compile_text(text, "chain.relay", n)
        kernel, figures["function"] = single_kernel(lowering)
        got = kernel(ax, ay, out=out)
        np.testing.assert_allclose(got, reference(x, y), rtol=1e-5, atol=1e-6)
        figures[key] = median_s(lambda: kernel(ax, ay, out=out), runs, min_sample_s=0.02)
        if n == threads:
            exe = lowering.executable
            figures["run_s"] = median_s(lambda: exe.run(x, y), runs, min_sample_s=0.02)
    figures.setdefault("kernel_1thread_s", figures["kernel_s"])
    scratch = np.empty_like(x)
    figures["numpy_s"] = median_s(lambda: reference(x, y), runs, min_sample_s=0.02)
    figures["numpy_in_place_s"] = median_s(lambda: numpy_in_place(x, y, scratch, "tanh" in label), runs,
                                           min_sample_s=0.02)
    figures["speedup_vs_numpy"] = figures["numpy_s"] / figures["kernel_s"]
    return figures


# --- 3. kernels -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelCase:
    """One kernel of bench_kernels: `kind` and `shape`
      conv       (C, H, W, K, R, stride)  conv2d RxR, K filters, padding R // 2, bias, relu
      dense      (M, K, N)                dense with bias
      depthwise  (C, H, W, R, stride)     depthwise conv2d RxR, padding R // 2, bias, relu
      deformable (C, H, W, K, R)          deformable conv2d RxR, K filters, no padding,
                                          offsets in [0, 0.9) (where Relay and ONNX agree)
      maxpool, avgpool (C, H, W, R, stride, pad)  RxR window (avg counts the padding)
      gap        (C, H, W)                global average pool
    on a batch of 1.  `block` > 0: our side runs the op in NCHW[block]c, as AlterOpLayout
    leaves it in a model (nn.contrib_depthwise_conv2d_NCHWc, a pool with that layout),
    on the NCHW arrays blocked; onnxruntime always runs its NCHW node."""

    label: str
    kind: str
    shape: tuple[int, ...]
    block: int = 0

    @property
    def flops(self) -> float:
        """2 x multiply-adds; for pools one operation (max or add) per window position."""
        if self.kind == "conv":
            c, h, w, k, r, stride = self.shape
            return 2.0 * c * k * r * r * (h // stride) * (w // stride)
        if self.kind == "dense":
            m, k, n = self.shape
            return 2.0 * m * k * n
        if self.kind == "depthwise":
            c, h, w, r, stride = self.shape
            return 2.0 * c * r * r * self.out_hw[0] * self.out_hw[1]
        if self.kind == "deformable":
            c, h, w, k, r = self.shape
            return 2.0 * c * k * r * r * self.out_hw[0] * self.out_hw[1]
        if self.kind == "gap":
            c, h, w = self.shape
            return float(c * h * w)
        c, _, _, r, _, _ = self.shape
        return float(c * r * r * self.out_hw[0] * self.out_hw[1])

    @property
    def out_hw(self) -> tuple[int, int]:
        if self.kind == "depthwise":
            c, h, w, r, stride = self.shape
            pad = r // 2
        elif self.kind == "deformable":
            c, h, w, _, r = self.shape
            stride, pad = 1, 0
        else:
            c, h, w, r, stride, pad = self.shape
        return (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1

    def relay(self) -> str:
        b = self.block
        if self.kind == "conv":
            c, h, w, k, r, stride = self.shape
            params = (f"%x: Tensor[(1, {c}, {h}, {w}), float32], %w: Tensor[({k}, {c}, {r}, {r}), float32], "
                      f"%b: Tensor[({k}), float32]")
            pad = r // 2
            body = (f"nn.relu(nn.bias_add(nn.conv2d(%x, %w, strides=[{stride}, {stride}], "
                    f"padding=[{pad}, {pad}, {pad}, {pad}], channels={k}, kernel_size=[{r}, {r}]), %b))")
        elif self.kind == "dense":
            m, k, n = self.shape
            params = f"%x: Tensor[({m}, {k}), float32], %w: Tensor[({n}, {k}), float32], %b: Tensor[({n}), float32]"
            body = f"nn.bias_add(nn.dense(%x, %w, units={n}), %b)"
        elif self.kind == "depthwise":
            c, h, w, r, stride = self.shape
            pad, common = r // 2, f"groups={c}, channels={c}, kernel_size=[{r}, {r}]"
            window = f"strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}]"
            if b:
                params = (f"%x: Tensor[(1, {c // b}, {h}, {w}, {b}), float32], "
                          f"%w: Tensor[({c // b}, 1, {r}, {r}, 1, {b}), float32], "
                          f"%b: Tensor[(1, {c // b}, 1, 1, {b}), float32]")
                body = (f"nn.relu(add(nn.contrib_depthwise_conv2d_NCHWc(%x, %w, {window}, dilation=[1, 1], {common}, "
                        f'data_layout="NCHW{b}c", kernel_layout="OIHW1i{b}o", out_layout="NCHW{b}c"), %b))')
            else:
                params = (f"%x: Tensor[(1, {c}, {h}, {w}), float32], %w: Tensor[({c}, 1, {r}, {r}), float32], "
                          f"%b: Tensor[({c}), float32]")
                body = f"nn.relu(nn.bias_add(nn.conv2d(%x, %w, {window}, {common}), %b))"
        elif self.kind == "deformable":
            c, h, w, k, r = self.shape
            oh, ow = self.out_hw
            params = (f"%x: Tensor[(1, {c}, {h}, {w}), float32], %off: Tensor[(1, {2 * r * r}, {oh}, {ow}), float32], "
                      f"%w: Tensor[({k}, {c}, {r}, {r}), float32]")
            body = f"nn.deformable_conv2d(%x, %off, %w, channels={k}, kernel_size=[{r}, {r}])"
        elif self.kind == "gap":
            c, h, w = self.shape
            params = f"%x: Tensor[(1, {c}, {h}, {w}), float32]"
            body = "nn.global_avg_pool2d(%x)"
        else:
            c, h, w, r, stride, pad = self.shape
            params = (f"%x: Tensor[(1, {c // b}, {h}, {w}, {b}), float32]" if b
                      else f"%x: Tensor[(1, {c}, {h}, {w}), float32]")
            extra = ", count_include_pad=True" if self.kind == "avgpool" else ""
            layout = f', layout="NCHW{b}c"' if b else ""
            body = (f"nn.{self.kind[:3]}_pool2d(%x, pool_size=[{r}, {r}], strides=[{stride}, {stride}], "
                    f"padding=[{pad}, {pad}, {pad}, {pad}]{layout}{extra})")
        return f'#[version = "0.0.5"]\ndef @main({params}) {{\n  {body}\n}}\n'

    def arrays(self) -> list[np.ndarray]:
        """The NCHW inputs (what onnxruntime's node takes)."""
        rng = np.random.default_rng(2)
        if self.kind == "conv":
            c, h, w, k, r, _ = self.shape
            shapes = [(1, c, h, w), (k, c, r, r), (k,)]
        elif self.kind == "dense":
            m, k, n = self.shape
            shapes = [(m, k), (n, k), (n,)]
        elif self.kind == "depthwise":
            c, h, w, r, _ = self.shape
            shapes = [(1, c, h, w), (c, 1, r, r), (c,)]
        elif self.kind == "deformable":
            c, h, w, k, r = self.shape
            x, weight = rng.standard_normal((1, c, h, w)), rng.standard_normal((k, c, r, r)) * 0.1
            offsets = rng.random((1, 2 * r * r, *self.out_hw)) * 0.9
            return [a.astype(np.float32) for a in (x, offsets, weight)]
        else:
            c, h, w = self.shape[:3]
            shapes = [(1, c, h, w)]
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]

    @property
    def names(self) -> list[str]:
        """The ONNX graph's inputs, in the order of `arrays`."""
        return ["x", "off", "w"] if self.kind == "deformable" else list("xwb")

    def ours(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Our kernel's inputs: the arrays, blocked into NCHW[block]c when `block`."""
        b = self.block
        if not b:
            return arrays
        x, *rest = arrays
        n, c, h, w = x.shape
        blocked = [x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2)]
        if rest:  # depthwise: weight (C, 1, R, R) -> (C/b, 1, R, R, 1, b), bias -> (1, C/b, 1, 1, b)
            weight, bias = rest
            r = weight.shape[-1]
            blocked += [weight.reshape(c // b, b, 1, r, r).transpose(0, 2, 3, 4, 1).reshape(c // b, 1, r, r, 1, b),
                        bias.reshape(1, c // b, 1, 1, b)]
        return [np.ascontiguousarray(a) for a in blocked]

    def unblock(self, out: np.ndarray) -> np.ndarray:
        """Our output in NCHW."""
        if not self.block:
            return out
        n, cb, h, w, b = out.shape
        return out.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)

    def onnx(self):
        from onnx import TensorProto, helper

        arrays = self.arrays()
        names = self.names[:len(arrays)]
        if self.kind in ("conv", "depthwise"):
            r, stride = self.shape[-2:]
            group = {"group": self.shape[0]} if self.kind == "depthwise" else {}
            conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[r, r], pads=[r // 2] * 4,
                                    strides=[stride, stride], **group)
            nodes = [conv, helper.make_node("Relu", ["c"], ["out"])]
        elif self.kind == "deformable":
            r = self.shape[-1]
            nodes = [helper.make_node("DeformConv", ["x", "w", "off"], ["out"], kernel_shape=[r, r])]
        elif self.kind == "dense":
            nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["out"], transB=1)]
        elif self.kind == "gap":
            nodes = [helper.make_node("GlobalAveragePool", ["x"], ["out"])]
        else:
            _, _, _, r, stride, pad = self.shape
            op, extra = ("MaxPool", {}) if self.kind == "maxpool" else ("AveragePool", {"count_include_pad": 1})
            nodes = [helper.make_node(op, ["x"], ["out"], kernel_shape=[r, r], strides=[stride, stride],
                                      pads=[pad] * 4, **extra)]
        inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in zip(names, arrays)]
        graph = helper.make_graph(nodes, self.kind, inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT,
                                                                                           None)])
        opset = 19 if self.kind == "deformable" else 17  # DeformConv came in opset 19
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


KERNELS = (
    KernelCase("conv2d 3x3, ResNet-50 layer1 (1x64x56x56, 64 filters)", "conv", (64, 56, 56, 64, 3, 1)),
    KernelCase("conv2d 3x3, ResNet-50 layer3 (1x256x14x14, 256 filters)", "conv", (256, 14, 14, 256, 3, 1)),
    KernelCase("dense 1x2048 -> 1000 (ResNet-50 fc)", "dense", (1, 2048, 1000)),
    KernelCase("dense 64x512 -> 512", "dense", (64, 512, 512)),
    KernelCase("dense 128x768 -> 3072 (GPT-2 mlp.c_fc)", "dense", (128, 768, 3072)),
    KernelCase("depthwise 3x3, MobileNet v2 (1x144x56x56)", "depthwise", (144, 56, 56, 3, 1)),
    KernelCase("depthwise 3x3, MobileNet v2 (1x144x56x56), NCHW16c", "depthwise", (144, 56, 56, 3, 1), 16),
    KernelCase("depthwise 3x3 stride 2, MobileNet v2 (1x96x112x112), NCHW16c", "depthwise", (96, 112, 112, 3, 2), 16),
    KernelCase("depthwise 3x3 stride 2, MobileNet v2 (1x144x56x56), NCHW16c", "depthwise", (144, 56, 56, 3, 2), 16),
    KernelCase("depthwise 3x3, MobileNet v2 (1x960x7x7), NCHW16c", "depthwise", (960, 7, 7, 3, 1), 16),
    # NCHW8c: what AlterOpLayout gives MobileNet v2 on AVX2
    KernelCase("depthwise 3x3, MobileNet v2 (1x32x112x112), NCHW8c", "depthwise", (32, 112, 112, 3, 1), 8),
    KernelCase("depthwise 3x3 stride 2, MobileNet v2 (1x96x112x112), NCHW8c", "depthwise", (96, 112, 112, 3, 2), 8),
    KernelCase("depthwise 3x3, MobileNet v2 (1x144x56x56), NCHW8c", "depthwise", (144, 56, 56, 3, 1), 8),
    KernelCase("depthwise 3x3 stride 2, MobileNet v2 (1x144x56x56), NCHW8c", "depthwise", (144, 56, 56, 3, 2), 8),
    KernelCase("deformable conv2d 3x3 (1x64x30x30, 64 filters)", "deformable", (64, 30, 30, 64, 3)),
    KernelCase("max_pool2d 3x3 stride 2, ResNet-50 stem (1x64x112x112)", "maxpool", (64, 112, 112, 3, 2, 1)),
    KernelCase("max_pool2d 3x3 stride 2, ResNet-50 stem, NCHW16c", "maxpool", (64, 112, 112, 3, 2, 1), 16),
    KernelCase("avg_pool2d 3x3 (1x64x56x56)", "avgpool", (64, 56, 56, 3, 1, 1)),
    KernelCase("global_avg_pool2d, ResNet-50 (1x2048x7x7)", "gap", (2048, 7, 7)),
    KernelCase("global_avg_pool2d, MobileNet v2 (1x1280x7x7)", "gap", (1280, 7, 7)),
)


def _bench_module(name: str):
    """bench/<name>.py, loaded beside this script (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# whole small graphs, weights bound: the CNNs' convolutions and the transformers' kernels as built
CNN_KERNELS = _bench_module("cnn_kernels")
KERNELS = KERNELS + CNN_KERNELS.CASES + _bench_module("transformer_kernels").CASES


def peak(threads: int) -> tuple[float, str]:
    """(GFLOP/s, how it was derived): the profiler's estimate (compiler/profile/peak.py:
    the FMA datapath of this CPU, its measured clock, the threads)."""
    from relaylens.compiler.profile.peak import machine_peak

    found = machine_peak(threads)
    return found.gflops, found.derivation


def measure_graph(case, threads: int, runs: int) -> dict:
    """A transformer_kernels.py or cnn_kernels.py case: its graph compiled with the weights
    bound, its one kernel (or the one named by `case.timed`) called on aligned buffers
    (several: the AOT entry, `entry_call`), beside onnxruntime's node with them as
    initializers (with `case.timed`, its profiled node time without its layout reorders)."""
    from relaylens.compiler.support import aligned_empty

    xs, bound = case.arrays()
    aligned = []
    for x in xs:  # as a model's kernels get them: no copy on the way in
        aligned.append(aligned_empty(x.shape, x.dtype))
        aligned[-1][...] = x
    xs = aligned
    result, lowering = compile_text(case.relay(), "kernel.relay", threads, params=bound)
    exe = lowering.executable
    session = ort_session(case.onnx(bound), threads)
    feeds = case.feeds(xs)
    reference = session.run(None, feeds)[0]
    np.testing.assert_allclose(exe.run(*xs).reshape(reference.shape), reference, rtol=1e-4, atol=1e-4)
    call = lambda: exe.run(*xs)  # noqa: E731
    steps = exe.plan.steps
    timed = getattr(case, "timed", None)
    if timed:  # one kernel of several, on aligned buffers of its shapes
        steps = [s for s in steps if timed in s.kernel]
        assert len(steps) == 1, f"{case.label}: {len(steps)} kernels named *{timed}*"
    if len(steps) == 1:  # one kernel: called on its buffers, as in a model (no output allocated per call)
        step = steps[0]
        kernel = lowering.jit.kernel(lowering.functions[step.kernel].prim)
        args = [step_argument(b, xs, exe) for b in step.args]
        outs = [aligned_empty(tuple(b.shape), b.dtype) for b in kernel.func.outputs]
        call = lambda: kernel(*args, out=outs)  # noqa: E731
        if timed:  # a convolution's kernel as a model's AOT entry calls it: its machine code, no checks
            checked, call = call, native_call(lowering.jit, kernel, [*args, *outs])
            call()
            np.testing.assert_array_equal(outs[0], kernel(*args))
    else:  # several kernels: the AOT entry on pointer tables made once, into an output made once
        call = entry_call(exe, xs)
        call()
        np.testing.assert_allclose(call.outputs[0].reshape(reference.shape), reference, rtol=1e-4, atol=1e-4)
    after_onnxruntime()
    figures = {"function": steps[0].kernel if len(steps) == 1 else ", ".join(lowering.functions),
               "gflop": case.flops / 1e9, "ours_s": median_s(call, runs, min_sample_s=0.05)}
    if timed:  # onnxruntime's node without its layout reorders, as ours is timed without ours
        figures["call_overhead_s"] = call_overhead_s(checked, call, max(runs, PAIRED_RUNS))
        times = CNN_KERNELS.ort_node_times(case.onnx(bound), feeds, threads, runs)
        figures["onnxruntime_s"] = CNN_KERNELS.node_seconds(times)
        figures["paired_ratio"] = CNN_KERNELS.paired_node_ratio(case.onnx(bound), feeds, threads, max(runs, PAIRED_RUNS),
                                                                call, args[0], after_onnxruntime)
    else:
        figures["onnxruntime_s"] = median_s(lambda: session.run(None, feeds), runs, min_sample_s=0.05)
    for key in ("ours", "onnxruntime"):
        figures[f"{key}_gflops"] = case.flops / figures[f"{key}_s"] / 1e9
    return figures


def native_call(jit, kernel, arrays: list[np.ndarray]) -> Callable[[], None]:
    """A call of `kernel`'s machine code on the addresses of `arrays` (its inputs, then its
    outputs; C-contiguous and aligned), taken once: what a model's AOT entry pays for the
    kernel, without `Kernel.__call__`'s checks of every array from Python: at the least
    11-18 us a call more (MobileNet v2's 0.2-0.3 ms 1x1 kernels, ResNet-50's 128 -> 512),
    in the median of 200 turns 10-70 us (`call_overhead_s`), 4-15% of a 0.3 ms kernel."""
    from relaylens.compiler.support import ALIGN

    for a in arrays:
        assert a.flags.c_contiguous and a.ctypes.data % ALIGN == 0, "native_call: an unaligned array"
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(arrays))(jit.address(kernel.name))
    addresses = [a.ctypes.data for a in arrays]

    def call() -> None:
        fn(*addresses)

    call.arrays = arrays  # kept alive with the call
    return call


def call_overhead_s(checked: Callable[[], Any], native: Callable[[], Any], runs: int) -> float:
    """What calling the kernel from Python adds: the median over `runs` turns of (the
    checked call's time - the native call's), each timed right after an untimed call of
    its own, so that both find the caches as the kernel leaves them (timed one right
    after the other, the first paid for the caches the turn before left it: 10-190 us)."""
    differences = []
    for _ in range(runs):
        times = []
        for fn in (checked, native):
            fn()
            start = CLOCK()
            fn()
            times.append(CLOCK() - start)
        differences.append(times[0] - times[1])
    return statistics.median(differences)


def step_argument(buffer, xs: list[np.ndarray], exe) -> np.ndarray:
    """What a plan step's argument `buffer` is when its kernel is called alone: the input or
    the bound constant, or for a buffer another kernel writes, an aligned one of its shape
    holding random numbers."""
    from relaylens.compiler.support import aligned_empty

    if buffer.ref.kind == "input":
        return xs[buffer.ref.index]
    if buffer.ref.kind == "const":
        return exe._constants[buffer.ref.index]
    array = aligned_empty(tuple(buffer.shape), buffer.dtype)
    array[...] = np.random.default_rng(3).standard_normal(array.shape)
    return array


def entry_call(exe, xs: list[np.ndarray]):
    """A call of `exe`'s AOT entry on the aligned inputs `xs`, writing outputs allocated
    here once (`.outputs`): what a model's kernels cost, without `executable.run`'s
    output allocation and pointer tables on every call (for a kernel of 0.05 ms on 128 x
    768 floats, allocating its output took longer than the kernels)."""
    from relaylens.compiler.support import aligned_empty

    outputs = [aligned_empty(tuple(b.shape), b.dtype) for b in exe.plan.outputs]
    tables = [(ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays]) for arrays in (xs, outputs)]
    addresses = (ctypes.addressof(tables[0]), ctypes.addressof(tables[1]), ctypes.addressof(exe._const_table),
                 exe._workspace.ctypes.data, ctypes.addressof(exe._kernel_table))

    def call() -> None:
        exe._entry(*addresses)

    call.outputs, call.tables = outputs, tables  # kept alive with the call
    return call


def measure_kernel(case: KernelCase, threads: int, runs: int) -> dict:
    from relaylens.compiler.support import aligned_empty

    if not isinstance(case, KernelCase):
        return measure_graph(case, threads, runs)

    from relaylens.compiler.build import relay_build_passes

    # one kernel on NCHW arrays, as onnxruntime's node takes them: AlterOpLayout would put
    # the data's layout_transforms into kernels of their own (the models keep it)
    passes = [p for p in relay_build_passes(3) if p != "AlterOpLayout"]
    _, lowering = compile_text(case.relay(), "kernel.relay", threads, passes=passes)
    kernel, name = single_kernel(lowering)
    arrays = case.arrays()
    aligned = []
    for a in case.ours(arrays):
        copy = aligned_empty(a.shape, a.dtype)
        copy[...] = a
        aligned.append(copy)
    out = aligned_empty(tuple(kernel.func.outputs[0].shape), kernel.func.outputs[0].dtype)
    session = ort_session(case.onnx(), threads)
    feeds = dict(zip(case.names, arrays))
    reference = session.run(None, feeds)[0]
    np.testing.assert_allclose(case.unblock(kernel(*aligned, out=out)).reshape(reference.shape), reference,
                               rtol=1e-4, atol=1e-3)
    after_onnxruntime()
    figures = {"function": name, "gflop": case.flops / 1e9,
               "ours_s": median_s(lambda: kernel(*aligned, out=out), runs, min_sample_s=0.05),
               "onnxruntime_s": median_s(lambda: session.run(None, feeds), runs, min_sample_s=0.05)}
    if case.kind == "dense":
        x, w, b = arrays
        after_onnxruntime()
        figures["numpy_s"] = median_s(lambda: x @ w.T + b, runs, min_sample_s=0.05)
    for key in ("ours", "onnxruntime", "numpy"):
        if f"{key}_s" in figures:
            figures[f"{key}_gflops"] = case.flops / figures[f"{key}_s"] / 1e9
    return figures


# --- report ---------------------------------------------------------------------------------


def threads_text(n: int) -> str:
    return f"{n} thread" + ("s" if n != 1 else "")


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:,.1f}" if seconds >= 0.01 else f"{seconds * 1000:,.2f}"


def model_table(models: dict[str, dict], threads: int, runs: int, interp_runs: int) -> list[str]:
    top, formula = peak(threads)
    out = [f"Inference latency, ms (median of {runs} after {WARM_UPS} warm-ups; interpreter: "
           f"{interp_runs or 'not run'}), {threads_text(threads)}; GFLOP/s are the model's FLOPs as written "
           f"(profile/cost.py's counts) over the latency, against the peak, {formula}:", "",
           "| model | GFLOP | RelayLens compiled (weights bound) | its build | interpreter | onnxruntime "
           "| compiled ÷ onnxruntime (medians; paired) | RelayLens GFLOP/s (% of peak) "
           "| onnxruntime GFLOP/s (% of peak) | max abs diff (output max) |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for key, f in models.items():
        rates = [f["gflop"] / f[k] for k in ("compiled_s", "onnxruntime_s")]
        ours_rate, ort_rate = (f"{r:,.1f} ({r / top:.0%})" for r in rates)
        out.append(f"| {B.LABELS[key]} ({f['weights_mib']:,.0f} MiB of weights) | {f['gflop']:.2f}"
                   f" | {ms(f['compiled_s'])} | {f['build_s']:.1f} s"
                   f" | {ms(f.get('interpreter_s'))} | {ms(f['onnxruntime_s'])}"
                   f" | {f['ratio_to_onnxruntime']:.2f}x; {f['paired_ratio']:.2f}x"
                   f" | {ours_rate} | {ort_rate} | {f['max_abs_diff']:.1e} ({f['max_abs_output']:.1f}) |")
    for key, f in models.items():
        if f.get("kernels"):
            out += ["", f"Slowest kernels of {B.LABELS[key]}, each timed alone (ms per inference, calls):"]
            for r in f["kernels"]:
                shapes = ", ".join("x".join(map(str, s)) for s in r["inputs"])
                out.append(f"- {ms(r['seconds'])} ({r['calls']}x) {r['function']} ({shapes})")
    if "resnet50" in models:
        ratio = models["resnet50"]["ratio_to_onnxruntime"]
        met = "met" if ratio <= GOAL_RESNET_RATIO else "NOT met"
        out += ["", f"Goal: ResNet-50 within {GOAL_RESNET_RATIO:g}x of onnxruntime at {threads_text(threads)}: {met} "
                f"({ratio:.1f}x)."]
    return out


def chain_table(chains: dict[str, dict], threads: int, runs: int) -> list[str]:
    out = [f"Fused element-wise chains over {ELEMENTS:,} float32, ms (median of {runs}):", "",
           f"| chain | kernel, {threads_text(threads)} | kernel, 1 thread | run() | numpy | numpy in place "
           "| numpy ÷ kernel |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, f in chains.items():
        out.append(f"| {label} | {ms(f['kernel_s'])} | {ms(f['kernel_1thread_s'])} | {ms(f['run_s'])}"
                   f" | {ms(f['numpy_s'])} | {ms(f['numpy_in_place_s'])} | {f['speedup_vs_numpy']:.1f}x |")
    if chains:
        slowest = min(f["speedup_vs_numpy"] for f in chains.values())
        single = min(f["numpy_s"] / f["kernel_1thread_s"] for f in chains.values())
        met = "met" if slowest > 1 else "NOT met"
        out += ["", f"Goal: fused element-wise chains faster than numpy: {met} (at least {slowest:.1f}x at "
                f"{threads_text(threads)}, {single:.1f}x on 1 thread)."]
    return out


def kernel_table(kernels: dict[str, dict], threads: int, runs: int) -> list[str]:
    top, formula = peak(threads)
    out = [f"Kernels, GFLOP/s (median of {runs}), {threads_text(threads)}; peak {formula}; pools count one "
           "operation per window position:", "",
           "| kernel | GFLOP | RelayLens ms | RelayLens GFLOP/s | % of peak | onnxruntime ms | onnxruntime GFLOP/s "
           "| ours ÷ onnxruntime (medians; paired, the convolutions) | numpy BLAS GFLOP/s |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, f in kernels.items():
        numpy_g = f"{f['numpy_gflops']:,.1f}" if "numpy_gflops" in f else "-"
        paired = f"; {f['paired_ratio']:.2f}x" if "paired_ratio" in f else ""
        out.append(f"| {label} | {f['gflop']:.4f} | {ms(f['ours_s'])} | {f['ours_gflops']:,.1f}"
                   f" | {f['ours_gflops'] / top:.1%} | {ms(f['onnxruntime_s'])} | {f['onnxruntime_gflops']:,.1f}"
                   f" | {f['ours_s'] / f['onnxruntime_s']:.2f}x{paired} | {numpy_g} |")
    overheads = [f["call_overhead_s"] for f in kernels.values() if "call_overhead_s" in f]
    if overheads:
        out += ["", f"The convolutions' rows time the kernel's machine code called directly, as a model's AOT "
                f"entry calls it; called from Python through `Kernel.__call__` (its checks of every array) each "
                f"takes {min(overheads) * 1e6:.0f}-{max(overheads) * 1e6:.0f} us longer (median of turns, "
                f"`call_overhead_s`)."]
    return out


def main(argv: list[str] | None = None) -> int:
    from relaylens.compiler.lower.runtime.jit import default_num_threads

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs (median) of compiled code and onnxruntime")
    ap.add_argument("--interp-runs", type=int, default=1, help="timed interpreter runs per model (0: skip)")
    ap.add_argument("--models", default=",".join(B.MODELS), help=f"comma-separated, from {', '.join(B.MODELS)}")
    ap.add_argument("--top", type=int, default=5, help="list each model's N slowest fused kernels (0: skip)")
    ap.add_argument("--skip-models", action="store_true", help="only the element-wise chains and kernels")
    ap.add_argument("--skip-micro", action="store_true", help="only the models")
    ap.add_argument("--kernels", metavar="WORDS",
                    help="only the kernels whose label contains one of these comma-separated words "
                         "(e.g. pool,depthwise), and no element-wise chains")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time the CPU the calling thread uses instead of wall time (1 thread only: "
                         "RELAYLENS_NUM_THREADS=1); far less disturbed by other work on a busy machine")
    ap.add_argument("--opt-level", type=int, default=3, choices=range(5),
                    help="relay.build's opt level for our builds (4: FastMath's fast_exp, fast_tanh, fast_erf, "
                         "and the CombineParallel* passes, as TVM's level 4; default 3)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    global OPT_LEVEL, CLOCK
    OPT_LEVEL = args.opt_level
    words = [w.strip() for w in (args.kernels or "").split(",") if w.strip()]
    cases = [c for c in KERNELS if not words or any(w in c.label for w in words)]
    if not cases:
        ap.error(f"--kernels {args.kernels}: no kernel label contains these words")
    keys = [] if args.skip_models else [k.strip() for k in args.models.split(",") if k.strip()]
    unknown = [k for k in keys if k not in B.MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(B.MODELS)}")
    if args.runs < 1 or args.interp_runs < 0 or args.top < 0:
        ap.error("--runs must be at least 1, --interp-runs and --top at least 0")
    try:
        threads = default_num_threads()
    except ValueError as err:
        ap.error(str(err))
    if args.cpu_time:
        if threads != 1:
            ap.error("--cpu-time times the calling thread: run with RELAYLENS_NUM_THREADS=1")
        CLOCK = time.thread_time
    B.require("onnxruntime")
    load = B.load_note()

    models = {}
    for key in keys:
        models[key] = measure_model(B.load_model(key), threads, args.runs, args.interp_runs, args.top)
        print(f"  measured {B.LABELS[key]}", file=sys.stderr, flush=True)
    chains, kernels = {}, {}
    if not args.skip_micro:
        for label in CHAINS if not words else ():
            chains[label] = measure_chain(label, threads, args.runs)
        print("  measured the element-wise chains", file=sys.stderr, flush=True)
        for case in cases:
            kernels[case.label] = measure_kernel(case, threads, args.runs)
        print("  measured the kernels", file=sys.stderr, flush=True)

    sections = []
    if models:
        sections.append(model_table(models, threads, args.runs, args.interp_runs))
    if chains:
        sections.append(chain_table(chains, threads, args.runs))
    if kernels:
        sections.append(kernel_table(kernels, threads, args.runs))
    info = B.machine(threads)
    print("\n\n".join("\n".join(s) for s in sections))
    clock = "CPU time of the calling thread (--cpu-time)" if args.cpu_time else "wall time"
    built = "" if OPT_LEVEL == 3 else f"  Ours built at --opt-level {OPT_LEVEL}{' (FastMath)' if OPT_LEVEL >= 4 else ''}."
    print(f"\nTimes are {clock}.{built}  Machine ({load} before the run):\n" + "\n".join(B.machine_lines(info)))
    if args.json:
        top, formula = peak(threads)
        payload = {"bench": "run", "clock": "thread_time" if args.cpu_time else "perf_counter",
                   "runs": args.runs, "interp_runs": args.interp_runs, "threads": threads, "opt_level": OPT_LEVEL,
                   "load": load, "machine": info, "peak_gflops": top, "peak_formula": formula,
                   "models": models, "chains": chains, "kernels": kernels}
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
