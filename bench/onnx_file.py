"""One ONNX file, built as run.py builds its models, beside onnxruntime: outputs compared,
then paired calls (run.py `paired_ratio`: ours, then onnxruntime, each after the same
pause; the median of the per-pair ratios) on `--threads` threads.

    .venv/bin/python bench/onnx_file.py MODEL.onnx [--shape NAME=1,3,224,224] [--input X.npy]
                                        [--runs 30] [--threads 1] [--json out.json]

A dynamic input needs `--shape` (as `relaylens import --shape`); without `--input` the
inputs are run.py's seeded random values.  Prints the build time, the largest output
difference against onnxruntime (and whether rtol 1e-4 holds), each side's median and the
paired ratio, and the load before and after.  To compare two checkouts, run each one's
copy of this script in turns (the ratios are both against onnxruntime in the same run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from siblings import run_module  # noqa: E402


def _shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, _, dims = text.partition("=")
    return name, tuple(int(d) for d in dims.split(","))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--shape", action="append", default=[], help="NAME=D0,D1,... for a dynamic input")
    ap.add_argument("--input", type=Path, help="a .npy for the (single) input")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    R = run_module()
    import onnx

    from relaylens.compiler.frontend.onnx import import_onnx
    from relaylens.compiler.printer import print_module

    before = R.B.load_note()
    model = onnx.load(str(args.model))
    shapes = dict(_shape(s) for s in args.shape)
    imported = import_onnx(model, shapes)
    text = print_module(imported.module, spans=True, types=True)
    started = time.perf_counter()
    result, lowering = R.compile_text(text, args.model.stem + ".relay", args.threads, params=imported.params)
    build_s = time.perf_counter() - started
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        if value.name not in imported.inputs:
            continue
        if args.input is not None:
            feeds[value.name] = np.load(args.input).astype(np.float32)
            continue
        dims = shapes.get(value.name) or tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        feeds[value.name] = rng.standard_normal(dims).astype(np.float32)
    by_param = {imported.inputs[name]: v for name, v in feeds.items()}
    inputs = [by_param[p.name] for p in result.snapshots[0].module["main"].params]
    exe = lowering.executable
    ours = exe.run(*inputs)
    session = R.ort_session(model, args.threads)
    reference = session.run(None, feeds)[0]
    diff = float(np.abs(ours - reference).max())
    close = bool(np.allclose(ours, reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max())))
    times = {"ours": [], "theirs": []}
    ratios = []
    for fn in (lambda: exe.run(*inputs), lambda: session.run(None, feeds)):  # warm-ups
        R.after_onnxruntime()
        fn()
    for _ in range(args.runs):
        pair = []
        for side, fn in (("ours", lambda: exe.run(*inputs)), ("theirs", lambda: session.run(None, feeds))):
            R.after_onnxruntime()
            start = time.perf_counter()
            fn()
            pair.append(time.perf_counter() - start)
            times[side].append(pair[-1])
        ratios.append(pair[0] / pair[1])
    fig = {"model": str(args.model), "threads": args.threads, "runs": args.runs, "build_s": build_s,
           "max_abs_diff": diff, "max_abs_output": float(np.abs(reference).max()), "allclose_1e-4": close,
           "ours_ms": statistics.median(times["ours"]) * 1e3, "theirs_ms": statistics.median(times["theirs"]) * 1e3,
           "paired_ratio": statistics.median(ratios)}
    print(f"{args.model.name}: built in {build_s:.1f} s; output max |diff| {diff:.2e} of max |out| "
          f"{fig['max_abs_output']:.2e} (rtol 1e-4: {'ok' if close else 'NOT CLOSE'}); ours {fig['ours_ms']:.2f} ms, "
          f"onnxruntime {fig['theirs_ms']:.2f} ms, paired {fig['paired_ratio']:.3f}x ({args.runs} pairs, "
          f"{args.threads} thread(s))")
    print(f"before the run: {before}\nafter it: {R.B.load_note()}")
    if args.json:
        args.json.write_text(json.dumps(fig, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
