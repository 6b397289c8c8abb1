"""Expressions by source range, for the requests that are about an expression rather
than a name (hover on a call shows its type and its operator).

Built once per analysis: every expression of the module with a document range in this
source, sorted so that `at(offset)` finds the innermost one by bisection.  An
incremental analysis takes the table over and swaps the entries of the one statement it
re-read (`splice`); the spans of the others moved with their text.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from ..compiler.ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem
from ..compiler.ir.functor import post_order
from ..compiler.ir.span import Source, Span, range_order
from ..compiler.parser import ParseResult
from ..compiler.parser.incremental import Change
from ..compiler.pauses import pause_point, sorted_in_pieces

SHOWN = (Call, Tuple, TupleGetItem, Constant)
PAUSE_NODES = 1024


class ExprIndex:
    def __init__(self, result: ParseResult) -> None:
        done: set = set()
        nodes = []
        for func in result.module.functions.values():
            for node in post_order(func, done=done):
                done.add(node)
                nodes.append(node)
                if not len(nodes) % PAUSE_NODES:
                    pause_point()  # built in pieces when the analysis is (server/pieces.py)
        self.entries = _entries(nodes, result.source)

    def at(self, offset: int) -> tuple[int, int, Expr] | None:
        """The innermost expression whose range holds `offset`."""
        # Ranges nest, so the innermost holder is the first one met walking back from
        # the last range that starts at or before offset (equal starts: longest first).
        entries = self.entries
        i = bisect.bisect_right(entries, offset, key=_start)
        for j in range(i - 1, -1, -1):
            span, node = entries[j]
            if offset < span.end:
                return span.start, span.end, node
        return None

    def splice(self, change: Change, source: Source) -> None:
        """Replace the entries of a re-read statement by those of its new nodes, once
        committed: the old nodes' spans still say where the statement was."""
        entries = self.entries
        lo = bisect.bisect_left(entries, change.start, key=_start)
        hi = lo
        old = {id(n) for n in change.old_nodes}
        while hi < len(entries) and id(entries[hi][1]) in old:
            hi += 1
        entries[lo:hi] = _entries(change.nodes, source)

    @staticmethod
    def op_name_range(start: int, node: Expr) -> tuple[int, int] | None:
        """Where the operator's name is, for a call written `name(...)` at `start`."""
        if isinstance(node, Call) and isinstance(node.op, Op):
            return start, start + len(node.op.name)
        return None


def _entries(nodes: Iterable[Expr], source: Source) -> list[tuple[Span, Expr]]:
    """The shown nodes with a range of `source`, by start (longest first); made with pause
    points between."""
    entries = []
    for i, node in enumerate(nodes):
        if not i % PAUSE_NODES:
            pause_point()
        if not isinstance(node, SHOWN) or node.span is None:
            continue
        for origin in node.span.origins():
            if isinstance(origin, Span) and origin.source is source:
                entries.append((origin, node))
                break
    return sorted_in_pieces(entries, _range_order)


def _range_order(entry: tuple[Span, Expr]) -> int:
    return range_order(entry[0])


def _start(entry: tuple[Span, Expr]) -> int:
    return entry[0].start
