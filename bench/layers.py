"""Every kernel of a model beside onnxruntime's matching node, as both run in the model.

    .venv/bin/python bench/layers.py --model resnet50 [--runs 30] [--threads 1] [--rows N] [--json out.json]

bench/cnn_kernels.py and transformer_kernels.py time each kernel alone in a small graph,
where the figure depends on how the benchmark leaves the caches (a 1x1 convolution read
0.63x or 1.2x onnxruntime's node as its weights were hot or not).  Here both sides run
the whole model: ours through the profiler's timed AOT entry (compiler/lower/runtime/
timing.py: the clock read around each kernel call, no Python between kernels), onnxruntime
with every graph optimisation on (as bench/run.py times it) and its profiler on, which
times each node of its optimised graph.  compiler/profile/ort_join.py says which nodes of
the ONNX file each of onnxruntime's nodes computes; our kernels carry the ONNX node names
in their spans.

A row joins our kernels and onnxruntime's nodes that compute the same ONNX nodes: each
ONNX node belongs, on our side, to the kernel that spends the most time on it (the
profiler's FLOP shares: a reshape tagged with a MatMul's name in a transpose kernel does
not pull that kernel into the MatMul's row), and on onnxruntime's to the node that computes
it; rows are the connected groups.  Most rows are one kernel and one node (a fused
convolution); a layer norm is our three kernels beside one node.  A kernel of ours or a
node of theirs that computes no ONNX node (a layout transform of the input, a
ReorderOutput) is a row of its own, as is a node whose ONNX nodes are views on our side.

The two sides take turns, `--runs` times, each after the same 0.1 s pause (onnxruntime's
pool spins on for about 40 ms after a run): a row's time is the median of its per-run
sums, its ratio the median over runs of ours ÷ theirs (a pair shares the VM's phase, as
bench/run.py's paired ratio).  GFLOP/s on both sides use our kernels' textbook FLOPs
(compiler/profile/cost.py; Winograd counted as the direct convolution).  onnxruntime's
node times are its profiler's (wall time, a few µs of profiling per node included in its
run).  The load average is printed before and after; above 1 the figures are NOT IDLE.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BUSY = 1.0


@functools.lru_cache(maxsize=1)
def _run_module():
    spec = importlib.util.spec_from_file_location("bench_run", HERE / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (1 min), {five:.2f} (5 min)" + (": NOT IDLE" if one > BUSY else "")


@dataclass
class Row:
    steps: list[int] = field(default_factory=list)  # our plan steps
    nodes: list[str] = field(default_factory=list)  # onnxruntime's optimised nodes
    layers: list[str] = field(default_factory=list)  # the ONNX nodes our steps compute
    flops: int = 0
    ours: list[float] = field(default_factory=list)  # ns per run
    theirs: list[float] = field(default_factory=list)

    @property
    def ours_ns(self) -> float:
        return statistics.median(self.ours) if self.steps else 0.0

    @property
    def theirs_ns(self) -> float:
        return statistics.median(self.theirs) if self.nodes else 0.0

    @property
    def ratio(self) -> float | None:
        pairs = [a / b for a, b in zip(self.ours, self.theirs) if b > 0]
        return statistics.median(pairs) if self.steps and self.nodes and pairs else None


def ort_session(model, threads: int, folder: str):
    """bench/run.py's session (every optimisation, sequential) with its profiler on, saving
    the optimised graph its profiler names."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(folder, "ort")
    options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
    options.log_severity_level = 3  # not the warning that an NCHWc graph is for this machine only
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def node_times(events: list[dict], runs: int) -> tuple[list[dict[str, float]], list[float]]:
    """Per counted run, {optimised node: ns}; and each run's model_run ns.  The profile's
    first `len - runs` runs are warm-ups."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "Session" and e.get("name") == "model_run")[-runs:]
    per_run: list[dict[str, float]] = [defaultdict(float) for _ in spans]
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        run = next((k for k, (a, b) in enumerate(spans) if a <= e["ts"] <= b), None)
        if run is not None:
            per_run[run][name.removesuffix("_kernel_time")] += e["dur"] * 1e3
    return per_run, [(b - a) * 1e3 for a, b in spans]


def group(plan, shares: list[dict[str, float]], step_ns: np.ndarray, owner_ort: dict[str, str],
          ort_nodes: list[str], onnx_nodes: set[str]) -> list[Row]:
    """Rows: connected groups of our steps and onnxruntime's nodes through the ONNX nodes
    each side's owner computes (module docstring)."""
    parent: dict[tuple, tuple] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)

    best: dict[str, tuple[float, int]] = {}
    for k, layers in enumerate(shares):
        for layer, f in layers.items():
            if layer in onnx_nodes and f * step_ns[k] >= best.get(layer, (-1.0, -1))[0]:
                best[layer] = (f * step_ns[k], k)
    owned = defaultdict(list)
    for layer, (_, k) in best.items():
        owned[k].append(layer)
    for k, layers in enumerate(shares):
        find(("step", k))
        for layer in owned.get(k) or [n for n in layers if n in onnx_nodes]:  # a kernel owning none joins by all
            if layer in owner_ort:
                union(("step", k), ("ort", owner_ort[layer]))
    for name in ort_nodes:
        find(("ort", name))
    rows: dict[tuple, Row] = defaultdict(Row)
    for item in list(parent):
        row = rows[find(item)]
        (row.steps if item[0] == "step" else row.nodes).append(item[1])
    for row in rows.values():
        row.steps.sort()
        row.layers = list(dict.fromkeys(n for k in row.steps for n in owned.get(k, [])))
    return list(rows.values())


