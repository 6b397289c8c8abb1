"""One build, from text to `BuildReport` (runs in the worker process).

    report = build_report(uri, version, text, cache=cache, progress=callback)

Builds with the driver up to optimised LLVM IR (`compile(..., stop_after="llvm")`: the
passes, then schedules, LLVM IR and O3 for every fused function, no machine code: the
editor shows code, never runs it), then reads the provenance index and the LLVM texts into
plain data.  `progress(message, fraction)` is called before every pass and every fused
function ("lowering 37/104 tvmgen_..."); it may raise to stop the build (cancellation).

Diagnostics of the check that precedes the passes are left out: the server's fast path
already publishes them.  A bug in a pass or in lowering is one diagnostic from the driver,
and the report keeps what was made before it; anything else that raises reaches the
worker, which reports it the same way (`internal_error`).
"""

from __future__ import annotations

import os
import re
import time
from typing import Callable

from ...compiler.build import BuildResult, relay_build_passes
from ...compiler.diagnostics import Diagnostic, Severity
from ...compiler.driver import Step, compile
from ...compiler.ir.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ...compiler.ir.functor import post_order
from ...compiler.ir.span import LayerSpan, Source, Span, node_layers
from ...compiler.lower.codegen.llvm_map import function_ranges, line_locations
from ...compiler.provenance import Provenance, layouts_moved, moves_only, preparation
from ...compiler.transform.patterns.options import BYOC_PASSES
from .byoc_report import ByocRequest, byoc_report
from .node_table import NodeTable
from .report import BuildReport, Change, ExprReport, FusedReport, ParameterReport, ReportDiagnostic, Snapshot
from .weights import read_weights

Progress = Callable[[str, float], None]
CONTAINED = (Call, Tuple, TupleGetItem, Constant)  # what a fused function "contains"
SNIPPETS = 4  # printed appearances kept per change


class Cancelled(BaseException):
    """Raised by a progress callback to stop the build.  A BaseException, so that the pass
    driver's "a failing pass is a diagnostic" handler lets it through."""


def build_report(uri: str, version: int | None, text: str, *, cache=None,
                 progress: Progress | None = None, weights: str | None = None,
                 disk_cache=None, keep: Callable[[BuildResult], None] | None = None,
                 byoc: ByocRequest | None = None) -> BuildReport:
    """`weights`: the path of an .npz whose arrays are bound as @main's parameters first
    (`<stem>.npz` beside the model); one that cannot be read is a warning, and the build
    goes on without it.  `disk_cache`: the persistent kernel cache (lower/disk_cache.py).
    `keep(result)` is given the driver's result (the worker keeps its snapshots for graph
    requests).  `byoc`: the BYOC options (byoc_setup.py): with a config the build partitions
    first (BYOC_PASSES, then relay.build's passes) and the report says where each call went;
    its problems are the report's errors."""
    started = time.monotonic()
    report = BuildReport(uri, version, text)
    origin = os.path.basename(weights) if weights is not None else "params"
    params, problem = read_weights(weights)
    if problem is not None:
        report.diagnostics.append(ReportDiagnostic(f"{problem}; built without them", int(Severity.WARNING),
                                                   None, "build"))
    elif weights is not None:
        report.weights = origin

    def on_step(step: Step) -> None:  # the passes fill the first half of the bar, kernels the rest
        if progress is not None:
            progress(str(step), 0.5 * (step.index / step.total + (step.stage == "llvm")))

    config = byoc.config if byoc is not None else None
    for where, message in byoc.problems if byoc is not None else ():
        report.diagnostics.append(ReportDiagnostic(message, int(Severity.ERROR), where, "byoc"))
    passes = [*BYOC_PASSES, *relay_build_passes(3)] if config is not None else None
    result = compile(text, uri, params=params, params_origin=origin, stop_after="llvm", cache=cache,
                     progress=on_step, disk_cache=disk_cache, passes=passes, config=config)  # shown, never run
    if keep is not None:
        keep(result)
    source = result.checked.parsed.source if result.checked is not None else None
    report.diagnostics += _new_diagnostics(result, source)
    if not result.snapshots:
        return _finish(report, started)
    if params and "main" in result.snapshots[0].module:  # the input snapshot: after binding
        left = {p.name for p in result.snapshots[0].module["main"].params}
        report.bound = tuple(name for name in params if name not in left)
    prov = result.provenance
    report.snapshots = _snapshots(prov)
    report.exprs = _exprs(prov)
    report.parameters = _parameters(prov)
    if config is not None:
        report.byoc = byoc_report(result, config)
    lowered = result.lowered
    if lowered is not None:
        report.llvm_ir, report.optimized_ir = lowered.texts()  # (in one child: pipeline.py)
        report.llvm_lines = line_locations(report.llvm_ir)
        report.optimized_line_map = line_locations(report.optimized_ir)
    report.functions = _functions(result, prov, lowered, report)
    return _finish(report, started)


