"""`relaylens profile` in process through `cli.main`: the table, the trace file, the
onnxruntime comparison on the demo model, and the exit codes of bad usage and bad input.
Times are measured, never asserted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.cli import main

from json_schema_subset import validate

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "chrome_trace.schema.json").read_text())

MODEL = """\
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32]) {
  %0 = nn.dense(%x, %w, units=4) /* span=/fc/Gemm:0:0 */;
  nn.relu(%0) /* span=/relu/Relu:0:0 */
}
"""


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.relay"
    path.write_text(MODEL)
    np.savez(tmp_path / "model.npz", w=np.ones((4, 8), dtype="float32"))
    return path


def test_the_table_and_the_trace(capsys, model, tmp_path):
    trace = tmp_path / "trace.json"
    status, out, err = relaylens(capsys, "profile", model, "--runs", "3", "--threads", "1", "-o", trace)
    assert status == 0, err
    assert "dense + relu · /fc/Gemm" in out and "lines 2-3" in out
    assert "/fc/Gemm" in out and "3 runs after a warm-up, 1 thread" in out
    assert re.search(r"peak: 1 core × [\d.]+ GHz", out)
    assert "shared among the Relay lines and layers" in out
    document = json.loads(trace.read_text())
    assert validate(document, SCHEMA) == []
    assert sum(e.get("cat") == "kernel" for e in document["traceEvents"]) == 3


def test_a_given_peak_replaces_the_estimate(capsys, model):
    status, out, _ = relaylens(capsys, "profile", model, "--runs", "1", "--peak", "50")
    assert status == 0 and "peak: 50 GFLOP/s (given with --peak)" in out


@pytest.mark.parametrize("args, message", [
    (["--runs", "0"], "--runs: expected an integer >= 1"),
    (["--threads", "x"], "--threads: expected an integer >= 1"),
    (["--peak", "-1"], "--peak: expected a positive number"),
    (["--compare", "missing.onnx"], "--compare missing.onnx: no such file"),
])
def test_usage_errors(capsys, model, args, message):
    try:
        status = main(["profile", str(model), *args])
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    assert status == 2
    assert message in capsys.readouterr().err


def test_an_existing_trace_needs_force(capsys, model, tmp_path):
    trace = tmp_path / "trace.json"
    trace.write_text("mine")
    status, _, err = relaylens(capsys, "profile", model, "--runs", "1", "-o", trace)
    assert status == 2 and "--force" in err and trace.read_text() == "mine"
    assert relaylens(capsys, "profile", model, "--runs", "1", "-o", trace, "--force")[0] == 0
    assert json.loads(trace.read_text())["traceEvents"]


def test_errors_in_the_program(capsys, tmp_path):
    bad = tmp_path / "bad.relay"
    bad.write_text("def @main(%x: Tensor[(2), float32]) { add(%x, %y) }\n")
    status, out, err = relaylens(capsys, "profile", bad)
    assert status == 1 and "bad.relay:1:" in err and out == ""


def test_compare_with_a_file_that_is_not_a_model(capsys, model, tmp_path):
    fake = tmp_path / "fake.onnx"
    fake.write_bytes(b"not a model")
    status, _, err = relaylens(capsys, "profile", model, "--runs", "1", "--compare", fake)
    assert status == 2 and "fake.onnx" in err and "Traceback" not in err


def _within_rounding(ratio: str, ours: str, theirs: str) -> bool:
    """Whether the printed ratio is ours / theirs as far as their printed digits tell: a
    layer of the demo takes a few µs on a fast machine, so 0.007 / 0.025 may be 0.30x."""
    def half_unit(text: str) -> float:
        return 0.5 * 10.0 ** -(len(text.split(".")[1]) if "." in text else 0)

    o, t, r = float(ours), float(theirs), float(ratio)
    low = (o - half_unit(ours)) / (t + half_unit(theirs)) - half_unit(ratio)
    high = (o + half_unit(ours)) / max(t - half_unit(theirs), 1e-12) + half_unit(ratio)
    return low <= r <= high


def test_compare_with_onnxruntime_on_the_demo_model(capsys, tmp_path):
    pytest.importorskip("onnxruntime")
    onnx_model = ROOT / "examples" / "small_cnn.onnx"
    relay = tmp_path / "small_cnn.relay"
    assert relaylens(capsys, "import", onnx_model, "--shape", "input=1,1,28,28", "-o", relay)[0] == 0
    status, out, err = relaylens(capsys, "profile", relay, "--input", f"input={ROOT / 'examples' / 'digit.npy'}",
                                 "--runs", "2", "--threads", "1", "--compare", onnx_model)
    assert status == 0, err
    table = out[out.index("beside onnxruntime"):]
    rows = {line.split()[0]: line.split() for line in table.splitlines()[2:] if line.startswith("/")}
    # every layer of the model, ours and onnxruntime's time both measured, joined by node name
    assert {"/conv1/Conv", "/conv2/Conv", "/pool1/MaxPool", "/fc/Gemm", "/relu1/Relu"} <= set(rows)
    for name in ("/conv1/Conv", "/conv2/Conv", "/fc/Gemm"):
        ours, theirs, ratio = rows[name][2:5]
        assert float(ours) > 0 and float(theirs) > 0
        assert _within_rounding(ratio.rstrip("x"), ours, theirs), (name, ours, theirs, ratio)
    differences = [float(r[-1]) for r in rows.values()]
    assert differences == sorted(differences, reverse=True)  # the layer to work on next first
    assert "ORT_ENABLE_ALL" in table


def test_compare_by_kernel_joins_onnxruntimes_optimised_nodes(capsys, tmp_path):
    pytest.importorskip("onnxruntime")
    onnx_model = ROOT / "examples" / "small_cnn.onnx"
    relay = tmp_path / "small_cnn.relay"
    assert relaylens(capsys, "import", onnx_model, "--shape", "input=1,1,28,28", "-o", relay)[0] == 0
    status, out, err = relaylens(capsys, "profile", relay, "--input", f"input={ROOT / 'examples' / 'digit.npy'}",
                                 "--runs", "2", "--threads", "1", "--compare", onnx_model, "--compare-by", "kernel")
    assert status == 0, err
    table = out[out.index("optimised as it runs"):]
    rows = {cells[1].split()[0]: cells[1:-1] for line in table.splitlines()
            if line.startswith("| ") and len(cells := [c.strip() for c in line.split("|")]) == 9}
    # each convolution (with its batch norm and relu) beside onnxruntime's fused NCHWc Conv node
    for conv, relu in (("/conv1/Conv", "/relu1/Relu"), ("/conv2/Conv", "/relu2/Relu")):
        assert rows[conv][2].startswith("Conv ") and relu in rows[conv][2] and rows[conv][4].endswith("x")
    assert rows["/fc/Gemm"][2] == "Gemm /fc/Gemm"
    # a row of its own (onnxruntime names the node ReorderOutput, or on an AVX-512 host ReorderOutput_token_N)
    assert rows["—"][2].startswith("ReorderOutput ReorderOutput") and rows["—"][4] == "—"
    assert "does not compute" not in table and "claim" not in table and "no ONNX name" not in table


def test_a_main_without_kernels(capsys, tmp_path):
    path = tmp_path / "id.relay"
    path.write_text("def @main(%x: Tensor[(2), float32]) { %x }\n")
    status, out, err = relaylens(capsys, "profile", path, "--runs", "2")
    assert status == 0, err
    assert "calls no kernel" in out and "nan" not in out


def test_compare_gives_a_layer_named_after_its_consumer_to_that_node():
    """An EfficientNet-like block profiled with --compare had a row `/b1/expand.x` (the
    layout_transform of input x before the first Conv, 0.04 ms) that matched no node of
    onnxruntime's; it is the consuming node's work.  A node name with dots keeps its own."""
    from relaylens.compiler.profile.compare import per_node

    nodes = {"/b1/expand": 1.0, "/layer1/layer1.0/conv1/Conv": 1.0, "/a.b": 1.0}
    layers = {"/b1/expand": 10.0, "/b1/expand.x": 2.0, "/b1/expand.b1.exp.w": 1.0,
              "/layer1/layer1.0/conv1/Conv": 5.0, "/layer1/layer1.0/conv1/Conv.input.1": 3.0,
              "/a.b": 4.0, "/relu/Relu": 6.0, "orphan.x": 7.0, None: 1.0}
    assert per_node(layers, nodes) == {"/b1/expand": 13.0, "/layer1/layer1.0/conv1/Conv": 8.0, "/a.b": 4.0,
                                       "/relu/Relu": 6.0, "orphan.x": 7.0}
    from types import SimpleNamespace

    from relaylens.compiler.profile.compare import OrtProfile, compare_table

    theirs = OrtProfile("m.onnx", {"/b1/expand": 1e6}, {"/b1/expand": "Conv"})
    table = compare_table(SimpleNamespace(layers={"/b1/expand": 3e6, "/b1/expand.x": 1e6}, run_ns=4e6), theirs)
    rows = [line.split() for line in table.splitlines() if line.startswith("/")]
    assert rows == [["/b1/expand", "Conv", "4.0000", "1.0000", "4.00x", "3.0000"]]


def test_compare_gives_the_nodes_onnxruntime_inlines_from_a_function_to_their_node(tmp_path):
    """onnxruntime has no kernel for HardSwish and GroupNormalization-21: it runs their
    function bodies, named `HardSigmoid_2`, `Mul_3`...  A MobileNetV3 block profiled with
    --compare showed its HardSwish with no onnxruntime time ('—') and rows of onnxruntime's
    that matched nothing of ours; the body's nodes now count for the node they came from."""
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from relaylens.compiler.profile.compare import onnxruntime_profile

    scale, bias = (numpy_helper.from_array(np.full(8, v, np.float32), n) for v, n in ((1.5, "g"), (0.1, "b")))
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="/relu/Relu"),
         helper.make_node("HardSwish", ["r"], ["h"], name="/act/HardSwish"),
         helper.make_node("GroupNormalization", ["h", "g", "b"], ["y"], name="/gn/GroupNormalization",
                          num_groups=2)],
        "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])], [scale, bias])
    path = tmp_path / "block.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)
    x = np.random.default_rng(0).standard_normal((1, 8, 4, 4)).astype(np.float32)
    theirs = onnxruntime_profile(str(path), {"x": x}, runs=2, threads=1)
    assert set(theirs.nodes) == {"/relu/Relu", "/act/HardSwish", "/gn/GroupNormalization"}
    assert theirs.ops == {"/relu/Relu": "Relu", "/act/HardSwish": "HardSwish",
                          "/gn/GroupNormalization": "GroupNormalization"}