def measure(key: str, runs: int, threads: int) -> dict:
    import onnx

    from relaylens.compiler.lower.runtime.timing import TimedEntry
    from relaylens.compiler.profile.attribution import attribute
    from relaylens.compiler.profile.cost import function_flops
    from relaylens.compiler.profile.ort_join import join_optimized
    from relaylens.compiler.frontend.onnx.spans import node_names

    R = _run_module()
    model = R.B.load_model(key)
    result, lowering = R.compile_text(model.text, f"{model.key}.relay", threads, params=model.params)
    feeds = R.model_inputs(model)
    by_param = {model.inputs[name]: value for name, value in feeds.items()}
    inputs = [by_param[p.name] for p in result.snapshots[0].module["main"].params]
    timed = TimedEntry(lowering.executable, lowering.jit)
    plan = lowering.executable.plan
    with tempfile.TemporaryDirectory(prefix="relaylens-layers-") as folder:
        session = ort_session(model.onnx, threads, folder)
        optimized = onnx.load(os.path.join(folder, "optimized.onnx"), load_external_data=False).graph
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
    rows = group(plan, shares, step_ns, join.owner(), list(join.covers), onnx_nodes)
    for row in rows:
        row.flops = sum(function_flops(plan.steps[k].func) for k in row.steps)
        row.ours = [float(sum(o[k] for k in row.steps)) for o in ours]
        row.theirs = [sum(t.get(n, 0.0) for n in row.nodes) for t in theirs]
    seen = {n for t in theirs for n in t}
    return {"model": key, "threads": threads, "runs": runs, "plan": plan, "join": join, "rows": rows, "shares": shares,
            "ours_whole": statistics.median(whole), "theirs_whole": statistics.median(theirs_whole),
            "ours_sum": float(step_ns.sum()),
            "theirs_sum": sum(statistics.median(t.get(n, 0.0) for t in theirs) for n in seen),
            "not_timed": sorted(set(join.covers) - seen), "not_in_graph": sorted(seen - set(join.covers))}


def _short(kernel: str) -> str:
    return kernel.removeprefix("tvmgen_default_fused_")


def _label(names: list[str], width: int) -> str:
    text = names[0] + (f" +{len(names) - 1}" if len(names) > 1 else "") if names else "—"
    return text if len(text) <= width else "…" + text[-(width - 1):]


