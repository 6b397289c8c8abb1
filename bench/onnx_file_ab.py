"""One ONNX file in two checkouts, paired: each kernel and the whole inference, A against B.

    .venv/bin/python bench/onnx_file_ab.py MODEL.onnx --a ../base/.venv/bin/python [--b .venv/bin/python]
        [--rounds 20] [--calls 10] [--threads 1] [--kernels WORDS]

Each side is a worker process started with its checkout's interpreter (this script, run
with another checkout's interpreter, imports that checkout's relaylens): it imports the
file (import_onnx, weights bound as relay.build binds them), builds it, checks its output
against onnxruntime's on seeded random inputs (rtol 1e-4 of the output's largest value),
then on each request runs `--calls` inferences through the profiler's timed AOT entry
(compiler/lower/runtime/timing.py) and answers the medians: the whole run and each fused
kernel (summed over its calls in one inference).  The driver asks A and B in turns,
`--rounds` times (with `--onnxruntime` each worker first runs onnxruntime `--calls` times
and pauses 0.1 s), and prints per kernel and for the whole the median of B's times, A's,
and the median over rounds of B ÷ A (a pair shares the machine's phase).  Kernels are
matched by name; a kernel only one side has is printed with a dash on the other.  The
load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(path: str, threads: int, with_ort: bool) -> None:
    import numpy as np
    import onnx
    import onnxruntime as ort

    sys.path.insert(0, str(HERE))
    from siblings import run_module
    from relaylens.compiler.frontend.onnx import import_onnx
    from relaylens.compiler.lower.runtime.timing import TimedEntry
    from relaylens.compiler.printer import print_module

    R = run_module()
    model = onnx.load(path)
    imported = import_onnx(model)
    text = print_module(imported.module, spans=True, types=True)
    result, lowering = R.compile_text(text, Path(path).stem + ".relay", threads, params=imported.params)
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        if value.name in imported.inputs:
            shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    by_param = {imported.inputs[name]: v for name, v in feeds.items()}
    inputs = [by_param[p.name] for p in result.snapshots[0].module["main"].params]
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)[0]
    got = np.asarray(lowering.executable.run(*inputs))
    diff = float(np.max(np.abs(got - expected)))
    scale = float(np.max(np.abs(expected)))
    timed = TimedEntry(lowering.executable, lowering.jit)
    names = [s.kernel.removeprefix("tvmgen_default_fused_") for s in lowering.executable.plan.steps]
    print(json.dumps({"max_abs_diff": diff, "output_max": scale, "ok": diff <= 1e-4 * scale}), flush=True)
    for line in sys.stdin:
        calls = int(line)
        wholes, per, theirs = [], [], []
        if with_ort:
            for _ in range(calls):
                start = time.perf_counter_ns()
                session.run(None, feeds)
                theirs.append(time.perf_counter_ns() - start)
            time.sleep(0.1)  # onnxruntime's pool spins on for about 40 ms (bench/run.py)
        for _ in range(calls):
            times = timed.run(*inputs)[1]
            wholes.append(float(times[-1, 1] - times[0, 0]))
            per.append((times[:, 1] - times[:, 0]).astype(float))
        med = np.median(np.stack(per), axis=0)
        kernels: dict[str, float] = {}
        for name, t in zip(names, med):
            kernels[name] = kernels.get(name, 0.0) + float(t)
        answer = {"whole": statistics.median(wholes), "kernels": kernels}
        if theirs:
            answer["onnxruntime"] = statistics.median(theirs)
        print(json.dumps(answer), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--a", required=True, help="interpreter of checkout A (the base)")
    ap.add_argument("--b", default=sys.executable, help="interpreter of checkout B (default: this one)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kernels", default="", help="comma-separated words: only kernels whose name has one")
    ap.add_argument("--onnxruntime", action="store_true",
                    help="each worker also times onnxruntime's whole run before its calls (ratios B ÷ it)")
    ap.add_argument("--top", type=int, default=12, help="kernels printed (B's slowest first)")
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.model, args.threads, args.onnxruntime)
        return 0
    env = dict(os.environ, RELAYLENS_NUM_THREADS=str(args.threads))
    cmd = [__file__, args.model, "--worker", "--a", "-", "--threads", str(args.threads)]
    if args.onnxruntime:
        cmd.append("--onnxruntime")
    procs = {side: subprocess.Popen([exe, *cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for side, exe in (("A", args.a), ("B", args.b))}
    print(f"load before: {os.getloadavg()[0]:.1f}")
    for side, p in procs.items():
        check = json.loads(p.stdout.readline())
        print(f"{side}: max abs diff from onnxruntime {check['max_abs_diff']:.2e} (output max "
              f"{check['output_max']:.3g}): {'ok' if check['ok'] else 'NOT WITHIN rtol 1e-4'}")
    rounds: dict[str, list[dict]] = {"A": [], "B": []}
    for r in range(args.rounds):
        for side in (("A", "B") if r % 2 == 0 else ("B", "A")):
            procs[side].stdin.write(f"{args.calls}\n")
            procs[side].stdin.flush()
            rounds[side].append(json.loads(procs[side].stdout.readline()))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"load after: {os.getloadavg()[0]:.1f}; {args.rounds} rounds of {args.calls} calls, "
          f"{args.threads} thread(s); µs, medians; ratio: median over rounds of B ÷ A")

    def row(label: str, a: list[float | None], b: list[float | None]) -> str:
        def med(xs):
            xs = [x for x in xs if x is not None]
            return f"{statistics.median(xs) / 1e3:10.1f}" if xs else f"{'-':>10}"
        pairs = [y / x for x, y in zip(a, b) if x and y]
        ratio = f"{statistics.median(pairs):6.3f}x" if pairs else "      -"
        return f"{med(a)} {med(b)} {ratio}  {label}"

    print(f"{'A':>10} {'B':>10} {'B/A':>7}  kernel")
    print(row("whole inference", [x["whole"] for x in rounds["A"]], [x["whole"] for x in rounds["B"]]))
    if args.onnxruntime:
        ort_a = [x["onnxruntime"] for x in rounds["A"]]
        print(row("A's whole over onnxruntime's (in A's worker)", ort_a, [x["whole"] for x in rounds["A"]]))
        ort_b = [x["onnxruntime"] for x in rounds["B"]]
        print(row("B's whole over onnxruntime's (in B's worker)", ort_b, [x["whole"] for x in rounds["B"]]))
    print(row("sum of kernels", [sum(x["kernels"].values()) for x in rounds["A"]],
              [sum(x["kernels"].values()) for x in rounds["B"]]))
    words = [w for w in args.kernels.split(",") if w]
    names = set(rounds["A"][0]["kernels"]) | set(rounds["B"][0]["kernels"])
    names = [n for n in names if not words or any(w in n for w in words)]
    names.sort(key=lambda n: -(rounds["B"][0]["kernels"].get(n) or rounds["A"][0]["kernels"].get(n) or 0))
    for name in names[: args.top]:
        print(row(name[:90], [x["kernels"].get(name) for x in rounds["A"]], [x["kernels"].get(name) for x in rounds["B"]]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
