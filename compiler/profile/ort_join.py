"""Which nodes of an ONNX file each node of onnxruntime's optimised graph computes.

    join = join_optimized(model.graph, optimized.graph)   # optimized: SessionOptions.optimized_model_filepath
    join.covers["layer1.0/bn3/BatchNormalization_out_nchwc"]
        # ['layer1.0/conv3/Conv', 'layer1.0/bn3/BatchNormalization', 'layer1.0/Add', 'layer1.0/relu_2/Relu']
    join.covers["ReorderOutput"]   # [] -- moves data only, no node of the file
    join.uncovered                 # nodes of the file no optimised node computes (removed)

With every graph optimisation on (ORT_ENABLE_ALL, what a user runs) onnxruntime fuses and
renames: Conv + BatchNormalization + Relu (+ a residual Add) become one NCHWc `Conv`,
MatMul + Div a `FusedMatMul`, eight GELU nodes a `FastGelu`.  Its profiler names the nodes
of that graph, so the per-node times join the file's nodes only through this map.

The join follows tensors, not names.  A fused node writes the tensor its last fused node
wrote (FusedMatMul writes `attn/Div_out`), so each node of the optimised graph computes the
file's nodes between the tensors it writes and the tensors the optimised graph keeps: the
walk back from its output stops at every tensor some optimised node reads or writes, and
at the graph's inputs and initializers.  Two kinds of tensor lose their names:

- NCHWc activations, all `reorder_token_<k>`.  onnxruntime names an NCHWc node after the
  tensor its Conv or pool wrote (`<tensor>_nchwc`, `_token_<k>` added when taken), and a
  Conv that took in the residual Add (its fourth input, the sum) and the activation after
  it writes what they wrote.  So the output is that tensor, carried forward through its
  single consumer while that consumer reads nothing else but tensors the node reads and
  scalars: `layer1.0/bn3/BatchNormalization_out` → `layer1.0/Add_out` (the other operand
  is the node's sum input) → `layer1.0/relu_2/Relu_out` (two consumers: stop).
  A node that kept its name and lost its output's is named back the same way, from the
  output of the file's node of that name.
- ReorderInput / ReorderOutput (and any node of `PASS_THROUGH`), which move an activation
  between NCHW and NCHWc: their output is the tensor of their input, and they compute no
  node of the file.

A node onnxruntime merged into an identical one (BERT's query, key and value Reshapes of
one input become one) is computed by the consumer that now reads the survivor's output:
the walk back from the key's Gemm passes through the key's Reshape to the graph's input.
What does not join is returned, not dropped: nodes of the file no optimised node computes
(`uncovered`: onnxruntime removed them), nodes two optimised nodes claim (`twice`), and optimised nodes whose output
could not be named (`unnamed`).  Checked on bench/build.py's four models
(tests/test_ort_join.py checks the rules on small graphs).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

PASS_THROUGH = frozenset({"ReorderInput", "ReorderOutput"})
_TOKEN = re.compile(r"_token_\d+$")


@dataclass
class Join:
    covers: dict[str, list[str]]  # optimised node name -> the file's node names (our importer's), in file order
    ops: dict[str, str]  # optimised node name -> op type
    uncovered: list[str] = field(default_factory=list)
    twice: dict[str, list[str]] = field(default_factory=dict)  # file node -> the optimised nodes claiming it
    unnamed: list[str] = field(default_factory=list)

    def owner(self) -> dict[str, str]:
        """File node -> the optimised node that computes it (the first, for a node claimed twice)."""
        out: dict[str, str] = {}
        for name, nodes in self.covers.items():
            for node in nodes:
                out.setdefault(node, name)
        return out


def join_optimized(original, optimized) -> Join:
    """Join two onnx GraphProtos: the file's graph and onnxruntime's optimised one."""
    from ..frontend.onnx.spans import node_names  # lazy: onnx is an optional dependency

    names = node_names(original.node)
    producer = {t: k for k, node in enumerate(original.node) for t in node.output if t}
    consumers: dict[str, list[int]] = defaultdict(list)
    for k, node in enumerate(original.node):
        for t in node.input:
            if t:
                consumers[t].append(k)
    scalars = {i.name for i in original.initializer if _elements(i.dims) <= 1}
    sources = {i.name for i in original.input} | {i.name for i in original.initializer}
    known = set(producer) | sources
    mapped = {t: t for node in optimized.node for t in (*node.input, *node.output) if t in known}
    named = {node.name or f"{node.op_type}_{k}": node for k, node in enumerate(optimized.node)}
    kept = {node.name: node.output[0] for node in original.node if node.name and len(node.output) == 1}
    claimed = set(mapped.values()) | {h for node in optimized.node if (h := _hint(node.name, producer, kept))}
    join = Join({}, {name: node.op_type for name, node in named.items()})

    for node in reversed(optimized.node):  # a reorder whose output keeps its name names its input
        if node.op_type in PASS_THROUGH:
            _pass_through(node, mapped)
    for name, node in named.items():  # graph order is topological
        if node.op_type in PASS_THROUGH:
            _pass_through(node, mapped)
            continue
        free = [t for t in node.output if t and t not in mapped]
        if not free:
            continue
        target = _hint(node.name, producer, kept)
        if target is None or len(free) > 1:
            join.unnamed.append(name)
            continue
        reads = {mapped[t] for t in node.input if t in mapped}
        while len(consumers[target]) == 1:
            nxt = original.node[consumers[target][0]]
            rest = [t for t in nxt.input if t and t != target]
            out = nxt.output[0] if len(nxt.output) == 1 else None
            if out is None or out in claimed or not all(t in reads or t in scalars for t in rest):
                break
            target = out
        mapped[free[0]] = target
        claimed.add(target)

    stops = set(mapped.values()) | sources
    owners: dict[int, list[str]] = defaultdict(list)
    for name, node in named.items():
        covered: set[int] = set()
        if node.op_type not in PASS_THROUGH:
            for t in node.output:
                if t in mapped:
                    _walk_back(mapped[t], producer, original, stops, covered)
        join.covers[name] = [names[k] for k in sorted(covered)]
        for k in covered:
            owners[k].append(name)
    join.uncovered = [names[k] for k in range(len(original.node)) if k not in owners]
    join.twice = {names[k]: v for k, v in sorted(owners.items()) if len(v) > 1}
    return join


def _elements(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _hint(name: str, producer: dict[str, int], kept: dict[str, str]) -> str | None:
    """The file's tensor an optimised node's name points to, if any: the tensor an NCHWc
    node is named after (`<tensor>_nchwc`), or the output of the file's node whose name it
    kept (an Add onnxruntime left in NCHWc, writing a `reorder_token`)."""
    base = _TOKEN.sub("", name)
    if base.endswith("_nchwc") and base[: -len("_nchwc")] in producer:
        return base[: -len("_nchwc")]
    return kept.get(name)


def _pass_through(node, mapped: dict[str, str]) -> None:
    src, dst = node.input[0], node.output[0]
    if src in mapped and dst not in mapped:
        mapped[dst] = mapped[src]
    elif dst in mapped and src not in mapped:
        mapped[src] = mapped[dst]


def _walk_back(tensor: str, producer: dict[str, int], original, stops: set[str], covered: set[int]) -> None:
    """Add to `covered` the nodes that compute `tensor` from the tensors in `stops`."""
    todo = [producer[tensor]] if tensor in producer else []
    while todo:
        k = todo.pop()
        if k in covered:
            continue
        covered.add(k)
        todo += [producer[t] for t in original.node[k].input if t in producer and t not in stops]
