"""Which pattern came closest to taking a call, and what kept it out (the editor's hover
on an op left on the host).

    near = closest(table.entries, call, users)   # a Near, or None: no pattern uses call's op
    near.entry.name, near.why                     # "conv2d_bias_relu", "%w must be a constant"

A pattern is a candidate when it calls the op the call calls.  It is tried (matcher.py) at
the call and at every expression that uses the call, up to the pattern's depth, and an
attempt counts only when it reaches the call at one of the pattern's calls of that op.
The closest attempt is the one that got furthest: the most pattern calls reached with an
expression of their operator; ties go to the pattern written first (the table's priority).
`why` is `explain`'s reason for that attempt, None when the pattern matches there after all
(MergeComposite then dropped the match: it overlapped another, or a value inside it is
also used outside).  `users` maps an expression to the expressions that use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...ir.expr import Call, Expr, Op
from ...ir.functor import children, post_order
from .matcher import _Matcher, explain
from .table import PatternEntry


@dataclass(frozen=True)
class Near:
    entry: PatternEntry
    root: Expr  # where the pattern was tried
    reached: int  # pattern calls reached with a call of their operator
    why: str | None  # explain's reason; None: it matches at `root`


class _Probe(_Matcher):
    """The matcher, noting each pattern call it reaches and the expression it compares."""

    def __init__(self, entry: PatternEntry) -> None:
        super().__init__(entry)
        self.reached: dict[Expr, Expr] = {}

    def _call(self, pat: Call, expr: Expr) -> bool:
        if isinstance(expr, Call) and expr.op is pat.op:
            self.reached.setdefault(pat, expr)
        return super()._call(pat, expr)


def users_of(body: Expr) -> dict[Expr, list[Expr]]:
    """Each expression of `body` -> the expressions that use it."""
    users: dict[Expr, list[Expr]] = {}
    for node in post_order(body):
        for child in children(node):
            users.setdefault(child, []).append(node)
    return users


def _depth(pat: Expr) -> int:
    kids = [c for c in children(pat) if not isinstance(c, Op)]
    return 1 + max((_depth(c) for c in kids), default=0)


def _around(call: Expr, users: Mapping[Expr, Sequence[Expr]], depth: int) -> list[Expr]:
    """`call` and what uses it, up to `depth` - 1 uses away, nearest first."""
    found, level = [call], [call]
    for _ in range(depth - 1):
        level = [u for e in level for u in users.get(e, ()) if u not in found]
        found += level
    return found


def closest(entries: Sequence[PatternEntry], call: Call, users: Mapping[Expr, Sequence[Expr]]) -> Near | None:
    best: Near | None = None
    for entry in entries:
        body = entry.func.body
        if not any(isinstance(p, Call) and p.op is call.op for p in post_order(body)):
            continue
        for root in _around(call, users, _depth(body)):
            probe = _Probe(entry)
            probe.visit(body, root)
            if not any(e is call and p.op is call.op for p, e in probe.reached.items()):
                continue
            reached = len(probe.reached)
            if best is None or reached > best.reached:
                best = Near(entry, root, reached, explain(entry, root))
    return best
