"""How many times a stage would be computed per element, inlined into the one stage reading it.

Inlined, a stage is computed wherever its reader reads it: once per iteration of the
reader's loops, except the innermost loops its index does not read, out of which LLVM
hoists it.  `repeats` divides those iterations by the distinct elements read:

    out[i, j] = x[i, j] * rsqrt(v[i])        rsqrt's index is invariant in the inner loop j:
                                             hoisted, computed once per row (1)
    out[y, x] = s[y // 2, x // 2]            every iteration reads another index, 4 of them
                                             the same element (4): a gather
    out[i, j] = exp(b[j])                    invariant in the outer loop only (rows)
    out[c] = select(c < 32, s[c], t[c - 32]) read once per element, however wide out (1)

The innermost loop is the trailing axes the reader's schedule fuses into it (an injective
stage's: until 64 iterations); an index that reads any of them is hoisted out of none (a
sigmoid per channel read over 7x7 planes fused with the channels: 49 per element).

The distinct elements are counted by enumerating the index over the reader's loops, for
each group of loops the index's components share (a nearest resize's rows and columns
apart).  A group of more than ENUMERATE_MAX points is taken as read once per element (a
reshape's flattened index: one to one), as is a group of loops read as they are; an index
that reads a tensor (take's) as reading each element of the stage at most once along its
components.  A read under selects counts only where they take it: the enumeration keeps
the points where their conditions hold (two halves joined by
`select(j < 128, a[j % 128], b[j % 128])`: each element once).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..te import arith
from ..te import expr as te
from ..te.evaluate import over_loops

ENUMERATE_MAX = 1 << 20  # index points enumerated per group of loops


def repeats(indices: Sequence[te.PrimExpr], axes: Sequence[te.IterVar], inner: int,
            shape: Sequence[int], guard: te.PrimExpr | None = None) -> float:
    """Per element read, the times a stage of `shape` read at `indices` (expressions of
    the reader's loop axes `axes`, outermost first, the last `inner` of them fused into
    its innermost loop) would be computed inlined there (1.0: once); `guard`, if any, the
    condition under which the reader reads it (the selects around the read)."""
    loops = [te.Var(a.name) for a in axes]
    extents = {id(v): a.extent for v, a in zip(loops, axes)}
    mapping = dict(zip(axes, loops))
    members = [arith.tidy(te.substitute(i, mapping), extents) for i in indices]
    reads = [_loops_read(i, extents) for i in members]
    used = set().union(*reads) if reads else set()
    looped = list(loops)
    if not any(id(v) in used for v in loops[len(loops) - inner:]):  # hoisted out of the inner loops
        while looped and id(looped[-1]) not in used:
            looped.pop()
    if guard is not None:
        guard = te.substitute(guard, mapping)
        guard_reads = _loops_read(guard, extents)
        if guard_reads and guard_reads <= {id(v) for v in looped} and _known(guard, extents):
            members.append(guard)
            reads.append(guard_reads)
    guarded = len(members) > len(indices)
    work, distinct, grouped = 1, 1, set()
    for group in _groups(reads):
        group_loops = [(v, extents[id(v)]) for v in loops if any(id(v) in reads[k] for k in group)]
        grouped |= {id(v) for v, _ in group_loops}
        points = math.prod(n for _, n in group_loops)
        components = [members[k] for k in group if k < len(indices)]
        if guarded and len(indices) in group and points <= ENUMERATE_MAX \
                and all(_known(c, extents) for c in components):
            w, d = _counted(components, group_loops, members[-1])
        elif not all(_known(c, extents) for c in components):  # read through a tensor
            w, d = points, min(points, math.prod(shape[k] for k in group if k < len(indices)))
        elif points > ENUMERATE_MAX or all(id(c) in extents for c in components):  # loops themselves
            w, d = points, points
        else:
            w, d = _counted(components, group_loops)
        work, distinct = work * w, distinct * d
    work *= math.prod(extents[id(v)] for v in looped if id(v) not in grouped)
    return work / max(distinct, 1)


def _loops_read(e: te.PrimExpr, extents: dict[int, int]) -> set[int]:
    return {id(n) for n in te.nodes(e) if id(n) in extents}


def _known(e: te.PrimExpr, extents: dict[int, int]) -> bool:
    """Whether `e` is a function of the loops alone (reads no tensor, no other variable)."""
    return not any(isinstance(n, te.Load) or isinstance(n, te.Var) and id(n) not in extents for n in te.nodes(e))


def _groups(reads: list[set[int]]) -> list[list[int]]:
    """The members that read loops, grouped by the loops they share."""
    groups: list[tuple[set[int], list[int]]] = []
    for k, loops in enumerate(reads):
        if not loops:
            continue
        joined, members = set(loops), [k]
        for g in [g for g in groups if g[0] & loops]:
            groups.remove(g)
            joined |= g[0]
            members += g[1]
        groups.append((joined, sorted(members)))
    return [members for _, members in groups]


def _counted(components: list[te.PrimExpr], loops: list[tuple[te.Var, int]],
             guard: te.PrimExpr | None = None) -> tuple[int, int]:
    """(the points of `loops` where `guard` holds, the distinct index tuples `components`
    take there)."""
    full = tuple(n for _, n in loops)
    kept = np.broadcast_to(over_loops(guard, loops), full).ravel() if guard is not None else None
    columns = [np.broadcast_to(over_loops(c, loops), full).ravel() for c in components]
    if kept is not None:
        columns = [col[kept] for col in columns]
    points = math.prod(full) if kept is None else int(kept.sum())
    if not columns or points == 0:
        return points, min(points, 1)
    key = np.zeros(columns[0].shape, np.int64)
    scale = 1
    for col in columns:
        low, span = int(col.min()), int(col.max() - col.min()) + 1
        if scale * span >= 1 << 62:
            return points, len(np.unique(np.stack(columns, axis=1), axis=0))
        key += (col - low) * scale
        scale *= span
    return points, len(np.unique(key))


def guard_of(body: te.PrimExpr, load: te.Load) -> te.PrimExpr | None:
    """The condition under which `body` reads `load` (the conditions of the selects it
    sits in, negated on their else side), or None when no select holds it."""
    stack: list[tuple[te.PrimExpr, list[te.PrimExpr]]] = [(body, [])]
    seen: set[int] = set()
    while stack:
        e, conds = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if e is load:
            guard = None
            for c in conds:
                guard = c if guard is None else te.logical_and(guard, c)
            return guard
        if isinstance(e, te.Select):
            stack += [(e.cond, conds), (e.a, conds + [e.cond]), (e.b, conds + [te.intrinsic("not", e.cond)])]
        else:
            stack += [(k, conds) for k in te.children(e)]
    return None
