"""The editor's Check Numerics command, in the worker: `relaylens run --check` on a document.

    report = numerics_report(uri, version, text, weights=path, progress=callback)

The same check as `relaylens run FILE --check --seed 0` (compiler/numerics/check.py), on the
same kind of build as the Profile command's (the weights `<stem>.npz` beside the model bound,
constants printed without their metadata filled from the seed, machine code): random inputs
drawn by role from the seed for the parameters left (compiler/random_inputs.py), compiled
code and the reference interpreter on the module as written compared output by output;
when they part, the kernels bisected to the first whose outputs differ on the same inputs;
when an output holds NaN or infinities the inputs did not, the expression that made the
first one, in compiled code and in the interpreter.  Generated code runs only here, on
the user's explicit command.

`NumericsReport` is plain data for the server (pickled): `findings` are diagnostics with
offsets in the text that was checked (the culprit kernel's Relay lines, one per run of
consecutive lines; the expression that made the first NaN), which the server publishes;
`to_json()` is the rest, for `relaylens/checkNumerics` (docs/lsp.md).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Callable

from ...compiler.diagnostics import Severity
from ...compiler.driver import Step, compile
from ...compiler.interpreter import InterpreterError
from ...compiler.ir.expr import Call, Function
from ...compiler.ir.functor import post_order
from ...compiler.ir.span import Source, Span
from ...compiler.numerics import NumericsCheck, check_numerics
from ...compiler.numerics.nonfinite import Origin
from ...compiler.random_data import RULE, find_roles
from ...compiler.random_inputs import InputError, draw_inputs
from ...compiler.unknown_values import fill_unknown_constants
from .report import NUMERICS_SEED, NUMERICS_STAGE, ReportDiagnostic
from .reporting import _diagnostic, _range
from .weights import read_weights

SEED, STAGE = NUMERICS_SEED, NUMERICS_STAGE


@dataclass(frozen=True)
class OutputCheck:
    label: str  # "output", "output.0", ...
    ok: bool
    text: str  # compare.py's line: max errors, the worst element and both values, the tolerance
    max_abs: float
    max_rel: float


@dataclass(frozen=True)
class Culprit:
    """The first kernel whose outputs differ from the reference's on the same inputs."""

    index: int  # its place among @main's kernel calls
    name: str  # its symbol
    display_name: str
    lines: str  # "8-10, 12" (1-based)
    layers: tuple[str, ...]
    text: str  # its worst output's comparison


@dataclass
class NumericsReport:
    uri: str
    version: int | None
    error: str | None = None  # why nothing was checked
    seed: int = SEED
    rule: str = RULE
    inputs: list[str] = field(default_factory=list)  # "%x: Tensor[(1, 4), float32]  role ..." each
    notes: list[str] = field(default_factory=list)
    ok: bool = False  # every output within its tolerance
    outputs: list[OutputCheck] = field(default_factory=list)
    culprit: Culprit | None = None
    summary: str = ""
    findings: list[ReportDiagnostic] = field(default_factory=list)  # offsets in the text checked

    def to_json(self) -> dict:
        data = asdict(self)
        del data["findings"]  # the server sends them as LSP diagnostics
        return data


def numerics_report(uri: str, version: int | None, text: str, *, weights: str | None, seed: int = SEED,
                    progress: Callable[[str, float], None] | None = None, disk_cache=None) -> NumericsReport:
    report = NumericsReport(uri, version, seed=seed)
    params, problem = read_weights(weights)
    if problem is not None:
        report.notes.append(f"{problem}; checked without them")

    def on_step(step: Step) -> None:
        if progress is not None:
            progress(str(step), 0.4 * (0.5 * (step.index / step.total + (step.stage == "llvm"))))

    built = compile(text, uri, params=params, params_origin=os.path.basename(weights or "params"),
                    unknown_seed=seed, progress=on_step, disk_cache=disk_cache)
    if built.executable is None:
        errors = [d.message for d in built.diagnostics if d.is_error]
        report.error = "the build failed: " + (errors[0] if errors else "no @main to run")
        return report
    module, _ = fill_unknown_constants(built.checked.module, seed)  # as written: the values the build drew
    free = [p for p in module["main"].params if p.name not in params]
    try:
        inputs, report.inputs = draw_inputs(free, seed, find_roles(module))
    except InputError as err:
        report.error = str(err)
        return report
    supplied = iter(inputs)
    everything = [params[p.name] if p.name in params else next(supplied) for p in module["main"].params]
    try:
        checked = check_numerics(module, everything, built, inputs,
                                 progress=None if progress is None else lambda s, f: progress(s, 0.4 + 0.6 * f))
    except (InterpreterError, MemoryError) as err:
        report.error = f"@main failed to run: {err}"
        return report
    _fill(report, checked, built, Source(uri, text))
    return report


