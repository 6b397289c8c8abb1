"""compiler/profile/ort_join.py: which ONNX nodes each node of onnxruntime's optimised
graph computes.  Hand-written optimised graphs in the shapes onnxruntime 1.32 writes (NCHWc
Convs named `<tensor>_nchwc` on `reorder_token_<k>` tensors, a FusedMatMul writing the
Div's tensor), then onnxruntime's own optimised graph of a residual block."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaylens.compiler.profile.ort_join import join_optimized  # noqa: E402

C = 16  # channels: a multiple of every NCHWc block (8 with AVX2, 16 with AVX-512)


def _init(name: str, shape: tuple[int, ...], scale: float = 0.1) -> onnx.TensorProto:
    rng = np.random.default_rng(len(name))
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _conv_bn(nodes: list, inits: list, x: str, p: str, k: int) -> str:
    inits += [_init(f"{p}.w", (C, C, k, k)), *(_init(f"{p}.bn{i}", (C,)) for i in range(3)),
              numpy_helper.from_array(np.ones(C, np.float32), f"{p}.var")]
    nodes += [helper.make_node("Conv", [x, f"{p}.w"], [f"{p}/Conv_out"], name=f"{p}/Conv", pads=[k // 2] * 4),
              helper.make_node("BatchNormalization", [f"{p}/Conv_out", f"{p}.bn0", f"{p}.bn1", f"{p}.bn2",
                                                      f"{p}.var"], [f"{p}/BN_out"], name=f"{p}/BN")]
    return f"{p}/BN_out"


def residual_block() -> onnx.ModelProto:
    """A stem relu(conv+bn), then ResNet's block: relu(conv+bn) -> conv+bn, added to the
    stem's output (an NCHWc tensor: onnxruntime leaves an Add of the graph's input alone), relu;
    then conv+bn, so that the block's output is an NCHWc tensor too."""
    nodes: list = []
    inits: list = []
    y = _conv_bn(nodes, inits, "x", "s", 3)
    nodes.append(helper.make_node("Relu", [y], ["s/Relu_out"], name="s/Relu"))
    y = _conv_bn(nodes, inits, "s/Relu_out", "a", 3)
    nodes.append(helper.make_node("Relu", [y], ["a/Relu_out"], name="a/Relu"))
    y = _conv_bn(nodes, inits, "a/Relu_out", "b", 1)
    nodes += [helper.make_node("Add", [y, "s/Relu_out"], ["Add_out"], name="Add"),
              helper.make_node("Relu", ["Add_out"], ["Relu_out"], name="Relu")]
    nodes.append(helper.make_node("Identity", [_conv_bn(nodes, inits, "Relu_out", "c", 1)], ["y"], name="out"))
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, C, 8, 8))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, C, 8, 8))], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _nchwc(name: str, inputs: list[str], output: str):
    return helper.make_node("Conv", inputs, [output], name=name, domain="com.microsoft.nchwc")


def test_nchwc_nodes_take_in_the_add_and_relu_after_them():
    original = residual_block().graph
    optimized = helper.make_graph([
        helper.make_node("ReorderInput", ["x"], ["reorder_token_x"], name="ReorderInput",
                         domain="com.microsoft.nchwc"),
        _nchwc("s/Relu_out_nchwc", ["reorder_token_x", "reorder", "ConvBnFusion_BN_B_s.bn1"], "reorder_token_0"),
        _nchwc("a/Relu_out_nchwc", ["reorder_token_0", "reorder_token_1", "ConvBnFusion_BN_B_a.bn1"],
               "reorder_token_2"),
        _nchwc("b/BN_out_nchwc", ["reorder_token_2", "reorder_token_3", "ConvBnFusion_BN_B_b.bn1",
                                  "reorder_token_0"], "reorder_token_4"),
        _nchwc("y_nchwc", ["reorder_token_4", "reorder_token_5", "ConvBnFusion_BN_B_c.bn1"],
               "reorder_token_6"),
        helper.make_node("ReorderOutput", ["reorder_token_6"], ["y"], name="ReorderOutput",
                         domain="com.microsoft.nchwc"),
    ], "optimized", [], [])
    join = join_optimized(original, optimized)
    assert join.covers == {"ReorderInput": [], "s/Relu_out_nchwc": ["s/Conv", "s/BN", "s/Relu"],
                           "a/Relu_out_nchwc": ["a/Conv", "a/BN", "a/Relu"],
                           "b/BN_out_nchwc": ["b/Conv", "b/BN", "Add", "Relu"],
                           "y_nchwc": ["c/Conv", "c/BN", "out"], "ReorderOutput": []}  # the Identity removed
    assert (join.uncovered, join.twice, join.unnamed) == ([], {}, [])
    assert join.owner()["Add"] == "b/BN_out_nchwc"


def test_a_conv_without_the_sum_input_stops_before_the_add():
    """Had onnxruntime left the Add out of the second Conv, the Add and the Relu after it
    are not that Conv's: they are left uncovered, not hidden in it."""
    original = residual_block().graph
    optimized = helper.make_graph([
        _nchwc("s/Relu_out_nchwc", ["x", "w"], "reorder_token_0"),
        _nchwc("a/Relu_out_nchwc_token_7", ["reorder_token_0", "w0"], "reorder_token_2"),  # a taken name's suffix
        _nchwc("b/BN_out_nchwc", ["reorder_token_2", "w1"], "reorder_token_4"),
    ], "optimized", [], [])
    join = join_optimized(original, optimized)
    assert join.covers["a/Relu_out_nchwc_token_7"] == ["a/Conv", "a/BN", "a/Relu"]
    assert join.covers["b/BN_out_nchwc"] == ["b/Conv", "b/BN"]
    assert join.uncovered == ["Add", "Relu", "c/Conv", "c/BN", "out"]


