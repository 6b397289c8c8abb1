"""Small ONNX models of the ops the four benchmark networks do not have, as a user's model
meets them: beside onnxruntime on the same file.

    RELAYLENS_NUM_THREADS=1 python bench/onnx_ops.py [--runs 15] [--cpu-time] [--only decoder,lstm]

Each model is written with onnx.helper (bench/build.py's OnnxGraph), imported by our
frontend (`relaylens import`'s path) and compiled with its weights bound, as bench/run.py
compiles the networks; onnxruntime runs the file with every graph optimisation on and the
same thread count.  Printed per model: both sides' medians, the paired ratio (run.py's
`paired_ratio`: ours ÷ onnxruntime's, a call of each in turn), the largest difference of
the outputs, and the build time.

    decoder     ConvTranspose 128 -> 64, 2x2 stride 2 from 28x28, Relu, ConvTranspose
                64 -> 32, 4x4 stride 2 pad 1 to 112x112 (a segmentation head, a GAN)
    einsum      attention as two Einsums, 12 heads of 128 x 64, the softmax between
    lstm        an embedding, an LSTM (64 -> 128) and a bidirectional LSTM (128 -> 128)
                over 32 steps, a classifier on the last states
    gru         a GRU (linear_before_reset=1, as PyTorch exports it), 64 -> 256 over 32 steps
    head        a detector's upsampling head (YOLOv4-like): Conv 3x3 64 -> 64 on 64x64, Mish,
                Resize x2 (nearest), Conv 1x1 64 -> 32, Softplus: a 2 MB output at 128x128,
                log and exp in the element-wise chains
    det         a small detector (the product's stop 30): Conv 3x3 3 -> 16 on 64x64, LeakyRelu,
                MaxPool, Conv 3x3 16 -> 32, Softplus, Resize x2 (nearest), Concat with the
                stem, Conv 1x1 48 -> 16, ConvTranspose 2x2 stride 2, InstanceNormalization,
                Conv 1x1 8 -> 6, Sigmoid: the softplus is read through the resize
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

from siblings import run_module  # bench/run.py


R = run_module()
OnnxGraph = R.B.OnnxGraph


def decoder():
    g = OnnxGraph(1)
    up = g.node("ConvTranspose", ["x", g.weight("up1.w", (128, 64, 2, 2))], "up1", strides=[2, 2])
    up = g.node("Relu", [up], "relu1")
    up = g.node("ConvTranspose", [up, g.weight("up2.w", (64, 32, 4, 4))], "up2", strides=[2, 2], pads=[1, 1, 1, 1])
    return g.model("decoder", {"x": (1, 128, 28, 28)}, up, (1, 32, 112, 112)), {"x": (1, 128, 28, 28)}


def einsum():
    g = OnnxGraph(2)
    shape = (1, 128, 12, 64)
    s = g.node("Einsum", ["q", "k"], "scores", equation="bqhd,bkhd->bhqk")
    p = g.node("Softmax", [s], "softmax", axis=-1)
    o = g.node("Einsum", [p, "v"], "values", equation="bhqk,bkhd->bqhd")
    return g.model("einsum", {"q": shape, "k": shape, "v": shape}, o, shape), {n: shape for n in "qkv"}


def _recurrent(g: OnnxGraph, op: str, x: str, name: str, inputs: int, hidden: int, directions: int = 1,
               **attrs) -> list[str]:
    gates = {"LSTM": 4, "GRU": 3}[op]
    w = g.weight(f"{name}.W", (directions, gates * hidden, inputs), fan_in=inputs)
    r = g.weight(f"{name}.R", (directions, gates * hidden, hidden), fan_in=hidden)
    b = g.init(f"{name}.B", np.zeros((directions, 2 * gates * hidden), np.float32))
    direction = "bidirectional" if directions == 2 else "forward"
    return g.node(op, [x, w, r, b], name, outputs=3 if op == "LSTM" else 2, hidden_size=hidden,
                  direction=direction, **attrs)


def lstm():
    g = OnnxGraph(3)
    steps, embed, hidden = 32, 64, 128
    x = g.node("MatMul", ["x", g.weight("embed", (embed, embed))], "embed")  # (32, 1, 64)
    y, _, _ = _recurrent(g, "LSTM", x, "lstm1", embed, hidden)
    y = g.node("Squeeze", [y, g.init("axis1", np.array([1], np.int64))], "squeeze")
    _, h, _ = _recurrent(g, "LSTM", y, "lstm2", hidden, hidden, directions=2)
    h = g.node("Transpose", [h], "batch_first", perm=[1, 0, 2])
    h = g.node("Reshape", [h, g.init("flat", np.array([1, 2 * hidden], np.int64))], "flatten")
    out = g.node("Gemm", [h, g.weight("fc", (2 * hidden, 5))], "classifier")
    return g.model("lstm", {"x": (steps, 1, embed)}, out, (1, 5), opset=14), {"x": (steps, 1, embed)}


def gru():
    g = OnnxGraph(4)
    _, h = _recurrent(g, "GRU", "x", "gru", 64, 256, linear_before_reset=1)
    return g.model("gru", {"x": (32, 1, 64)}, h, (1, 1, 256), opset=14), {"x": (32, 1, 64)}


def head():
    g = OnnxGraph(5)
    x = g.node("Conv", ["x", g.weight("conv.w", (64, 64, 3, 3)), g.init("conv.b", np.zeros(64, np.float32))],
               "conv", pads=[1, 1, 1, 1])
    x = g.node("Mish", [x], "mish")
    scales = g.init("scales", np.array([1, 1, 2, 2], np.float32))
    x = g.node("Resize", [x, "", scales], "upsample", mode="nearest")
    x = g.node("Conv", [x, g.weight("proj.w", (32, 64, 1, 1))], "proj")
    out = g.node("Softplus", [x], "softplus")
    return g.model("head", {"x": (1, 64, 64, 64)}, out, (1, 32, 128, 128), opset=18), {"x": (1, 64, 64, 64)}


def det():
    g = OnnxGraph(6)
    zeros = g.init("b1", np.zeros(16, np.float32))
    r1 = g.node("LeakyRelu", [g.node("Conv", ["x", g.weight("w1", (16, 3, 3, 3)), zeros], "stem", pads=[1, 1, 1, 1])],
                "lrelu", alpha=0.1)
    x = g.node("MaxPool", [r1], "pool", kernel_shape=[2, 2], strides=[2, 2])
    x = g.node("Conv", [x, g.weight("w2", (32, 16, 3, 3))], "down", pads=[1, 1, 1, 1])
    x = g.node("Softplus", [x], "softplus")
    scales = g.init("scales", np.array([1, 1, 2, 2], np.float32))
    x = g.node("Resize", [x, g.init("roi", np.zeros(0, np.float32)), scales], "upsample", mode="nearest")
    x = g.node("Concat", [x, r1], "concat", axis=1)
    x = g.node("Conv", [x, g.weight("w3", (16, 48, 1, 1))], "conv1x1")
    x = g.node("ConvTranspose", [x, g.weight("wt", (16, 8, 2, 2))], "deconv", strides=[2, 2])
    x = g.node("InstanceNormalization", [x, g.uniform("g", (8,), 0.5, 1.5), g.init("be", np.zeros(8, np.float32))],
               "inorm")
    out = g.node("Sigmoid", [g.node("Conv", [x, g.weight("wh", (6, 8, 1, 1))], "head")], "sigmoid")
    return g.model("det", {"x": (1, 3, 64, 64)}, out, (1, 6, 128, 128)), {"x": (1, 3, 64, 64)}


MODELS: dict[str, Callable] = {"decoder": decoder, "einsum": einsum, "lstm": lstm, "gru": gru, "head": head,
                               "det": det}


def measure(key: str, threads: int, runs: int) -> dict:
    from relaylens.compiler.frontend.onnx import import_onnx
    from relaylens.compiler.printer import print_module

    model, shapes = MODELS[key]()
    imported = import_onnx(model)
    text = print_module(imported.module, spans=True, types=True)
    started = time.perf_counter()
    result, lowering = R.compile_text(text, f"{key}.relay", threads, params=imported.params)
    build_s = time.perf_counter() - started
    rng = np.random.default_rng(0)
    feeds = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    by_param = {imported.inputs[name]: value for name, value in feeds.items()}
    inputs = [by_param[p.name] for p in result.snapshots[0].module["main"].params]
    exe = lowering.executable
    ours = exe.run(*inputs)
    session = R.ort_session(model, threads)
    reference = session.run(None, feeds)[0]
    R.after_onnxruntime()
    return {
        "ours_s": R.median_s(lambda: exe.run(*inputs), runs),
        "onnxruntime_s": R.median_s(lambda: session.run(None, feeds), runs),
        "paired": R.paired_ratio(lambda: exe.run(*inputs), lambda: session.run(None, feeds), runs),
        "max_abs_diff": float(np.abs(np.asarray(ours) - reference).max()),
        "max_abs_output": float(np.abs(reference).max()),
        "build_s": build_s,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--only", default=",".join(MODELS), help="models, comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--cpu-time", action="store_true", help="time the calling thread's CPU time, not wall time")
    args = ap.parse_args(argv)
    keys = [k for k in args.only.split(",") if k]
    unknown = [k for k in keys if k not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    if args.cpu_time:
        R.CLOCK = time.thread_time
    from relaylens.compiler.lower.runtime.jit import default_num_threads

    threads = default_num_threads()
    print(f"{R.threads_text(threads)}, {'CPU' if args.cpu_time else 'wall'} time, median of {args.runs}; "
          f"{R.B.load_note()}")
    print("| model | ours ms | onnxruntime ms | paired ratio | max abs diff (output max) | build s |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for key in keys:
        f = measure(key, threads, args.runs)
        print(f"| {key} | {f['ours_s'] * 1e3:.2f} | {f['onnxruntime_s'] * 1e3:.2f} | {f['paired']:.2f}x | "
              f"{f['max_abs_diff']:.1e} ({f['max_abs_output']:.2g}) | {f['build_s']:.1f} |", flush=True)
    print("\n" + "\n".join(R.B.machine_lines(R.B.machine(threads))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
