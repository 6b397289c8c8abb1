"""The graph view (compiler/graph): the model of a snapshot, Model Explorer's JSON, the
groups from ONNX names and fused functions, the node mapping of a pass through spans, the
layered layout, and `relaylens graph` end to end."""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from relaylens.compiler.cli import main
from relaylens.compiler.driver import compile
from relaylens.compiler.graph.explorer_json import FUSED_KIND, graph_collection
from relaylens.compiler.graph.html import graph_html
from relaylens.compiler.graph.layout import Box, layout
from relaylens.compiler.graph.mapping import node_mapping, sync_navigation
from relaylens.compiler.graph.model import layer_path, module_graphs
from relaylens.compiler.graph.snapshots import UnknownPass, graph_document, snapshot_index
from relaylens.compiler.graph.svg import lay_out, node_size
from relaylens.compiler.ir.expr import Call, Function, Op
from relaylens.compiler.ir.functor import post_order

from conftest import corpus_file

SMALL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(4, 4), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.relu(%0);
  %2 = add(%1, %x);
  %3 = (%2, %1);
  %4 = %3.0;
  exp(%4)
}
"""


# --- helpers ---------------------------------------------------------------------------------


def onnx_model_text():
    """A small CNN with ONNX names in layers, imported by our frontend and printed with
    spans: (text, params)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from relaylens.compiler.frontend.onnx import import_onnx
    from relaylens.compiler.printer import print_module

    rng = np.random.default_rng(0)

    def init(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    inits = [init("w1", 8, 3, 3, 3), init("g1", 8), init("b1", 8), init("m1", 8), init("v1", 8),
             init("w2", 8, 8, 3, 3), init("bias2", 8)]
    inits[4] = numpy_helper.from_array(np.abs(numpy_helper.to_array(inits[4])) + 1, "v1")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="/layer1/conv1/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g1", "b1", "m1", "v1"], ["n1"],
                         name="/layer1/bn1/BatchNormalization"),
        helper.make_node("Relu", ["n1"], ["r1"], name="/layer1/relu/Relu"),
        helper.make_node("Conv", ["r1", "w2", "bias2"], ["c2"], name="/layer2/conv/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a2"], name="/layer2/Add"),
        helper.make_node("Relu", ["a2"], ["y"], name="/layer2/relu/Relu"),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    imported = import_onnx(model)
    return print_module(imported.module, spans=True, types=True), imported.params


def built(text, name="model.relay", **options):
    result = compile(text, name, stop_after="passes", **options)
    assert result.ok, [d.message for d in result.diagnostics if d.is_error]
    return result


def snapshot(result, name):
    return result.snapshots[snapshot_index([s.pass_name for s in result.snapshots], name)]


def op_calls(module) -> list[Call]:
    """Every call of an operator in the module's non-primitive functions, inside the fused
    functions they call included (what the graph shows as `op` nodes)."""
    found = []
    for func in module.functions.values():
        if func.is_primitive:
            continue
        for node in post_order(func):
            if isinstance(node, Call) and isinstance(node.op, Op):
                found.append(node)
    return found


def check_collection(doc: dict) -> None:
    """The shape Model Explorer's JSON adapter reads (formats-reference §1.2-1.3), and edges
    that name real outputs."""
    assert isinstance(doc["label"], str) and doc["label"]
    assert isinstance(doc["graphs"], list) and doc["graphs"]
    for graph in doc["graphs"]:
        assert isinstance(graph["id"], str)
        outputs = {n["id"]: len(n["outputsMetadata"]) for n in graph["nodes"]}
        assert len(outputs) == len(graph["nodes"]), "node ids are unique"
        namespaces = set()
        for node in graph["nodes"]:
            assert set(node) >= {"id", "label", "namespace", "attrs", "incomingEdges", "outputsMetadata"}
            assert isinstance(node["label"], str) and node["label"]
            assert isinstance(node["namespace"], str) and not node["namespace"].startswith("/")
            namespaces.add(node["namespace"])
            for attr in node["attrs"]:
                assert set(attr) == {"key", "value"} and isinstance(attr["value"], str)
            for i, edge in enumerate(node["incomingEdges"]):
                assert edge["targetNodeInputId"] == str(i)
                assert edge["sourceNodeId"] in outputs, edge
                assert int(edge["sourceNodeOutputId"]) < outputs[edge["sourceNodeId"]], edge
            for i, out in enumerate(node["outputsMetadata"]):
                assert out["id"] == str(i)
                assert any(a["key"] == "tensor_shape" for a in out["attrs"])
        for ns, attrs in graph["groupNodeAttributes"].items():
            assert any(n == ns or n.startswith(ns + "/") for n in namespaces), ns
            assert all(isinstance(v, str) for v in attrs.values())
    json.dumps(doc)  # serialisable as it is


