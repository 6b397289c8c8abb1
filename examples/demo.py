"""The two steps of `make demo` that are not `relaylens` commands.

    python examples/demo.py compare MODEL.onnx INPUT.npy OUTPUT.npz
        runs MODEL with onnxruntime on INPUT (fed to its first graph input) and prints the
        largest absolute and relative error of OUTPUT.npz's `output` (what `relaylens run
        -o` wrote) against it; exit status 1 beyond rtol 1e-4 / atol 1e-5 (as `run --check`)
    python examples/demo.py where FILE.relay LAYER
        prints FILE:LINE:COL of the first expression of FILE whose span names the frontend
        layer LAYER (an ONNX node, e.g. /conv2/Conv): what `relaylens explain` takes

Needs onnx and onnxruntime (the `test` extra: `make venv` installs them).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

RTOL, ATOL = 1e-4, 1e-5


def compare(model_path: str, input_path: str, output_path: str) -> int:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    x = np.load(input_path, allow_pickle=False)
    want = session.run(None, {session.get_inputs()[0].name: x})[0]
    with np.load(output_path, allow_pickle=False) as archive:
        got = archive["output"]
    if got.shape != want.shape:
        print(f"onnxruntime gives shape {want.shape}, {output_path} holds {got.shape}")
        return 1
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    rel = diff / np.maximum(np.abs(want.astype(np.float64)), 1e-30)
    ok = np.allclose(got, want, rtol=RTOL, atol=ATOL)
    print(f"compiled vs onnxruntime: max abs error {diff.max():.3g}, max rel error {rel.max():.3g}"
          f"{'' if ok else '  DIFFERS'}")
    print(f"predicted class: {int(got.argmax())} (onnxruntime: {int(want.argmax())})")
    return 0 if ok else 1


def where(relay_path: str, layer: str) -> int:
    from relaylens.compiler.ir import Call, LayerSpan, Span
    from relaylens.compiler.ir.functor import post_order
    from relaylens.compiler.parser import parse

    with open(relay_path, encoding="utf-8") as f:
        parsed = parse(f.read(), relay_path)
    found = []
    for func in parsed.module.functions.values():
        for node in post_order(func):
            origins = node.span.origins() if isinstance(node, Call) and node.span else ()
            if any(isinstance(o, LayerSpan) and o.name == layer for o in origins):
                found += [o for o in origins if isinstance(o, Span)]
    if not found:
        print(f"{relay_path}: no expression of layer {layer}", file=sys.stderr)
        return 1
    first = min(found, key=lambda s: s.start)
    line, col = first.source.location(first.start)
    print(f"{relay_path}:{line}:{col}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("compare", help="compiled output vs onnxruntime")
    c.add_argument("model")
    c.add_argument("input")
    c.add_argument("output")
    w = commands.add_parser("where", help="FILE:LINE:COL of a layer's first expression")
    w.add_argument("relay")
    w.add_argument("layer")
    args = parser.parse_args()
    if args.command == "compare":
        return compare(args.model, args.input, args.output)
    return where(args.relay, args.layer)


if __name__ == "__main__":
    sys.exit(main())