def table(fig: dict, limit: int = 0) -> list[str]:
    plan, join, rows = fig["plan"], fig["join"], fig["rows"]
    out = [f"{fig['model']}, {fig['threads']} thread(s), {fig['runs']} runs taking turns:",
           f"| our kernel (its ONNX nodes) | ours µs | onnxruntime's node(s) | theirs µs | ratio "
           f"| ours GFLOP/s | theirs GFLOP/s |",
           "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]

    def key(row: Row):
        return (row.ratio is None, -(row.ratio or 0.0), -row.ours_ns - row.theirs_ns)

    ordered = sorted(rows, key=key)
    for row in ordered[:limit or None]:
        kernels = sorted({_short(plan.steps[k].kernel) for k in row.steps})
        if row.steps:
            layers = row.layers or [n for k in row.steps for n in fig["shares"][k]]  # e.g. `conv1/Conv.input`
            ours = (f"{_label(layers, 44)} ({', '.join(kernels)[:60]}"
                    f"{f', {len(row.steps)} calls' if len(row.steps) > 1 else ''})")
        else:
            ours = "— (views, or folded)" if any(join.covers[n] for n in row.nodes) else "— (moves data only)"
        theirs = ", ".join(sorted({join.ops[n] for n in row.nodes})) + f" {_label(row.nodes, 40)}" if row.nodes else "—"
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "—"
        gf = [f"{row.flops / ns:.1f}" if row.flops and ns else "" for ns in (row.ours_ns, row.theirs_ns)]
        out.append(f"| {ours} | {row.ours_ns / 1e3:.1f} | {theirs} | {row.theirs_ns / 1e3:.1f} | {ratio} "
                   f"| {gf[0]} | {gf[1]} |")
    if limit and len(ordered) > limit:
        out.append(f"| … {len(ordered) - limit} more rows | | | | | | |")
    paired = [r for r in rows if r.ratio is not None]
    good = [r for r in paired if r.ratio <= 1.0]
    ours_total = sum(r.ours_ns for r in paired)
    out.append(f"{sum(len(r.steps) for r in good)} of {sum(len(r.steps) for r in paired)} kernels joined "
               f"({len(good)} of {len(paired)} rows) at ≤ 1.0x onnxruntime's node(s), "
               f"{100 * sum(r.ours_ns for r in good) / ours_total if ours_total else 0:.0f}% of our joined "
               "kernels' time")
    out.append(f"sum of kernels / whole run: ours {fig['ours_sum'] / 1e3:.0f} / {fig['ours_whole'] / 1e3:.0f} µs "
               f"(first kernel's start to last one's end); onnxruntime {fig['theirs_sum'] / 1e3:.0f} / "
               f"{fig['theirs_whole'] / 1e3:.0f} µs (model_run, profiling on); whole ratio "
               f"{fig['ours_whole'] / fig['theirs_whole']:.2f}x")
    alone = [r for r in rows if not r.ratio]
    if alone:
        out.append(f"rows without a counterpart: {len(alone)} (ours {sum(r.ours_ns for r in alone) / 1e3:.0f} µs, "
                   f"theirs {sum(r.theirs_ns for r in alone) / 1e3:.0f} µs)")
    for what, names in (("ONNX nodes onnxruntime does not compute", join.uncovered),
                        ("ONNX nodes two of its nodes claim", list(join.twice)),
                        ("its nodes whose output has no ONNX name", join.unnamed),
                        ("its nodes never timed", fig["not_timed"]),
                        ("timed nodes not in its saved graph", fig["not_in_graph"])):
        if names:
            out.append(f"{what}: {len(names)}: {', '.join(names[:8])}{' …' if len(names) > 8 else ''}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows", type=int, default=0, help="print the N worst rows (default: all)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    models = _run_module().B.MODELS
    if args.model not in models:
        ap.error(f"unknown model {args.model}; choose from {', '.join(models)}")
    if args.runs < 1 or args.threads < 1:
        ap.error("--runs and --threads must be at least 1")
    before = load_note()
    fig = measure(args.model, args.runs, args.threads)
    print("\n".join(table(fig, args.rows)))
    print(f"{before} before, {load_note()} after")
    if args.json:
        rows = [{"kernels": [fig["plan"].steps[k].kernel for k in r.steps], "onnx": r.layers, "ort": r.nodes,
                 "flops": r.flops, "ours_ns": r.ours, "theirs_ns": r.theirs} for r in fig["rows"]]
        args.json.write_text(json.dumps({k: fig[k] for k in ("model", "threads", "runs", "ours_whole", "theirs_whole",
                                                             "ours_sum", "theirs_sum")} | {"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
