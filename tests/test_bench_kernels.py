"""bench/run.py's kernel cases as the models build them: each is built into the kernel a
model gets, checked against onnxruntime, and timed (the figures themselves are not
checked: no timed assertions)."""

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("words, kernel", [
    ("(1x960x7x7 -> 160)", "nn_contrib_conv2d_NCHWc_add_nn_relu"),
    ("(1x512x7x7, 512 filters), Winograd", "winograd_without_weight_transform_add_nn_relu"),
])
def test_cnn_case_times_the_kernel_a_model_gets(run, words, kernel):
    case = next(c for c in run.KERNELS if words in c.label)
    figures = run.measure_kernel(case, threads=1, runs=1)  # checks the output against onnxruntime's
    assert figures["function"].endswith(kernel) and "layout_transform" not in figures["function"]
    assert figures["ours_s"] > 0 and figures["onnxruntime_s"] > 0 and figures["paired_ratio"] > 0
    assert "call_overhead_s" in figures  # the kernel timed as the AOT entry calls it; what Python adds beside
    assert figures["gflop"] == pytest.approx(case.flops / 1e9)


def test_onnxruntime_node_time_leaves_out_the_reorders(run):
    """The profile of a Conv + Relu holds its NCHWc node between two reorders; the figure
    is the conv node's alone."""
    case = next(c for c in run.KERNELS if "(1x960x7x7 -> 160)" in c.label)
    xs, bound = case.arrays()
    nodes = run.CNN_KERNELS
    times = nodes.ort_node_times(case.onnx(bound), case.feeds(xs), threads=1, runs=3)
    reorders = sorted(n for n in times if n.startswith(nodes.REORDERS))
    assert len(reorders) == 2 and len(times) == 3 and all(len(d) == 3 for d in times.values())
    (conv,) = set(times) - set(reorders)
    assert nodes.node_seconds(times) == pytest.approx(sorted(times[conv])[1])
