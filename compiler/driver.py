"""The one way to build anything: `compile(text, name, ...) -> BuildResult` (DESIGN.md, "One
build produces one BuildResult").  The CLI, the language server's build worker, `explain`
and the benchmarks all call it; none of them stitches the stages together itself.

    result = compile(text, "model.relay")                  # check, passes, lowering, machine code
    result = compile(text, uri, stop_after="llvm", cache=c)   # what the editor shows: no machine code
    result = compile(text, name, disk_cache=DiskCache.default())   # kernels kept on disk
    result.snapshots, result.fused_names                  # the module after every pass; kernel names
    result.provenance                                     # what each expression became (lazy)
    result.lowered, result.executable                     # LLVM IR, schedules; what runs
    result.diagnostics                                    # every stage's, in the order they ran
    compile(text, name, params={"w": array}, params_origin="model.npz")   # weights bound first

The stages, in order, and `stop_after`'s values:

    check          parse, names and types (check.py); then `params` bound as constants of
                   @main (transform/bind_params.py), as relay.build(mod, params) does
    passes         relay.build's pipeline (build.py), a snapshot after every pass
    llvm           each fused function lowered to optimised LLVM IR (lower/pipeline.py)
    machine_code   compiled by the JIT, with an executable for @main

A stage runs only when the ones before it had no errors.  A bug in a pass or in lowering
(an exception) is an internal-error diagnostic, and the result keeps what the stages
before it made (`strict=True` re-raises instead); an exception that is not an `Exception`
(a progress callback cancelling the build) goes through.  `progress(step)` hears of every
pass and every kernel as a `Step`, with its place in the stage ("lowering 37/104").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .build import BuildResult, build_module, relay_build_passes
from .check import check_text
from .diagnostics import Diagnostic, Severity
from .ir.span import Span
from .ir.types import TensorType
from .lower.disk_cache import DiskCache
from .lower.pipeline import LoweringCache, lower_build
from .passes_cache import PassesCache
from .transform.bind_params import bind_params_by_name
from .transform.specialize_inputs import specialize_inputs
from .typing.unknown_constants import unknown_constants
from .unknown_values import fill_unknown_constants

STAGES = ("check", "passes", "llvm", "machine_code")


@dataclass(frozen=True)
class Step:
    """A pass about to start, or a fused function lowered: lowering reports index 0 (no
    name) as it begins, then each kernel as it is done (several are lowered at once)."""

    stage: str  # "passes" or "llvm"
    name: str  # the pass's name, or the fused function's
    index: int  # 1-based, within the stage (lowering: kernels done)
    total: int  # the stage's length as known when it started (passes: the pipeline's)

    def __str__(self) -> str:
        if self.stage == "passes":
            return f"pass {self.name}"
        return f"lowering {self.index}/{self.total}" + (f" {self.name}" if self.name else "")


Progress = Callable[[Step], None]


def compile(text: str, name: str = "<input>", *, params: Mapping[str, np.ndarray] | None = None,
            params_origin: str = "params", passes: list[str] | None = None, opt_level: int = 3,
            config: dict[str, Any] | None = None, stop_after: str = "machine_code",
            cache: LoweringCache | None = None, jit=None, progress: Progress | None = None,
            strict: bool = False, unknown_seed: int | None = None,
            disk_cache: DiskCache | None = None, schedule_texts: bool = False,
            input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> BuildResult:
    """Build `text` (named `name` in diagnostics and spans) up to the stage `stop_after`.

    `params` are weights by parameter name (`params_origin`, the file they came from, names
    them in errors); `passes` replaces relay.build's pipeline by passes named as TVM names them; `config`
    is the PassContext's (`--config KEY=JSON`); `cache` keeps lowered kernels between
    builds (the editor's rebuild after an edit re-lowers only what changed); `disk_cache`
    keeps them on disk for every process (lower/disk_cache.py: the CLI's and the editor's
    builds pass `DiskCache.default()`, tests a temporary directory), and with them what the
    check and passes made of a text built to machine code, which a build of the same text,
    weights and options reads instead of running them (passes_cache.py); `strict`
    re-raises a failing pass instead of reporting it (for tests).  `unknown_seed` gives the
    constants of unknown value (text printed without its metadata) values drawn from it
    (unknown_values.py) before the passes, so that such a model lowers and runs.
    `schedule_texts`: every kernel's schedule text will be read (lower_build's).
    `input_shapes`: the extents, by parameter name, that @main's inputs with `?` dimensions
    take after the weights are bound (transform/specialize_inputs.py: the shapes of the
    arrays a run is given).
    """
    if stop_after not in STAGES:
        raise ValueError(f"stop_after={stop_after!r}: expected one of {', '.join(STAGES)}")
    kept = PassesCache(disk_cache) if disk_cache is not None and stop_after != "check" else None
    key = kept.key(text, name, params, {"params_origin": params_origin, "passes": passes, "opt_level": opt_level,
                                        "config": config, "unknown_seed": unknown_seed,
                                        "input_shapes": _shapes_key(input_shapes)}) if kept else None
    built = kept.get(key, params) if kept else None
    keep = None
    if built is None:
        built = _check_and_passes(text, name, params, params_origin, passes, opt_level, config, stop_after,
                                  progress, strict, unknown_seed, input_shapes)
        if kept and stop_after == "machine_code":
            keep = kept.later(key, built, params)  # what the passes made, kept once the kernels are lowered
    built = _lower(built, stop_after, cache, jit, progress, strict, disk_cache, opt_level, config, schedule_texts)
    if keep is not None:
        keep()
    return built


def _lower(built: BuildResult, stop_after: str, cache, jit, progress: Progress | None, strict: bool,
           disk_cache: DiskCache | None, opt_level: int, config, schedule_texts: bool) -> BuildResult:
    """The stages llvm and machine code, when the passes made a module without errors.  A
    module with constants of unknown value *and* type (text printed without its metadata,
    where a constant's use does not fix its type) is not lowered: every kernel needs its
    types, and each kernel they flow into would fail on its own (GPT-2: 400 errors for a
    text the check finds clean); one warning at the first such constant says why."""
    if not built.ok or not built.snapshots or stop_after in ("check", "passes"):
        return built
    untyped = sorted((c for c in unknown_constants(built.module) if not (isinstance(c.ty, TensorType) and c.ty.is_static)),
                     key=lambda c: c.span.start if isinstance(c.span, Span) else 1 << 62)  # the first in the text
    if untyped:
        n = len(untyped)
        built.diagnostics.append(Diagnostic(
            f"not compiled: {n} constant{'s' * (n != 1)} {'have' if n != 1 else 'has'} neither a value nor a known type "
            f"(a metadata section that is not here), and every kernel needs its types; the passes ran. Write "
            f"{'their types' if n != 1 else 'its type'} in /* ty=... */ comments, or give the metadata, to compile",
            untyped[0].span, Severity.WARNING, source="lower"))
        return built
    try:
        built.lowered = lower_build(built, cache=cache, jit=jit, machine_code=stop_after == "machine_code",
                                    progress=_kernel_steps(progress, built), disk=disk_cache,
                                    options={"opt_level": opt_level, "config": config or {}},
                                    schedule_texts=schedule_texts)
    except Exception as err:  # a bug in lowering: say so, keep what the passes made
        if strict:
            raise
        built.diagnostics.append(Diagnostic(f"internal error in lowering: {type(err).__name__}: {err}",
                                            None, Severity.ERROR, source="lower"))
        return built
    built.stage = stop_after
    built.diagnostics.extend(built.lowered.diagnostics)
    return built


def _check_and_passes(text: str, name: str, params, params_origin: str, passes, opt_level: int, config,
                      stop_after: str, progress: Progress | None, strict: bool, unknown_seed: int | None,
                      input_shapes=None) -> BuildResult:
    """The stages check and passes: what `PassesCache` keeps."""
    checked = check_text(text, name)
    result = BuildResult(name, checked, stage="check")
    result.diagnostics = list(checked.diagnostics)
    if any(d.is_error for d in checked.diagnostics):
        return result
    module, errors = bind_params_by_name(checked.module, params or {}, origin=params_origin)
    filled: list[Diagnostic] = []
    if not errors and unknown_seed is not None:
        module, filled = fill_unknown_constants(module, unknown_seed)
        errors = [d for d in filled if d.is_error]
    if not errors and input_shapes:
        module, errors = specialize_inputs(module, input_shapes)
    result.diagnostics += errors or filled
    if errors or stop_after == "check":
        return result
    steps = _pass_steps(progress, passes or relay_build_passes(opt_level))
    built = build_module(module, name=name, checked=checked, passes=passes, opt_level=opt_level,
                         config=config, strict=strict, progress=steps)
    built.diagnostics[:0] = [*checked.diagnostics, *filled]  # the check's warnings come first
    return built


def _shapes_key(shapes: Mapping[str, tuple[int, ...]] | None) -> dict | None:
    return {k: [int(d) for d in v] for k, v in sorted(shapes.items())} if shapes else None


def _pass_steps(progress: Progress | None, passes: list[str]):
    if progress is None:
        return None
    pipeline = list(passes)
    done = [0]

    def on_pass(pass_name: str) -> None:  # passes run InferType inside too: not a step of their own
        if done[0] < len(pipeline) and pipeline[done[0]] == pass_name:
            done[0] += 1
        progress(Step("passes", pass_name, max(done[0], 1), len(pipeline)))

    return on_pass


def _kernel_steps(progress: Progress | None, built: BuildResult):
    if progress is None:
        return None
    total = len(set(built.fused_names.values()))
    count = [0]
    progress(Step("llvm", "", 0, total))

    def on_kernel(kernel: str) -> None:
        count[0] += 1
        progress(Step("llvm", kernel, count[0], total))

    return on_kernel
