"""Our kernels beside onnxruntime's nodes as its optimised run runs them.

    theirs = optimized_profile("model.onnx", {"input": x}, runs=10, threads=1)
    print(kernel_table(prof, theirs))

compare.py joins per ONNX layer with onnxruntime's graph optimisations off, because only
then does its profiler name the file's nodes; but that times unfused nodes, not what a
user runs.  Here onnxruntime runs with every optimisation on (ORT_ENABLE_ALL, its
default), its profiler times the nodes of its optimised graph, and ort_join.py says which
of the file's nodes each of them computes (the graph saved through
SessionOptions.optimized_model_filepath, from the very session profiled).

A row joins our kernels and onnxruntime's nodes that compute the same ONNX nodes (`group`):
an ONNX node belongs, on our side, to the kernel(s) that give it the largest share of their
time (attribution.py's shares, by FLOPs: a transpose kernel that also reshapes for a MatMul
gives the MatMul a third of its time, the batch_matmul all of it, so the transpose stays
out of the MatMul's row; taken from the build alone, so a model's rows are the same from
run to run), and on onnxruntime's to the node that computes it; the rows are the connected
groups.  Most rows are one kernel
and one node (a convolution with its batch norm, relu and residual add on both sides); a
layer norm is our three kernels (mean, variance, the rest) beside one node.  A kernel or
a node that computes no ONNX node (our layout transform of the input, onnxruntime's
ReorderOutput) is a row of its own, as is a node whose ONNX nodes are views on our side
(a Reshape, which onnxruntime copies when its input has other readers).
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from .compare import CompareError, open_model, ort_feed, ort_run, ort_session
from .ort_join import Join, join_optimized
from .profiler import Profile

ROWS = 30


@dataclass
class OptimizedProfile:
    model: str
    join: Join
    runs: list[dict[str, float]]  # per counted run: optimised node -> ns
    run_ns: list[float]  # model_run per counted run (profiling on)
    layers: set[str] = field(default_factory=set)  # the file's node names, as our importer names them
    version: str = ""


def session_options(ort, threads: int, folder: str):
    """bench/run.py's session (every optimisation, sequential, `threads` intra-op) with
    the profiler on, saving the optimised graph the profiler names into `folder`."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(folder, "ort")
    options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
    options.log_severity_level = 3  # not the warning that an NCHWc graph suits this machine only
    return options


def optimized_graph(folder: str):
    import onnx  # lazy: onnx is an optional dependency (relaylens[onnx])

    return onnx.load(os.path.join(folder, "optimized.onnx"), load_external_data=False).graph


def optimized_profile(model: str, inputs: dict, *, runs: int, threads: int,
                      before_run: Callable[[int], None] | None = None) -> OptimizedProfile:
    """onnxruntime's optimised run of `model` on `inputs`, `runs` times after one warm-up,
    each node timed."""
    ort, graph = open_model(model)
    step = itertools.count()
    with tempfile.TemporaryDirectory(prefix="relaylens-ort-") as folder:
        session = ort_session(ort, model, session_options(ort, threads, folder))
        feed = ort_feed(session, inputs, model)
        for _ in range(runs + 1):
            if before_run is not None:
                before_run(next(step))
            ort_run(session, feed, model)
        with open(session.end_profiling(), encoding="utf-8") as f:
            per_run, run_ns = node_times(json.load(f), runs)
        join = join_optimized(graph, optimized_graph(folder))
    from ..frontend.onnx.spans import node_names  # lazy: onnx is an optional dependency

    return OptimizedProfile(model, join, per_run, run_ns, set(node_names(graph.node)), ort.__version__)


