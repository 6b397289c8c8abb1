"""What an editor's graph view needs beside the graph JSON: each graph's layout, laid out
by the same code and with the same node sizes as the SVG and HTML export (layout.py,
svg.py), so the view and the export draw one picture.

    layout_json(graph)   {"width", "height", "seconds",
                          "nodes":  {id: [x, y, w, h]},           # centre and size
                          "groups": {namespace: [x0, y0, x1, y1]}, # namespace as in the JSON
                          "edges":  [[src, dst, [x0, y0, x1, y1, ...]], ...]}  # the route

Coordinates are pixels of the drawing at zoom 1, rounded to a tenth; an edge's route runs
from the source's bottom to the target's top through the dummy points of its level.
"""

from __future__ import annotations

from typing import Any

from .explorer_json import namespace_text
from .model import Graph
from .svg import lay_out, node_size


def layout_json(graph: Graph) -> dict[str, Any]:
    lay, seconds = lay_out(graph)
    nodes = {}
    for node in graph.nodes:
        x, y = lay.nodes[node.id]
        w, h = node_size(node)
        nodes[node.id] = [round(x, 1), round(y, 1), round(w, 1), round(h, 1)]
    groups = {namespace_text(path): [round(v, 1) for v in box] for path, box in lay.groups.items()}
    edges = [[s, t, [round(c, 1) for point in route for c in point]] for (s, t), route in lay.edges.items()]
    return {"width": round(lay.width, 1), "height": round(lay.height, 1), "seconds": round(seconds, 4),
            "nodes": nodes, "groups": groups, "edges": edges}
