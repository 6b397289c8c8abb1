"""Which node of the file each node onnxruntime inlined from a function comes from.

onnxruntime has no CPU kernel for some ops that ONNX defines as functions (HardSwish,
GroupNormalization-21, ...): it replaces such a node by the function's body when it loads
the model, even with graph optimisations off.  Its profile then names those nodes
`<OpType>_<node index>` (`HardSigmoid_13`, `Mul_14`), names that are in no ONNX file, so
`--compare` showed MobileNetV3's HardSwish as ours alone ('—' for onnxruntime) and four
rows of onnxruntime's that matched nothing of ours.

The body's nodes are found in the graph onnxruntime writes after loading
(`optimized_model_filepath`, optimisations off: the file's graph with its functions
inlined), in the order it runs them, which is the order it writes them.  An inlined node
belongs to the node of the file that produced the first value of the file it leads to:
the function's output, which keeps the node's output name.  Only a model whose profile
has such nodes pays for the second session (its weights are written apart, beside).
"""

from __future__ import annotations

import os
from collections import deque


def inlined_owners(ort, model: str, graph, ours: list[str], run: list[tuple[int, str]],
                   folder: str) -> dict[int, str]:
    """node index -> our name of the node of the file it was inlined from, for the nodes
    of one run (`run`: (node index, op type) in the order they ran) whose index is past
    the file's nodes; {} when the graph onnxruntime writes does not line up with the run."""
    if all(index < len(graph.node) for index, _ in run):
        return {}
    saved = _inlined_graph(ort, model, folder)
    if saved is None or [n.op_type for n in saved.node] != [op for _, op in run]:
        return {}
    made_by = {out: ours[k] for k, node in enumerate(graph.node) for out in node.output if out}
    consumers: dict[str, list[int]] = {}
    for k, node in enumerate(saved.node):
        for name in node.input:
            consumers.setdefault(name, []).append(k)
    owners = {}
    for k, (index, _) in enumerate(run):
        if index >= len(graph.node):
            owner = _first_value_of_the_file(k, saved, consumers, made_by)
            if owner is not None:
                owners[index] = owner
    return owners


def _first_value_of_the_file(start: int, saved, consumers: dict[str, list[int]],
                             made_by: dict[str, str]) -> str | None:
    """Our name of the node of the file whose output the saved node `start` leads to first
    (breadth first through the nodes it feeds)."""
    todo, seen = deque([start]), {start}
    while todo:
        node = saved.node[todo.popleft()]
        for out in node.output:
            if out in made_by:
                return made_by[out]
        for out in node.output:
            for k in consumers.get(out, ()):
                if k not in seen:
                    seen.add(k)
                    todo.append(k)
    return None


def _inlined_graph(ort, model: str, folder: str):
    """The graph onnxruntime runs with optimisations off, as it writes it; None if it
    cannot (the caller then keeps onnxruntime's names)."""
    import onnx  # lazy: an optional dependency, loaded by the caller already

    path = os.path.join(folder, "inlined.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.optimized_model_filepath = path
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "inlined.bin")
    options.log_severity_level = 3
    try:
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        return onnx.load(path, load_external_data=False).graph
    except Exception:  # noqa: BLE001 -- only the rows' names are at stake
        return None