def node_times(events: list[dict], runs: int) -> tuple[list[dict[str, float]], list[float]]:
    """Per run of the last `runs` in onnxruntime's profile, {optimised node: ns}, and each
    of those runs' model_run ns (the earlier runs are warm-ups)."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "Session" and e.get("name") == "model_run")[-runs:]
    per_run: list[dict[str, float]] = [defaultdict(float) for _ in spans]
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        run = next((k for k, (start, end) in enumerate(spans) if start <= e["ts"] <= end), None)
        if run is not None:
            per_run[run][name.removesuffix("_kernel_time")] += e["dur"] * 1e3
    return [dict(r) for r in per_run], [(end - start) * 1e3 for start, end in spans]


@dataclass
class Row:
    kernels: list[int] = field(default_factory=list)  # indices of our call sites
    nodes: list[str] = field(default_factory=list)  # onnxruntime's optimised nodes
    layers: list[str] = field(default_factory=list)  # the ONNX nodes our kernels own (else their layer names)
    flops: int = 0
    ours: list[float] = field(default_factory=list)  # ns per run
    theirs: list[float] = field(default_factory=list)
    repeats: int = 1  # rows merged into this one (`merge`)

    @property
    def ours_ns(self) -> float:
        return statistics.median(self.ours) if self.kernels and self.ours else 0.0

    @property
    def theirs_ns(self) -> float:
        return statistics.median(self.theirs) if self.nodes and self.theirs else 0.0

    def ratio(self, paired: bool) -> float | None:
        """Ours ÷ theirs: with `paired` runs (taken in turns), the median of the runs'
        ratios; else the ratio of the medians.  None for a row one side lacks."""
        if not (self.kernels and self.nodes):
            return None
        if paired:
            pairs = [a / b for a, b in zip(self.ours, self.theirs) if b > 0]
            return statistics.median(pairs) if pairs else None
        return self.ours_ns / self.theirs_ns if self.theirs_ns else None


def group(shares: list[dict[str | None, float]], join: Join, onnx_nodes: set[str]) -> list[Row]:
    """Rows over our kernels (each its layer shares) and onnxruntime's optimised nodes:
    the connected groups of the ONNX nodes' owners (module docstring)."""
    parent: dict[tuple, tuple] = {}

    def find(x: tuple) -> tuple:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    most: dict[str, float] = {}
    for layers in shares:
        for layer, f in layers.items():
            if layer in onnx_nodes:
                most[layer] = max(most.get(layer, 0.0), f)
    owned: dict[int, list[str]] = {k: [n for n, f in layers.items() if n in most and f >= most[n] - 1e-9]
                                   for k, layers in enumerate(shares)}
    theirs = join.owner()
    for k, layers in enumerate(shares):
        find(("ours", k))
        for layer in owned[k] or [n for n in layers if n in onnx_nodes]:  # owning none, it joins by all
            if layer in theirs:
                parent[find(("ours", k))] = find(("theirs", theirs[layer]))
    for name in join.covers:
        find(("theirs", name))
    rows: dict[tuple, Row] = defaultdict(Row)
    for item in list(parent):
        row = rows[find(item)]
        (row.kernels if item[0] == "ours" else row.nodes).append(item[1])
    for row in rows.values():
        row.kernels.sort()
        row.layers = (list(dict.fromkeys(n for k in row.kernels for n in owned[k]))
                      or [n for k in row.kernels for n in shares[k] if n])  # e.g. `conv1/Conv.input`: a parameter
    return list(rows.values())


def merge(rows: list[Row], names: list[str], join: Join) -> list[Row]:
    """One row per kind: rows of the same kernels (by name: the same shapes, and with bound
    weights the same code) beside nodes of the same op types, summed run by run.  BERT's
    twelve layers make twelve rows of each kind."""
    kinds: dict[tuple, Row] = {}
    for row in rows:
        key = (tuple(sorted(names[k] for k in row.kernels)), tuple(sorted(join.ops[n] for n in row.nodes)))
        if key not in kinds:
            kinds[key] = Row(list(row.kernels), list(row.nodes), list(row.layers), row.flops, list(row.ours),
                             list(row.theirs))
            continue
        kind = kinds[key]
        kind.kernels += row.kernels
        kind.nodes += row.nodes
        kind.flops += row.flops
        kind.ours = [a + b for a, b in zip(kind.ours, row.ours)]
        kind.theirs = [a + b for a, b in zip(kind.theirs, row.theirs)]
        kind.repeats += 1
    return list(kinds.values())


