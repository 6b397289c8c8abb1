"""`relaylens graph` of a partitioned module (docs/graph.md, docs/byoc.md): with a pattern
table and a target, given as options or by the model's own `// relaylens:` line, the four
BYOC passes run first, and after PartitionGraph each external function is a group named
after it (its target in the JSON's groupNodeAttributes), each composite a group inside it,
as fused functions are drawn; no `fn` node stands for a composite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byoc_cases import NPU_MODEL_BODY, NPU_TABLE
from relaylens.compiler.cli import main
from relaylens.compiler.graph.explorer_json import EXTERNAL_KIND

BODY = NPU_MODEL_BODY
MODEL = '#[version = "0.0.5"]\n' + BODY
TABLE = NPU_TABLE
REGIONS = {  # node label -> namespace after PartitionGraph
    "%x": "", "%w": "", "%b": "", "exp": "",
    "nn.conv2d": "mynpu_main_0/mynpu.conv2d_bias_relu", "nn.bias_add": "mynpu_main_0/mynpu.conv2d_bias_relu",
    "add": "mynpu_main_3/mynpu.add_relu",
}


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "model.relay").write_text(MODEL)
    (tmp_path / "table.relay").write_text(TABLE)
    (tmp_path / "directed.relay").write_text(
        '#[version = "0.0.5"]\n// relaylens: --patterns table.relay --target mynpu\n' + BODY)
    return tmp_path


def check_regions(out: str) -> None:
    [graph] = json.loads(out)["graphs"]
    nodes = graph["nodes"]
    assert {n["label"]: n["namespace"] for n in nodes if n["label"] in REGIONS} == REGIONS
    assert sorted(n["namespace"] for n in nodes if n["label"] == "nn.relu") == [
        "mynpu_main_0/mynpu.conv2d_bias_relu", "mynpu_main_3/mynpu.add_relu"]
    assert not [n for n in nodes if n["label"] in ("fn", "call") or n["label"].startswith("@")]
    groups = graph["groupNodeAttributes"]
    assert groups["mynpu_main_0"] == {"kind": EXTERNAL_KIND, "function": "tvmgen_default_mynpu_main_0", "target": "mynpu"}
    assert groups["mynpu_main_3"]["target"] == "mynpu"
    # edges cross the regions' borders: add reads exp (host) and the first region's relu
    by_id = {n["id"]: n for n in nodes}
    add = next(n for n in nodes if n["label"] == "add")
    assert sorted(by_id[e["sourceNodeId"]]["label"] for e in add["incomingEdges"]) == ["exp", "nn.relu"]


def test_graph_draws_the_regions_of_a_partitioned_module(capsys, folder):
    status, out, err = relaylens(capsys, "graph", folder / "model.relay", "--patterns", folder / "table.relay",
                                 "--target", "mynpu", "--after", "PartitionGraph")
    assert status == 0, err
    check_regions(out)


def test_the_model_s_own_line_partitions_its_graph_as_build_does(capsys, folder):
    status, out, err = relaylens(capsys, "graph", folder / "directed.relay", "--after", "PartitionGraph")
    assert status == 0, err
    check_regions(out)
    status, out, err = relaylens(capsys, "graph", folder / "directed.relay", "-o", folder / "whole.svg")  # after every pass
    assert status == 0, err
    svg = (folder / "whole.svg").read_text()
    assert svg.count('class="group external"') == 2 and "<title>mynpu: tvmgen_default_mynpu_main_0</title>" in svg


def test_the_composites_are_groups_before_the_partition(capsys, folder):
    status, out, err = relaylens(capsys, "graph", folder / "model.relay", "--patterns", folder / "table.relay",
                                 "--target", "mynpu", "--after", "MergeComposite")
    assert status == 0, err
    [graph] = json.loads(out)["graphs"]
    assert {n["label"]: n["namespace"] for n in graph["nodes"] if n["label"] in ("nn.conv2d", "add", "exp")} == {
        "nn.conv2d": "mynpu.conv2d_bias_relu", "add": "mynpu.add_relu", "exp": ""}
    assert not [n for n in graph["nodes"] if n["label"] == "fn"]


def test_patterns_need_a_target(capsys, folder):
    status, _, err = relaylens(capsys, "graph", folder / "model.relay", "--patterns", folder / "table.relay")
    assert status == 2 and "--patterns needs --target" in err
    status, _, err = relaylens(capsys, "graph", folder / "model.relay", "--patterns", folder / "missing.relay",
                               "--target", "mynpu")
    assert status == 2 and "cannot read it" in err
