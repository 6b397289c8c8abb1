"""How fast compiled exp, tanh, erf, sigmoid and log run in a fused element-wise chain, beside numpy.

    python bench/elementwise.py [--runs N] [--elements N] [--functions exp,tanh,erf,sigmoid,log]
                                [--json out.json]

For each function f, the chain `f(multiply(add(%x, %y), 0.5f))` over `--elements`
float32 values (default 1,000,000) is one fused kernel, called on aligned inputs with its
output given, median of N runs after 2 warm-ups:

* RelayLens on 1 and on 2 threads (the JIT's team size): float32 f is inlined as
  straight-line arithmetic that LLVM vectorises (lower/te/mathfuncs.py; at most 2 to 4
  ulp from the exact value);
* the same built at `--opt-level 4`, where FastMath makes exp, tanh and erf into
  fast_exp, fast_tanh and fast_erf (TVM's approximations, relative error up to 5e-6), on
  1 thread;
* numpy on one thread, written plainly (`np.tanh((x + y) * 0.5)`, with temporaries);
  numpy has no erf: scipy.special.erf when scipy is installed, else
  `np.frompyfunc(math.erf)` (a Python call per element, and the table says so).

Each kernel's output is first checked against float64 numpy.  The load average is printed
before and after the run, with NOT IDLE when something else runs: on two shared cores the
2-thread figures under load mean nothing.  The figures and their reading are in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


R = _load("bench_run", "run.py")  # median_s, single_kernel; R.B is bench/build.py (machine, load_note)


def _numpy_erf() -> tuple[Callable[[np.ndarray], np.ndarray], str]:
    try:
        from scipy.special import erf  # type: ignore[import-not-found]

        return erf, "scipy.special.erf"
    except ImportError:
        slow = np.frompyfunc(math.erf, 1, 1)
        return (lambda v: slow(v).astype(v.dtype)), "np.frompyfunc(math.erf): a Python call per element"


ERF, ERF_NOTE = _numpy_erf()
NUMPY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp, "tanh": np.tanh, "erf": ERF, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "log": np.log}
EXACT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp, "tanh": np.tanh, "erf": np.frompyfunc(math.erf, 1, 1), "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "log": np.log}
LOW = {"log": 0.001}  # the inputs are uniform on [LOW, 6] (default -6)
FAST = ("exp", "tanh", "erf")  # what FastMath rewrites


def chain_text(fn: str, n: int) -> str:
    t = f"Tensor[({n}), float32]"
    return (f'#[version = "0.0.5"]\ndef @main(%x: {t}, %y: {t}) {{\n'
            f"  {fn}(multiply(add(%x, %y), 0.5f))\n}}\n")


def compile_kernel(text: str, threads: int, opt_level: int):
    from relaylens.compiler.driver import compile
    from relaylens.compiler.lower.runtime.jit import JIT

    result = compile(text, "chain.relay", opt_level=opt_level, jit=JIT(num_threads=threads))
    if result.executable is None:
        first = next(d for d in result.diagnostics if d.is_error)
        raise SystemExit(f"error: the chain does not build: {first.render()}")
    return R.single_kernel(result.lowered)


def measure(fn: str, n: int, runs: int) -> dict[str, Any]:
    from relaylens.compiler.support import aligned_empty

    rng = np.random.default_rng(1)
    x, y = (rng.uniform(LOW.get(fn, -6), 6, n).astype(np.float32) for _ in range(2))
    ax, ay, out = aligned_empty(x.shape, x.dtype), aligned_empty(y.shape, y.dtype), aligned_empty(x.shape, x.dtype)
    ax[...], ay[...] = x, y
    exact = np.asarray(EXACT[fn](((x + y) * np.float32(0.5)).astype(np.float64)), dtype=np.float64)
    figures: dict[str, Any] = {"elements": n}
    variants = [("kernel_1thread_s", 1, 3), ("kernel_2threads_s", 2, 3)]
    if fn in FAST:
        variants.append(("fast_math_1thread_s", 1, 4))
    for key, threads, opt_level in variants:
        kernel, figures["function"] = compile_kernel(chain_text(fn, n), threads, opt_level)
        got = kernel(ax, ay, out=out)
        np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-37, err_msg=f"{fn}, {key}")
        figures[key] = R.median_s(lambda: kernel(ax, ay, out=out), runs, min_sample_s=0.02)
    reference = NUMPY[fn]
    figures["numpy_s"] = R.median_s(lambda: reference((x + y) * np.float32(0.5)), runs, min_sample_s=0.02)
    figures["speedup_vs_numpy_1thread"] = figures["numpy_s"] / figures["kernel_1thread_s"]
    return figures


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.2f}"


def table(results: dict[str, dict], runs: int, n: int) -> list[str]:
    out = [f"`f((x + y) * 0.5)` over {n:,} float32, ms (median of {runs}):", "",
           "| f | RelayLens, 1 thread | RelayLens, 2 threads | FastMath (opt-level 4), 1 thread | numpy "
           "| numpy ÷ RelayLens (1 thread) |",
           "|---|---:|---:|---:|---:|---:|"]
    for fn, f in results.items():
        out.append(f"| {fn} | {ms(f['kernel_1thread_s'])} | {ms(f['kernel_2threads_s'])} | "
                   f"{ms(f.get('fast_math_1thread_s'))} | {ms(f['numpy_s'])} | {f['speedup_vs_numpy_1thread']:.1f}x |")
    if "erf" in results:
        out += ["", f"numpy's erf: {ERF_NOTE}."]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per figure (10)")
    parser.add_argument("--elements", type=int, default=1_000_000, help="the chain's length (1,000,000)")
    parser.add_argument("--functions", default="exp,tanh,erf,sigmoid,log", help="a comma-separated subset")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    functions = [f.strip() for f in args.functions.split(",") if f.strip()]
    unknown = [f for f in functions if f not in NUMPY]
    if unknown or args.runs < 1 or args.elements < 1:
        parser.error(f"unknown function {unknown[0]}" if unknown else "--runs and --elements must be positive")
    before = R.B.load_note()
    results = {fn: measure(fn, args.elements, args.runs) for fn in functions}
    after = R.B.load_note()
    print("\n".join(table(results, args.runs, args.elements)))
    info = R.B.machine(2)
    print(f"\nMachine ({before} before the run; {after} after):\n" + "\n".join(R.B.machine_lines(info)))
    if args.json:
        payload = {"bench": "elementwise", "runs": args.runs, "load_before": before, "load_after": after,
                   "machine": info, "results": results}
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