def kernel_table(prof: Profile, theirs: OptimizedProfile) -> str:
    """The profile's call sites beside onnxruntime's optimised nodes, the worst ratio first."""
    sites = [s for row in prof.rows for s in row.sites]
    rows = group([s.shares.layers for s in sites], theirs.join, theirs.layers)
    for row in rows:
        row.flops = sum(sites[k].flops * int(statistics.median(sites[k].calls) if sites[k].calls else 0)
                        for k in row.kernels)
        row.ours = [float(sum(sites[k].times[r] for k in row.kernels)) for r in range(prof.runs)]
        row.theirs = [sum(t.get(n, 0.0) for n in row.nodes) for t in theirs.runs]
    names = [s.display_name for s in sites]
    lines = [f"beside onnxruntime {theirs.version} ({theirs.model}, optimised as it runs: ORT_ENABLE_ALL; "
             "its nodes joined to the file's through compiler/profile/ort_join.py):"]
    lines += table_lines(rows, names, theirs.join, paired=False, limit=ROWS)
    ours_run = prof.entry_ns
    their_run = statistics.median(theirs.run_ns) if theirs.run_ns else 0.0
    lines.append(f"end-to-end: ours {ours_run / 1e6:.3f} ms (first kernel to last); onnxruntime "
                 f"{their_run / 1e6:.3f} ms (model_run, profiling on); ratio of medians, runs not taken in turns")
    return "\n".join(lines)


def table_lines(rows: list[Row], names: list[str], join: Join, *, paired: bool, limit: int = 0) -> list[str]:
    """A Markdown table of the rows, the worst ratio first, then the summary and what
    did not join.  `names[k]` labels our kernel k."""
    def order(row: Row):
        ratio = row.ratio(paired)
        return (ratio is None, -(ratio or 0.0), -row.ours_ns - row.theirs_ns)

    out = ["| our kernel (its ONNX nodes) | ours µs | onnxruntime's node(s) | theirs µs | ratio | ours GFLOP/s "
           "| theirs GFLOP/s |", "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    ordered = sorted(rows, key=order)
    for row in ordered[:limit or None]:
        if row.kernels:
            kernels = sorted({names[k] for k in row.kernels})
            each = len(row.kernels) // row.repeats
            calls = f", {each} kernels" if each > 1 else ""
            times = f" ×{row.repeats}" if row.repeats > 1 else ""
            ours = f"{_label(row.layers or ['no ONNX node'], 44)}{times} ({', '.join(kernels)[:60]}{calls})"
        else:
            ours = "— (views, or folded)" if any(join.covers[n] for n in row.nodes) else "— (moves data only)"
        their_ops = ", ".join(sorted({join.ops[n] for n in row.nodes}))
        theirs = f"{their_ops} {_label(row.nodes, 40)}" if row.nodes else "—"
        ratio = row.ratio(paired)
        gflops = [f"{row.flops / ns:.1f}" if row.flops and ns else "" for ns in (row.ours_ns, row.theirs_ns)]
        out.append(f"| {ours} | {row.ours_ns / 1e3:.1f} | {theirs} | {row.theirs_ns / 1e3:.1f} "
                   f"| {f'{ratio:.2f}x' if ratio is not None else '—'} | {gflops[0]} | {gflops[1]} |")
    if limit and len(ordered) > limit:
        out.append(f"| … {len(ordered) - limit} more rows | | | | | | |")
    joined = [r for r in rows if r.ratio(paired) is not None]
    good = [r for r in joined if r.ratio(paired) <= 1.0]
    total = sum(r.ours_ns for r in joined)
    out.append(f"at ≤ 1.0x onnxruntime's node(s): {sum(len(r.kernels) for r in good)} of "
               f"{sum(len(r.kernels) for r in joined)} joined kernels ({len(good)} of {len(joined)} rows), "
               f"{100 * sum(r.ours_ns for r in good) / total if total else 0:.0f}% of their time")
    alone = [r for r in rows if r.ratio(paired) is None]
    if alone:
        out.append(f"rows with one side only: {len(alone)} (ours {sum(r.ours_ns for r in alone) / 1e3:.0f} µs, "
                   f"theirs {sum(r.theirs_ns for r in alone) / 1e3:.0f} µs)")
    for what, missing in (("ONNX nodes onnxruntime's graph does not compute", join.uncovered),
                          ("ONNX nodes two of its nodes claim", list(join.twice)),
                          ("its nodes whose output has no ONNX name", join.unnamed)):
        if missing:
            out.append(f"{what}: {len(missing)}: {', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}")
    return out


def _label(names: list[str], width: int) -> str:
    text = names[0] + (f" +{len(names) - 1}" if len(names) > 1 else "") if names else "—"
    return text if len(text) <= width else "…" + text[-(width - 1):]
