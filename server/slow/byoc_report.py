"""What a BYOC build partitioned, as plain data for the editor (docs/byoc.md, "In the editor").

    config = byoc_config(patterns_name, patterns_text, targets, ops)   # the PassContext options
    passes = [*BYOC_PASSES, *relay_build_passes(3)]                     # what such a build runs
    report.byoc = byoc_report(result, config)                           # in the worker, after it

Read from the module after PartitionGraph (the first pass after which every region is a
function) and from the build's input, through the spans (provenance.py):

* `functions`: each external function (`Compiler=` set), its target, the patterns of the
  composites inside it (their def names, in evaluation order; an op it took alone, by
  `--target-ops`, by its name), how many operator calls it
  holds (composites' included), the source ranges of those calls and where it prints in
  the PartitionGraph snapshot;
* `matches`: each composite MergeComposite made, with the def that made it (the first def
  of its `Composite` name that matches its body), its target (None when no target took it)
  and the source ranges of its calls;
* `calls`: every operator call of the source, placed: its target, external function,
  composite and pattern, or — left on the host — the pattern that came closest to taking
  it and why it did not (patterns/closest.py; `why` None: it matched, MergeComposite
  dropped the match).

Ranges are character offsets into the built text, as everywhere in the report.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...compiler.ir.expr import Call, Expr, Function, Op
from ...compiler.ir.functor import post_order
from ...compiler.transform.infra import PassContext
from ...compiler.transform.patterns import byoc_options, match
from ...compiler.transform.patterns.closest import closest, users_of

Range = tuple[int, int]
ANNOTATIONS = ("annotation.compiler_begin", "annotation.compiler_end")


@dataclass(frozen=True, slots=True)
class ExternalFunction:
    name: str  # tvmgen_default_mynpu_main_0
    target: str
    patterns: tuple[str, ...]  # its composites' def names and the ops it took alone, in evaluation order
    ops: int  # operator calls inside it, composites' included
    ranges: tuple[Range, ...]  # the source ranges of those calls, sorted
    printed: Range | None  # where it prints in the PartitionGraph snapshot

    @property
    def anchor(self) -> Range:
        return self.ranges[0]

    @property
    def title(self) -> str:
        """"mynpu · 3 ops · conv2d_bias_relu" (the lens)."""
        ops = f"{self.ops} op{'s' * (self.ops != 1)}"
        return " · ".join([self.target, ops] + ([", ".join(dict.fromkeys(self.patterns))] if self.patterns else []))


@dataclass(frozen=True, slots=True)
class PatternMatch:
    pattern: str | None  # the def that made it (None: none of the table's matches its body)
    composite: str  # its Composite= name
    target: str | None  # None: no target took it, it stays on the host
    ranges: tuple[Range, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    range: Range
    op: str
    target: str | None = None  # None: the host
    function: str | None = None  # the external function
    match: int | None = None  # index into ByocReport.matches
    closest: str | None = None  # on the host: the pattern that came closest
    why: str | None = None  # ... and what kept it out (None: it matched; the match was dropped)


@dataclass
class ByocReport:
    table: str | None  # the table's name as the build was given it (its path)
    targets: tuple[str, ...]
    snapshot: int = -1  # the PartitionGraph snapshot's index
    functions: list[ExternalFunction] = field(default_factory=list)
    matches: list[PatternMatch] = field(default_factory=list)
    calls: list[Placement] = field(default_factory=list)  # sorted by (start, -end)

    @cached_property
    def _starts(self) -> list[tuple[int, int]]:
        return [(c.range[0], -c.range[1]) for c in self.calls]

    def call(self, key: Range) -> Placement | None:
        """The placed call whose range is exactly `key`."""
        return self._by_range.get(tuple(key))

    @cached_property
    def _by_range(self) -> dict[Range, Placement]:
        return {c.range: c for c in self.calls}

    def call_at(self, offset: int) -> Placement | None:
        """The innermost placed call whose range holds `offset`."""
        i = bisect.bisect_right(self._starts, (offset, 0))
        for j in range(i - 1, -1, -1):
            if offset < self.calls[j].range[1]:
                return self.calls[j]
        return None

    def function(self, name: str) -> ExternalFunction | None:
        return next((f for f in self.functions if f.name == name), None)


@dataclass(frozen=True)
class ByocRequest:
    """What the worker is told (pickled): the PassContext options, or None with problems."""

    config: dict | None
    table_uri: str | None
    problems: tuple[tuple[Range | None, str], ...] = ()

    @property
    def key(self) -> str:
        """Equal for two requests that build alike (the table's text included)."""
        data = json.dumps([self.config, self.problems], sort_keys=True, default=str)
        return hashlib.sha1(data.encode()).hexdigest()


def byoc_config(name: str | None, text: str | None, targets: list[str], ops: list[str]) -> dict[str, Any]:
    config: dict[str, Any] = {"relay.byoc.targets": list(targets)}
    if text is not None:
        config["relay.byoc.patterns"] = {"name": name or "<patterns>", "text": text}
    if ops:
        config["relay.byoc.ops"] = list(ops)
    return config


def byoc_report(result, config: dict[str, Any]) -> ByocReport:
    """The placement of every call of the build `result` (driver.compile's, run with
    BYOC_PASSES first and `config`)."""
    opts = byoc_options(PassContext(config=config))
    patterns = config.get("relay.byoc.patterns")
    report = ByocReport(patterns.get("name") if isinstance(patterns, dict) else None, tuple(opts.targets))
    prov = result.provenance
    at = next((s.index for s in prov.stages if s.pass_name == "PartitionGraph"), None)
    if at is None:
        return report
    report.snapshot = at
    stage = prov.stages[at]
    located = stage.printed()[1]
    entries = opts.table.entries if opts.table is not None else []
    placed: dict[Range, Placement] = {}

    def keys(node: Expr) -> list[Range]:
        return prov.keys_of(node)

    for gv, func in stage.module.functions.items():
        target = func.attrs.get("Compiler")
        target = str(target) if target is not None else None
        names: list[str] = []
        ranges: set[Range] = set()
        ops = 0
        inner = {n for f in post_order(func.body) if isinstance(f, Function) and "Composite" in f.attrs
                 for n in post_order(f.body)}
        for node in post_order(func.body):
            if not isinstance(node, Call):
                continue
            if isinstance(node.op, Function) and "Composite" in node.op.attrs:
                index = len(report.matches)
                found = _composite(node.op, target, entries, opts.targets, keys)
                report.matches.append(found)
                names.append(found.pattern or found.composite)
                for node_in in post_order(node.op.body):
                    if _is_op_call(node_in):
                        for key in keys(node_in):
                            placed[key] = Placement(key, node_in.op.name, target, gv.name if target else None, index)
            elif _is_op_call(node) and target is not None and node not in inner:  # taken one by one
                names.append(node.op.name)
                for key in keys(node):
                    placed.setdefault(key, Placement(key, node.op.name, target, gv.name))
        if target is None:
            continue
        for node in post_order(func.body):
            if _is_op_call(node):
                ops += 1
                ranges.update(keys(node))
        if ranges:
            report.functions.append(ExternalFunction(gv.name, target, tuple(names), ops, tuple(sorted(ranges)),
                                                     located.get(func)))
    report.functions.sort(key=lambda f: f.anchor)
    report.calls = sorted([*placed.values(), *_host_calls(prov, placed, entries)],
                          key=lambda c: (c.range[0], -c.range[1]))
    return report


def _is_op_call(node: Expr) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name not in ANNOTATIONS


def _composite(fn: Function, target: str | None, entries, targets, keys) -> PatternMatch:
    name = str(fn.attrs["Composite"])
    namers = [*targets, None]
    pattern = next((e.name for e in entries if any(e.composite_name(t) == name for t in namers)
                    and match(e, fn.body) is not None), None)
    ranges = sorted({k for n in post_order(fn.body) if _is_op_call(n) for k in keys(n)})
    return PatternMatch(pattern, name, target, tuple(ranges))


def _host_calls(prov, placed: dict[Range, Placement], entries) -> list[Placement]:
    """The source's operator calls no external function took, with the closest pattern."""
    found = []
    seen = set(placed)
    for func in prov.stages[0].module.functions.values():
        users = None
        for node in post_order(func.body):
            if not _is_op_call(node):
                continue
            for key in prov.keys_of(node):
                if key in seen:
                    continue
                seen.add(key)
                users = users if users is not None else users_of(func.body)
                near = closest(entries, node, users) if entries else None
                found.append(Placement(key, node.op.name, closest=near.entry.name if near else None,
                                       why=near.why if near else None))
    return found
