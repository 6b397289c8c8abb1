"""The BYOC passes' options, read from the PassContext config (`--config KEY=JSON`).

    relay.byoc.patterns   {"name": "table.relay", "text": "def @..."}  (what `--patterns FILE`
                          puts there), or a path to read
    relay.byoc.targets    "mynpu" or ["mynpu", "otherdsp"], in priority order (`--target`)
    relay.byoc.ops        ["nn.conv2d", "add"] (ops the first target takes, `--target-ops`),
                          or {"mynpu": [...], "otherdsp": [...]}

A target takes an op when the op is in its list, and a composite when the composite's
name starts with `<target>.` (as TVM's AnnotateTarget reads `Composite="dnnl.conv2d_relu"`).
Problems with the options are diagnostics (the table's at their place in its file).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...diagnostics import Diagnostic, Severity
from ..infra import PassContext
from .table import PatternTable, load_pattern_table

BYOC_PASSES = ("MergeComposite", "AnnotateTarget", "MergeCompilerRegions", "PartitionGraph")  # in this order
PATTERNS_KEY = "relay.byoc.patterns"
TARGETS_KEY = "relay.byoc.targets"
OPS_KEY = "relay.byoc.ops"
SOURCE = "byoc"


@dataclass
class ByocOptions:
    table: PatternTable | None = None
    targets: list[str] = field(default_factory=list)
    ops: dict[str, frozenset[str]] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def target(self) -> str | None:
        return self.targets[0] if self.targets else None


_TABLES: dict[tuple[str, str], PatternTable] = {}  # (name, text) -> table: each pass reads it once


def byoc_options(ctx: PassContext | None = None) -> ByocOptions:
    ctx = ctx or PassContext.current()
    opts = ByocOptions()
    targets = ctx.get(TARGETS_KEY, [])
    if isinstance(targets, str):
        targets = [t.strip() for t in targets.split(",") if t.strip()]
    if not isinstance(targets, list) or not all(isinstance(t, str) and t for t in targets):
        opts.diagnostics.append(_error(f"{TARGETS_KEY} must be a target name or a list of them"))
        targets = []
    opts.targets = targets
    opts.ops = _ops(ctx.get(OPS_KEY), targets, opts.diagnostics)
    patterns = ctx.get(PATTERNS_KEY)
    if patterns is not None:
        opts.table = _table(patterns, opts.diagnostics)
        if opts.table is not None:
            opts.diagnostics.extend(opts.table.diagnostics)
    return opts


def _ops(value, targets: list[str], diagnostics: list[Diagnostic]) -> dict[str, frozenset[str]]:
    if value is None:
        return {}
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        if not targets:
            diagnostics.append(_error(f"{OPS_KEY} lists ops but no target takes them (give {TARGETS_KEY})"))
            return {}
        value = {targets[0]: value}
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()):
        diagnostics.append(_error(f"{OPS_KEY} must be a list of op names or an object target -> list"))
        return {}
    return {t: frozenset(str(o) for o in ops) for t, ops in value.items()}


def _table(value, diagnostics: list[Diagnostic]) -> PatternTable | None:
    if isinstance(value, str):
        try:
            with open(value, encoding="utf-8") as f:
                value = {"name": value, "text": f.read()}
        except (OSError, UnicodeDecodeError) as exc:
            diagnostics.append(_error(f"{PATTERNS_KEY}: cannot read {value}: {exc}"))
            return None
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        diagnostics.append(_error(f"{PATTERNS_KEY} must be a path or {{\"name\": ..., \"text\": ...}}"))
        return None
    key = (str(value.get("name", "<patterns>")), value["text"])
    if key not in _TABLES:
        if len(_TABLES) > 32:
            _TABLES.clear()
        _TABLES[key] = load_pattern_table(key[1], key[0])
    return _TABLES[key]


def _error(message: str) -> Diagnostic:
    return Diagnostic(message, None, Severity.ERROR, source=SOURCE)
