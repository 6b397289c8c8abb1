"""The convolutions of ResNet-50 and MobileNet v2 as the models build them, for bench/run.py's
kernel table: each a conv2d + bias + relu on NCHW data with its weight and bias bound, so
AlterOpLayout and FoldConstant give it what a model gets (a 1x1 or strided convolution
in NCHW8c with its weight packed, a 3x3 stride-1 one with 64 or more channels in and out
as Winograd with its weight transformed at build time).  The graph also gets the layout
transforms into and out of NCHW8c, which a model pays once, not per layer: only the
convolution's kernel is timed (`timed`: the step whose function name holds it), on
aligned buffers of its own shapes, its machine code called directly (run.py
`native_call`, as the AOT entry calls it in a model); the whole graph's output is checked against
onnxruntime's first.

onnxruntime runs the same Conv + Relu with the weight as an initializer; its graph
optimiser makes it an NCHWc convolution too (MLAS's, with the relu fused), between a
ReorderInput and a ReorderOutput node.  Its figure is its profiler's time for the nodes
other than those reorders (`ort_node_times`, `node_seconds`), the median over the runs:
like ours, the layer without the layout changes.  The profiler's durations are wall
time, also under bench/run.py's --cpu-time (run that at low load).  Beside the medians,
`paired_node_ratio` takes our call and onnxruntime's run in turns, each pair in the same
phase of the machine's speed.

    ConvCase(label, (C, H, W, K, R, stride))   K filters RxR, padding R // 2, batch 1
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class ConvCase:
    label: str
    shape: tuple[int, int, int, int, int, int]
    timed = "conv2d"  # the kernel to time: the one whose function name holds this

    @property
    def kind(self) -> str:
        return "conv"

    @property
    def flops(self) -> float:
        c, h, w, k, r, stride = self.shape
        return 2.0 * c * k * r * r * (h // stride) * (w // stride)

    def arrays(self) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        c, h, w, k, r, _ = self.shape
        rng = np.random.default_rng(7)
        x = rng.standard_normal((1, c, h, w)).astype(np.float32)
        bound = {"w": (rng.standard_normal((k, c, r, r)) / np.sqrt(c * r * r)).astype(np.float32),
                 "b": rng.standard_normal(k).astype(np.float32)}
        return [x], bound

    def relay(self) -> str:
        c, h, w, k, r, stride = self.shape
        pad = r // 2
        return ('#[version = "0.0.5"]\n'
                f"def @main(%x: Tensor[(1, {c}, {h}, {w}), float32], %w: Tensor[({k}, {c}, {r}, {r}), float32], "
                f"%b: Tensor[({k}), float32]) {{\n"
                f"  nn.relu(nn.bias_add(nn.conv2d(%x, %w, strides=[{stride}, {stride}], "
                f"padding=[{pad}, {pad}, {pad}, {pad}], channels={k}, kernel_size=[{r}, {r}]), %b))\n}}\n")

    def onnx(self, bound: dict[str, np.ndarray]):
        from onnx import TensorProto, helper, numpy_helper

        c, h, w, _, r, stride = self.shape
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[r, r], pads=[r // 2] * 4,
                                  strides=[stride, stride]),
                 helper.make_node("Relu", ["c"], ["out"])]
        graph = helper.make_graph(
            nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, c, h, w))],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(a, n) for n, a in bound.items()])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)

    def feeds(self, xs: list[np.ndarray]) -> dict[str, np.ndarray]:
        return {"x": xs[0]}


REORDERS = ("ReorderInput", "ReorderOutput")


def ort_node_times(model, feeds: dict[str, np.ndarray], threads: int, runs: int,
                   before_each: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """Each node's time in each of `runs` runs (after 2 warm-ups), seconds, by node name,
    from onnxruntime's profiler; `before_each` is called before every run."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = os.path.join(folder, "ort")
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        for _ in range(2 + runs):
            if before_each is not None:
                before_each()
            session.run(None, feeds)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    times: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            times[e["name"].removesuffix("_kernel_time")].append(e["dur"] / 1e6)
    if not times:
        raise RuntimeError("onnxruntime's profile has no node events")
    return {name: durations[2:] for name, durations in times.items()}


def node_seconds(times: dict[str, list[float]], skip: tuple[str, ...] = REORDERS) -> float:
    """The median over the runs of the time of the nodes whose names do not start with
    `skip`."""
    return statistics.median(_per_run(times, skip))


