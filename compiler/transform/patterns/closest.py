"""Which pattern came closest to taking a call, and what kept it out (the editor's hover
on an op left on the host).

    near = closest(table.entries, call, users)   # a Near, or None: no pattern uses call's op
    near.entry.name, near.why                     # "conv2d_bias_relu", "%w must be a constant"

A pattern is a candidate when it calls the op the call calls.  It is tried (matcher.py)
where its root would be if that call of the op were this call: at the expressions as many
uses above the call as the op's call is below the pattern's root.  The closest attempt is
one that reached the call at a call of its op (else one that failed above it: a pattern
`bias_add(dense(...))` tried at the `add` that uses a dense), then the one that got
furthest: the most pattern calls reached with a call of their operator; ties go to the
pattern written first (the table's priority).  A call whose value nothing uses as the
pattern would (it is the output) gets the first pattern that calls its op, and says so.

`why` is `explain`'s reason for the attempt, None when the pattern matches there after all
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


def _distances(pat: Expr, op: Op) -> set[int]:
    """How many calls down from the pattern's root each of its calls of `op` is."""
    found: set[int] = set()
    level, d = [pat], 0
    while level:
        found.update(d for p in level if isinstance(p, Call) and p.op is op)
        level = [c for p in level for c in children(p) if not isinstance(c, Op)]
        d += 1
    return found


def _up(call: Expr, users: Mapping[Expr, Sequence[Expr]], d: int) -> list[Expr]:
    """The expressions `d` uses above `call` (through any path)."""
    level = [call]
    for _ in range(d):
        level = list(dict.fromkeys(u for e in level for u in users.get(e, ())))
    return level


def closest(entries: Sequence[PatternEntry], call: Call, users: Mapping[Expr, Sequence[Expr]]) -> Near | None:
    best: Near | None = None
    score = (False, -1)
    for entry in entries:
        body = entry.func.body
        for d in sorted(_distances(body, call.op)):
            for root in _up(call, users, d):
                probe = _Probe(entry)
                probe.visit(body, root)
                aligned = any(e is call and p.op is call.op for p, e in probe.reached.items())
                if (aligned, len(probe.reached)) > score:
                    score = (aligned, len(probe.reached))
                    best = Near(entry, root, len(probe.reached), explain(entry, root))
            if best is None:  # nothing so many uses above the call: the pattern goes on above it
                top = body.op.name if isinstance(body, Call) and isinstance(body.op, Op) else type(body).__name__.lower()
                best = Near(entry, call, 0, f"nothing above it fits the pattern, which continues up to {top}")
    return best
