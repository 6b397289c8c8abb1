"""`BuildReport`: what one build of one document version produced, as plain data.

The worker makes it (`reporting.py`) and pickles it to the server; nothing in it refers to
IR objects, so it is cheap to send and safe to keep.  Offsets are character offsets into
the text that was built (`BuildReport.text`); lines are 1-based where they come from LLVM
debug locations or printed snapshots, as noted per field.  The lookups at the bottom are
what the features read (sorted lists and bisection, no recomputation).

The large texts (LLVM IR, optimised IR, pass snapshots: 11 MB for ResNet-50)
travel and are kept zlib-compressed, as `Packed` (`pack_texts`, called by the worker just
before it sends a report; LLVM IR compresses 8-10 times): a field typed `Text` is a `str`
or a `Packed`, and readers take its `str` with `unpack(field)`, only when a view shows it.
A `Packed` is true when its text is not empty, and equal to another of the same text.
"""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from .node_table import NodeTable

Range = tuple[int, int]  # [start, end) character offsets
PACK_LEVEL = 6  # zlib's: a text's bytes are the same whenever its text is (share_texts compares them)
PACK_MIN_CHARS = 256  # shorter texts stay str


class Packed:
    """A text kept zlib-compressed (UTF-8); `unpack` gives it back."""

    __slots__ = ("data", "chars")

    def __init__(self, data: bytes, chars: int) -> None:
        self.data = data
        self.chars = chars

    @classmethod
    def of(cls, text: str) -> "Packed":
        return cls(zlib.compress(text.encode("utf-8"), PACK_LEVEL), len(text))

    def text(self) -> str:
        return zlib.decompress(self.data).decode("utf-8")

    def __bool__(self) -> bool:
        return self.chars > 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Packed) and self.data == other.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __getstate__(self):
        return (self.data, self.chars)

    def __setstate__(self, state) -> None:
        self.data, self.chars = state

    def __repr__(self) -> str:
        return f"Packed({self.chars} chars in {len(self.data)} bytes)"


Text = str | Packed


def unpack(text: Text) -> str:
    """The text of a report's field, whether kept packed or not."""
    return text.text() if isinstance(text, Packed) else text


NUMERICS_SEED = 0  # Check Numerics' inputs, as `relaylens run --check --seed 0` draws them
NUMERICS_STAGE = "numerics"  # its diagnostics' stage in the server's store, and their source


ERROR = 1  # compiler.diagnostics.Severity.ERROR, LSP's DiagnosticSeverity.Error


