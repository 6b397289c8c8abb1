"""The profiler (compiler/profile/, lower/runtime/timing.py): kernel calls timed inside the
AOT entry, time shared among lines and layers by FLOPs, the Chrome trace against its
schema, interpreter mode, FLOP rules.  Times are measured, never asserted: the tests
check structure and sums, not speed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

from relaylens.compiler.build import relay_build_passes
from relaylens.compiler.driver import compile
from relaylens.compiler.ir.expr import Call
from relaylens.compiler.ir.functor import post_order
from relaylens.compiler.lower.runtime.aot import ENTRY
from relaylens.compiler.lower.runtime.jit import JIT
from relaylens.compiler.lower.runtime.timing import TimedEntry
from relaylens.compiler.profile.attribution import attribute
from relaylens.compiler.profile.cost import call_flops, function_bytes, function_flops
from relaylens.compiler.profile.peak import Peak, machine_peak, measured_ghz
from relaylens.compiler.profile.profiler import profile
from relaylens.compiler.profile.table import profile_table
from relaylens.compiler.profile.trace import chrome_trace

from json_schema_subset import validate

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "chrome_trace.schema.json").read_text())
PEAK = Peak(100.0, "100 GFLOP/s (test)")

# conv2d + add + relu, three ONNX layers, fuse into one kernel once the weights are constants
ONE_KERNEL = """\
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* span=/conv/Conv:0:0 */;
  %1 = add(%0, %b) /* span=/add/Add:0:0 */;
  nn.relu(%1) /* span=/relu/Relu:0:0 */
}
"""
# without AlterOpLayout, whose layout_transforms at the model's edges are kernels of their own
NO_LAYOUT = [name for name in relay_build_passes(3) if name != "AlterOpLayout"]
CONV_FLOPS = 2 * (4 * 8 * 8) * (3 * 3 * 3)  # 2 × outputs × weights per output channel
EWISE_FLOPS = 4 * 8 * 8  # add, relu: one per output element

# two kernels, one called twice (the same structure twice: one kernel, two call sites)
TWO_KERNELS = """\
def @main(%x: Tensor[(1, 16), float32], %w: Tensor[(8, 16), float32]) {
  %0 = nn.dense(%x, %w, units=8) /* span=/fc/Gemm:0:0 */;
  %1 = nn.relu(%0) /* span=/relu/Relu:0:0 */;
  %2 = exp(%1) /* span=/exp1/Exp:0:0 */;
  %3 = reshape(%2, newshape=[8, 1]) /* span=/reshape/Reshape:0:0 */;
  exp(%3) /* span=/exp2/Exp:0:0 */
}
"""

CONTROL_FLOW = """\
def @main(%x: Tensor[(16), float32], %c: bool) {
  if (%c) {
    nn.relu(%x) /* span=/relu/Relu:0:0 */
  } else {
    exp(%x) /* span=/exp/Exp:0:0 */
  }
}
"""


def _weights(rng):
    return {"w": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
            "b": rng.standard_normal((4, 1, 1)).astype("float32")}


@pytest.fixture(scope="module")
def one_kernel():
    rng = np.random.default_rng(0)
    built = compile(ONE_KERNEL, "one.relay", params=_weights(rng), jit=JIT(1), passes=NO_LAYOUT)
    assert built.executable is not None and built.executable.mode == "aot"
    return built, [rng.standard_normal((1, 3, 8, 8)).astype("float32")]


@pytest.fixture(scope="module")
def two_kernels():
    rng = np.random.default_rng(1)
    built = compile(TWO_KERNELS, "two.relay", params={"w": rng.standard_normal((8, 16)).astype("float32")},
                    jit=JIT(1))
    assert built.executable is not None
    return built, [rng.standard_normal((1, 16)).astype("float32")]


def test_a_model_whose_layers_all_fuse_into_one_kernel(one_kernel):
    built, inputs = one_kernel
    prof = profile(built, inputs, runs=3, peak=PEAK, threads=1)
    assert len(prof.rows) == 1
    row = prof.rows[0]
    assert row.calls == 1 and row.flops == CONV_FLOPS + 2 * EWISE_FLOPS
    assert row.display_name == "conv2d + add + relu · /conv/Conv"
    # the kernel's time shared by FLOPs: exactly the conv's share of the arithmetic
    total = CONV_FLOPS + 2 * EWISE_FLOPS
    assert row.layers["/conv/Conv"] == pytest.approx(row.ns * CONV_FLOPS / total)
    assert row.layers["/add/Add"] == pytest.approx(row.ns * EWISE_FLOPS / total)
    assert row.lines == pytest.approx({2: row.ns * CONV_FLOPS / total, 3: row.ns * EWISE_FLOPS / total,
                                       4: row.ns * EWISE_FLOPS / total})


def test_attribution_sums_to_the_kernel_time(two_kernels):
    built, inputs = two_kernels
    prof = profile(built, inputs, runs=3, peak=PEAK, threads=1)
    for row in prof.rows:
        assert sum(row.lines.values()) == pytest.approx(row.ns)
        assert sum(row.layers.values()) == pytest.approx(row.ns)
        assert row.ns == pytest.approx(sum(s.ns for s in row.sites))
    assert sum(prof.layers.values()) == pytest.approx(prof.kernel_ns)
    for func in built.fused_names:
        shares = attribute(func, built.provenance)
        assert sum(shares.lines.values()) == pytest.approx(1.0)
        assert sum(shares.layers.values()) == pytest.approx(1.0)


def test_a_kernel_called_twice_is_one_row_with_two_calls(two_kernels):
    built, inputs = two_kernels
    prof = profile(built, inputs, runs=2, peak=PEAK, threads=1)
    names = [s.kernel for s in built.executable.plan.steps]
    repeated = {n for n in names if names.count(n) > 1}
    rows = {r.kernel: r for r in prof.rows}
    assert len(rows) == len(set(names))
    for name in repeated:  # the two exp kernels: same structure, one kernel, two call sites
        assert rows[name].calls == 2 and len(rows[name].sites) == 2
        assert {layer for layer in rows[name].layers} == {"/exp1/Exp", "/exp2/Exp"}


def test_kernel_times_lie_inside_the_run(one_kernel, two_kernels):
    """Measured, not asserted against a figure: per run, the kernels' times sum to no more
    than the span from the first kernel's start to the last one's end, which lies inside
    the call of the entry; and the calls follow one another."""
    for built, inputs in (one_kernel, two_kernels):
        prof = profile(built, inputs, runs=4, peak=PEAK, threads=1)
        assert len(prof.end_to_end) == len(prof.in_entry) == 4
        for run in range(4):
            spans = [(start, end) for r, _, start, end in prof.events if r == run]
            assert len(spans) == len(built.executable.plan.steps)
            assert all(start <= end for start, end in spans)
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
            assert sum(end - start for start, end in spans) <= prof.in_entry[run] <= prof.end_to_end[run]
        assert 0 < prof.covered("call") <= prof.covered("entry") <= 1


def test_the_timed_entry_computes_what_the_entry_computes(two_kernels):
    built, inputs = two_kernels
    timed = TimedEntry(built.executable, built.lowered.jit)
    value, times = timed.run(*inputs)
    np.testing.assert_array_equal(value, built.executable.run(*inputs))
    assert times.shape == (len(built.executable.plan.steps), 2) and (times > 0).all()
    steps = built.executable.entry_ir.split(f'@"{ENTRY}.steps"(', 1)[1].split("\n}\n", 1)[0]
    assert "clock_gettime" in timed.ir and "clock_gettime" not in steps  # (the team's trace hook reads it)


def test_the_chrome_trace_fits_its_schema(two_kernels):
    built, inputs = two_kernels
    prof = profile(built, inputs, runs=2, peak=PEAK, threads=1)
    trace = json.loads(json.dumps(chrome_trace(prof)))
    assert validate(trace, SCHEMA) == []
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) == 2 * len(built.executable.plan.steps)
    assert {e["name"] for e in kernels} == {s.display_name for s in prof.rows[0].sites} | \
        {s.display_name for r in prof.rows[1:] for s in r.sites}
    runs = [e for e in trace["traceEvents"] if e.get("cat") == "run"]
    for run in runs:  # every kernel slice nests in its run's slice
        inside = [e for e in kernels if e["args"]["run"] == run["args"]["run"]]
        assert all(run["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1e-6 for e in inside)


def test_the_schema_check_can_fail(two_kernels):
    built, inputs = two_kernels
    trace = chrome_trace(profile(built, inputs, runs=1, peak=PEAK, threads=1))
    kernel = next(e for e in trace["traceEvents"] if e.get("cat") == "kernel")
    del kernel["dur"]
    assert any("dur" in p for p in validate(trace, SCHEMA))
    kernel["dur"], kernel["ts"] = 1.0, "0"
    assert validate(trace, SCHEMA)


def test_control_flow_runs_in_the_interpreter_with_timed_kernels():
    built = compile(CONTROL_FLOW, "cf.relay", jit=JIT(1))
    exe = built.executable
    assert exe is not None and exe.mode == "interpreter"
    x = np.linspace(-1, 1, 16, dtype="float32")
    prof = profile(built, [x, np.array(True)], runs=3, peak=PEAK, threads=1)
    assert prof.mode == "interpreter" and "interpreter" in prof.notes[0]
    assert [r.display_name for r in prof.rows] == ["relu · /relu/Relu"]  # the branch taken, only
    assert prof.rows[0].calls == 1 and len(prof.events) == 3
    assert sum(prof.rows[0].layers.values()) == pytest.approx(prof.rows[0].ns)
    assert "interpreter with compiled kernels" in profile_table(prof)


def test_flop_rules():
    built = compile(ONE_KERNEL + "\n", "one.relay", stop_after="passes", passes=NO_LAYOUT)
    calls = {c.op.name: c for func in built.fused_names for c in post_order(func.body) if isinstance(c, Call)}
    assert call_flops(calls["nn.conv2d"]) == CONV_FLOPS
    assert call_flops(calls["add"]) == call_flops(calls["nn.relu"]) == EWISE_FLOPS
    func = next(iter(built.fused_names))
    assert function_flops(func) == CONV_FLOPS + 2 * EWISE_FLOPS
    # unbound weights: x, w, b read once, the result written once
    assert function_bytes(func) == 4 * (3 * 8 * 8 + 4 * 3 * 3 * 3 + 4 + 4 * 8 * 8)
    dense = compile(TWO_KERNELS, "two.relay", stop_after="passes")
    products = 0
    for func in dense.fused_names:
        for c in post_order(func.body):
            if isinstance(c, Call) and c.op.name in ("nn.dense", "nn.contrib_dense_pack"):  # x86 packs it
                assert call_flops(c) == 2 * 8 * 16
                products += 1
            if isinstance(c, Call) and c.op.name == "reshape":
                assert call_flops(c) == 0
    assert products


def test_the_peak_says_how_it_was_derived(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu MHz\t\t: 2000.000\n")
    peak = machine_peak(1, cpuinfo=str(cpuinfo), measure=False)
    assert "2.00 GHz" in peak.derivation and "estimate" in peak.derivation
    per_cycle = peak.gflops / 2.0  # FMA units × lanes × 2
    assert per_cycle == round(per_cycle) and per_cycle >= 4
    cores = min(2, os.cpu_count() or 1)
    assert machine_peak(2, cpuinfo=str(cpuinfo), measure=False).gflops == pytest.approx(cores * peak.gflops)
    missing = machine_peak(1, cpuinfo=str(tmp_path / "none"), measure=False)
    assert "assumed" in missing.derivation


def test_the_clock_is_measured_on_x86():
    ghz = measured_ghz()
    if not llvm.get_process_triple().startswith("x86_64"):
        assert ghz is None
        return
    assert ghz is not None and 0.3 < ghz < 10  # a clock, not a number of iterations or nanoseconds
    assert "measured" in machine_peak(1).derivation
