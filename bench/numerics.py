"""Where compiled code and the reference interpreter part on the two models of issue 22,
measured (docs/cli.md, "The two cases of issue 22").

    python bench/numerics.py lstm [--hidden 256] [--features 64] [--steps 35] [--weights role|normal]
    python bench/numerics.py resnet18

`lstm`: the unrolled LSTM of tests/numerics_models.py, its weights bound as constants
(drawn by role: normal(0, 1/sqrt(fan_in)), bias normal(0, 0.1); or `normal`: normal(0, 1),
the random data `run` drew before issue 22), h0 = c0 = 0, x normal(0, 1).  For each k in
1..steps the k-step prefix is built and run, and h_k (the output) is compared with a
float64 run of the same program by the interpreter: the float32 interpreter on the module
as written, the float32 interpreter on the module after the passes (the passes' share),
and the compiled code.  Max |error| over h_k, and that over max|h_k| (the norm-wise
relative error --check uses).  It then runs `--check`'s steps on the full model
(compiler/numerics/check.py): the output comparison, and when it differs the bisection.

`resnet18`: an ONNX ResNet-18 (basic blocks, He-initialised weights, batch norm with
variances in [0.5, 1.5], 1x3x224x224) built with bench/build.py's helpers, imported, and
checked the same way, every kernel's error listed by the bisection.

No timing: this measures numbers, not speed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from numerics_models import lstm_text  # noqa: E402

from relaylens.compiler.check import check_text  # noqa: E402
from relaylens.compiler.driver import compile  # noqa: E402
from relaylens.compiler.interpreter import Interpreter  # noqa: E402
from relaylens.compiler.lower.pipeline import LoweringCache  # noqa: E402
from relaylens.compiler.numerics import bisect_kernels, check_numerics  # noqa: E402


def lstm_weights(rng: np.random.Generator, hidden: int, features: int, kind: str) -> dict[str, np.ndarray]:
    h4 = 4 * hidden
    if kind == "role":
        w_ih = rng.normal(0, 1 / np.sqrt(features), (h4, features))
        w_hh = rng.normal(0, 1 / np.sqrt(hidden), (h4, hidden))
        bias = rng.normal(0, 0.1, h4)
    else:
        w_ih, w_hh = rng.standard_normal((h4, features)), rng.standard_normal((h4, hidden))
        bias = rng.standard_normal(h4)
    return {"w_ih": w_ih, "w_hh": w_hh, "bias": bias, "h0": np.zeros((1, hidden)), "c0": np.zeros((1, hidden))}


def lstm(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    weights = lstm_weights(rng, args.hidden, args.features, args.weights)
    x64 = rng.standard_normal((args.steps, 1, args.features))
    w32 = {k: v.astype("float32") for k, v in weights.items()}
    order = ["w_ih", "w_hh", "bias", "h0", "c0"]
    cache = LoweringCache()
    print(f"LSTM: {args.steps} steps, hidden {args.hidden}, features {args.features}, weights {args.weights}, "
          f"seed {args.seed}; h_k against float64 (max abs error, and / max|h_k|)")
    print("| k | max abs h_k | float32 interpreter | after the passes (interpreted) | compiled "
          "| compiled vs interpreter |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k in range(1, args.steps + 1):
        x = x64[:k]
        text64 = lstm_text(k, args.hidden, args.features, "float64")
        ref = Interpreter(check_text(text64, "l64.relay").module).call("main", [x, *[weights[n] for n in order]])
        text = lstm_text(k, args.hidden, args.features)
        interp = Interpreter(check_text(text, "l.relay").module).call(
            "main", [x.astype("float32"), *[w32[n] for n in order]])
        built = compile(text, "l.relay", params=w32, cache=cache)
        x32 = x.astype("float32")
        after = Interpreter(built.module).call("main", [x32])
        got = built.executable.run(x32)
        scale = float(np.abs(ref).max())

        def err(a) -> str:
            e = float(np.abs(np.asarray(a, np.float64) - ref).max())
            return f"{e:.2g} ({e / scale:.1g})"

        diff = float(np.abs(np.asarray(got, np.float64) - interp).max())
        print(f"| {k} | {scale:.3g} | {err(interp)} | {err(after)} | {err(got)} | {diff:.2g} |", flush=True)
    text = lstm_text(args.steps, args.hidden, args.features)
    built = compile(text, "l.relay", params=w32, cache=cache)
    module = check_text(text, "l.relay").module
    x32 = x64.astype("float32")
    report(check_numerics(module, [x32, *[w32[n] for n in order]], built, [x32]))


def resnet18_onnx():
    from build import OnnxGraph, _classifier, _conv_bn

    g = OnnxGraph(seed=18)
    x = g.node("Relu", [_conv_bn(g, "input", "", 3, 64, 7, 2, conv="conv1", bn="bn1")], "relu/Relu")
    x = g.node("MaxPool", [x], "maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, width in enumerate((64, 128, 256, 512), start=1):
        for b in range(2):
            p = f"layer{stage}.{b}/"
            stride = 2 if b == 0 and stage > 1 else 1
            y = g.node("Relu", [_conv_bn(g, x, p, cin, width, 3, stride, conv="conv1", bn="bn1")], f"{p}relu/Relu")
            y = _conv_bn(g, y, p, width, width, 3, conv="conv2", bn="bn2")
            short = (_conv_bn(g, x, p, cin, width, 1, stride, conv="downsample.0", bn="downsample.1")
                     if stride != 1 or cin != width else x)
            x = g.node("Relu", [g.node("Add", [y, short], f"{p}Add")], f"{p}relu_1/Relu")
            cin = width
    return g.model("resnet18", {"input": (1, 3, 224, 224)}, _classifier(g, x, 512), (1, 1000))


def resnet18(args: argparse.Namespace) -> None:
    from relaylens.compiler.frontend.onnx import import_onnx
    from relaylens.compiler.printer import print_module

    imported = import_onnx(resnet18_onnx())
    text = print_module(imported.module, spans=True, types=True)
    params = imported.params
    module = check_text(text, "resnet18.relay").module
    x = np.random.default_rng(args.seed).standard_normal((1, 3, 224, 224)).astype("float32")
    everything = [params[p.name] if p.name in params else x for p in module["main"].params]
    built = compile(text, "resnet18.relay", params=params)
    print("ResNet-18 (ONNX, He-initialised, batch-norm variances in [0.5, 1.5], 1x3x224x224)")
    result = check_numerics(module, everything, built, [x])
    report(result)
    if result.ok:  # list every kernel's error anyway
        result.kernels = bisect_kernels(built, [x], every=True)
        print_kernels(result.kernels)


def report(result) -> None:
    for label, c in result.outputs:
        print(f"check {label}: {c.text()}{'' if c.ok else '  DIFFERS'}")
    if result.culprit is not None:
        bad = result.culprit
        print(f"bisection: kernel #{bad.index} {bad.place.text()} differs: {bad.text()}")
    elif result.kernels:
        print(f"bisection: each of the {len(result.kernels)} kernel calls matches on its own inputs")
        print_kernels(result.kernels)
        if result.after_passes is not None:
            print(f"the module after the passes, interpreted, against the module as written: "
                  f"{result.after_passes.text()}")


def print_kernels(checks) -> None:
    largest = max(checks, key=lambda c: c.max_abs, default=None)
    if largest is not None:
        print(f"  largest absolute error: #{largest.index} {largest.place.display}: {largest.max_abs:.3g}; "
              f"largest elementwise relative errors:")
    worst = sorted(checks, key=lambda c: -c.max_rel)[:5]
    for c in worst:
        print(f"  #{c.index} {c.place.display}: max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=("lstm", "resnet18"))
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--steps", type=int, default=35)
    parser.add_argument("--weights", choices=("role", "normal"), default="role")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    (lstm if args.model == "lstm" else resnet18)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
