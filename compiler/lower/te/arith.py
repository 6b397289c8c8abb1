"""Index arithmetic on tensor expressions: the one place that folds and bounds indices.

* `simplify`: constant folding and the identities index arithmetic produces (x*1, x+0,
  0*x), so printed and generated indices stay readable;
* `flat_index`: the row-major offset of an index tuple in a buffer;
* `bounds`: the least and greatest value of an index given loop extents, and `tidy`,
  simplification with what those bounds tell (`x // c` is 0 for x in [0, c), ...);
* `interval`: where an index ranges while some loop variables vary (the region a
  `compute_at` producer must cover), with `divide_terms` taking multiples of a constant
  out of a sum.

Compute rules use it (a reshape reads its input at a flattened index) and so does the
loop-nest builder of schedule/; it knows nothing of either.
"""

from __future__ import annotations

import math

from typing import Any

from . import expr as te

REFOLD_MAX = 8  # how many times `tidy` rewrites a rule's result again (each divides by more)


def simplify(e: te.PrimExpr) -> te.PrimExpr:
    """Constant folding and the identities that index arithmetic produces (x*1, x+0,
    0*x, (x*c)//c for loop vars), so printed and generated indices stay readable."""
    return te.transform(e, _fold)


def _fold(n: te.PrimExpr) -> te.PrimExpr | None:
    if not isinstance(n, te.Binary) or n.dtype != te.INDEX:
        return None
    a, b = n.a, n.b
    ca = a.value if isinstance(a, te.Const) else None
    cb = b.value if isinstance(b, te.Const) else None
    if ca is not None and cb is not None:
        fold = {"add": lambda: ca + cb, "sub": lambda: ca - cb, "mul": lambda: ca * cb,
                "floordiv": lambda: ca // cb if cb else None, "floormod": lambda: ca % cb if cb else None,
                "min": lambda: min(ca, cb), "max": lambda: max(ca, cb)}.get(n.op)
        value = fold() if fold else None
        return None if value is None else te.const(value, te.INDEX)
    if n.op == "add":
        if ca == 0:
            return b
        if cb == 0:
            return a
    if n.op == "sub" and cb == 0:
        return a
    if n.op == "mul":
        if ca == 1:
            return b
        if cb == 1:
            return a
        if ca == 0 or cb == 0:
            return te.const(0, te.INDEX)
    if n.op in ("floordiv", "div") and cb == 1:
        return a
    if n.op == "floormod" and cb == 1:
        return te.const(0, te.INDEX)
    return None


def flat_index(shape: tuple[int, ...], indices: tuple[te.PrimExpr, ...]) -> te.PrimExpr:
    """The row-major offset of `indices` in a buffer of `shape` (folded where constant).

    Each index is simplified once, and at each axis only the two nodes it adds are folded:
    the offset so far is simplified already, which `simplify` leaves as it is (simplified
    whole at every axis, it was walked once per axis: scheduling ResNet-50 took a fifth to a
    third longer)."""
    if not indices:
        return te.const(0, te.INDEX)
    result = simplify(indices[0])
    for dim, idx in zip(shape[1:], indices[1:]):
        result = _folded(_folded(result * dim) + simplify(idx))
    return result


def _folded(n: te.PrimExpr) -> te.PrimExpr:
    """`n`, whose children are simplified, simplified."""
    folded = _fold(n)
    return n if folded is None else folded


def bounds(e: te.PrimExpr, extents: dict[int, int],
           memo: dict[int, tuple] | None = None) -> tuple[int, int] | None:
    """The least and greatest value of index expression `e` given loop extents, or None.
    `memo` keeps the bounds of every node worked out, by id, with the node itself (so that
    no other node takes its id while the memo lives; valid while `extents` gives each
    variable the same extent)."""
    if memo is None:
        return _bounds(e, extents, {})
    found = memo.get(id(e))
    if found is None or found[0] is not e:
        found = memo[id(e)] = (e, _bounds(e, extents, memo))
    return found[1]