def snapshots_again(uri: str, text: str, *, weights: str | None = None, byoc: ByocRequest | None = None) -> list:
    """The driver's snapshots of `text` built as `build_report` builds it, the passes only
    (no lowering): what a worker that did not make a report needs to draw its graphs."""
    params, _ = read_weights(weights)
    origin = os.path.basename(weights) if weights is not None else "params"
    config = byoc.config if byoc is not None else None
    passes = [*BYOC_PASSES, *relay_build_passes(3)] if config is not None else None
    return compile(text, uri, params=params, params_origin=origin, stop_after="passes",
                   passes=passes, config=config).snapshots


def _finish(report: BuildReport, started: float) -> BuildReport:
    report.seconds = time.monotonic() - started
    return report


def _snapshots(prov: Provenance) -> list[Snapshot]:
    out: list[Snapshot] = []
    printed: dict[int, tuple[str, tuple]] = {}  # by module identity: unchanged passes share
    for stage in prov.stages:
        if id(stage.module) not in printed:
            text, locations = stage.printed()
            nodes = []
            for node, (start, end) in locations.items():
                keys = prov.keys_of(node)
                if keys:
                    nodes.append((start, end, tuple(keys)))
            nodes.sort(key=lambda n: (n[0], -n[1]))
            printed[id(stage.module)] = (text, NodeTable(nodes))  # compact: node_table.py
        text, nodes = printed[id(stage.module)]
        out.append(Snapshot(stage.index, stage.pass_name, stage.changed, text, nodes))
    return out


def _exprs(prov: Provenance) -> list[ExprReport]:
    """Every traced source expression (parameters left out: they are not "what became of"),
    with what each pass that changed it made of it."""
    out = []
    for key in sorted(prov.stages[0].by_key, key=lambda k: (k[0], -k[1])):
        if isinstance(prov.source_node(key), Var):
            continue
        changes = []
        for stage, nodes in prov.changes(key):
            became = tuple(stage.snippet(n) for n in prov.ordered(key, nodes)[:SNIPPETS])
            earlier = prov.stages[stage.index - 1]
            before = prov.ordered(key, earlier.by_key.get(key, []))
            changes.append(Change(stage.index, stage.pass_name, became,
                                  earlier.snippet(before[0])[1] if before else ""))
        fused = prov.fused_function(key)
        out.append(ExprReport(key, tuple(prov.layers(key)), tuple(changes),
                              fused[0] if fused is not None else None, prov.fusion_reason(key)))
    return out


def _parameters(prov: Provenance) -> dict[str, ParameterReport]:
    """@main's parameters (those left unbound) and the kernels that read each."""
    out = {}
    for key, nodes in prov.stages[0].by_key.items():
        if isinstance(nodes[0], Var) and prov.parameter(key) == "@main":
            out[nodes[0].name] = ParameterReport(nodes[0].name, tuple(
                (name, tuple((v, preparation(f)) for v, f in via)) for name, _, via in prov.readers(key)))
    return out


def _functions(result: BuildResult, prov: Provenance, lowered, report: BuildReport) -> list[FusedReport]:
    """One entry per fused function of the final module, in source order.  Structurally
    identical functions share a name and a kernel (its schedule and LLVM IR), but each
    has its own source expressions and so its own entry (its own lenses)."""
    ranges = function_ranges(report.llvm_ir) if report.llvm_ir else {}
    opt_ranges = function_ranges(report.optimized_ir) if report.optimized_ir else {}
    made_at = _made_at(prov)
    located = prov.stages[made_at].printed()[1] if prov.stages else {}
    changed_by: dict = {}
    for e in report.exprs:
        for c in e.changes:
            changed_by.setdefault(e.range, set()).add(c.index)
    # a weight bound inside a kernel (an external function's Constants=) carries its
    # parameter's span, on @main's line: not an expression the kernel computes
    checked = result.checked.module if result.checked is not None else None
    main = checked["main"] if checked is not None and "main" in checked else None
    parameters = {k for p in main.params for k in prov.keys_of(p)} if main is not None else set()
    out = []
    for func, name in result.fused_names.items():
        members = [node for node in post_order(func.body) if isinstance(node, CONTAINED)]
        # the expressions it computes: a layout_transform that only moves a value in carries
        # the span of that value, perhaps far above (a U-Net's skip connection), and is not
        # one of them unless the function does nothing else
        keys = sorted({k for node in members if not moves_only(node) for k in prov.keys_of(node) if k not in parameters}) \
            or sorted({k for node in members for k in prov.keys_of(node) if k not in parameters})
        # the lens goes to the function when the source wrote it (a file already fused)
        written = [k for k in prov.keys_of(func) if isinstance(prov.source_node(k), Function)]
        anchors = written or keys or prov.keys_of(func)
        if not anchors:
            continue
        fn = lowered.functions.get(name) if lowered is not None else None
        passes = set().union(*(changed_by.get(k, set()) for k in keys))
        out.append(FusedReport(
            name=name,
            display_name=prov.display_name(func),
            anchor=min(anchors),
            ranges=tuple(keys),
            layers=_layers(func),
            schedule_steps=fn.schedule_steps if fn is not None else 0,
            llvm_ir=fn.llvm_ir if fn is not None else "",
            optimized_ir=fn.optimized_ir if fn is not None else "",
            module_lines=_lines_of(name, ranges),
            optimized_lines=_lines_of(name, opt_ranges),
            snapshot=made_at,
            printed=located.get(func),
            passes=len(passes),
            moves=prov.moved_value(func) or "",
            layouts=layouts_moved(func) if prov.moved_value(func) is not None else "",
        ))
    return sorted(out, key=lambda f: (f.anchor, bool(f.layouts)))  # an expression's own kernel before its movers