@dataclass(frozen=True, slots=True)
class ReportDiagnostic:
    message: str
    severity: int  # compiler.diagnostics.Severity value (1 error .. 4 hint), as LSP's
    range: Range | None  # in the built text; None: no document position
    stage: str  # "build", "lower", "worker"
    notes: tuple[tuple[Range | None, str], ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The module after one pass, printed with types."""

    index: int
    pass_name: str
    changed: bool
    text: Text  # the same object as the snapshot before's when unchanged
    # printed range -> the source ranges of that node, sorted by (start, -end); the worker
    # sends a NodeTable (node_table.py), which reads as this tuple of tuples
    nodes: Sequence[tuple[int, int, tuple[Range, ...]]] = ()

    @property
    def file_name(self) -> str:
        return f"{self.index}-{self.pass_name}.relay"

    def node_at(self, offset: int) -> tuple[int, int, tuple[Range, ...]] | None:
        """The innermost printed node holding `offset` that has a source range."""
        nodes = self.nodes
        return nodes.innermost(offset) if isinstance(nodes, NodeTable) else _innermost(nodes, offset)


@dataclass(frozen=True, slots=True)
class Change:
    """What one pass made of a source expression."""

    index: int  # snapshot index
    pass_name: str
    # (1-based line in the snapshot, first line of its text), line 0 when not printed
    # (a node the printer does not locate); () = gone: folded or removed
    became: tuple[tuple[int, str], ...]
    before: str = ""  # its first appearance's text in the snapshot before the pass


@dataclass(frozen=True, slots=True)
class ExprReport:
    range: Range
    layers: tuple[str, ...]
    changes: tuple[Change, ...]
    fused: str | None  # the fused function it ended in
    fusion: str = ""  # why FuseOps fused it there or did not (Provenance.fusion_reason), "" unknown


@dataclass(frozen=True, slots=True)
class FusedReport:
    """One fused function of the final module.  Structurally identical functions share
    `name` and the kernel fields (schedule, LLVM IR, lines), each has its own sources."""

    name: str
    display_name: str  # "conv2d + batch_norm + relu · /conv1/Conv" (Provenance.display_name)
    anchor: Range  # where its lens goes: its first source expression (or its own `fn`)
    ranges: tuple[Range, ...]  # the source expressions it contains, sorted
    layers: tuple[str, ...]
    schedule_steps: int  # its schedule's steps, 0 when not lowered; the text is the worker's, made when
    # a view asks (Builds.schedule): printing every step's loop nest was 40% of lowering
    llvm_ir: Text  # its own LLVM module, unoptimised
    optimized_ir: Text
    module_lines: tuple[tuple[int, int], ...]  # 1-based inclusive ranges in the module text
    optimized_lines: tuple[tuple[int, int], ...]
    snapshot: int  # index of the snapshot where the function was made
    printed: Range | None  # its range in that snapshot's text
    passes: int  # passes that changed at least one of its expressions
    # a kernel that only moves a value between layouts, at every inference (Provenance.moved_value):
    # `layouts` what it moves between, ": OIHW → OIHW16i16o" ("" for any other kernel); `moves`
    # the parameter it moves into the layout the call at `anchor` reads it in ("%w"), "" for a
    # result taken back.  Its lens is one of the kernel's on its line, when there is one
    moves: str = ""
    layouts: str = ""


@dataclass(frozen=True, slots=True)
class ParameterReport:
    """A parameter of @main: the kernels that read it at every run (Provenance.readers)."""

    name: str  # without its `%`
    # (kernel's name, the kernels on the way that only put it in the shape or layout it
    # reads it in, as (name, what it does: "layout_transform: OIHW → OIHW16i16o"))), in
    # the order the final module calls them
    readers: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


@dataclass
class BuildReport:
    uri: str
    version: int | None
    text: str
    diagnostics: list[ReportDiagnostic] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    functions: list[FusedReport] = field(default_factory=list)
    llvm_ir: Text = ""
    optimized_ir: Text = ""
    # 1-based IR line -> Relay (line, col), compact (compiler/lower/codegen/llvm_map.py LineTable)
    llvm_lines: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    optimized_line_map: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    exprs: list[ExprReport] = field(default_factory=list)  # sorted by (start, -end)
    seconds: float = 0.0
    weights: str | None = None  # the .npz whose arrays the build bound as @main's parameters
    bound: tuple[str, ...] = ()  # the @main parameters it bound (constants in the build)
    parameters: dict[str, ParameterReport] = field(default_factory=dict)  # @main's left unbound, by name
    byoc: Any = None  # byoc_report.ByocReport: where a partitioned build put each call
    kept: bool = False  # answered from the report of an earlier build kept on disk (report_cache.py)

    @property
    def lowered(self) -> bool:
        return bool(self.llvm_ir)

    def function(self, name: str) -> FusedReport | None:
        """The first fused function of that name (its kernel is every one's)."""
        return next((f for f in self.functions if f.name == name), None)

    def movers(self, key: Range) -> list[FusedReport]:
        """The kernels that only move a value into the layout the expression `key` reads it
        in (a parameter), or its result out of it."""
        return [f for f in self.functions if f.layouts and tuple(key) in f.ranges]

    def expr(self, key: Range) -> ExprReport | None:
        """The source expression with exactly this range."""
        return self._by_range.get(tuple(key))

    @cached_property
    def _by_range(self) -> dict[Range, ExprReport]:
        return {e.range: e for e in self.exprs}

    @cached_property
    def _expr_entries(self) -> list[tuple[int, int, ExprReport]]:
        return [(e.range[0], e.range[1], e) for e in self.exprs]

    def expr_at(self, offset: int) -> ExprReport | None:
        """The innermost source expression whose range holds `offset`."""
        found = _innermost(self._expr_entries, offset)
        return found[2] if found is not None else None

    def expr_starting(self, offset: int) -> ExprReport | None:
        """The innermost expression that starts exactly at `offset` (a debug location)."""
        entries = self._expr_entries
        i = bisect.bisect_left(entries, (offset,))
        best = None
        while i < len(entries) and entries[i][0] == offset:
            best = entries[i][2]  # sorted (start, -end): the last one is the shortest
            i += 1
        return best

    def function_of_line(self, line: int, optimized: bool = False) -> FusedReport | None:
        """The fused function whose module text holds 1-based `line`."""
        for f in self.functions:
            for first, last in (f.optimized_lines if optimized else f.module_lines):
                if first <= line <= last:
                    return f
        return None


def share_texts(report: BuildReport, older: list[BuildReport]) -> None:
    """Make each text of `report` (LLVM IR, optimised IR, snapshots) that equals a
    text of an `older` report the older one's object, so that the server holds it once; so
    too a snapshot's node table, a fused function's or an expression's whole entry (an edit
    that keeps every offset, an edit undone).
    Two versions of a model mostly lower to the same kernels: a one-character edit leaves
    most of ResNet-50's 11 MB of IR text as it was, and an edit undone leaves all of it."""
    pool: dict[str, str] = {}
    tables: dict = {}  # a snapshot's NodeTable equal to an older one's: the older one
    for old in older:
        for text in (old.llvm_ir, old.optimized_ir, *(s.text for s in old.snapshots),
                     *(t for f in old.functions for t in (f.llvm_ir, f.optimized_ir))):
            pool.setdefault(text, text)
        for s in old.snapshots:
            if isinstance(s.nodes, NodeTable):
                tables.setdefault(s.nodes, s.nodes)
    if not pool:
        return
    report.llvm_ir = pool.get(report.llvm_ir, report.llvm_ir)
    report.optimized_ir = pool.get(report.optimized_ir, report.optimized_ir)
    report.snapshots = [replace(s, text=pool.get(s.text, s.text),
                                nodes=tables.get(s.nodes, s.nodes) if isinstance(s.nodes, NodeTable) else s.nodes)
                        for s in report.snapshots]
    report.functions = [replace(f, llvm_ir=pool.get(f.llvm_ir, f.llvm_ir),
                                optimized_ir=pool.get(f.optimized_ir, f.optimized_ir))
                        for f in report.functions]
    functions = {f: f for old in reversed(older) for f in old.functions}
    exprs = {e: e for old in reversed(older) for e in old.exprs}
    report.functions = [functions.get(f, f) for f in report.functions]
    report.exprs = [exprs.get(e, e) for e in report.exprs]


def pack_texts(report: BuildReport) -> BuildReport:
    """Replace the report's large texts by `Packed` ones, in place (one `Packed` per distinct
    text object: functions sharing a kernel, snapshots of passes that changed nothing)."""
    made: dict[int, Text] = {}

    def pack(text: Text) -> Text:
        if not isinstance(text, str) or len(text) < PACK_MIN_CHARS:
            return text
        found = made.get(id(text))
        if found is None:
            found = made[id(text)] = Packed.of(text)
        return found

    keep = []  # the texts whose ids are keys of `made` stay alive until it is done
    for text in (report.llvm_ir, report.optimized_ir, *(s.text for s in report.snapshots),
                 *(t for f in report.functions for t in (f.llvm_ir, f.optimized_ir))):
        keep.append(text)
    report.llvm_ir = pack(report.llvm_ir)
    report.optimized_ir = pack(report.optimized_ir)
    report.snapshots = [replace(s, text=pack(s.text)) for s in report.snapshots]
    report.functions = [replace(f, llvm_ir=pack(f.llvm_ir), optimized_ir=pack(f.optimized_ir))
                        for f in report.functions]
    del keep
    return report


def _innermost(entries, offset: int):
    """Of `(start, end, value)` entries sorted by (start, -end) and nested, the innermost
    one holding `offset` (the first holder met walking back from the last start <= offset)."""
    i = bisect.bisect_right(entries, (offset, float("inf")))
    for j in range(i - 1, -1, -1):
        if offset < entries[j][1]:
            return entries[j]
    return None
