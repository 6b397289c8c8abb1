"""Every kernel of a model beside onnxruntime's matching node, as both run in the model.

    .venv/bin/python bench/layers.py --model resnet50 [--runs 30] [--threads 1] [--rows N] [--by-kind] [--json out.json]

bench/cnn_kernels.py and transformer_kernels.py time each kernel alone in a small graph,
where the figure depends on how the benchmark leaves the caches (a 1x1 convolution read
0.63x or 1.2x onnxruntime's node as its weights were hot or not).  Here both sides run
the whole model: ours through the profiler's timed AOT entry (compiler/lower/runtime/
timing.py: the clock read around each kernel call, no Python between kernels), onnxruntime
with every graph optimisation on (as bench/run.py times it) and its profiler on, which
times each node of its optimised graph.  compiler/profile/ort_join.py says which nodes of
the ONNX file each of onnxruntime's nodes computes; our kernels carry the ONNX node names
in their spans.

A row joins our kernels and onnxruntime's nodes that compute the same ONNX nodes
(compiler/profile/compare_optimized.py `group`): mostly one kernel and one node (a fused
convolution); a layer norm is our three kernels beside one node; our layout transform of
the input and onnxruntime's ReorderOutput are rows of their own.

The two sides take turns, `--runs` times, each after the same 0.1 s pause (onnxruntime's
pool spins on for about 40 ms after a run): a row's time is the median of its per-run
sums, its ratio the median over runs of ours ÷ theirs (a pair shares the VM's phase, as
bench/run.py's paired ratio).  GFLOP/s on both sides use our kernels' textbook FLOPs
(compiler/profile/cost.py; Winograd counted as the direct convolution).  onnxruntime's
node times are its profiler's (wall time, a few µs of profiling per node included in its
run).  The load average is printed before and after; above 0.5 the figures are NOT IDLE.
On 2 threads the pause costs us: the GPT-2 block took 12-16 ms with 0-10 ms between
inferences and 29.6 ms after 0.1 s (1 thread: no such step), onnxruntime 20 ms after it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np

from siblings import run_module, timed_model  # bench/run.py

def measure(key: str, runs: int, threads: int) -> dict:
    import onnxruntime as ort

    from relaylens.compiler.frontend.onnx.spans import node_names
    from relaylens.compiler.profile.attribution import attribute
    from relaylens.compiler.profile.compare_optimized import group, node_times, optimized_graph, session_options
    from relaylens.compiler.profile.cost import function_flops
    from relaylens.compiler.profile.ort_join import join_optimized

    R = run_module()
    built = timed_model(key, threads)
    model, result, lowering, timed = built.model, built.result, built.lowering, built.timed
    feeds, inputs = built.feeds, built.inputs
    plan = lowering.executable.plan
    with tempfile.TemporaryDirectory(prefix="relaylens-layers-") as folder:
        session = ort.InferenceSession(model.onnx.SerializeToString(), session_options(ort, threads, folder),
                                       providers=["CPUExecutionProvider"])
        optimized = optimized_graph(folder)
        ours, whole = [], []
        for run in range(runs + R.WARM_UPS):
            R.after_onnxruntime()
            times = timed.run(*inputs)[1]
            R.after_onnxruntime()
            session.run(None, feeds)
            if run >= R.WARM_UPS:
                ours.append((times[:, 1] - times[:, 0]).astype(float))
                whole.append(float(times[-1, 1] - times[0, 0]))
        with open(session.end_profiling(), encoding="utf-8") as f:
            theirs, theirs_whole = node_times(json.load(f), runs)
    join = join_optimized(model.onnx.graph, optimized)
    onnx_nodes = set(node_names(model.onnx.graph.node))
    shares = [attribute(step.func, result.provenance).layers for step in plan.steps]
    step_ns = np.median(np.stack(ours), axis=0)
    rows = group(shares, join, onnx_nodes)
    for row in rows:
        row.flops = sum(function_flops(plan.steps[k].func) for k in row.kernels)
        row.ours = [float(sum(o[k] for k in row.kernels)) for o in ours]
        row.theirs = [sum(t.get(n, 0.0) for n in row.nodes) for t in theirs]
    seen = {n for t in theirs for n in t}
    return {"model": key, "threads": threads, "runs": runs, "plan": plan, "join": join, "rows": rows,
            "ours_whole": statistics.median(whole), "theirs_whole": statistics.median(theirs_whole),
            "whole_ratio": statistics.median(a / b for a, b in zip(whole, theirs_whole)),
            "ours_sum": float(step_ns.sum()),
            "theirs_sum": sum(statistics.median(t.get(n, 0.0) for t in theirs) for n in seen),
            "not_timed": sorted(set(join.covers) - seen), "not_in_graph": sorted(seen - set(join.covers))}


def report(fig: dict, limit: int, by_kind: bool) -> list[str]:
    from relaylens.compiler.profile.compare_optimized import merge, table_lines

    names = [step.kernel.removeprefix("tvmgen_default_fused_") for step in fig["plan"].steps]
    rows = merge(fig["rows"], names, fig["join"]) if by_kind else fig["rows"]
    out = [f"{fig['model']}, {fig['threads']} thread(s), {fig['runs']} runs taking turns "
           f"(ratio: the median of the runs' ratios){'; rows of one kind summed (×N)' if by_kind else ''}:"]
    out += table_lines(rows, names, fig["join"], paired=True, limit=limit)
    out.append(f"sum of kernels / whole run: ours {fig['ours_sum'] / 1e3:.0f} / {fig['ours_whole'] / 1e3:.0f} µs "
               f"(first kernel's start to last one's end); onnxruntime {fig['theirs_sum'] / 1e3:.0f} / "
               f"{fig['theirs_whole'] / 1e3:.0f} µs (model_run, profiling on); the whole runs' "
               f"ratio, paired: {fig['whole_ratio']:.2f}x")
    for what, missing in (("its nodes never timed", fig["not_timed"]),
                          ("timed nodes not in its saved graph", fig["not_in_graph"])):
        if missing:
            out.append(f"{what}: {len(missing)}: {', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows", type=int, default=0, help="print the N worst rows (default: all)")
    ap.add_argument("--by-kind", action="store_true",
                    help="sum the rows of the same kernels beside the same op types (BERT's 12 layers)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    models = run_module().B.MODELS
    if args.model not in models:
        ap.error(f"unknown model {args.model}; choose from {', '.join(models)}")
    if args.runs < 1 or args.threads < 1:
        ap.error("--runs and --threads must be at least 1")
    before = run_module().B.load_note()
    fig = measure(args.model, args.runs, args.threads)
    print("\n".join(report(fig, args.rows, args.by_kind)))
    print(f"before the run: {before}\nafter it: {run_module().B.load_note()}")
    if args.json:
        rows = [{"kernels": [fig["plan"].steps[k].kernel for k in r.kernels], "onnx": r.layers, "ort": r.nodes,
                 "flops": r.flops, "ours_ns": r.ours, "theirs_ns": r.theirs} for r in fig["rows"]]
        keys = ("model", "threads", "runs", "ours_whole", "theirs_whole", "whole_ratio", "ours_sum", "theirs_sum")
        args.json.write_text(json.dumps({k: fig[k] for k in keys} | {"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
