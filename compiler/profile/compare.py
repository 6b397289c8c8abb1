"""Our time per ONNX layer beside onnxruntime's, joined by node name.

    theirs = onnxruntime_profile("model.onnx", {"input": x}, runs=10, threads=2)
    print(compare_table(prof, theirs))

onnxruntime's own profiler (SessionOptions.enable_profiling) writes one `Node` event
`<node name>_kernel_time` per node and run, and one `Session` event `model_run` per run
(formats-reference.md §3).  The per-node figures come from a session with graph
optimisations off (ORT_DISABLE_ALL): only then does every event carry the name of a node
of the ONNX file, which is what our spans carry (every expression the importer made names
its node); with them on, onnxruntime fuses and renames (`r_nchwc`) and the join would be
guesswork.  So the per-layer figures compare our optimised kernels with onnxruntime's
unoptimised per-node kernels; the end-to-end figure of a second session with every
optimisation on (ORT_ENABLE_ALL, the default) is printed beside them as the fair total.

A node without a name is reported by onnxruntime as `<OpType>_<graph index>` and named by
our importer `<OpType>_<k>` (frontend/onnx/spans.py); the event's `node_index` maps one to
the other.  The first run is a warm-up; a node's time is the median over the counted runs
of its time in each run.  Rows are sorted by how much more time we spend on the layer
than onnxruntime does (ours − theirs), the layer to work on next first.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .ort_inlined import inlined_owners
from .profiler import Profile

ROWS = 30


class CompareError(Exception):
    """The model cannot be profiled by onnxruntime on these inputs (a usage error)."""


class RunRefused(CompareError):
    """onnxruntime loaded the model and refused to run it on these inputs (an index out
    of its table, say): the values, not the model, are the matter."""


@dataclass
class OrtProfile:
    model: str
    nodes: dict[str, float]  # node name (as our importer names it) -> ns, median per run
    ops: dict[str, str] = field(default_factory=dict)  # node name -> op type
    run_ns: float = 0.0  # median model_run, optimisations off, profiling on
    optimized_run_ns: float = 0.0  # median run, every optimisation on, no profiling
    version: str = ""


def onnxruntime_profile(model: str, inputs: dict[str, np.ndarray], *, runs: int, threads: int,
                        before_run: Callable[[int], None] | None = None) -> OrtProfile:
    """onnxruntime's profile of `model` on `inputs`.  `before_run(k)` is called before each
    of its 2 × (runs + 1) runs; whatever it raises stops it there (the editor's cancel)."""
    step = itertools.count()

    def run(session, feed) -> None:
        if before_run is not None:
            before_run(next(step))
        ort_run(session, feed, model)

    ort, graph = open_model(model)
    from ..frontend.onnx.spans import node_names  # lazy: onnx is an optional dependency (relaylens[onnx])

    ours = node_names(graph.node)
    with tempfile.TemporaryDirectory(prefix="relaylens-ort-") as folder:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(folder, "ort")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = threads
        session = ort_session(ort, model, options)
        feed = ort_feed(session, inputs, model)
        for _ in range(runs + 1):
            run(session, feed)
        with open(session.end_profiling(), encoding="utf-8") as f:
            events = json.load(f)
        owners = inlined_owners(ort, model, graph, ours, _first_counted_run(events), folder)
    plain = ort.SessionOptions()
    plain.intra_op_num_threads = threads
    optimized = ort_session(ort, model, plain)
    times = []
    for k in range(runs + 1):
        started = time.monotonic_ns()
        run(optimized, feed)
        if k:
            times.append(time.monotonic_ns() - started)
    result = OrtProfile(model, {}, run_ns=0.0, optimized_run_ns=float(np.median(times)), version=ort.__version__)
    _read_events(events, graph, ours, owners, result)
    return result


def open_model(model: str):
    """(the onnxruntime module, the model's graph), or a CompareError saying which is
    missing or why the file is not a model."""
    try:
        # lazy: only --compare needs them, and onnxruntime takes a while to load
        import onnx
        import onnxruntime as ort
    except ImportError as err:
        raise CompareError(f"--compare needs onnxruntime and onnx ({err.name} is not installed)") from None
    try:
        graph = onnx.load(model, load_external_data=False).graph
    except Exception as err:  # noqa: BLE001 -- a file that is not a model is the user's
        raise CompareError(f"--compare {model}: not an ONNX model ({err})") from None
    return ort, graph


def ort_session(ort, model: str, options):
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 -- onnxruntime's own message says what is wrong
        raise CompareError(f"--compare {model}: onnxruntime cannot load it: {str(err).strip()[:300]}") from None


def ort_feed(session, inputs: dict[str, np.ndarray], model: str) -> dict[str, np.ndarray]:
    """Our inputs by onnxruntime's input names: by name, else in order when the counts agree."""
    wanted = [i.name for i in session.get_inputs()]
    if all(name in inputs for name in wanted):
        return {name: inputs[name] for name in wanted}
    if len(wanted) == len(inputs):
        return dict(zip(wanted, inputs.values()))
    raise CompareError(f"--compare {model}: its inputs are {', '.join(wanted)}; the program's are "
                     f"{', '.join(inputs) or 'none'}")


def ort_run(session, feed, model: str) -> None:
    try:
        session.run(None, feed)
    except Exception as err:  # noqa: BLE001
        raise RunRefused(f"--compare {model}: onnxruntime cannot run it on these inputs: "
                         f"{str(err).strip()[:300]}") from None


def _counted_runs(events: list[dict]) -> list[tuple[int, int]]:
    """(start, end) of each model_run but the first, a warm-up."""
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")[1:]


def _first_counted_run(events: list[dict]) -> list[tuple[int, str]]:
    """(node index, op type) of the nodes of the first counted run, in the order they ran."""
    runs = _counted_runs(events)
    if not runs:
        return []
    start, end = runs[0]
    ran = sorted((e["ts"], e.get("args", {})) for e in events if e.get("cat") == "Node"
                 and e.get("name", "").endswith("_kernel_time") and start <= e["ts"] <= end)
    return [(int(args.get("node_index", -1)), str(args.get("op_name", ""))) for _, args in ran]


def _read_events(events: list[dict], graph, ours: list[str], owners: dict[int, str], result: OrtProfile) -> None:
    """The per-node medians; a node onnxruntime inlined from a function (`owners`,
    ort_inlined.py) counts for the node of the file it came from, with that node's op."""
    runs = _counted_runs(events)
    result.run_ns = float(np.median([(end - start) * 1e3 for start, end in runs])) if runs else 0.0
    per_run: dict[str, list[float]] = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        run = next((k for k, (start, end) in enumerate(runs) if start <= e["ts"] <= end), None)
        if run is None:
            continue
        args = e.get("args", {})
        owner = owners.get(_index(args))
        node = owner or _our_name(name.removesuffix("_kernel_time"), args, graph, ours)
        times = per_run.setdefault(node, [0.0] * len(runs))
        times[run] += float(e["dur"]) * 1e3
        result.ops[node] = graph.node[ours.index(owner)].op_type if owner else str(args.get("op_name", ""))
    result.nodes = {node: float(np.median(times)) for node, times in per_run.items()}


def _index(args: dict) -> int:
    try:
        return int(args.get("node_index", -1))
    except (TypeError, ValueError):
        return -1


def _our_name(name: str, args: dict, graph, ours: list[str]) -> str:
    index = _index(args)
    if 0 <= index < len(ours) and not graph.node[index].name:
        return ours[index]
    return name


def named_inputs(built, inputs) -> dict:
    """The compiled @main's inputs by parameter name (the ONNX graph's input names)."""
    plan = built.executable.plan
    if plan is not None:
        return {n: a for (n, _, _), a in zip(plan.inputs, inputs)}
    main = built.module["main"]
    return {p.name: a for p, a in zip(main.params, inputs)}


def theirs_per_kernel(prof: Profile, theirs: OrtProfile) -> dict[str, float | None]:
    """onnxruntime's time (ns) for the layers compiled into each kernel: each layer's time
    shared among the kernels it went into by our time for it there (a layer in one kernel
    gives it all its time), so the kernels' figures sum to onnxruntime's time for every
    layer we ran.  None for a kernel none of whose layers onnxruntime timed."""
    out: dict[str, float | None] = {}
    for row in prof.rows:
        shares = [(theirs.nodes[layer], ns / prof.layers[layer]) for layer, ns in row.layers.items()
                  if layer in theirs.nodes and prof.layers.get(layer)]
        out[row.kernel] = sum(t * f for t, f in shares) if shares else None
    return out


def per_node(layers: dict[str | None, float], nodes) -> dict[str, float]:
    """Our time per ONNX node.  The importer names a graph input or initializer after its
    first consumer, `NODE.TENSOR`, and what a kernel does to it alone (the layout_transform
    of the input before the first Conv: 0.04 ms of 5.8 on an EfficientNet-like block) is
    work onnxruntime's NODE does inside itself: it is NODE's, not a row of its own that no
    onnxruntime node matches.  Node names hold dots too (`/layer1/layer1.0/conv1/Conv`): the
    longest prefix before a dot that is a node is the owner."""
    out: dict[str, float] = {}
    for layer, ns in layers.items():
        if layer is None:
            continue
        owner = layer
        if layer not in nodes:
            owner = next((layer[:k] for k in range(len(layer) - 1, 0, -1)
                          if layer[k] == "." and layer[:k] in nodes), layer)
        out[owner] = out.get(owner, 0.0) + ns
    return out


def compare_table(prof: Profile, theirs: OrtProfile) -> str:
    ours = per_node(prof.layers, theirs.nodes)
    names = sorted(set(ours) | set(theirs.nodes), key=lambda n: -(ours.get(n, 0.0) - theirs.nodes.get(n, 0.0)))
    out = [f"beside onnxruntime {theirs.version} ({theirs.model}, per node: graph optimisations off, so that "
           "every node keeps its name):",
           f"{'ONNX layer':<40} {'op':<12} {'ours ms':>9} {'ort ms':>9} {'ratio':>7} {'ours−ort':>9}"]
    for name in names[:ROWS]:
        a, b = ours.get(name), theirs.nodes.get(name)
        ratio = f"{a / b:.2f}x" if a is not None and b else "—"
        label = name if len(name) <= 40 else name[:39] + "…"
        out.append(f"{label:<40} {theirs.ops.get(name, '')[:12]:<12} {_ms(a)} {_ms(b)} {ratio:>7} "
                   f"{((a or 0.0) - (b or 0.0)) / 1e6:>9.4f}")
    if len(names) > ROWS:
        out.append(f"... {len(names) - ROWS} more")
    missing_ours = sum(1 for n in theirs.nodes if n not in ours)
    if missing_ours:
        out.append(f"{missing_ours} node(s) onnxruntime runs have no kernel time here (folded at compile time, "
                   "or only moved data that fusion removed): '—'")
    ours_total, ort_total = sum(ours.values()), sum(theirs.nodes.values())
    out += [f"{'all layers':<40} {'':<12} {ours_total / 1e6:>9.4f} {ort_total / 1e6:>9.4f} "
            f"{(ours_total / ort_total if ort_total else 0):>6.2f}x",
            f"end-to-end: ours {prof.run_ns / 1e6:.3f} ms; onnxruntime {theirs.run_ns / 1e6:.3f} ms unoptimised "
            f"and profiling, {theirs.optimized_run_ns / 1e6:.3f} ms with every optimisation on (ORT_ENABLE_ALL)",
            "ours: each kernel's time shared among its layers by FLOPs; sorted by ours − ort, largest first."]
    return "\n".join(out)


def _ms(ns: float | None) -> str:
    return f"{'—':>9}" if ns is None else f"{ns / 1e6:>9.4f}"
