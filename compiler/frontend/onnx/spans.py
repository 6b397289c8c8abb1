"""Span filling, as RFC 0092 describes TVM's frontend span filler.

Every expression a node's conversion creates gets a `LayerSpan` naming that node (printed
`span=conv1/Conv:0:0`).  Filling walks down from the node's outputs and stops at any
expression that already has a span: the node's inputs, which other nodes (or the graph's
inputs) made.  So a one-to-many conversion tags everything it built, and nothing else.

Graph inputs and initializers get their span from their first consumer, as TVM names
them: `<node>.<tensor>` (`conv1/Conv.conv1.weight`).

A node without a name gets `<OpType>_<k>`, k counting the unnamed nodes of that type in
graph order (TVM's scheme), skipping names the graph already uses: the same model always
gives the same names.
"""

from __future__ import annotations

from typing import Iterable

from onnx import NodeProto

from ...ir.expr import Expr
from ...ir.span import LayerSpan
from ...transform.si_builder import SIBuilder


def node_names(nodes: Iterable[NodeProto]) -> list[str]:
    nodes = list(nodes)
    taken = {n.name for n in nodes if n.name}
    counters: dict[str, int] = {}
    names = []
    for node in nodes:
        name = node.name
        if not name:
            k = counters.get(node.op_type, 0)
            while f"{node.op_type}_{k}" in taken:
                k += 1
            counters[node.op_type] = k + 1
            name = f"{node.op_type}_{k}"
            taken.add(name)
        names.append(name)
    return names


def layer_span(node_name: str) -> LayerSpan:
    return LayerSpan(node_name)


def parameter_span(node_name: str, tensor_name: str) -> LayerSpan:
    return LayerSpan(f"{node_name}.{tensor_name}")


def fill(expr: Expr, span: LayerSpan) -> Expr:
    """Give `span` to every expression under `expr` that has none (they are new)."""
    return SIBuilder(span, enabled=True).recursively_fill_span(expr)