def _bounds(e: te.PrimExpr, extents: dict[int, int], memo: dict) -> tuple[int, int] | None:
    if isinstance(e, te.Const):
        return e.value, e.value
    if isinstance(e, te.Var):
        n = extents.get(id(e))
        return None if n is None else (0, n - 1)
    if not isinstance(e, te.Binary) or e.op not in ("add", "sub", "mul", "floordiv", "floormod", "min", "max"):
        return None
    a, b = bounds(e.a, extents, memo), bounds(e.b, extents, memo)
    if a is None or b is None:
        return None
    if e.op == "add":
        return a[0] + b[0], a[1] + b[1]
    if e.op == "sub":
        return a[0] - b[1], a[1] - b[0]
    if e.op in ("min", "max"):
        f = min if e.op == "min" else max
        return f(a[0], b[0]), f(a[1], b[1])
    if e.op == "mul":
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    if b[0] != b[1] or b[0] <= 0:
        return None
    if e.op == "floordiv":
        return a[0] // b[0], a[1] // b[0]
    return (a[0], a[1]) if 0 <= a[0] and a[1] < b[0] else (0, b[0] - 1)


def tidy(e: te.PrimExpr, extents: dict[int, int]) -> te.PrimExpr:
    """`e` simplified with what the loop `extents` (loop variable id -> extent) tell:
    `x // c` is 0 and `x % c` is x for x in [0, c), a min or max whose sides' ranges do
    not overlap is one side; and `x // c * c + x % c` (a fused loop flattened again) is x;
    terms that are multiples of c come out of `// c` and `% c` (a split loop read through
    a blocked layout).  A rule's result is tidied again (up to REFOLD_MAX times), for the
    rule it may now match: a transpose between reshapes reads its input at divisions of
    divisions, `((f // 8 * 64 + d) * 8 + f % 8) // 512` (GPT-2's keys, transposed for the
    scores) is `f // 8 * 64 + d` divided by 64 and then f // 8, where one pass left
    divisions by 512 and 12 in every element's index: that kernel 74.5 -> 16.0 us (1
    thread, CPU time, alone, alternated in one process, Zen 5, load 9; onnxruntime's
    Transpose node 41 us in the model)."""
    def fold(n: te.PrimExpr, depth: int = 0) -> te.PrimExpr | None:
        folded = _fold(n)  # first the plain identities (0*c + x), so the patterns below see x
        ruled = rules(n if folded is None else folded)
        if ruled is None:
            return folded
        again = fold(ruled, depth + 1) if depth < REFOLD_MAX else None  # a rule's result may match one
        return ruled if again is None else again

    def rules(n: te.PrimExpr) -> te.PrimExpr | None:
        if not isinstance(n, te.Binary) or n.dtype != te.INDEX:
            return None
        if n.op == "add":
            return undivide(n)
        if n.op == "mul":
            return scale_once(n)
        if n.op not in ("floordiv", "floormod", "min", "max"):
            return None
        if n.op in ("floordiv", "floormod") and isinstance(n.b, te.Const) and n.b.value > 0:
            quotient, rest = divide_terms(n.a, n.b.value)
            if quotient is not None:  # (c*q + r) // c = q + r // c; (c*q + r) % c = r % c
                part = None if rest is None else te.binary(n.op, rest, n.b)
                if part is not None:
                    folded = fold(part)
                    part = part if folded is None else folded
                if n.op == "floormod":
                    return part if part is not None else te.const(0, te.INDEX)
                return quotient if part is None else simplify(quotient + part)
            common = common_factor(n, extents, settle)
            if common is not None:
                return common
        a, b = bounds(n.a, extents), bounds(n.b, extents)
        if a is None or b is None:
            return None
        if n.op in ("floordiv", "floormod"):
            if b[0] == b[1] > 0 and 0 <= a[0] and a[1] < b[0]:
                return te.const(0, te.INDEX) if n.op == "floordiv" else n.a
            return None
        if a[1] <= b[0]:  # always a <= b
            return n.a if n.op == "min" else n.b
        if b[1] <= a[0]:
            return n.b if n.op == "min" else n.a
        return None

    def settle(n: te.PrimExpr) -> te.PrimExpr:
        folded = fold(n, REFOLD_MAX // 2)
        return n if folded is None else folded

    return simplify(te.transform(e, fold))


def common_factor(n: te.Binary, extents: dict[int, int], settle=simplify) -> te.PrimExpr | None:
    """`(g*q + r) // d` as `q // (d/g)` and `(g*q + r) % d` as `q % (d/g) * g + r`, where
    g > 1 divides the constant d and every term of the scaled part, and the rest r lies
    in [0, g) by the loop extents (a transpose's flattened index read back: (f*128 + j)
    // 8192 with j < 128 is f // 64); None when no such g.  The new division or
    remainder goes through `settle` (`tidy`'s rules again: it may divide again)."""
    d = n.b.value
    terms = sum_terms(n.a)
    g, scaled, rest = d, [], []
    for t in terms:
        k = t.value if isinstance(t, te.Const) else next(
            (f.value for f in (t.b, t.a) if isinstance(f, te.Const)), None) if isinstance(t, te.Binary) \
            and t.op == "mul" else None
        if k:
            g = math.gcd(g, k)
            scaled.append(t)
        else:
            rest.append(t)
    if g <= 1 or not scaled:
        return None
    r = None
    for t in rest:
        r = t if r is None else r + t
    known = (0, 0) if r is None else bounds(r, extents)
    if known is None or known[0] < 0 or known[1] >= g:
        return None
    q = None
    for t in scaled:
        part, _ = divide_terms(t, g)
        q = part if q is None else q + part
    q = simplify(q)
    m = te.const(d // g, te.INDEX)
    if n.op == "floordiv":
        return settle(q // m) if d // g > 1 else q
    head = simplify(settle(q % m) * g) if d // g > 1 else te.const(0, te.INDEX)
    return head if r is None else simplify(head + r)


def undivide(n: te.Binary) -> te.PrimExpr | None:
    """x for `x // c * c + x % c`, and `r * c + x` for `(r + x // c) * c + x % c` (a tile
    over rows and columns flattened, read through a buffer of rows x columns: the
    position itself, not its row and column recombined every tile), else None."""
    a, b = n.a, n.b
    if not (isinstance(a, te.Binary) and a.op == "mul" and isinstance(b, te.Binary) and b.op == "floormod"):
        return None
    q, c = a.a, a.b
    if not (isinstance(c, te.Const) and isinstance(b.b, te.Const) and b.b.value == c.value):
        return None
    terms = sum_terms(q)
    x = expr_key(b.a)
    for k, t in enumerate(terms):
        if (isinstance(t, te.Binary) and t.op == "floordiv" and isinstance(t.b, te.Const)
                and t.b.value == c.value and expr_key(t.a) == x):
            rest = terms[:k] + terms[k + 1:]
            if not rest:
                return b.a
            r = rest[0]
            for more in rest[1:]:
                r = r + more
            scaled = r * c
            once = scale_once(scaled)
            return simplify((scaled if once is None else once) + b.a)
    return None


def scale_once(n: te.Binary) -> te.PrimExpr | None:
    """`x * (c1 * c2)` for `x * c1 * c2` (an index flattened twice: a fused loop's offset
    `f * 28 * 28`), so that `divide_terms` sees the factor 784 whole; else None."""
    a, b = n.a, n.b
    if (isinstance(b, te.Const) and isinstance(a, te.Binary) and a.op == "mul" and a.dtype == te.INDEX
            and isinstance(a.b, te.Const)):
        return a.a * te.const(a.b.value * b.value, te.INDEX)
    return None


def minus(i: te.PrimExpr, start: te.PrimExpr) -> te.PrimExpr:
    """`i - start`, cancelling `start` when `i` is it or starts with it."""
    if expr_key(i) == expr_key(start):
        return te.const(0, te.INDEX)
    if isinstance(i, te.Binary) and i.op == "add" and expr_key(i.a) == expr_key(start):
        return i.b
    return simplify(i - start)


# ---------------------------------------------------------------------- intervals

Interval = tuple[te.PrimExpr | None, int, int]  # values in [base + lo, base + hi]; base None = 0


def expr_key(e: te.PrimExpr) -> Any:
    """A structural key: equal keys mean the same value."""
    if isinstance(e, te.Const):
        return ("c", e.value, e.dtype)
    if isinstance(e, (te.Var, te.IterVar)):
        return ("v", id(e))
    tag = getattr(e, "op", None) or getattr(e, "name", None)
    if isinstance(e, te.Load):
        tag = id(e.tensor)
    elif isinstance(e, te.BufferLoad):
        tag = id(e.buffer)
    return (type(e).__name__, tag, e.dtype, tuple(expr_key(k) for k in te.children(e)))


def interval(e: te.PrimExpr, inner: dict[int, int]) -> Interval | None:
    """Where `e` ranges while the variables in `inner` (id -> extent) take all their values
    and every other variable is fixed; None when not bounded this way."""
    nodes = list(te.nodes(e))
    if not any(id(n) in inner for n in nodes):
        if any(isinstance(n, (te.Load, te.BufferLoad)) for n in nodes):
            return None
        return (None, e.value, e.value) if isinstance(e, te.Const) else (e, 0, 0)
    if id(e) in inner:
        return None, 0, inner[id(e)] - 1
    if not isinstance(e, te.Binary) or e.dtype != te.INDEX:
        return None
    a, b = interval(e.a, inner), interval(e.b, inner)
    if a is None or b is None:
        return None
    (ba, la, ha), (bb, lb, hb) = a, b
    if e.op == "add":
        return _plus(ba, bb), la + lb, ha + hb
    if e.op == "sub":
        return _plus(ba, None if bb is None else 0 - bb), la - hb, ha - lb
    if e.op == "mul":
        if bb is None and lb == hb:
            return _scale(ba, la, ha, lb)
        if ba is None and la == ha:
            return _scale(bb, lb, hb, la)
        return None
    if bb is not None or lb != hb or lb <= 0:
        return None
    c = lb
    quotient, rest = (None, ba) if ba is None else divide_terms(ba, c)
    if e.op == "floordiv":
        if rest is None:  # floor((c*q + v) / c) = q + floor(v / c)
            return quotient, la // c, ha // c
        # floor((x + d) / c) - floor(x / c) <= d // c + 1 for any x
        return (ba + la if la else ba) // c, 0, (ha - la) // c + 1
    if e.op == "floormod":
        return (None, la, ha) if rest is None and 0 <= la and ha < c else (None, 0, c - 1)
    return None


def sum_terms(e: te.PrimExpr) -> list[te.PrimExpr]:
    """The terms of the index sum `e`, left to right (`e` itself when it is no sum)."""
    terms, stack = [], [e]
    while stack:
        t = stack.pop()
        if isinstance(t, te.Binary) and t.op == "add" and t.dtype == te.INDEX:
            stack += [t.b, t.a]
        else:
            terms.append(t)
    return terms


def divide_terms(e: te.PrimExpr, c: int) -> tuple[te.PrimExpr | None, te.PrimExpr | None]:
    """`e` as `c * quotient + rest`, taking out of the sum `e` the terms that are multiples
    of `c` (a constant, or a product with a constant factor that c divides); None stands
    for no quotient (0) or no rest (0)."""
    terms = sum_terms(e)
    quotient: te.PrimExpr | None = None
    rest: te.PrimExpr | None = None
    for t in terms:
        q = None
        if isinstance(t, te.Const) and t.value % c == 0:
            q = te.const(t.value // c, te.INDEX)
        elif isinstance(t, te.Binary) and t.op == "mul":
            for k, x in ((t.b, t.a), (t.a, t.b)):
                if isinstance(k, te.Const) and k.value % c == 0:
                    q = simplify(x * (k.value // c))
                    break
        if q is None:
            rest = t if rest is None else rest + t
        else:
            quotient = q if quotient is None else quotient + q
    return quotient, rest


def _plus(a: te.PrimExpr | None, b: te.PrimExpr | None) -> te.PrimExpr | None:
    if a is None or b is None:
        return b if a is None else a
    return a + b


def _scale(base: te.PrimExpr | None, lo: int, hi: int, c: int) -> Interval:
    lo, hi = sorted((lo * c, hi * c))
    return (None if base is None else base * c), lo, hi
