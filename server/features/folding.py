"""textDocument/foldingRange: blocks, multi-line comments and the metadata section.

Every bracket pair that spans lines folds (function bodies, `let` values, `if`/`else`
branches, `match` clauses, type definitions, long parameter lists and tuple types), from
the line of the opening bracket to the line before the closing one, so `}` and `} else {`
stay visible.  Block comments and runs of `//` lines fold as comments, the `#[metadata]`
section as a region.  Computed once per analysis (`Syntax.folds`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .. import convert
from . import current_analysis_for, guarded

if TYPE_CHECKING:
    from ..server import RelayLensServer

KINDS = {"comment": lsp.FoldingRangeKind.Comment, "region": lsp.FoldingRangeKind.Region}


def folding_ranges(analysis) -> list[lsp.FoldingRange]:
    source = analysis.source
    by_start: dict[int, lsp.FoldingRange] = {}
    for start, end, kind in analysis.syntax.folds:
        first = convert.line(source, start)
        last = convert.line(source, end)
        if kind is None:
            last -= 1  # keep the closing bracket's line in view
        if last <= first:
            continue
        known = by_start.get(first)
        if known is None or known.end_line < last:  # one range per first line: the longest
            by_start[first] = lsp.FoldingRange(start_line=first, end_line=last, kind=KINDS.get(kind))
    return [by_start[line] for line in sorted(by_start)]


def register(server: "RelayLensServer") -> None:
    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded()
    def folding_range(params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange] | None:
        analysis = current_analysis_for(server, params.text_document.uri)
        return folding_ranges(analysis) if analysis is not None else None
