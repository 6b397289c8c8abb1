"""What a parse gives (`ParseResult`), and the two facts about a scanned text that a whole
parse and an incremental re-read both need: where each `ty=`/`span=` comment's
expression ends, and the order diagnostics are reported in."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..diagnostics import Diagnostic, Severity
from ..ir.module import IRModule
from ..ir.span import Source, Span
from .annotations import is_annotation
from ..pauses import pause_point
from .scan import PAUSE_EVENTS, Scan
from .symbols import SymbolIndex

if TYPE_CHECKING:  # incremental.py makes ParseResults
    from .incremental import Incremental


@dataclass
class ParseResult:
    module: IRModule
    diagnostics: list[Diagnostic]
    source: Source
    index: SymbolIndex
    scan: Scan = field(repr=False)
    # what an incremental re-read needs (`parse(..., incremental=True)`; incremental.py)
    incremental: "Incremental | None" = field(default=None, repr=False)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


def annotation_ends(scanned: Scan, start: int = 0, end: int | None = None) -> dict[int, tuple[str, int]]:
    """For each `ty=`/`span=` comment, the offset where the expression before it ends;
    only the comments that start in [start, end] when given (the incremental re-read of
    one statement: its expressions' comments are inside it)."""
    code = scanned.code
    ends: dict[int, tuple[str, int]] = {}
    comments = scanned.comments
    if start or end is not None:
        first = bisect_left(comments, start, key=_comment_start)
        last = len(comments) if end is None else bisect_right(comments, end, key=_comment_start)
        comments = comments[first:last]
    for i, comment in enumerate(comments):
        if not i % PAUSE_EVENTS:
            pause_point()
        if comment.block and is_annotation(comment.body):
            j = comment.start
            while j > 0 and code[j - 1].isspace():
                j -= 1
            ends.setdefault(j, (comment.body, comment.start + 2))
    return ends


def _comment_start(comment) -> int:
    return comment.start


def diagnostic_order(d: Diagnostic) -> tuple[int, int]:
    """Diagnostics are reported by (line, column); those without a place come first."""
    loc = d.location()
    return (loc[1], loc[2]) if loc else (0, 0)


UNREADABLE_SECTION = "bad #[metadata] section: "  # how the error about a section that cannot be read begins


def unknown_constants_warning(spans: list[Span], unreadable: bool = False) -> Diagnostic:
    """The one warning of a file whose `meta[relay.Constant][i]` have no section to read
    (`mod.astext(show_meta_data=False)`, `print(mod)`), at the first such reference.  A
    section that is there but cannot be read (`unreadable`: its error is reported at it)
    is not said to be missing: an editor showed 'a metadata section that is not here' under
    a model whose section had just been mistyped."""
    n = len(spans)
    what = "constant refers" if n == 1 else "constants refer"
    where = ("the #[metadata] section, which cannot be read (see the error there)" if unreadable
             else "a metadata section that is not here")
    return Diagnostic(f"{n} {what} to {where}; their values are unknown "
                      f"(types come from ty= comments or from their use; `run` fills them from a seed)",
                      spans[0], Severity.WARNING, source="metadata")


def has_unreadable_section(diagnostics) -> bool:
    return any(d.source == "metadata" and d.message.startswith(UNREADABLE_SECTION) for d in diagnostics)


def is_unknown_constants_warning(d: Diagnostic) -> bool:
    return d.source == "metadata" and "; their values are unknown (" in d.message