# --- the model ---------------------------------------------------------------------------


def test_a_small_module_node_by_node():
    result = built(SMALL)
    graph = module_graphs(result.snapshots[0].module)[0]
    by_label = {n.label: n for n in graph.nodes}
    assert [n.kind for n in graph.nodes].count("input") == 2
    dense, relu, add, tup, exp = (by_label[k] for k in ("nn.dense", "nn.relu", "add", "tuple", "exp"))
    assert dense.inputs == [("%x", "0"), ("%w", "0")]
    assert add.inputs == [(relu.id, "0"), ("%x", "0")]
    assert exp.inputs == [(add.id, "0")], "a projection of a tuple is the field itself"
    assert tup.inputs == [(add.id, "0"), (relu.id, "0")]
    assert dense.span[:2] == (3, 8) and dense.source == "model.relay"
    assert graph.outputs == [(exp.id, "0")]
    assert str(dense.outputs[0]) and dense.outputs[0].shape == (1, 4)


def test_a_projection_of_a_call_is_an_edge_from_that_output():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(6, 2), float32]) {
  %0 = split(%x, indices_or_sections=3);
  %1 = %0.2;
  %2 = %0.0;
  add(%1, %2)
}
"""
    graph = module_graphs(built(text).snapshots[0].module)[0]
    split = next(n for n in graph.nodes if n.label == "split")
    add = next(n for n in graph.nodes if n.label == "add")
    assert len(split.outputs) == 3
    assert add.inputs == [(split.id, "2"), (split.id, "0")]
    check_collection(graph_collection([graph], "split"))


def test_layer_paths_from_onnx_names():
    assert layer_path("/layer1/conv2/Conv") == ("layer1", "conv2")
    assert layer_path("layer1.0/bn1/BatchNormalization") == ("layer1.0", "bn1")
    assert layer_path("Conv_3") == ()


def test_node_count_matches_calls_in_every_snapshot():
    text, params = onnx_model_text()
    result = built(text, params=params)
    for snap in result.snapshots:
        graph = module_graphs(snap.module)[0]
        ops = [n for n in graph.nodes if n.kind == "op"]
        assert len(ops) == len(op_calls(snap.module)), snap.pass_name
        check_collection(graph_collection([graph], snap.pass_name))


def test_groups_nest_as_the_onnx_names_say():
    text, params = onnx_model_text()
    result = built(text)  # weights as parameters: each sits in its layer too
    graph = module_graphs(result.snapshots[0].module)[0]
    spaces: dict[str, list] = {}
    for n in graph.nodes:
        if n.kind == "op":
            spaces.setdefault(n.label, []).append(n.namespace)
    assert spaces["nn.conv2d"] == [("layer1", "conv1"), ("layer2", "conv")]
    assert spaces["nn.batch_norm"] == [("layer1", "bn1")]
    assert spaces["nn.relu"] == [("layer1", "relu"), ("layer2", "relu")]
    assert ("layer2",) in spaces["add"], "/layer2/Add sits in layer2 itself"
    weight = next(n for n in graph.nodes if n.kind == "input" and n.layers[0].startswith("/layer1/conv1/Conv."))
    assert weight.namespace == ("layer1", "conv1")
    doc = graph_collection([graph], "cnn")
    check_collection(doc)
    assert {"layer1/conv1", "layer1/bn1", "layer2/conv", "layer2"} <= {n["namespace"] for n in doc["graphs"][0]["nodes"]}


def test_fused_functions_are_groups_under_the_layers_they_share():
    text, params = onnx_model_text()
    result = built(text, params=params)
    module = snapshot(result, "FuseOps").module
    graph = module_graphs(module)[0]
    primitive = {f for f in (n.op for n in post_order(module.functions[module.get_global_var("main")])
                             if isinstance(n, Call)) if isinstance(f, Function) and f.is_primitive}
    assert len(graph.fused_groups) == len(primitive) >= 2
    for path, name in graph.fused_groups.items():
        members = [n for n in graph.nodes if n.namespace == path]
        assert members and all(m.fused == name for m in members)
        layers = {layer_path(layer) for m in members for layer in m.layers}
        shared = path[:-1]
        assert all(lp[: len(shared)] == shared for lp in layers), (path, layers)
    layer2 = [p for p in graph.fused_groups if p[:1] == ("layer2",)]
    assert layer2, "the conv + add + relu of layer2 fuse under layer2"
    doc = graph_collection([graph], "fused")
    check_collection(doc)
    kinds = doc["graphs"][0]["groupNodeAttributes"]
    assert {ns for ns, a in kinds.items() if a["kind"] == FUSED_KIND} == {"/".join(p) for p in graph.fused_groups}


def test_a_pass_maps_nodes_through_spans():
    text, _ = onnx_model_text()
    result = built(text)  # unbound weights: SimplifyInference's rewrite stays visible
    names = [s.pass_name for s in result.snapshots]
    at = snapshot_index(names, "SimplifyInference")
    before = module_graphs(result.snapshots[at - 1].module)[0]
    after = module_graphs(result.snapshots[at].module)[0]
    entries = node_mapping(before, after)
    bn = next(n for n in before.nodes if n.label == "nn.batch_norm")
    entry = next(e for e in entries if bn.id in e[0])
    labels = {after.by_id()[i].label for i in entry[1]}
    assert "nn.batch_norm" not in labels and {"multiply", "add"} <= labels
    conv = next(n for n in before.nodes if n.label == "nn.conv2d")
    conv_entry = next(e for e in entries if conv.id in e[0])
    assert [after.by_id()[i].label for i in conv_entry[1]] == ["nn.conv2d"]
    for side in (0, 1):
        seen = [i for entry in entries for i in entry[side]]
        assert len(seen) == len(set(seen)), "every node is in one entry at most"
    sync = sync_navigation(entries)
    assert sync["mappingEntries"][0].keys() == {"leftNodeIds", "rightNodeIds"}


def test_fuse_ops_moves_calls_into_groups_and_keeps_them():
    text, params = onnx_model_text()
    result = built(text, params=params)
    at = snapshot_index([s.pass_name for s in result.snapshots], "FuseOps")
    before = module_graphs(result.snapshots[at - 1].module)[0]
    after = module_graphs(result.snapshots[at].module)[0]
    for left, right in node_mapping(before, after):
        lb = sorted(before.by_id()[i].label for i in left if before.by_id()[i].kind == "op")
        ra = sorted(after.by_id()[i].label for i in right if after.by_id()[i].kind == "op")
        assert lb == ra


def test_snapshot_names():
    names = ["input", "InferType", "FoldConstant", "InferType", "FuseOps"]
    assert snapshot_index(names, None) == 4
    assert snapshot_index(names, "infertype") == 1
    assert snapshot_index(names, "InferType#2") == 3
    assert snapshot_index(names, "2") == 2
    assert snapshot_index(names, "input") == 0
    with pytest.raises(UnknownPass, match="no pass 'Fold'"):
        snapshot_index(names, "Fold")
    with pytest.raises(UnknownPass, match="ran 2 times"):
        snapshot_index(names, "InferType#3")
    with pytest.raises(UnknownPass, match="no snapshot 9"):
        snapshot_index(names, 9)


def test_graph_document_labels_the_pass():
    result = built(SMALL)
    doc = graph_document(result.snapshots, "FuseOps", "small.relay")
    assert result.snapshots[doc.index].pass_name == doc.pass_name == "FuseOps"
    assert doc.collection["label"] == "small.relay after FuseOps"
    check_collection(doc.collection)
    # AlterOpLayout made the dense x86's packed one; its node still leads to the dense's text
    dense = next(n for n in doc.collection["graphs"][0]["nodes"] if n["label"] == "nn.contrib_dense_pack")
    start, end = doc.offsets["main"][dense["id"]]
    assert SMALL[start:end] == "nn.dense(%x, %w)"


# --- layout ------------------------------------------------------------------------------


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_layout_keeps_boxes_apart_and_groups_around_their_members():
    text, params = onnx_model_text()
    for params_ in ({}, params):
        result = built(text, params=params_)
        for snap in (result.snapshots[0], snapshot(result, "FuseOps")):
            graph = module_graphs(snap.module)[0]
            lay, _ = lay_out(graph)
            rects = {}
            for n in graph.nodes:
                x, y = lay.nodes[n.id]
                w, h = node_size(n)
                rects[n.id] = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
                assert 0 <= rects[n.id][0] and rects[n.id][2] <= lay.width and rects[n.id][3] <= lay.height
            ids = list(rects)
            for i, a in enumerate(ids):
                for b in ids[i + 1:]:
                    assert not _overlap(rects[a], rects[b]), (a, b)
            for n in graph.nodes:
                for d in range(1, len(n.namespace) + 1):
                    g = lay.groups[n.namespace[:d]]
                    r = rects[n.id]
                    assert g[0] <= r[0] and g[1] <= r[1] and r[2] <= g[2] and r[3] <= g[3]
            groups = list(lay.groups.items())
            for i, (p, a) in enumerate(groups):
                for q, b in groups[i + 1:]:
                    nested = p[: len(q)] == q or q[: len(p)] == p
                    assert nested or not _overlap(a, b), (p, q)
            for (s, t), route in lay.edges.items():
                assert route[0][1] < route[-1][1], "edges run downwards"


def test_layout_of_a_chain_and_a_diamond():
    boxes = {k: Box(40, 20) for k in "abcd"}
    lay = layout(boxes, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("a", "d")])
    ys = {k: lay.nodes[k][1] for k in "abcd"}
    assert ys["a"] < ys["b"] == ys["c"] < ys["d"]
    assert len(lay.edges[("a", "d")]) == 3, "a long edge goes through one dummy"


def test_a_corpus_cnn_at_scale():
    path = corpus_file("005.relay")  # ResNet-50 (weights as metadata the file lacks)
    result = compile(path.read_text(), str(path), stop_after="passes")
    assert result.snapshots
    for snap in (result.snapshots[0], result.snapshots[-1]):
        start = time.perf_counter()
        graph = module_graphs(snap.module)[0]
        built_in = time.perf_counter() - start
        lay, seconds = lay_out(graph)
        print(f"\n005.relay after {snap.pass_name}: {len(graph.nodes)} nodes, graph {built_in:.3f} s, "
              f"layout {seconds:.3f} s")
        assert len([n for n in graph.nodes if n.kind == "op"]) == len(op_calls(snap.module))
        assert set(lay.nodes) == {n.id for n in graph.nodes}
        check_collection(graph_collection([graph], "resnet"))


# --- relaylens graph ---------------------------------------------------------------------


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.relay"
    path.write_text(SMALL)
    return path


def test_cli_json_on_stdout(small, capsys):
    assert main(["graph", str(small), "--after", "FuseOps"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check_collection(doc)
    assert doc["label"].endswith("after FuseOps (#%d)" % snapshot_index(
        [s.pass_name for s in built(SMALL).snapshots], "FuseOps"))


def test_cli_svg_and_html(small, tmp_path, capsys):
    svg = tmp_path / "g.svg"
    assert main(["graph", str(small), "-o", str(svg)]) == 0
    assert "laid out" in capsys.readouterr().err
    root = ET.fromstring(svg.read_text())
    assert root.tag.endswith("svg")
    nodes = [g for g in root.iter() if g.get("class", "").startswith("node ")]
    assert len(nodes) == len(module_graphs(built(SMALL).module)[0].nodes)
    page = tmp_path / "g.html"
    assert main(["graph", str(small), "-o", str(page), "--after", "input"]) == 0
    html = page.read_text()
    assert "<svg" in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert not re.search(r"\s(src|href)=", html) and "https:" not in html
    data = html.split('id="graph-data">')[1].split("</script>")[0]
    lines = json.loads(data)["lines"]
    assert lines["3"].strip().startswith("%0 = nn.dense"), "the Relay lines of the nodes travel with the page"


def test_cli_mapping_file(small, tmp_path):
    out, mapping = tmp_path / "after.json", tmp_path / "map.json"
    assert main(["graph", str(small), "--after", "FuseOps", "-o", str(out), "--mapping", str(mapping)]) == 0
    sync = json.loads(mapping.read_text())
    after_ids = {n["id"] for n in json.loads(out.read_text())["graphs"][0]["nodes"]}
    right = {i for e in sync["mappingEntries"] for i in e["rightNodeIds"]}
    assert right and right <= after_ids


@pytest.mark.parametrize("argv, message", [
    (["--after", "NoSuchPass"], "no pass 'NoSuchPass' ran"),
    (["-o", "g.png"], "expected a file ending in .json, .svg, .html"),
    (["--mapping", "m.json"], "--mapping needs --after PASS"),
])
def test_cli_usage_errors(small, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["graph", str(small), *argv]) == 2
    assert message in capsys.readouterr().err


def test_cli_refuses_to_replace_a_file_and_reports_bad_input(small, tmp_path, capsys):
    out = tmp_path / "g.json"
    out.write_text("mine")
    assert main(["graph", str(small), "-o", str(out)]) == 2
    assert out.read_text() == "mine"
    assert main(["graph", str(small), "-o", str(out), "--force"]) == 0
    bad = tmp_path / "bad.relay"
    bad.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  nn.relu(%y)\n}\n')
    capsys.readouterr()
    assert main(["graph", str(bad)]) == 1
    assert f"{bad}:3:" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".json", ".svg", ".html"])
def test_cli_a_module_without_functions_is_an_error_not_a_crash(tmp_path, capsys, suffix):
    types = tmp_path / "types.relay"  # as corpus 091: type definitions only
    types.write_text('#[version = "0.0.5"]\nextern type Storage\n')
    out = tmp_path / f"g{suffix}"
    assert main(["graph", str(types), "-o", str(out)]) == 1
    assert "nothing to draw: the module defines no function" in capsys.readouterr().err
    assert not out.exists()


def test_cli_never_writes_over_its_inputs(small, tmp_path, capsys):
    weights = tmp_path / "small.npz"
    np.savez(weights, w=np.eye(4, dtype="float32"))
    assert main(["graph", str(small), "-o", str(weights.with_suffix(".json")), "--force"]) == 0
    assert "binding 1 parameter from" in capsys.readouterr().err
    assert main(["graph", str(small), "--after", "input", "--mapping", str(weights), "--force"]) == 2
    assert "refusing to overwrite the input" in capsys.readouterr().err
    assert main(["graph", str(small), "-o", str(small), "--force"]) == 2


def test_html_page_has_the_panel_and_no_outside_resource():
    graph = module_graphs(built(SMALL).module)[0]
    page, _ = graph_html(graph, "t</title><script>", SMALL)
    assert "<title>t&lt;/title&gt;&lt;script&gt;</title>" in page
    assert page.count("<script") == 2


def test_a_source_read_all_down_a_chain_shares_one_spine():
    # %x read by every statement of a chain: its edges share one dummy a layer (layout.py
    # step 2), so the routes' points grow with the chain, not with its square
    n = 300
    boxes = {"x": Box(40, 20), **{f"v{i}": Box(40, 20) for i in range(n)}}
    chain = [(f"v{i}", f"v{i + 1}") for i in range(n - 1)]
    reads = [("x", f"v{i}") for i in range(n)]
    lay = layout(boxes, chain + reads)
    assert sum(len(route) for route in lay.edges.values()) < 6 * n  # one spine: 45,000 points apart
    routes = [lay.edges[e] for e in reads]
    ys = {k: lay.nodes[k][1] for k in boxes}
    assert all(ys[f"v{i}"] < ys[f"v{i + 1}"] for i in range(n - 1))
    assert routes[0][0][1] == ys["x"] + 10  # the first read leaves the source's bottom ...
    for before, route in zip(routes, routes[1:]):
        assert route[0] in before and route[0][1] < route[-1][1]  # ... each later one the spine where the one before left it
    for (_, t), route in zip(reads, routes):
        assert route[-1] == (lay.nodes[t][0], ys[t] - 10)
