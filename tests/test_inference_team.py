"""The inference's team (codegen/team.py): at 2 threads the AOT entry opens one OpenMP
region for the whole call and its kernels' parallel loops run inside it; at 1 thread,
and for a kernel called on its own, every loop is a GOMP_parallel region as before.

The regions are counted, not timed: a child process puts a counting GOMP_parallel before
libgomp's (llvmlite's add_symbol, which the JIT's symbol look-ups search first)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import llvmlite.ir as ir

from relaylens.compiler.lower.codegen.team import TEAM_SLOT_GLOBAL, team_run
from relaylens.compiler.lower.runtime.aot import ENTRY

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(64, 256), float32], %w: Tensor[(256, 256), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.relu(%0);
  %2 = nn.dense(%1, %w);
  nn.softmax(%2)
}
"""

CHILD = textwrap.dedent("""
    import ctypes, json, sys
    import numpy as np
    import llvmlite.binding as llvm
    from relaylens.compiler.driver import compile
    from relaylens.compiler.interpreter import Interpreter
    from relaylens.compiler.lower.runtime import jit as jit_module

    threads = int(sys.argv[1])
    jit = jit_module.JIT(num_threads=threads)
    jit.target_machine  # libgomp loaded, GOMP_SPINCOUNT set
    real = ctypes.CDLL("libgomp.so.1").GOMP_parallel
    real.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    regions = []

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint)
    def counting(fn, data, team, flags):
        regions.append(team)
        real(fn, data, team, flags)

    llvm.add_symbol("GOMP_parallel", ctypes.cast(counting, ctypes.c_void_p).value)
    result = compile(sys.stdin.read(), "team.relay", jit=jit)
    exe = result.executable
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    w = rng.standard_normal((256, 256)).astype(np.float32) / 16
    h = np.maximum(x @ w.T, 0) @ w.T
    want = np.exp(h - h.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    counts = {}
    one_by_one = Interpreter(exe.module, kernels=exe.kernel_calls())
    for way, run in (("entry", lambda: exe.run(x, w)), ("kernels", lambda: one_by_one.call("main", [x, w]))):
        for _ in range(3):
            del regions[:]
            np.testing.assert_allclose(run(), want, rtol=1e-4, atol=1e-6)
            counts.setdefault(way, []).append(list(regions))
    counts["slot"] = list(jit_module._TEAM_SLOT)[:3]
    print(json.dumps(counts))
""")


def _regions(threads: int) -> dict:
    env = dict(os.environ, RELAYLENS_NO_CACHE="1")
    run = subprocess.run([sys.executable, "-c", CHILD, str(threads)], input=MODEL, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_two_threads_run_an_inference_in_one_region():
    """The entry's call is one region of 2 threads, however many parallel loops its
    kernels have (the same kernels called one by one open several, each of 2 threads),
    and it leaves the process-wide slot empty after it."""
    counts = _regions(2)
    assert all(regions == [2] for regions in counts["entry"]), counts
    assert all(len(regions) > 1 and set(regions) == {2} for regions in counts["kernels"]), counts
    assert counts["slot"] == [None, None, None]


def test_one_thread_calls_the_steps_directly():
    """At 1 thread the entry opens no team: each parallel loop is its own region of 1,
    as when the kernels are called one by one."""
    counts = _regions(1)
    assert counts["entry"] == counts["kernels"] and set(counts["entry"][0]) == {1}, counts


def test_the_entry_hands_its_steps_to_the_team():
    """The entry's text: `ENTRY` runs `ENTRY.steps` through `relaylens.team.run` when the
    number of threads is above 1, and the team's dispatch, worker and region are there."""
    from relaylens.compiler.lower.runtime.plan import Plan
    from relaylens.compiler.lower.runtime.aot import entry_module

    text = str(entry_module(Plan(inputs=[], outputs=[], constants=[], steps=[], workspace=0)))
    for name in ("relaylens.team.run", "relaylens.team.dispatch", "relaylens.team.worker",
                 "relaylens.team.region", f"{ENTRY}.steps", f"{ENTRY}.packed"):
        assert f'define internal void @"{name}"' in text, name
    assert f'@"{TEAM_SLOT_GLOBAL}"' in text and '"sched_yield"' in text and '"syscall"' in text
    module = ir.Module()
    assert team_run(module) is team_run(module)  # one team's functions per module


def test_inferences_from_several_threads_at_once():
    """Four Python threads run two executables at once (ctypes lets go of the GIL): one
    inference at a time holds the team, the others run region by region, and a kernel on
    another thread reads the slot's owner word, never the team's state in the owner's
    frame (gone once that inference returns).  Every output right, the slot empty after."""
    import threading

    import numpy as np

    from relaylens.compiler.driver import compile
    from relaylens.compiler.lower.runtime import jit as jit_module

    jit = jit_module.JIT(num_threads=2)
    relu = compile(MODEL, "relu.relay", jit=jit, disk_cache=None).executable
    sigmoid = compile(MODEL.replace("nn.relu", "sigmoid"), "sigmoid.relay", jit=jit, disk_cache=None).executable
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)

    def softmax_of(act):
        h = act(x @ w.T) @ w.T
        e = np.exp(h - h.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    cases = [(relu, softmax_of(lambda v: np.maximum(v, 0))), (sigmoid, softmax_of(lambda v: 1 / (1 + np.exp(-v))))]
    wrong: list[int] = []

    def run(k: int) -> None:
        exe, want = cases[k % 2]
        for _ in range(50):
            if not np.allclose(exe.run(x, w), want, rtol=1e-4, atol=1e-6):
                wrong.append(k)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong and list(jit_module._TEAM_SLOT)[:3] == [None, None, None]
