"""What became what: the nodes of two snapshots' graphs mapped through their spans.

    entries = node_mapping(before, after)   # [(before ids, after ids), ...]
    sync_navigation(entries)                 # Model Explorer's mapping file (formats-reference §1.7)

Two nodes are related when their spans share a document range of the input (GraphNode.keys):
a pass that rewrote `nn.batch_norm` into `multiply` and `add` gave them its span, so the
batch norm maps to both; FuseOps moves calls into functions and keeps their spans, so each
call maps to itself.  Relations are closed under sharing, so that every node is in one
entry at most (what Model Explorer asks of `mappingEntries`): a rewrite of many into many
is one entry.  A node without a document range (a constant a pass made from nothing it can
name) is in no entry; an entry with no node on one side is a node removed or added.
"""

from __future__ import annotations

from typing import Any

from .model import Graph


def node_mapping(before: Graph, after: Graph) -> list[tuple[list[str], list[str]]]:
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    by_key: dict[tuple[int, int], tuple[str, str]] = {}
    order: list[tuple[str, str]] = []
    for side, graph in (("before", before), ("after", after)):
        for node in graph.nodes:
            if not node.keys:
                continue
            me = (side, node.id)
            parent[me] = me
            order.append(me)
            for key in node.keys:
                other = by_key.setdefault(key, me)
                if other != me:
                    a, b = find(other), find(me)
                    if a != b:
                        parent[b] = a
    entries: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for me in order:
        left, right = entries.setdefault(find(me), ([], []))
        (left if me[0] == "before" else right).append(me[1])
    return list(entries.values())


def sync_navigation(entries: list[tuple[list[str], list[str]]]) -> dict[str, Any]:
    """Model Explorer's SyncNavigationData: load both graphs, choose "upload a mapping" in
    its sync navigation menu, give it this file."""
    return {"type": "sync_navigation", "showDiffHighlights": True,
            "mappingEntries": [{"leftNodeIds": left, "rightNodeIds": right} for left, right in entries]}
