"""Guards on indices that the loops' bounds decide, answered before they are emitted.

A padded window's guard (`h >= 0 and w >= 0`: pooling's loads from a padded input) holds
at most of a tile's unrolled positions: with the column a constant, `2 * (8 * j + 3) - 1
+ kw >= 0` holds for every `j`.  Emitted as written, each such guard was its `icmp`s, an
`and` and a branch around its load, which LLVM's O3 proved away again (ResNet-50's max
pool: 72 guarded loads, InstCombine a third of its O3 and code generation).  A select
whose whole condition `condition_decided` answers takes its side without a branch
(llvm.py `select`, lanes.py); a condition left undecided is emitted as before, its
decided parts included (dropped, they changed the code of ResNet-50's stride-2 3x3).
`decided` answers a comparison of two indices whose ranges (the emitter's `affine`: a
base between the bounds the loops give it, plus a constant) do not overlap.  What is
decided holds for every value the loops give: the values computed are the same.
"""

from __future__ import annotations

from ..te import expr as te


def decided(em, e: te.Binary) -> bool | None:
    """The value of the index comparison `e` if every value of its operands gives it, else
    None; `em` is the emitter (its `affine` bounds the operands)."""
    a_low, a_high = _range(em, e.a)
    b_low, b_high = _range(em, e.b)
    op = e.op
    if op in ("gt", "ge"):  # as lt / le with the sides swapped
        (a_low, a_high), (b_low, b_high) = (b_low, b_high), (a_low, a_high)
        op = "lt" if op == "gt" else "le"
    if op == "lt":
        return True if a_high < b_low else False if a_low >= b_high else None
    if op == "le":
        return True if a_high <= b_low else False if a_low > b_high else None
    if a_high < b_low or b_high < a_low:  # eq, ne: disjoint
        return op == "ne"
    if a_low == a_high == b_low == b_high:
        return op == "eq"
    return None


def condition_decided(em, cond: te.PrimExpr) -> bool | None:
    """The value of `cond`, comparisons of indices joined by `and` / `or`, if every value
    the loops give its indices gives it (`decided`), else None."""
    if not isinstance(cond, te.Binary):
        return None
    if cond.op in ("and", "or"):
        sides = (condition_decided(em, cond.a), condition_decided(em, cond.b))
        absorbing = cond.op == "or"  # True decides an `or`, False an `and`
        if absorbing in sides:
            return absorbing
        return None if None in sides else not absorbing
    if cond.op in te.COMPARISONS and cond.a.dtype == te.INDEX:
        return decided(em, cond)
    return None


def _range(em, e: te.PrimExpr) -> tuple[float, float]:
    base, offset, low, high = em.affine(e)
    return (offset, offset) if base is None else (low + offset, high + offset)