def _made_at(prov: Provenance) -> int:
    """The index of the snapshot where the final module first appeared (FuseOps's)."""
    i = len(prov.stages) - 1
    while i > 0 and prov.stages[i - 1].module is prov.stages[i].module:
        i -= 1
    return max(i, 0)


def _lines_of(name: str, ranges: dict[str, tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """The line ranges of a kernel and the bodies outlined from it (`name.par0`, ...)."""
    return tuple(sorted(r for fn, r in ranges.items() if fn == name or fn.startswith(name + ".")))


def _layers(func: Function) -> tuple[str, ...]:
    """The frontend layers of the expressions the function computes (not of its inputs)."""
    seen: dict[str, None] = {}
    for node in post_order(func.body):
        if isinstance(node, CONTAINED) and node.span is not None:
            for o in node.span.origins():
                if isinstance(o, LayerSpan):
                    seen.setdefault(o.name)
    return tuple(node_layers(seen))


def _new_diagnostics(result: BuildResult, source: Source | None) -> list[ReportDiagnostic]:
    """The build's diagnostics that the check before it did not already give (the fast
    path publishes those), each once: InferType runs after every pass and says the same
    things again.  A warning or note whose message the check already gave somewhere (the
    constant's index aside) is left out too: after the passes InferType reaches more of
    a module whose constants' types are unknown and says it at every layer (GPT-2 printed
    without its metadata: 199 more where the check gave 10); the first place is shown.
    Lowering's keep their stage."""
    checked = result.checked.diagnostics if result.checked is not None else []
    seen = {(d.message, _range(d.span, source)) for d in checked}
    said = {_kind(d.message) for d in checked if not d.is_error}
    out = []
    for d in result.diagnostics[len(checked):]:
        made = _diagnostic(d, "lower" if d.source == "lower" else "build", source)
        if d.source == "types" and not d.is_error and _kind(d.message) in said:
            continue
        if (d.message, made.range) not in seen:
            seen.add((d.message, made.range))
            out.append(made)
    return out


def _kind(message: str) -> str:
    """A message with its metadata indices left out (`meta[relay.Constant][12]`)."""
    return re.sub(r"\]\[\d+\]", "][]", message)


def _diagnostic(d: Diagnostic, stage: str, source: Source | None) -> ReportDiagnostic:
    where = _range(d.span, source)
    message = d.message if where is not None or d.span is None else f"{d.message} (at {d.span})"
    return ReportDiagnostic(message, int(d.severity), where, stage,
                            tuple((_range(s, source), text) for s, text in d.notes))


def _range(span, source: Source | None) -> tuple[int, int] | None:
    """The span's first range in the built text (None when it has none there)."""
    if span is None or source is None:
        return None
    for o in span.origins():
        if isinstance(o, Span) and (o.source is source or o.source.name == source.name):
            return o.start, o.end
    return None


def _internal(err: BaseException, stage: str) -> ReportDiagnostic:
    return ReportDiagnostic(f"internal error in {stage}: {type(err).__name__}: {err}",
                            int(Severity.ERROR), None, stage)


def internal_error(uri: str, version: int | None, text: str, err: BaseException) -> BuildReport:
    """The report of a build that raised: one diagnostic saying so."""
    report = BuildReport(uri, version, text)
    report.diagnostics.append(_internal(err, "build"))
    return report
