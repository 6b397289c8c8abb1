"""Expressions by source range, for the requests that are about an expression rather
than a name (hover on a call shows its type and its operator).

Built once per analysis: every expression of the module with a document range in this
source, sorted so that `at(offset)` finds the innermost one by bisection.
"""

from __future__ import annotations

import bisect

from ..compiler.ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem
from ..compiler.ir.functor import post_order
from ..compiler.ir.span import Span
from ..compiler.parser import ParseResult

SHOWN = (Call, Tuple, TupleGetItem, Constant)


class ExprIndex:
    def __init__(self, result: ParseResult) -> None:
        entries: list[tuple[int, int, Expr]] = []
        done: set = set()
        for func in result.module.functions.values():
            for node in post_order(func, done=done):
                done.add(node)
                if not isinstance(node, SHOWN) or node.span is None:
                    continue
                for origin in node.span.origins():
                    if isinstance(origin, Span) and origin.source is result.source:
                        entries.append((origin.start, origin.end, node))
                        break
        entries.sort(key=lambda e: (e[0], -e[1]))
        self.entries = entries
        self.starts = [e[0] for e in entries]

    def at(self, offset: int) -> tuple[int, int, Expr] | None:
        """The innermost expression whose range holds `offset`."""
        # Ranges nest, so the innermost holder is the first one met walking back from
        # the last range that starts at or before offset (equal starts: longest first).
        i = bisect.bisect_right(self.starts, offset)
        for j in range(i - 1, -1, -1):
            start, end, node = self.entries[j]
            if offset < end:
                return start, end, node
        return None

    @staticmethod
    def op_name_range(start: int, node: Expr) -> tuple[int, int] | None:
        """Where the operator's name is, for a call written `name(...)` at `start`."""
        if isinstance(node, Call) and isinstance(node.op, Op):
            return start, start + len(node.op.name)
        return None