def _token_type_model(path: Path) -> None:
    """An exporter's embedding lookup: int64 token type ids flattened and cast to int32
    before the Gather of a 4-row table, and an int64 attention mask cast to bool."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto as T, helper as h, numpy_helper as nh

    table = nh.from_array(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32), "tt.weight")
    nodes = [h.make_node("Reshape", ["token_type_ids", "flat"], ["ids_flat"], name="/embeddings/Reshape"),
             h.make_node("Cast", ["ids_flat"], ["ids32"], to=T.INT32, name="/embeddings/Cast"),
             h.make_node("Gather", ["tt.weight", "ids32"], ["emb"], axis=0, name="/embeddings/Gather"),
             h.make_node("Cast", ["attention_mask"], ["mask"], to=T.BOOL, name="/Cast_mask"),
             h.make_node("Unsqueeze", ["mask", "axes"], ["mask2"], name="/Unsqueeze"),
             h.make_node("Where", ["mask2", "emb", "zero"], ["out"], name="/Where")]
    graph = h.make_graph(nodes, "tt", [h.make_tensor_value_info("token_type_ids", T.INT64, [1, 5]),
                                       h.make_tensor_value_info("attention_mask", T.INT64, [5])],
                         [h.make_tensor_value_info("out", T.FLOAT, [5, 8])],
                         [table, nh.from_array(np.array([-1], np.int64), "flat"),
                          nh.from_array(np.array([1], np.int64), "axes"), nh.from_array(np.array(0.0, np.float32), "zero")])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), path)


def test_random_ids_reach_a_gather_through_a_reshape_and_a_cast_within_its_rows(capsys, tmp_path):
    """Random inputs for `profile --compare` must be inputs onnxruntime accepts: ids drawn
    from [0, 10) for a 4-row table made it refuse the Gather.  The index role follows the
    ids back through the reshape and cast an exporter puts before the Gather."""
    pytest.importorskip("onnxruntime")
    onnx_model = tmp_path / "tt.onnx"
    _token_type_model(onnx_model)
    relay = tmp_path / "tt.relay"
    assert relaylens(capsys, "import", onnx_model, "-o", relay)[0] == 0
    status, out, err = relaylens(capsys, "profile", relay, "--runs", "1", "--threads", "1", "--compare", onnx_model)
    assert status == 0, err
    assert "%token_type_ids: Tensor[(1, 5), int64]  index (take indices): integers in [0, 4)" in err
    assert "/embeddings/Gather" in out[out.index("beside onnxruntime"):]


def test_a_random_attention_mask_is_zeros_and_ones(capsys, tmp_path):
    """GPT-2's exporter makes position ids from the attention mask (its cumulative sum,
    less one) and gathers the position table with them: a mask drawn from [0, 10) summed
    past the table's rows and onnxruntime refused the run.  A parameter named a mask is
    drawn as one: 0 or 1."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T, helper as h, numpy_helper as nh

    wpe = nh.from_array(np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32), "wpe.weight")
    nodes = [h.make_node("CumSum", ["attention_mask", "axis"], ["sum"], name="/CumSum"),
             h.make_node("Sub", ["sum", "one"], ["position_ids"], name="/Sub"),
             h.make_node("Gather", ["wpe.weight", "position_ids"], ["out"], axis=0, name="/wpe/Gather")]
    graph = h.make_graph(nodes, "positions", [h.make_tensor_value_info("attention_mask", T.INT64, [1, 5])],
                         [h.make_tensor_value_info("out", T.FLOAT, [1, 5, 8])],
                         [wpe, nh.from_array(np.array(1, np.int64), "axis"), nh.from_array(np.array(1, np.int64), "one")])
    onnx_model = tmp_path / "positions.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 14)]), onnx_model)
    relay = tmp_path / "positions.relay"
    assert relaylens(capsys, "import", onnx_model, "-o", relay)[0] == 0
    status, out, err = relaylens(capsys, "profile", relay, "--runs", "1", "--threads", "1", "--compare", onnx_model)
    assert status == 0, err
    assert "%attention_mask: Tensor[(1, 5), int64]  mask (named a mask): 0 or 1" in err


