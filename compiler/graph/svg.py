"""A graph drawn as SVG, laid out by layout.py.

    text, seconds = graph_svg(graph)       # one <svg> document, and the layout's time

Each node is a `<g class="node KIND" data-id=… data-span=LINE:COL-LINE:COL data-ns=…>`
with its operator and output shape (the full type, span and layers in its `<title>`);
each edge a `<path class="edge">` with the tensor's shape beside it and in its title;
each group a `<g class="group" data-ns=…>` box behind its members, named in its corner:
frontend layers in grey, fused functions tinted by a colour of their kernel's name (two
calls of one kernel share it).  The HTML export (html.py) adds behaviour to these classes
and data attributes, nothing else.
"""

from __future__ import annotations

import hashlib
import time
from html import escape

from ..printer import print_type
from .explorer_json import namespace_text
from .layout import Box, Layout, layout
from .model import Graph, GraphNode, tensor_text

CHAR_WIDTH = 6.6  # of the 11px monospace labels
NODE_HEIGHT = 34.0
MAX_LABEL = 40

STYLE = """
.node rect { fill: #fff; stroke: #555; stroke-width: 1; rx: 4; }
.node.input rect { fill: #e8f1fb; } .node.constant rect { fill: #f3f3f3; stroke: #999; }
.node text { font: 11px monospace; fill: #222; } .node text.shape { fill: #666; font-size: 9.5px; }
.edge { fill: none; stroke: #888; stroke-width: 1; } .edge-label { font: 8px monospace; fill: #888; }
.group rect { fill: #000; fill-opacity: 0.03; stroke: #bbb; stroke-dasharray: 3 2; rx: 6; }
.group.fused rect { stroke-dasharray: none; fill-opacity: 0.12; }
.group.external rect { stroke: #7a3; stroke-width: 2; stroke-dasharray: none; fill: #7a3; fill-opacity: 0.06; }
.group text { font: 10px sans-serif; fill: #555; }
"""


def node_size(node: GraphNode) -> tuple[float, float]:
    chars = max(len(_clip(node.label)), len(_clip(_shape(node))))
    return chars * CHAR_WIDTH + 16, NODE_HEIGHT


def lay_out(graph: Graph) -> tuple[Layout, float]:
    """The layout of a graph, and the seconds it took."""
    boxes = {n.id: Box(*node_size(n), n.namespace) for n in graph.nodes}
    edges = [(src, n.id) for n in graph.nodes for src, _ in n.inputs]
    start = time.perf_counter()
    lay = layout(boxes, edges)
    return lay, time.perf_counter() - start


def graph_svg(graph: Graph) -> tuple[str, float]:
    lay, seconds = lay_out(graph)
    w, h = lay.width + 2, lay.height + 2
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="relaylens-graph" width="{w:.0f}" height="{h:.0f}" '
           f'viewBox="0 0 {w:.0f} {h:.0f}" data-graph="{escape(graph.id)}">',
           f"<style>{STYLE}</style>", '<g class="groups">']
    for path, (x0, y0, x1, y1) in sorted(lay.groups.items(), key=lambda item: len(item[0])):
        fused = graph.fused_groups.get(path)
        external = graph.external_groups.get(path)
        cls = "group fused" if fused else "group external" if external else "group"
        fill = f' style="fill: {kernel_colour(fused)}"' if fused else ""
        if external:  # a BYOC region: its target and function
            fused = f"{external[1]}: {external[0]}"
        out.append(f'<g class="{cls}" data-ns="{escape(namespace_text(path))}">'
                   f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}"{fill}/>'
                   f'<text x="{x0 + 5:.1f}" y="{y0 + 12:.1f}">{escape(_clip(path[-1], 60))}</text>'
                   f"<title>{escape(fused or '/'.join(path))}</title></g>")
    out += ["</g>", '<g class="edges">']
    by_id = graph.by_id()
    for node in graph.nodes:
        for i, (src, port) in enumerate(node.inputs):
            route = lay.edges.get((src, node.id))
            if route is None:
                continue
            shape = _port_shape(by_id, src, port)
            (x1, y1), (x2, y2) = route[0], route[1]
            out.append(f'<path class="edge" data-src="{escape(src)}" data-dst="{escape(node.id)}" '
                       f'd="{_path(route)}"><title>{escape(shape)}</title></path>'
                       f'<text class="edge-label" x="{(x1 + x2) / 2 + 3:.1f}" y="{(y1 + y2) / 2:.1f}">'
                       f"{escape(_clip(shape, 28))}</text>")
    out += ["</g>", '<g class="nodes">']
    for node in graph.nodes:
        x, y = lay.nodes[node.id]
        w, h = node_size(node)
        span = "{}:{}-{}:{}".format(*node.span) if node.span else ""
        out.append(f'<g class="node {node.kind}" data-id="{escape(node.id)}" data-span="{span}" '
                   f'data-ns="{escape(namespace_text(node.namespace))}" '
                   f'transform="translate({x - w / 2:.1f},{y - h / 2:.1f})">'
                   f'<rect width="{w:.1f}" height="{h:.1f}"/>'
                   f'<text x="8" y="14">{escape(_clip(node.label))}</text>'
                   f'<text class="shape" x="8" y="27">{escape(_clip(_shape(node)))}</text>'
                   f"<title>{escape(_tooltip(node))}</title></g>")
    out += ["</g>", "</svg>"]
    return "\n".join(out) + "\n", seconds


def kernel_colour(name: str) -> str:
    """A light colour of its own for each kernel name (stable across runs)."""
    hue = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=2).digest(), "big") % 360
    return f"hsl({hue}, 70%, 55%)"


def _shape(node: GraphNode) -> str:
    if not node.outputs:
        return ""
    if len(node.outputs) > 1:
        return f"({len(node.outputs)} outputs)"
    return tensor_text(node.outputs[0])


def _port_shape(by_id: dict[str, GraphNode], src: str, port: str) -> str:
    outputs = by_id[src].outputs if src in by_id else []
    index = int(port) if port.isdigit() else 0
    return tensor_text(outputs[index]) if index < len(outputs) else ""


def _tooltip(node: GraphNode) -> str:
    lines = [node.label]
    lines += [f"{k}={v}" for k, v in node.attrs]
    lines += [print_type(t) for t in node.outputs if t is not None]
    if node.span:
        lines.append("{}:{}:{}".format(node.source, *node.span[:2]))
    if node.layers:
        lines.append("layer " + ", ".join(node.layers))
    if node.fused:
        lines.append("in " + node.fused)
    return "\n".join(lines)


def _path(route: list[tuple[float, float]]) -> str:
    x, y = route[0]
    parts = [f"M{x:.1f},{y:.1f}"]
    for (x1, y1), (x2, y2) in zip(route, route[1:]):
        mid = (y1 + y2) / 2
        parts.append(f"C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}")
    return " ".join(parts)


def _clip(text: str, width: int = MAX_LABEL) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
