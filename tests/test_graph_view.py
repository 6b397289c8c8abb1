"""What the editor's graph view receives beside the JSON (compiler/graph/view.py and
graph_document's `layout` and `compare`): the layout the SVG export draws, and the snapshot
before a pass with the mapping of its nodes."""

from __future__ import annotations

import re

from relaylens.compiler.graph.explorer_json import namespace_text
from relaylens.compiler.graph.mapping import node_mapping
from relaylens.compiler.graph.model import module_graphs
from relaylens.compiler.graph.snapshots import graph_document, snapshot_index
from relaylens.compiler.graph.svg import graph_svg
from relaylens.compiler.graph.view import layout_json

from test_graph import SMALL, built, onnx_model_text


def test_layout_json_is_the_layout_the_svg_draws():
    text, params = onnx_model_text()
    result = built(text, params=params)
    graph = module_graphs(result.snapshots[-1].module)[0]
    lay = layout_json(graph)
    assert set(lay["nodes"]) == {n.id for n in graph.nodes}
    assert set(lay["groups"]) == {namespace_text(n.namespace[:d]) for n in graph.nodes
                                  for d in range(1, len(n.namespace) + 1)}
    svg, _ = graph_svg(graph)
    for node_id, (x, y, w, h) in lay["nodes"].items():  # the SVG places each node's corner
        corner = re.search(rf'data-id="{re.escape(node_id)}"[^>]*transform="translate\(([-\d.]+),([-\d.]+)\)"', svg)
        assert corner is not None, node_id
        assert abs(float(corner[1]) - (x - w / 2)) < 0.2 and abs(float(corner[2]) - (y - h / 2)) < 0.2
    for x0, y0, x1, y1 in lay["groups"].values():
        assert 0 <= x0 < x1 <= lay["width"] + 1 and 0 <= y0 < y1 <= lay["height"] + 1
    edges = {(s, t) for n in graph.nodes for s, _ in n.inputs for t in [n.id]}
    assert {(s, t) for s, t, _ in lay["edges"]} == edges
    for s, t, route in lay["edges"]:  # from the source's bottom to the target's top
        sx, sy, _, sh = lay["nodes"][s]
        tx, ty, _, th = lay["nodes"][t]
        assert len(route) % 2 == 0 and len(route) >= 4
        assert abs(route[0] - sx) < 0.2 and abs(route[1] - (sy + sh / 2)) < 0.2
        assert abs(route[-2] - tx) < 0.2 and abs(route[-1] - (ty - th / 2)) < 0.2


def test_graph_document_with_layout_and_comparison():
    text, _ = onnx_model_text()
    result = built(text)  # unbound weights: SimplifyInference rewrites the batch norm
    names = [s.pass_name for s in result.snapshots]
    doc = graph_document(result.snapshots, "SimplifyInference", "m.relay", layout=True, compare=True)
    assert doc.index == snapshot_index(names, "SimplifyInference")
    assert doc.layouts is not None and set(doc.layouts["main"]["nodes"]) == {
        n["id"] for n in doc.collection["graphs"][0]["nodes"]}
    before = doc.before
    assert before is not None and before.index == doc.index - 1 and before.pass_name == names[doc.index - 1]
    assert before.layouts is not None and before.collection["label"] == f"m.relay after {names[doc.index - 1]}"
    expected = node_mapping(module_graphs(result.snapshots[doc.index - 1].module)[0],
                            module_graphs(result.snapshots[doc.index].module)[0])
    assert doc.mapping == {"main": expected}
    labels = {n["id"]: n["label"] for n in before.collection["graphs"][0]["nodes"]}
    after_labels = {n["id"]: n["label"] for n in doc.collection["graphs"][0]["nodes"]}
    bn = next(e for e in doc.mapping["main"] if any(labels[i] == "nn.batch_norm" for i in e[0]))
    assert {"multiply", "add"} <= {after_labels[i] for i in bn[1]}


def test_graph_document_without_options_and_of_the_input():
    result = built(SMALL)
    plain = graph_document(result.snapshots, "FuseOps", "s.relay")
    assert (plain.layouts, plain.before, plain.mapping) == (None, None, None)
    first = graph_document(result.snapshots, "input", "s.relay", layout=True, compare=True)
    assert first.index == 0 and first.before is None and first.mapping is None and first.layouts
