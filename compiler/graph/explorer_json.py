"""Graphs as Model Explorer's graph JSON: one GraphCollection, the shape its built-in JSON
adapter reads (`model-explorer out.json`; the format: shared research formats-reference §1,
google-ai-edge/model-explorer `graph_builder.py`).

    {"label": "model.relay after FuseOps",
     "graphs": [{"id": "main", "nodes": [...], "groupNodeAttributes": {...}}]}

A node: `id`, `label` (the operator), `namespace` (its groups joined by `/`, a `/` inside a
name written `\\/`), `attrs` (list of {key, value}: the operator's attributes, then
`type`, `span` = `LINE:COL-LINE:COL` of its Relay text, `source` (the document), `layer`
(its frontend layers), `fused` (its fused function)), `incomingEdges` (one per operand, in
operand order: `targetNodeInputId` is the operand's index), `outputsMetadata` (per output:
`tensor_shape` as `float32[1,64,56,56]`, `type` as Relay writes it), and `subgraphIds` for
a call of another global function.  `groupNodeAttributes` gives each fused group
`kind: fused function` and its kernel's name, and each external function's group (a BYOC
region, docs/byoc.md) `kind: external function`, its name and its `target`.  The VS Code view and the HTML export read
the same document.
"""

from __future__ import annotations

from typing import Any

from ..printer import print_type
from .model import Graph, GraphNode, tensor_text

FUSED_KIND = "fused function"  # groupNodeAttributes[ns]["kind"] of a fused function's group
EXTERNAL_KIND = "external function"  # ... of a BYOC region (PartitionGraph's function), with its target


def namespace_text(path: tuple[str, ...]) -> str:
    return "/".join(p.replace("/", "\\/") for p in path)


def graph_collection(graphs: list[Graph], label: str) -> dict[str, Any]:
    return {"label": label, "graphs": [graph_json(g) for g in graphs]}


def graph_json(graph: Graph) -> dict[str, Any]:
    groups: dict[str, dict[str, str]] = {}
    for path, name in graph.fused_groups.items():
        groups[namespace_text(path)] = {"kind": FUSED_KIND, "function": name}
    for path, (name, target) in graph.external_groups.items():
        groups[namespace_text(path)] = {"kind": EXTERNAL_KIND, "function": name, "target": target}
    return {"id": graph.id, "nodes": [node_json(n) for n in graph.nodes], "groupNodeAttributes": groups}


def node_json(node: GraphNode) -> dict[str, Any]:
    attrs = [{"key": k, "value": v} for k, v in node.attrs]
    if len(node.outputs) == 1 and node.outputs[0] is not None:
        attrs.append({"key": "type", "value": print_type(node.outputs[0])})
    if node.span is not None:
        line, col, end_line, end_col = node.span
        attrs.append({"key": "span", "value": f"{line}:{col}-{end_line}:{end_col}"})
        attrs.append({"key": "source", "value": node.source})
    if node.layers:
        attrs.append({"key": "layer", "value": ", ".join(node.layers)})
    if node.fused:
        attrs.append({"key": "fused", "value": node.fused})
    out: dict[str, Any] = {
        "id": node.id,
        "label": node.label,
        "namespace": namespace_text(node.namespace),
        "attrs": attrs,
        "incomingEdges": [{"sourceNodeId": src, "sourceNodeOutputId": port, "targetNodeInputId": str(i)}
                          for i, (src, port) in enumerate(node.inputs)],
        "outputsMetadata": [{"id": str(i), "attrs": _output_attrs(node, i, ty)} for i, ty in enumerate(node.outputs)],
    }
    if node.subgraph:
        out["subgraphIds"] = [node.subgraph]
    return out


def _output_attrs(node: GraphNode, index: int, ty) -> list[dict[str, str]]:
    attrs = [{"key": "tensor_shape", "value": tensor_text(ty)}]
    if ty is not None:
        attrs.append({"key": "type", "value": print_type(ty)})
    if node.kind == "input":
        attrs.append({"key": "tensor_name", "value": node.id})
    return attrs