def test_onnxruntime_refusing_random_inputs_says_which_to_give(capsys, tmp_path):
    """Ids that reach their Gather through arithmetic (an offset added) get no index role:
    when onnxruntime refuses the random values, the error names the inputs drawn at
    random and how to give real ones."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T, helper as h, numpy_helper as nh

    table = nh.from_array(np.ones((4, 8), np.float32), "table.weight")
    nodes = [h.make_node("Add", ["token_ids", "offset"], ["ids"], name="/Add"),
             h.make_node("Gather", ["table.weight", "ids"], ["out"], axis=0, name="/Gather")]
    graph = h.make_graph(nodes, "offset", [h.make_tensor_value_info("token_ids", T.INT64, [1, 5])],
                         [h.make_tensor_value_info("out", T.FLOAT, [1, 5, 8])],
                         [table, nh.from_array(np.array(1, np.int64), "offset")])
    onnx_model = tmp_path / "offset.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 14)]), onnx_model)
    relay = tmp_path / "offset.relay"
    assert relaylens(capsys, "import", onnx_model, "-o", relay)[0] == 0
    status, _, err = relaylens(capsys, "profile", relay, "--runs", "1", "--threads", "1", "--compare", onnx_model)
    assert status == 2 and "Traceback" not in err
    assert "token_ids was drawn at random (--seed 0): give real values with --input NAME=FILE.npy" in err
    ids = tmp_path / "ids.npy"
    np.save(ids, np.array([[0, 1, 2, 1, 0]], np.int64))
    status, _, err = relaylens(capsys, "profile", relay, "--runs", "1", "--threads", "1", "--input",
                               f"token_ids={ids}", "--compare", onnx_model)
    assert status == 0, err


def test_given_names_reads_input_specs_as_load_inputs_does() -> None:
    """profile --compare's hint names the inputs drawn at random: the ones no --input
    gave, `--input 0=...` giving %v0 (the name PyTorch 1.x's input `0` is printed with)."""
    from relaylens.compiler.cli.program import given_names
    from relaylens.compiler.parser import parse

    text = '#[version = "0.0.5"]\ndef @main(%v0: Tensor[(2), float32], %mask: Tensor[(2), int64]) {\n  %v0\n}\n'
    main_fn = parse(text, "t.relay").module["main"]
    assert given_names(main_fn, ["0=x.npy"]) == {"v0"}
    assert given_names(main_fn, ["%mask=m.npy", "v0=x.npy"]) == {"mask", "v0"}
    assert given_names(main_fn, []) == set()
