"""Where a cold build's lowering time goes, kernel by kernel, as a worker spends it.

    python bench/kernel_costs.py [--models resnet50] [--rounds 2] [--top 10]

A cold build lowers its kernels in forked workers (compiler/lower/parallel.py), whose
time bench/build.py's stage clocks cannot see: its serial split runs them in the parent,
with the garbage collector on and MCJIT making the machine code.  This builds the model
once (bench/build.py's ONNX model, weights as parameters, no disk cache), then lowers
every kernel again in this process as a worker does (`pipeline._lower` with `load=False`,
the collector frozen and off as in `parallel.py`'s children), `--rounds` times, and
prints the CPU seconds (the lowest of the rounds) of each step per kernel: schedule (the
default schedule and its loop nest), LLVM IR (code generation), printing it, LLVM's parse
(with verification), O3, and machine code (the target machine's object code, with the
optimised text printed).  The rows are the `--top` kernels by total, then the sums.

Its first use (h-build10, ResNet-50, load 6-7): the workers' CPU is all in these steps
(their sum over the kernels 9.8 s, the two workers' CPU 9.9 s), LLVM's parse, O3 and
machine code 65% of it, the Python steps 35%; no two kernels have the same IR but for
their names.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build  # noqa: E402  (bench/build.py: the models, the machine, the load)

STEPS = ("schedule", "LLVM IR", "print", "parse", "O3", "machine code")


def measure(key: str, rounds: int) -> dict[str, dict[str, float]]:
    """CPU seconds per kernel and step, the lowest of `rounds` lowerings."""
    import os

    from relaylens.compiler.driver import compile
    from relaylens.compiler.lower import pipeline
    from relaylens.compiler.lower.runtime.jit import JIT

    os.environ["RELAYLENS_NO_CACHE"] = "1"
    model = build.load_model(key)
    result = compile(model.text, f"{key}.relay", params=model.params)  # bound, as tvm_compile.py builds
    assert result.ok, [d.render() for d in result.diagnostics]
    seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    current = [""]

    def timed(step, fn):
        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[current[0]][step] += time.process_time() - start
        return wrapper

    jit = JIT()
    clocked = [(pipeline, "_schedule", "schedule"), (pipeline.codegen, "generate", "LLVM IR"),
               (pipeline, "module_text", "print"), (JIT, "parse", "parse"), (JIT, "run_o3", "O3"),
               (JIT, "optimize_to_object", "machine code")]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in clocked]
    best: dict[str, dict[str, float]] = {}
    gc.freeze()
    gc.disable()  # as a worker: parallel.py
    try:
        for owner, name, step in clocked:
            setattr(owner, name, timed(step, getattr(owner, name)))
        for _ in range(rounds):
            seconds.clear()
            for fn in result.lowered.functions.values():
                current[0] = fn.name
                pipeline._lower(fn.func, fn.name, f"{key}.relay", jit, True, fn.composed, load=False)
            for name, by_step in seconds.items():
                # optimize_to_object's time holds its parse and O3: machine code is the rest
                by_step["machine code"] -= by_step["parse"] + by_step["O3"]
                kept = best.setdefault(name, dict(by_step))
                for step, s in by_step.items():
                    kept[step] = min(kept[step], s)
            gc.collect()
    finally:
        for owner, name, fn in originals:
            setattr(owner, name, fn)
        gc.enable()
        gc.unfreeze()
    return best


def table(key: str, best: dict[str, dict[str, float]], top: int) -> list[str]:
    rows = sorted(best.items(), key=lambda kv: -sum(kv[1].values()))
    lines = [f"### {build.LABELS[key]}: {len(rows)} kernels, CPU ms (lowest of the rounds)", "",
             "| kernel | " + " | ".join(STEPS) + " | total |", "| --- |" + " ---: |" * (len(STEPS) + 1)]
    for name, by_step in rows[:top]:
        lines.append(f"| {name} | " + " | ".join(build.ms(by_step.get(s, 0.0)) for s in STEPS)
                     + f" | {build.ms(sum(by_step.values()))} |")
    sums = {s: sum(b.get(s, 0.0) for b in best.values()) for s in STEPS}
    total = sum(sums.values())
    lines.append("| **all** | " + " | ".join(f"{build.ms(v)} ({v / total:.0%})" for v in sums.values())
                 + f" | {build.ms(total)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50", help=f"comma-separated, from {', '.join(build.MODELS)}")
    ap.add_argument("--rounds", type=int, default=2, help="lowerings of every kernel (the lowest counts)")
    ap.add_argument("--top", type=int, default=10, help="kernels listed, the costliest first")
    args = ap.parse_args(argv)
    build.require("onnx")
    for key in args.models.split(","):
        print("\n".join(table(key, measure(key, args.rounds), args.top)) + "\n")
    print(build.load_note())
    print("\n".join(build.machine_lines(build.machine())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
