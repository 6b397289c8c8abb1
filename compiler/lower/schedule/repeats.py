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

The distinct elements are counted by enumerating the index over the reader's loops, for
each group of loops the index's components share (a nearest resize's rows and columns
apart); a group of more than ENUMERATE_MAX points is taken as read once per element (a
reshape's flattened index: one-to-one), as is a group of loops read as they are; and an index that reads a tensor (take's) as
reading at most every element of the stage along its components.
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
            shape: Sequence[int]) -> float:
    """Per element read, the times a stage of `shape` read at `indices` (expressions of
    the reader's loop axes `axes`, outermost first, the last `inner` of them fused into
    its innermost loop) would be computed inlined there (1.0: once)."""
    loops = [te.Var(a.name) for a in axes]
    extents = {id(v): a.extent for v, a in zip(loops, axes)}
    mapping = dict(zip(axes, loops))
    indices = [arith.tidy(te.substitute(i, mapping), extents) for i in indices]
    reads = [{id(n) for n in te.nodes(i) if id(n) in extents} for i in indices]
    used = set().union(*reads) if reads else set()
    looped = list(loops)
    if not any(id(v) in used for v in loops[len(loops) - inner:]):  # hoisted out of the inner loops
        while looped and id(looped[-1]) not in used:
            looped.pop()
    work = math.prod(extents[id(v)] for v in looped)
    distinct = 1
    for group in _groups(reads):
        group_loops = [(v, extents[id(v)]) for v in loops if any(id(v) in reads[k] for k in group)]
        points = math.prod(n for _, n in group_loops)
        if any(isinstance(n, te.Load) or isinstance(n, te.Var) and id(n) not in extents
               for k in group for n in te.nodes(indices[k])):
            distinct *= min(points, math.prod(shape[k] for k in group))
        elif points > ENUMERATE_MAX or all(id(indices[k]) in extents for k in group):  # loops themselves
            distinct *= points
        else:
            distinct *= _distinct([indices[k] for k in group], group_loops)
    return work / max(distinct, 1)


def _groups(reads: list[set[int]]) -> list[list[int]]:
    """The index components that read loops, grouped by the loops they share."""
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


def _distinct(components: list[te.PrimExpr], loops: list[tuple[te.Var, int]]) -> int:
    """The distinct index tuples `components` take over every value of `loops`."""
    full = tuple(n for _, n in loops)
    columns = [np.broadcast_to(over_loops(c, loops), full).ravel() for c in components]
    key = np.zeros(columns[0].shape, np.int64)
    scale = 1
    for col in columns:
        low, span = int(col.min()), int(col.max() - col.min()) + 1
        if scale * span >= 1 << 62:
            return len(np.unique(np.stack(columns, axis=1), axis=0))
        key += (col - low) * scale
        scale *= span
    return len(np.unique(key))
