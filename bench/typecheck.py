"""How fast RelayLens infers types, per 1,000 lines of Relay text.

    python bench/typecheck.py [--runs N]

Inputs: the largest corpus models (GPT-2 002.relay, ResNet-50 005.relay, the NHWC
ResNet block 131.relay) and a generated 1,000-line module in TVM's printed style (the
generator of bench/parse.py: convolutions, batch norms, projections, tuples).
For each, median of N runs: parse() (for scale: what the editor already pays on every
change) and infer_types() on the parsed module.  The goal of issue 3 is under 50 ms per
1,000 lines.  Nobody else type-checks Relay any more (TVM removed Relay in 2025), so the
comparison is with our own parse.  Paste the table and the machine into README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from relaylens.compiler.parser import parse
from relaylens.compiler.typing import infer_types

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[1] / "shared" / "corpus" / "relay"
GOAL_MS_PER_1000 = 50


def _parse_bench():
    spec = importlib.util.spec_from_file_location("bench_parse", HERE / "parse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    pb = _parse_bench()
    inputs = [(f"corpus {n}", (CORPUS / n).read_text()) for n in ("002.relay", "005.relay", "131.relay")
              if (CORPUS / n).exists()]
    inputs.append(("generated 1,000 lines", pb.generate(1000)))
    print("| input | lines | parse() | infer_types() | per 1,000 lines | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, text in inputs:
        lines = text.count("\n") + 1
        parse_ms = median_ms(lambda: parse(text, "bench.relay"), args.runs)

        def check():
            mod = parse(text, "bench.relay").module
            start = time.perf_counter()
            diags = infer_types(mod)
            return (time.perf_counter() - start) * 1000, diags

        samples = [check() for _ in range(args.runs)]
        infer_ms = statistics.median(s[0] for s in samples)
        errors = sum(d.is_error for d in samples[0][1])
        print(f"| {label} | {lines:,} | {parse_ms:.1f} ms | {infer_ms:.1f} ms | "
              f"{infer_ms * 1000 / lines:.1f} ms | {errors} |")
    print()
    print(f"Goal: under {GOAL_MS_PER_1000} ms of inference per 1,000 lines.")
    print("\n".join(pb.machine()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