def _fill(report: NumericsReport, checked: NumericsCheck, built, source: Source) -> None:
    report.ok = checked.ok
    report.outputs = [OutputCheck(label, c.ok, c.text(), c.max_abs, c.max_rel) for label, c in checked.outputs]
    name = source.name.rsplit("/", 1)[-1]
    worst = max((c for _, c in checked.outputs), key=lambda c: (not c.ok, c.max_abs), default=None)
    if checked.ok:
        parts = [f"compiled code and the reference interpreter agree on {len(checked.outputs)} output"
                 f"{'s' if len(checked.outputs) != 1 else ''}"
                 + (f" (max abs error {worst.max_abs:.3g}, max rel error {worst.max_rel:.3g})" if worst else "")]
    else:
        parts = [f"compiled code differs from the reference interpreter: {worst.text()}"]
    if checked.culprit is not None:
        bad = checked.culprit
        place = bad.place
        report.culprit = Culprit(bad.index, place.name, place.display, place.lines, place.layers, bad.text())
        message = (f"kernel #{bad.index} {place.name} (\"{place.display}\") is the first whose outputs differ "
                   f"from the reference interpreter's on the same inputs: {bad.text()}")
        func = next(f for f, kernel in built.fused_names.items() if kernel == place.name)
        runs = _line_runs(func, source) or [_range(func.span, source)]  # a kernel the passes made: its span
        report.findings += [ReportDiagnostic(message, int(Severity.WARNING), where, STAGE) for where in runs]
        parts.append(f"bisection: kernel #{bad.index} \"{place.display}\" (lines {place.lines or 'none'}) "
                     f"is the first that differs on the same inputs")
    elif not checked.ok:
        largest = max(checked.kernels, key=lambda c: c.max_rel, default=None)
        after = checked.after_passes
        parts.append(f"bisection: each of the {len(checked.kernels)} kernel calls matches the reference on its "
                     f"own inputs" + (f" (largest max rel error {largest.max_rel:.3g}, #{largest.index} "
                                      f"\"{largest.place.display}\")" if largest is not None else "")
                     + "; the difference is rounding accumulated across kernels, or the passes' rewriting"
                     + (f" (the module after the passes, interpreted: {after.text()})" if after is not None else ""))
    if checked.inputs_nonfinite:
        parts.append("the inputs or weights already hold NaN or infinite values")
    compiled, interpreted = checked.nonfinite, checked.nonfinite_interpreted
    if compiled is not None:
        report.findings.append(_origin_finding(compiled, "", source))
        parts.append(f"first non-finite value in the compiled code: {compiled.what()} from "
                     f"{compiled.text().replace(source.name, name)}")
    if interpreted is not None:
        if compiled is None or _first_range(interpreted, source) != _first_range(compiled, source):
            report.findings.append(_origin_finding(interpreted, "in the reference interpreter: ", source,
                                                   Severity.INFO if compiled is not None else Severity.WARNING))
        parts.append(f"in the interpreter: {interpreted.what()} from "
                     f"{interpreted.text().replace(source.name, name)}")
    report.summary = "; ".join(parts)


def _origin_finding(origin: Origin, prefix: str, source: Source, severity: Severity = Severity.WARNING):
    made = _diagnostic(origin.diagnostic(), STAGE, source)
    return ReportDiagnostic(prefix + made.message, int(severity), made.range, STAGE, made.notes)


def _first_range(origin: Origin, source: Source) -> tuple[int, int] | None:
    return _diagnostic(origin.diagnostic(), STAGE, source).range


def _line_runs(func: Function, source: Source) -> list[tuple[int, int]]:
    """The ranges of the calls a fused function computes, merged over consecutive lines:
    one [start, end) per run of lines ("8-10, 12" gives two)."""
    ranges = sorted({(o.start, o.end) for node in post_order(func.body) if isinstance(node, Call)
                     and node.span is not None for o in node.span.origins()
                     if isinstance(o, Span) and o.source.name == source.name})
    runs: list[list[int]] = []
    for start, end in ranges:
        first, last = source.location(start)[0], source.location(max(start, end - 1))[0]
        if runs and first <= runs[-1][2] + 1:
            runs[-1][1] = max(runs[-1][1], end)
            runs[-1][2] = max(runs[-1][2], last)
        else:
            runs.append([start, end, last])
    return [(start, end) for start, end, _ in runs]