def test_fused_nodes_cover_what_lies_between_their_tensors():
    """FusedMatMul writes the Div's tensor: it computes the MatMul and the Div.  A node that
    kept its name but not its output's is named back from the file's node of that name; a
    node of onnxruntime's own with a tensor of its own is reported unnamed, and its work
    falls to the node that reads its output."""
    nodes = [helper.make_node("MatMul", ["q", "k"], ["mm"], name="MatMul"),
             helper.make_node("Div", ["mm", "scale"], ["div"], name="Div"),
             helper.make_node("Softmax", ["div"], ["p"], name="Softmax"),
             helper.make_node("Relu", ["p"], ["r"]),  # unnamed: our importer calls it Relu_0
             helper.make_node("Neg", ["r"], ["n"], name="Neg"),
             helper.make_node("Abs", ["n"], ["out"], name="Abs")]
    original = helper.make_graph(nodes, "attention", [], [], [_init("scale", ())])
    optimized = helper.make_graph([
        helper.make_node("FusedMatMul", ["q", "k"], ["div"], name="MatMulScaleFusion", domain="com.microsoft"),
        helper.make_node("Softmax", ["div"], ["t0"], name="Softmax"),
        helper.make_node("Relu", ["t0"], ["r"], name="Relu"),
        helper.make_node("NegFusion", ["r"], ["t1"], name="Fused_1"),
        helper.make_node("Abs", ["t1"], ["out"], name="Abs"),
    ], "optimized", [], [])
    join = join_optimized(original, optimized)
    assert join.covers["MatMulScaleFusion"] == ["MatMul", "Div"]
    assert join.covers["Softmax"] == ["Softmax"] and join.covers["Relu"] == ["Relu_0"]
    assert join.unnamed == ["Fused_1"] and join.covers["Fused_1"] == []
    assert join.covers["Abs"] == ["Neg", "Abs"]  # `t1` is no tensor of the file: the walk goes past it
    assert join.uncovered == [] and join.twice == {}


def test_onnxruntimes_own_optimised_graph_joins_every_node_once(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    model = residual_block()
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    options.log_severity_level = 3
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    optimized = onnx.load(str(tmp_path / "optimized.onnx")).graph
    join = join_optimized(model.graph, optimized)
    assert (join.uncovered, join.twice, join.unnamed) == ([], {}, [])
    owner = join.owner()
    assert owner["a/Conv"] == owner["a/BN"] == owner["a/Relu"]
    assert owner["b/Conv"] == owner["b/BN"] == owner["Add"] == owner["Relu"] != owner["a/Conv"]
    assert join.ops[owner["Add"]] == "Conv"  # the NCHWc Conv took the Add in (its sum input) and the Relu


def test_rows_join_kernels_and_nodes_through_the_onnx_nodes_each_owns():
    """A kernel joins onnxruntime's node through the ONNX nodes no kernel gives a larger
    share of its time: the transpose kernel that also reshapes for the MatMul (half its
    time, by elements written) stays out of the MatMul's row; a layer norm's three kernels
    join one node; a layout transform of the input and a reorder stand alone."""
    from relaylens.compiler.profile.compare_optimized import group, merge
    from relaylens.compiler.profile.ort_join import Join

    join = Join({"T": ["Transpose"], "FusedMatMul": ["MatMul", "Div"], "LN": ["LayerNorm"], "ReorderOutput": []},
                {"T": "Transpose", "FusedMatMul": "FusedMatMul", "LN": "LayerNormalization",
                 "ReorderOutput": "ReorderOutput"})
    shares = [{"Transpose": 0.5, "MatMul": 0.5},  # 0: transpose + the MatMul's reshape
              {"MatMul": 1.0},  # 1: batch_matmul
              {"Div": 1.0},  # 2
              {"LayerNorm": 1.0}, {"LayerNorm": 1.0}, {"LayerNorm": 1.0},  # 3-5: mean, variance, the rest
              {"MatMul.input": 1.0}]  # 6: a layout transform of a parameter
    rows = {(tuple(r.kernels), tuple(sorted(r.nodes))): r for r in
            group(shares, join, {"Transpose", "MatMul", "Div", "LayerNorm"})}
    assert set(rows) == {((0,), ("T",)), ((1, 2), ("FusedMatMul",)), ((3, 4, 5), ("LN",)), ((6,), ()),
                         ((), ("ReorderOutput",))}
    assert rows[(1, 2), ("FusedMatMul",)].layers == ["MatMul", "Div"]
    assert rows[(6,), ()].layers == ["MatMul.input"]  # labelled by its parameter

    a, b = rows[(0,), ("T",)], rows[(1, 2), ("FusedMatMul",)]
    a.ours, a.theirs, b.ours, b.theirs = [1.0, 2.0], [2.0, 2.0], [3.0, 3.0], [1.0, 2.0]
    assert a.ratio(paired=True) == pytest.approx(0.75) and a.ratio(paired=False) == pytest.approx(0.75)
    assert b.ratio(paired=True) == pytest.approx(2.25) and b.ratio(paired=False) == pytest.approx(2.0)
    twin = group(shares, join, {"Transpose", "MatMul", "Div", "LayerNorm"})
    names = ["t", "bmm", "div", "mean", "var", "ln", "layout"]
    again = next(r for r in twin if r.kernels == [0])
    again.ours, again.theirs = [1.0, 1.0], [1.0, 1.0]
    kinds = merge([a, again], names, join)  # the same kernel beside the same op: one kind, summed run by run
    assert len(kinds) == 1 and kinds[0].repeats == 2 and kinds[0].ours == [2.0, 3.0] and kinds[0].theirs == [3.0, 3.0]
