"""Where a model's inference time goes, kernel call by kernel call, as it runs in the model.

    RELAYLENS_NUM_THREADS=2 python bench/steps.py --model mobilenet --runs 50 --json two.json
    RELAYLENS_NUM_THREADS=1 python bench/steps.py --model mobilenet --runs 50 --json one.json
    python bench/steps.py --compare one.json two.json

Builds the model as bench/run.py does (weights bound) and runs the profiler's timed AOT
entry (compiler/lower/runtime/timing.py: the monotonic clock read before and after each
kernel call, no Python between kernels).  It prints the median of each plan step over
`--runs` inferences, the sum of those medians, the median of the whole timed entry
(first call's start to last call's end) and the median over inferences of the time
between calls (the whole less its calls: what the entry spends between kernels; under
load the whole's median takes in preemptions that the calls' medians leave out).  `--compare A B` prints, for each kernel, the two files' times and their ratio
(B ÷ A): with A at 1 thread and B at 2, a ratio near or above 1 marks a kernel whose
parallel region does not pay.  Per-step times are wall times; run at low load.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from siblings import run_module, timed_model  # bench/run.py


def measure(key: str, runs: int) -> dict:
    from relaylens.compiler.lower.runtime.jit import default_num_threads

    threads = default_num_threads()
    built = timed_model(key, threads)
    timed, inputs, plan = built.timed, built.inputs, built.lowering.executable.plan
    for _ in range(3):
        timed.run(*inputs)
    samples = [timed.run(*inputs)[1] for _ in range(runs)]
    per_step = np.median(np.stack([s[:, 1] - s[:, 0] for s in samples]), axis=0) / 1e3  # us
    whole = statistics.median(float(s[-1, 1] - s[0, 0]) for s in samples) / 1e3
    between = statistics.median(float(s[-1, 1] - s[0, 0] - (s[:, 1] - s[:, 0]).sum()) for s in samples) / 1e3
    steps = [{"kernel": step.kernel, "us": float(t),
              "shapes": [list(b.shape) for b in step.args]} for step, t in zip(plan.steps, per_step)]
    return {"model": key, "threads": threads, "runs": runs, "load": run_module().B.load_note(),
            "whole_us": whole, "sum_us": float(per_step.sum()), "between_us": between, "steps": steps}


def by_kernel(figures: dict) -> dict[str, tuple[float, int, list]]:
    total: dict[str, list] = defaultdict(lambda: [0.0, 0, None])
    for step in figures["steps"]:
        row = total[step["kernel"]]
        row[0] += step["us"]
        row[1] += 1
        row[2] = step["shapes"]
    return {k: tuple(v) for k, v in total.items()}


def report(figures: dict, top: int) -> None:
    print(f"{figures['model']}, {figures['threads']} thread(s), median of {figures['runs']} ({figures['load']}):")
    print(f"  whole entry {figures['whole_us']:.0f} us, sum of the calls' medians {figures['sum_us']:.0f} us, "
          f"between calls {figures['between_us']:.0f} us, {len(figures['steps'])} calls")
    rows = sorted(by_kernel(figures).items(), key=lambda kv: -kv[1][0])
    for name, (us, calls, shapes) in rows[:top]:
        print(f"  {us:8.1f} us ({calls}x) {name} {'x'.join(map(str, shapes[0])) if shapes else ''}")


def compare(a: dict, b: dict) -> None:
    ka, kb = by_kernel(a), by_kernel(b)
    print(f"A: {a['threads']} thread(s), whole {a['whole_us']:.0f} us; B: {b['threads']} thread(s), "
          f"whole {b['whole_us']:.0f} us; B/A {b['whole_us'] / a['whole_us']:.2f}")
    rows = sorted(ka, key=lambda k: -ka[k][0])
    for name in rows:
        ua, calls, shapes = ka[name]
        ub = kb.get(name, (float("nan"),))[0]
        print(f"  {ua:8.1f} {ub:8.1f} {ub / ua:5.2f} ({calls}x) {name} {'x'.join(map(str, shapes[0]))}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="mobilenet")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = ap.parse_args(argv)
    if args.compare:
        try:
            compare(*(json.loads(p.read_text()) for p in args.compare))
        except (OSError, ValueError, KeyError, TypeError) as err:
            ap.error(f"--compare takes two files this script wrote with --json: {err}")
        return 0
    models = run_module().B.MODELS
    if args.model not in models:
        ap.error(f"unknown model {args.model}; choose from {', '.join(models)}")
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    figures = measure(args.model, args.runs)
    report(figures, args.top)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
