"""The build driver: text or module in, one `BuildResult` out (DESIGN.md, "The flow").

    result = build_module(module, name="model.relay")   # the relay.build passes on a typed module
    result.snapshots                                    # the module after every pass
    result.fused_names                                  # primitive function -> global name

`BuildResult` is what one build produces, whatever stage it stopped at; driver.py's
`compile()` is the entry point that checks, runs these passes and lowers.

The default pipeline is the opt_level-3 pipeline of TVM's `relay.build` (the pass prefix
of src/relay/backend/utils.cc, then FuseOps), in TVM's order, with the passes RelayLens
does not have left out (listed in NOT_IMPLEMENTED).  `build_text` is
`compile(..., stop_after="passes")` for callers that want the passes alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .check import MAX_SOURCE_CHARS, CheckResult, check_text
from .diagnostics import Diagnostic, Severity
from .ir.expr import Expr, Function
from .ir.module import IRModule
from .provenance import Provenance
from .transform import PassContext, Sequential, SnapshotRecorder, get_pass
from .transform.fused_names import name_primitive_functions
from .transform.infra import Pass, PassInstrument, Snapshot

RELAY_BUILD_PIPELINE = (  # GetPassPrefix(is_homogeneous=true, is_vm=false) in src/relay/backend/utils.cc, then FuseOps
    "RemoveUnusedFunctions",
    "ToBasicBlockNormalForm",
    "qnn.Legalize",
    "Legalize",
    "SimplifyInference",
    "EliminateCommonSubexpr",
    "CombineParallelConv2D",  # these three: opt level 4, so skipped by the default level 3, as in TVM
    "CombineParallelDense",
    "CombineParallelBatchMatmul",
    "FoldConstant",
    "FoldScaleAxis",
    "SimplifyExpr",
    "CanonicalizeCast",
    "CanonicalizeOps",
    "FlattenAtrousConv",
    "InferType",
    "AlterOpLayout",
    "SimplifyExprPostAlterOp",
    "FastMath",  # opt_level 4 (relay_build_passes)
    "FoldConstant",
    "PlanDevices",
    "FuseOps",
    "InferType",
)
NOT_IMPLEMENTED = (
)


@dataclass
class BuildResult:
    name: str
    checked: CheckResult | None
    snapshots: list[Snapshot] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fused_names: dict[Function, str] = field(default_factory=dict)
    fusion_reasons: dict[Expr, str] = field(default_factory=dict)  # FuseOps's input call -> why (fuse_ops.py)
    compositions: dict[Function, Any] = field(default_factory=dict)  # a kept build's kernels' te.Composed (passes_cache.py)
    lowered: Any = None  # lower.pipeline.Lowered, when the build went that far
    stage: str = "passes"  # the last stage that ran (driver.STAGES)

    @property
    def module(self) -> IRModule | None:
        return self.snapshots[-1].module if self.snapshots else None

    @cached_property
    def provenance(self) -> Provenance:
        """What each source expression became in every pass (built on first use)."""
        return Provenance(self)

    @property
    def executable(self):
        """What runs @main, when the build went as far as machine code without errors."""
        if self.stage != "machine_code" or self.lowered is None or not self.ok:
            return None
        return self.lowered.executable

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def relay_build_passes(opt_level: int = 3) -> list[str]:
    """The pipeline without the passes above `opt_level` (FastMath is 4), which TVM's
    Sequential skips."""
    return [n for n in RELAY_BUILD_PIPELINE if get_pass(n).opt_level <= opt_level]


def make_pipeline(names: tuple[str, ...] | list[str] | None = None) -> Sequential:
    return Sequential([get_pass(n) for n in (names or RELAY_BUILD_PIPELINE)], name="relay.build")


def build_module(mod: IRModule, *, name: str = "<module>", passes: list[str] | None = None,
                 opt_level: int = 3, config: dict[str, Any] | None = None,
                 checked: CheckResult | None = None, strict: bool = False, progress=None) -> BuildResult:
    """Run the pipeline on a typed module, recording the module after every pass.

    A pass that fails is reported as an internal error at the pass, and the build stops
    there with the snapshots made so far (`strict` re-raises instead, for tests).
    `progress(pass_name)` is called before each pass.
    """
    result = BuildResult(name, checked)
    recorder = SnapshotRecorder()
    recorder.record_input(mod)
    instruments: list = [recorder]
    if progress is not None:
        instruments.append(_Progress(progress))
    try:
        pipeline = make_pipeline(passes or relay_build_passes(opt_level))
    except KeyError as err:
        result.diagnostics.append(Diagnostic(str(err.args[0]), None, Severity.ERROR, source="build"))
        result.snapshots = recorder.snapshots
        return result
    current = ""
    reported: set = {(d.source, d.span) for d in checked.diagnostics} if checked is not None else set()
    try:
        with PassContext(opt_level=opt_level, required_pass=tuple(passes or ()),  # named: run whatever the level
                         config=dict(config or {}), instruments=instruments):
            for p in pipeline.passes:
                current = p.name
                mod = p(mod)
                for d in getattr(p, "diagnostics", ()):
                    if (d.source, d.span) not in reported:  # a pass run twice: once per place
                        reported.add((d.source, d.span))
                        result.diagnostics.append(d)
                result.fusion_reasons.update(getattr(p, "fusion_reasons", {}))
    except Exception as err:  # a bug in a pass: say which, keep what was built
        if strict:
            raise
        result.diagnostics.append(Diagnostic(f"internal error in pass {current}: {type(err).__name__}: {err}",
                                             None, Severity.ERROR, source="build"))
    result.snapshots = recorder.snapshots
    if result.module is not None:
        result.fused_names = name_primitive_functions(result.module)
    return result


def build_text(text: str, name: str = "<input>", max_chars: int | None = MAX_SOURCE_CHARS,
               **options: Any) -> BuildResult:
    """Check the text (at most `max_chars` characters of it, see check.py); when it has no
    errors, build it."""
    checked = check_text(text, name, max_chars=max_chars)
    if any(d.is_error for d in checked.diagnostics):
        result = BuildResult(name, checked)
        result.diagnostics = list(checked.diagnostics)
        return result
    result = build_module(checked.module, name=name, checked=checked, **options)
    result.diagnostics[:0] = checked.diagnostics  # the warnings of the check come first
    return result


class _Progress(PassInstrument):
    """Reports each pass as it starts; a sequence of the pipeline (FoldScaleAxis) is one
    step, named as the pipeline names it, not one per member."""

    def __init__(self, callback) -> None:
        self.callback = callback
        self.depth = 0  # how many sequences we are inside

    def run_before_pass(self, mod, p: Pass) -> None:
        if self.depth == 0:
            self.callback(p.name)
        if isinstance(p, Sequential):
            self.depth += 1

    def run_after_pass(self, mod, p: Pass) -> None:
        if isinstance(p, Sequential):
            self.depth -= 1
