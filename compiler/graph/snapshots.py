"""Which snapshot a user means by a pass, and its graph document: the one rule that the
command line (`relaylens graph --after PASS`) and the server (`relaylens/graph`) share.

    index = snapshot_index(["input", "RemoveUnusedFunctions", ...], "FuseOps")
    doc = graph_document(snapshots, "FuseOps", "model.relay")   # .collection: Model Explorer's JSON
    doc = graph_document(snapshots, "FuseOps", "model.relay", layout=True, compare=True)
    doc.layouts["main"], doc.before.collection, doc.mapping["main"]   # for the editor's view

A pass is named as the pipeline names it (TVM's names: `FuseOps`), case-insensitively;
a pass that ran several times (`FoldConstant`, `InferType`) means its first run, and
`NAME#2` its second; a number is the snapshot's index (0 is the input, as the pass view
numbers them); `input` is the module before any pass; no pass at all means the last
snapshot (after the whole pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .explorer_json import graph_collection
from .mapping import node_mapping
from .model import module_graphs
from .view import layout_json


class UnknownPass(ValueError):
    """The message names what was asked and what there is."""


def snapshot_index(names: Sequence[str], after: str | int | None) -> int:
    if not names:
        raise UnknownPass("the build made no snapshot")
    if after is None or after == "":
        return len(names) - 1
    if isinstance(after, int) or str(after).isdigit():
        index = int(after)
        if index < len(names):
            return index
        raise UnknownPass(f"there is no snapshot {index}: the build made {len(names)} (0 to {len(names) - 1})")
    name, _, nth = str(after).partition("#")
    wanted = int(nth) if nth.isdigit() and int(nth) > 0 else 1 if not nth else 0
    runs = [i for i, n in enumerate(names) if n.lower() == name.lower()]
    if wanted and len(runs) >= wanted:
        return runs[wanted - 1]
    ran = ", ".join(dict.fromkeys(names))
    if runs:
        raise UnknownPass(f"{name} ran {len(runs)} time{'s' * (len(runs) > 1)}, so {after!r} names no snapshot")
    raise UnknownPass(f"no pass {after!r} ran; the snapshots are: {ran}")


@dataclass(frozen=True)
class GraphDocument:
    """The graph of one snapshot, as the server sends it (docs/lsp.md, `relaylens/graph`)."""

    index: int  # the snapshot's
    pass_name: str
    collection: dict[str, Any]  # Model Explorer's graph JSON
    offsets: dict[str, dict[str, tuple[int, int]]]  # graph id -> node id -> its first document range
    layouts: dict[str, dict[str, Any]] | None = None  # graph id -> view.layout_json, when asked
    before: GraphDocument | None = None  # the snapshot before this one, when a comparison is asked
    mapping: dict[str, list[tuple[list[str], list[str]]]] | None = None  # graph id -> mapping.node_mapping


def graph_document(snapshots: Sequence[Any], after: str | int | None, name: str, *,
                   layout: bool = False, compare: bool = False) -> GraphDocument:
    """The graph collection of the snapshot after the pass `after`; `snapshots` are the
    build's (each with `pass_name` and `module`).  `layout`: with each graph's layout.
    `compare`: with the snapshot before it (none for the input) and, for each graph the
    two share by name, which nodes became which (mapping.py)."""
    index = snapshot_index([s.pass_name for s in snapshots], after)
    doc, graphs = _document(snapshots, index, name, layout)
    if not compare or index == 0:
        return doc
    before, before_graphs = _document(snapshots, index - 1, name, layout)
    old = {g.id: g for g in before_graphs}
    mapping = {g.id: node_mapping(old[g.id], g) for g in graphs if g.id in old}
    return GraphDocument(doc.index, doc.pass_name, doc.collection, doc.offsets, doc.layouts, before, mapping)


def _document(snapshots: Sequence[Any], index: int, name: str, layout: bool) -> tuple[GraphDocument, list]:
    snap = snapshots[index]
    graphs = module_graphs(snap.module)
    label = f"{name} after {snap.pass_name}" if index else f"{name} (input)"
    offsets = {g.id: {n.id: n.keys[0] for n in g.nodes if n.keys} for g in graphs}
    layouts = {g.id: layout_json(g) for g in graphs} if layout else None
    return GraphDocument(index, snap.pass_name, graph_collection(graphs, label), offsets, layouts), graphs