def _per_run(times: dict[str, list[float]], skip: tuple[str, ...]) -> list[float]:
    kept = [durations for name, durations in times.items() if not name.startswith(skip)]
    return list(map(sum, zip(*kept)))


def paired_node_ratio(model, feeds: dict[str, np.ndarray], threads: int, runs: int,
                      ours: Callable[[], Any], data: np.ndarray, pause: Callable[[], None]) -> float:
    """The median over `runs` turns of (our kernel's call ÷ onnxruntime's node in the run
    right after it), both wall time (the profiler's durations are): as bench/run.py pairs
    the models, so that a pair shares the VM's phase of speed, which drifts by 20-70% within
    a minute; two runs of the unpaired table disagreed by up to 40% on a 1x1 row (stop 26).
    Each side starts after `pause` (onnxruntime's spin ends in it) with its input in the
    caches and its weights where the other's run left them, as in a model, where the layer
    before wrote the input: onnxruntime's node right after its ReorderInput, ours after
    reading `data` (its input).  Which caches hold what decides these figures: timed
    right after onnxruntime's run with a cold input, MobileNet v2's small 1x1s took
    1.4-1.6x where the medians say 1.0-1.3x; called once untimed first (weights hot too),
    ResNet-50's took 0.63-0.79x."""
    mine: list[float] = []

    def turn() -> None:
        pause()
        float(data.sum())
        start = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - start)
        pause()

    theirs = _per_run(ort_node_times(model, feeds, threads, runs, before_each=turn), REORDERS)
    return statistics.median(m / t for m, t in zip(mine[2:], theirs))


CASES = (
    ConvCase("conv2d 1x1, ResNet-50 (1x64x56x56 -> 256), NCHWc as built", (64, 56, 56, 256, 1, 1)),
    ConvCase("conv2d 1x1, ResNet-50 (1x256x56x56 -> 64), NCHWc as built", (256, 56, 56, 64, 1, 1)),
    ConvCase("conv2d 1x1, ResNet-50 (1x512x28x28 -> 128), NCHWc as built", (512, 28, 28, 128, 1, 1)),
    ConvCase("conv2d 1x1, ResNet-50 (1x128x28x28 -> 512), NCHWc as built", (128, 28, 28, 512, 1, 1)),
    ConvCase("conv2d 1x1, ResNet-50 (1x1024x14x14 -> 256), NCHWc as built", (1024, 14, 14, 256, 1, 1)),
    ConvCase("conv2d 1x1, ResNet-50 (1x256x14x14 -> 1024), NCHWc as built", (256, 14, 14, 1024, 1, 1)),
    ConvCase("conv2d 1x1, ResNet-50 (1x2048x7x7 -> 512), NCHWc as built", (2048, 7, 7, 512, 1, 1)),
    ConvCase("conv2d 1x1, ResNet-50 (1x512x7x7 -> 2048), NCHWc as built", (512, 7, 7, 2048, 1, 1)),
    ConvCase("conv2d 3x3, ResNet-50 (1x64x56x56, 64 filters), Winograd as built", (64, 56, 56, 64, 3, 1)),
    ConvCase("conv2d 3x3, ResNet-50 (1x128x28x28, 128 filters), Winograd as built", (128, 28, 28, 128, 3, 1)),
    ConvCase("conv2d 3x3, ResNet-50 (1x256x14x14, 256 filters), Winograd as built", (256, 14, 14, 256, 3, 1)),
    ConvCase("conv2d 3x3, ResNet-50 (1x512x7x7, 512 filters), Winograd as built", (512, 7, 7, 512, 3, 1)),
    ConvCase("conv2d 3x3 stride 2, ResNet-50 (1x256x28x28 -> 14x14), NCHWc as built", (256, 28, 28, 256, 3, 2)),
    ConvCase("conv2d 1x1, MobileNet v2 (1x24x56x56 -> 144), NCHWc as built", (24, 56, 56, 144, 1, 1)),
    ConvCase("conv2d 1x1, MobileNet v2 (1x144x56x56 -> 24), NCHWc as built", (144, 56, 56, 24, 1, 1)),
    ConvCase("conv2d 1x1, MobileNet v2 (1x96x56x56 -> 24), NCHWc as built", (96, 56, 56, 24, 1, 1)),
    ConvCase("conv2d 1x1, MobileNet v2 (1x960x7x7 -> 160), NCHWc as built", (960, 7, 7, 160, 1, 1)),
)
