"""Run a built model N times with every kernel call timed, and sum it up per kernel,
per Relay line and per ONNX layer.

    built = compile(text, name, params=weights, jit=JIT(threads))
    prof = profile(built, inputs, runs=10)
    prof.rows            # KernelRow per compiled kernel, slowest first
    prof.lines           # {line: ns}, prof.layers  {layer: ns}
    prof.events          # every timed call of every run (the Chrome trace's slices)

The times come from inside the compiled code (lower/runtime/timing.py): the AOT entry
reads the clock around every kernel call, so no Python runs between kernels.  One run
before the N is a warm-up (page faults, first touch of the workspace) and is not counted.

A call site is a place where a kernel is called: a step of the plan (AOT), or a fused
function of @main (interpreter mode, where control flow may call it any number of times).
Its time is the median over the runs of its time in each run; a kernel's time is the sum
of its call sites' (so the lines and layers attributed from them sum to it exactly), and
its spread the least and the most it took in one run.  End-to-end is measured per run
around the call of the entry from Python (argument checks, output allocation and ctypes
included), and inside it from the first kernel's start to the last one's end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..ir.expr import Function
from ..lower.runtime.timing import TimedEntry, timed_interpret
from .attribution import Shares, attribute
from .cost import function_bytes, function_flops
from .peak import Peak


@dataclass
class CallSite:
    kernel: str
    func: Function
    display_name: str
    flops: int  # per call
    bytes: int  # per call
    shares: Shares
    times: list[int] = field(default_factory=list)  # ns, per run (summed over its calls that run)
    calls: list[int] = field(default_factory=list)  # calls, per run

    @property
    def ns(self) -> float:
        return float(np.median(self.times)) if self.times else 0.0


@dataclass
class KernelRow:
    kernel: str  # the symbol
    display_name: str
    sites: list[CallSite]
    ns: float  # sum of its sites' medians
    low: float  # the least and the most it took in one run
    high: float
    calls: float  # per run
    flops: int  # per run
    bytes: int  # per run
    lines: dict[int | None, float]  # ns
    layers: dict[str | None, float]  # ns
    weighted_by: str

    @property
    def gflops(self) -> float:
        return self.flops / self.ns if self.ns else 0.0  # FLOP per ns = GFLOP/s

    @property
    def gbytes(self) -> float:
        return self.bytes / self.ns if self.ns else 0.0


@dataclass
class Profile:
    name: str  # the source
    mode: str  # "aot" or "interpreter"
    runs: int
    threads: int
    rows: list[KernelRow]
    end_to_end: list[int]  # ns per run, around the entry's call from Python
    in_entry: list[int]  # ns per run, first kernel start to last kernel end
    events: list[tuple[int, CallSite, int, int]]  # (run, site, start ns, end ns)
    peak: Peak
    notes: list[str] = field(default_factory=list)
    lines: dict[int | None, float] = field(default_factory=dict)
    layers: dict[str | None, float] = field(default_factory=dict)

    @property
    def kernel_ns(self) -> float:
        """The kernels' time: the sum of every call site's median."""
        return sum(r.ns for r in self.rows)

    def covered(self, of: str = "entry") -> float:
        """The median over the runs of (the kernels' time in the run) / (the run's time
        `of` "entry": first kernel start to last kernel end, or "call": the entry's call
        from Python).  Per run, so that a run slowed down everywhere (another process on
        the CPU) compares with itself; the sum of medians does not."""
        spans = self.in_entry if of == "entry" else self.end_to_end
        sums = [0] * len(spans)
        for run, _, start, end in self.events:
            sums[run] += end - start
        ratios = [k / s for k, s in zip(sums, spans) if s]
        return float(np.median(ratios)) if ratios else 0.0

    @property
    def run_ns(self) -> float:
        return float(np.median(self.end_to_end)) if self.end_to_end else 0.0

    @property
    def entry_ns(self) -> float:
        return float(np.median(self.in_entry)) if self.in_entry else 0.0


def profile(built, inputs: list[Any], *, runs: int, peak: Peak, threads: int,
            before_run: Callable[[int], None] | None = None) -> Profile:
    """Profile a build that went to machine code (`built.executable` not None) on `inputs`,
    the arguments of its compiled @main.  `before_run(k)` is called before each run (k = -1
    for the warm-up); whatever it raises stops the profile there (the editor's cancel)."""
    exe = built.executable
    prov = built.provenance
    sites: dict[Any, CallSite] = {}

    def site(key, kernel: str, func: Function) -> CallSite:
        if key not in sites:
            sites[key] = CallSite(kernel, func, prov.display_name(func), function_flops(func),
                                  function_bytes(func), attribute(func, prov))
        return sites[key]

    events: list[tuple[int, CallSite, int, int]] = []
    end_to_end: list[int] = []
    in_entry: list[int] = []
    notes: list[str] = []
    if exe.plan is not None:
        timed = TimedEntry(exe, built.lowered.jit)
        steps = [site(k, s.kernel, s.func) for k, s in enumerate(exe.plan.steps)]
        for run in range(-1, runs):  # run -1: the warm-up
            if before_run is not None:
                before_run(run)
            started = time.monotonic_ns()
            _, times = timed.run(*inputs)
            ended = time.monotonic_ns()
            if run < 0:
                continue
            end_to_end.append(ended - started)
            in_entry.append(int(times[-1, 1] - times[0, 0]) if len(times) else 0)
            for s, (start, end) in zip(steps, times.tolist()):
                s.times.append(end - start)
                s.calls.append(1)
                events.append((run, s, start, end))
        mode = "aot"
    else:
        notes.append(f"@main runs in the interpreter with compiled kernels ({exe.why_interpreted}): each kernel "
                     "is timed around its native call from Python (about 1 µs of ctypes call included), and "
                     "the time between kernels is the interpreter's")
        for run in range(-1, runs):
            if before_run is not None:
                before_run(run)
            started = time.monotonic_ns()
            _, calls = timed_interpret(exe, *inputs)
            ended = time.monotonic_ns()
            if run < 0:
                continue
            end_to_end.append(ended - started)
            in_entry.append(calls[-1].end - calls[0].start if calls else 0)
            seen: dict[int, CallSite] = {}
            for c in calls:
                s = site(id(c.func), c.kernel, c.func)
                if id(c.func) not in seen:
                    seen[id(c.func)] = s
                    s.times.extend([0] * (run - len(s.times)))  # first called in this run
                    s.calls.extend([0] * (run - len(s.calls)))
                    s.times.append(0)
                    s.calls.append(0)
                s.times[-1] += c.end - c.start
                s.calls[-1] += 1
                events.append((run, s, c.start, c.end))
            for s in sites.values():  # not called in this run
                if id(s.func) not in seen:
                    s.times.append(0)
                    s.calls.append(0)
        mode = "interpreter"
    result = Profile(built.name, mode, runs, threads, _rows(sites.values(), runs), end_to_end, in_entry,
                     events, peak, notes)
    for row in result.rows:
        for line, ns in row.lines.items():
            result.lines[line] = result.lines.get(line, 0.0) + ns
        for layer, ns in row.layers.items():
            result.layers[layer] = result.layers.get(layer, 0.0) + ns
    return result


def _rows(sites, runs: int) -> list[KernelRow]:
    by_kernel: dict[str, list[CallSite]] = {}
    for s in sites:
        by_kernel.setdefault(s.kernel, []).append(s)
    rows = []
    for kernel, group in by_kernel.items():
        per_run = [sum(s.times[r] for s in group) for r in range(runs)]
        calls = [sum(s.calls[r] for s in group) for r in range(runs)]
        lines: dict[int | None, float] = {}
        layers: dict[str | None, float] = {}
        flops = bytes_ = 0.0
        for s in group:
            per_call = float(np.median(s.calls)) if s.calls else 0.0
            flops += s.flops * per_call
            bytes_ += s.bytes * per_call
            for line, f in s.shares.lines.items():
                lines[line] = lines.get(line, 0.0) + f * s.ns
            for layer, f in s.shares.layers.items():
                layers[layer] = layers.get(layer, 0.0) + f * s.ns
        rows.append(KernelRow(kernel, group[0].display_name, group, sum(s.ns for s in group),
                              float(min(per_run)) if per_run else 0.0, float(max(per_run)) if per_run else 0.0,
                              float(np.median(calls)) if calls else 0.0, int(flops), int(bytes_), lines, layers,
                              group[0].shares.weighted_by))
    return sorted(rows, key=lambda r: -r.ns)
