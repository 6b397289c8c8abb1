"""The editor's Profile command, in the worker: build to machine code, run, time every kernel.

    report = profile_report(uri, version, text, runs=10, weights=path, onnx=None, progress=callback)

The same profiler as `relaylens profile` (compiler/profile/), on the same kind of build
(the weights `<stem>.npz` beside the model bound, constants printed without their
metadata filled from seed 0), run on random inputs drawn from seed 0 for the parameters
left (compiler/random_inputs.py): the editor has no input files.  Generated code runs only
here, on the user's explicit command.  The build does not use the editor's lowering cache
(its kernels stop at LLVM IR and have no machine code).

`progress(step, fraction)` is called during the build, before the runs and at most every
`PROGRESS_SECONDS` between runs (ours and onnxruntime's): whatever it raises (the worker's
`Cancelled`) stops the job there, so a cancel never waits for the remaining runs.

With `onnx` (the ONNX model `<stem>.onnx` beside the document), onnxruntime's profiler runs
it on the same inputs afterwards (compiler/profile/compare.py): the report's `compare`
holds its totals and per-layer times, and each kernel's `ort_ms` onnxruntime's time for
the layers compiled into it.  A model onnxruntime cannot load or run is a note, not an
error: our figures stand without it.

`ProfileReport` is plain data for the server (pickled), with offsets and lines in the
text that was profiled; `relaylens/profile` (docs/lsp.md) returns it as JSON.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

from ...compiler.driver import Step, compile
from ...compiler.interpreter import InterpreterError
from ...compiler.ir.functor import post_order
from ...compiler.lower.runtime.jit import JIT, default_num_threads
from ...compiler.profile.compare import CompareError, named_inputs, onnxruntime_profile, theirs_per_kernel
from ...compiler.profile.peak import machine_peak
from ...compiler.profile.profiler import Profile, profile
from ...compiler.random_data import find_roles
from ...compiler.random_inputs import InputError, draw_inputs
from .reporting import CONTAINED
from .weights import read_weights

SEED = 0
PROGRESS_SECONDS = 0.25


@dataclass(frozen=True)
class FunctionFigures:
    """One compiled kernel (all its call sites)."""

    name: str  # the kernel's symbol
    display_name: str
    calls: float  # per run
    ms: float  # median per run
    min_ms: float
    max_ms: float
    percent: float  # of the run
    gflops: float
    percent_of_peak: float
    mbytes: float
    gbytes_per_s: float
    anchors: list[int]  # 0-based lines of its call sites' first source expression (where hints go)
    lines: dict[int, float]  # 0-based line -> ms (shared by FLOPs)
    layers: dict[str, float]  # ONNX layer -> ms
    ort_ms: float | None = None  # onnxruntime's time for its layers (with `compare` only)


@dataclass
class ProfileReport:
    uri: str
    version: int | None
    error: str | None = None  # why nothing was profiled
    mode: str = ""  # "aot" or "interpreter"
    runs: int = 0
    threads: int = 0
    run_ms: float = 0.0  # median end-to-end
    kernels_ms: float = 0.0
    peak: str = ""  # how the peak was estimated
    attribution: str = "a kernel's time shared among its lines and layers by their FLOPs"
    notes: list[str] = field(default_factory=list)
    functions: list[FunctionFigures] = field(default_factory=list)  # slowest first
    lines: dict[int, float] = field(default_factory=dict)  # 0-based line -> ms
    layers: dict[str, float] = field(default_factory=dict)
    # onnxruntime beside: {"model", "version", "run_ms" (optimisations off, profiling),
    # "optimized_run_ms" (ORT_ENABLE_ALL), "ratio" (our run_ms / optimized_run_ms), "layers"}
    compare: dict | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        data["lines"] = {str(k): v for k, v in self.lines.items()}  # JSON keys are strings
        for f in data["functions"]:
            f["lines"] = {str(k): v for k, v in f["lines"].items()}
        return data


def profile_report(uri: str, version: int | None, text: str, *, runs: int, weights: str | None,
                   onnx: str | None = None, progress: Callable[[str, float], None] | None = None,
                   disk_cache=None) -> ProfileReport:
    report = ProfileReport(uri, version)
    params, problem = read_weights(weights)
    if problem is not None:
        report.notes.append(f"{problem}; profiled without them")

    def on_step(step: Step) -> None:
        if progress is not None:
            progress(str(step), 0.8 * (0.5 * (step.index / step.total + (step.stage == "llvm"))))

    threads = default_num_threads()
    built = compile(text, uri, params=params, params_origin=os.path.basename(weights or "params"),
                    unknown_seed=SEED, jit=JIT(threads), progress=on_step, disk_cache=disk_cache)
    exe = built.executable
    if exe is None:
        errors = [d.message for d in built.diagnostics if d.is_error]
        report.error = "the build failed: " + (errors[0] if errors else "no @main to run")
        return report
    main = built.module["main"]
    try:
        inputs, _ = draw_inputs(main.params, SEED, find_roles(built.module))
    except InputError as err:
        report.error = str(err)
        return report
    say = _throttled(progress)

    def before_run(run: int) -> None:
        say(f"run {run + 1} of {runs}" if run >= 0 else "warm-up run",
            0.8 + (0.1 if onnx else 0.2) * max(run, 0) / runs)

    try:
        prof = profile(built, inputs, runs=runs, peak=machine_peak(threads), threads=threads,
                       before_run=before_run)
    except (InterpreterError, MemoryError) as err:
        report.error = f"@main failed to run: {err}"
        return report
    _fill(report, prof, built)
    if onnx is not None:
        say = _throttled(progress)
        total = 2 * (runs + 1)

        def before_ort_run(k: int) -> None:
            say(f"onnxruntime: {os.path.basename(onnx)}, run {k + 1} of {total}", 0.9 + 0.1 * k / total)

        _compare(report, prof, onnx, named_inputs(built, inputs), runs, threads, before_ort_run)
    return report


def _throttled(progress: Callable[[str, float], None] | None) -> Callable[[str, float], None]:
    """`progress`, called the first time and then at most every PROGRESS_SECONDS."""
    said = [float("-inf")]

    def say(step: str, fraction: float) -> None:
        now = time.monotonic()
        if progress is not None and now - said[0] >= PROGRESS_SECONDS:
            said[0] = now
            progress(step, fraction)

    return say


def _compare(report: ProfileReport, prof: Profile, onnx: str, inputs: dict, runs: int, threads: int,
             before_run: Callable[[int], None]) -> None:
    try:
        theirs = onnxruntime_profile(onnx, inputs, runs=runs, threads=threads, before_run=before_run)
    except CompareError as err:
        report.notes.append(f"not compared with onnxruntime: {err}")
        return
    per_kernel = theirs_per_kernel(prof, theirs)
    report.functions = [replace(f, ort_ms=None if (ns := per_kernel.get(f.name)) is None else ns / 1e6)
                        for f in report.functions]
    optimized = theirs.optimized_run_ns / 1e6
    report.compare = {"model": os.path.basename(onnx), "version": theirs.version,
                      "run_ms": theirs.run_ns / 1e6, "optimized_run_ms": optimized,
                      "ratio": report.run_ms / optimized if optimized else None,
                      "layers": {layer: ns / 1e6 for layer, ns in theirs.nodes.items()}}


def _fill(report: ProfileReport, prof: Profile, built) -> None:
    run = prof.run_ns or 1.0
    report.mode, report.runs, report.threads = prof.mode, prof.runs, prof.threads
    report.run_ms, report.kernels_ms = prof.run_ns / 1e6, prof.kernel_ns / 1e6
    report.peak = prof.peak.derivation
    report.notes += prof.notes
    prov = built.provenance
    text = prov.source.text if prov.source is not None else ""
    for row in prof.rows:
        anchors = {text.count("\n", 0, min(keys)[0]) for site in row.sites if (keys := _keys(site.func, prov))}
        report.functions.append(FunctionFigures(
            row.kernel, row.display_name, row.calls, row.ns / 1e6, row.low / 1e6, row.high / 1e6,
            100 * row.ns / run, row.gflops, 100 * row.gflops / prof.peak.gflops if prof.peak.gflops else 0.0,
            row.bytes / 1e6, row.gbytes, sorted(anchors),
            {line - 1: ns / 1e6 for line, ns in row.lines.items() if line is not None},
            {layer: ns / 1e6 for layer, ns in row.layers.items() if layer is not None}))
    report.lines = {line - 1: ns / 1e6 for line, ns in prof.lines.items() if line is not None}
    report.layers = {layer: ns / 1e6 for layer, ns in prof.layers.items() if layer is not None}


def _keys(func, prov) -> list[tuple[int, int]]:
    """The source ranges of what a fused function computes (as its lenses: reporting.py)."""
    return [k for node in post_order(func.body) if isinstance(node, CONTAINED) for k in prov.keys_of(node)]
