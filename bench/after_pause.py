"""Inference time after an idle pause, one side at a time: ours and onnxruntime's.

    .venv/bin/python bench/after_pause.py [--models gpt2,mobilenet] [--pauses 0,0.002,0.01,0.1]
                                          [--calls 25] [--threads 2] [--sides ours,onnxruntime]
                                          [--trace] [--json out.json]

bench/run.py's paired ratio times each call after a 0.1 s pause, ours and onnxruntime's in
turns, so each side's threads find the machine as a request would after a quiet moment.
Here each side runs alone: for each pause, `--calls` calls each after that pause (a pause
of 0: back to back), the median reported; the two sides are timed one after the other
with a 0.2 s gap between them (onnxruntime's pool spins on for about 40 ms after a run,
bench/run.py `after_onnxruntime`).  The models are bench/run.py's, built with their
weights bound at `--threads` threads (onnxruntime gets the same).

`--trace` also reads, for our calls, what the inference's team did (our runtime's trace
hook, compiler/lower/runtime/team_trace.py; absent from commits before it, then skipped):
per pause the medians of when the second thread arrived and took its first job (µs from
the entry), how many of the jobs it joined, the µs it spent in them, and in how many calls
it ran on the calling thread's CPU.

The load average is printed; above 0.5 the figures are NOT IDLE.  This VM's speed drifts
by 20-70% within minutes: compare two commits by alternating processes of each, not by
two runs far apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from siblings import run_module  # bench/run.py

GAP_S = 0.2  # between the two sides: onnxruntime's pool spins about 40 ms after its last run


def built(key: str, threads: int):
    """Our executable, its inputs, and onnxruntime's session and feeds, for model `key`."""
    R = run_module()
    model = R.B.load_model(key)
    result, lowering = R.compile_text(model.text, f"{key}.relay", threads, params=model.params)
    feeds = R.model_inputs(model)
    by_param = {model.inputs[name]: value for name, value in feeds.items()}
    inputs = [by_param[p.name] for p in result.snapshots[0].module["main"].params]
    exe = lowering.executable
    session = R.ort_session(model.onnx, threads)
    return (lambda: exe.run(*inputs)), (lambda: session.run(None, feeds))


def timed_after(fn, pause: float, calls: int, trace=None) -> tuple[list[float], list]:
    """`calls` wall times of fn() (s), each after `pause` seconds; the team's records if traced."""
    for _ in range(2):
        fn()
    times, records = [], []
    for _ in range(calls):
        if pause:
            time.sleep(pause)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if trace is not None:
            records.append(trace.read())
    return times, records


def team_summary(records: list) -> dict | None:
    """Medians over calls of the second thread's arrival, first job (µs), jobs joined, µs
    in jobs; the calls where it ran on the calling thread's CPU."""
    rows = [(r, r.threads[1]) for r in records if r is not None and 1 in r.threads]
    if not rows:
        return None
    us = lambda ns: round(ns / 1e3, 1)  # noqa: E731
    return {
        "arrive_us": us(statistics.median(t.arrive for _, t in rows)),
        "first_job_us": us(statistics.median(t.first_job if t.first_job is not None else r.main_end for r, t in rows)),
        "joined": statistics.median(t.joined for _, t in rows),
        "jobs": statistics.median(r.jobs for r, _ in rows),
        "busy_us": us(statistics.median(t.busy for _, t in rows)),
        "on_callers_cpu": sum(1 for r, t in rows if t.cpu_arrive == r.cpu_start),
        "calls": len(rows),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="gpt2,mobilenet")
    ap.add_argument("--pauses", default="0,0.002,0.01,0.1", help="seconds, comma-separated")
    ap.add_argument("--calls", type=int, default=25)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sides", default="ours,onnxruntime")
    ap.add_argument("--trace", action="store_true", help="our team's trace hook (see the module doc)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    R = run_module()
    pauses = [float(p) for p in args.pauses.split(",")]
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    tracer = None
    if args.trace:
        try:
            from relaylens.compiler.lower.runtime.team_trace import team_trace
            tracer = team_trace
        except ImportError:
            print("(no trace hook in this checkout: --trace skipped)", file=sys.stderr)
    load = R.B.load_note()
    figures: dict = {}
    for key in [k.strip() for k in args.models.split(",") if k.strip()]:
        ours, theirs = built(key, args.threads)
        figures[key] = {}
        for pause in pauses:
            row = figures[key].setdefault(str(pause), {})
            for side in sides:
                time.sleep(GAP_S)
                if side == "ours" and tracer is not None:
                    with tracer() as trace:
                        times, records = timed_after(ours, pause, args.calls, trace)
                    row["team"] = team_summary(records)
                else:
                    times, _ = timed_after(ours if side == "ours" else theirs, pause, args.calls)
                row[side] = statistics.median(times)
    print(f"Median ms of {args.calls} calls after each pause, {args.threads} threads, one side at a time")
    print("| model | pause | " + " | ".join(sides) + (" | ours ÷ onnxruntime |" if len(sides) == 2 else " |")
          + (" 2nd thread: arrives, 1st job µs, jobs joined, µs in jobs, on caller's CPU |" if tracer else ""))
    print("|---" * (2 + len(sides) + (len(sides) == 2) + bool(tracer)) + "|")
    for key, rows in figures.items():
        for pause, row in rows.items():
            cells = [f"{row[s] * 1e3:.2f}" for s in sides]
            if len(sides) == 2:
                cells.append(f"{row[sides[0]] / row[sides[1]]:.2f}x")
            if tracer:
                t = row.get("team")
                cells.append(f"{t['arrive_us']}, {t['first_job_us']}, {t['joined']:g} of {t['jobs']:g}, "
                             f"{t['busy_us']}, {t['on_callers_cpu']}/{t['calls']}" if t else "-")
            print(f"| {key} | {float(pause) * 1e3:g} ms | " + " | ".join(cells) + " |")
    print(f"\n{load} before the run")
    if args.json:
        args.json.write_text(json.dumps({"bench": "after_pause", "threads": args.threads, "calls": args.calls,
                                         "load": load, "figures": figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
