"""A padded window computed at a tile loop (conv_tile_pad.py), read in place where it lies
inside its input: the tile's loop nest made twice, under `if` the window's rows and columns
all lie inside the input, once reading the input itself and no window, else as before
(MLAS's NCHWc kernels read the input in place and leave the padded outputs to code of
their own: conv_tile_pad.py's module doc).

A rewrite of the lowered loop nest (`Schedule.rewrite`), for a window that the loop nest
builder made as

    W = allocate(...)                                 a local buffer
    for a in ...: for b in ...: ...                   the window's loops, nothing else
        W[a * sa + b * sb + ...] = select(cond, X[src], 0)
    rest                                              reads W, never writes it

where the store's index enumerates W (strides of its loops' extents, row-major) and
every atom of `cond` is a comparison whose sides are linear in the window's variables,
each with coefficients of one sign (a padding guard: its truth over the window is its
truth at the window's two corners).  Then `rest` reading `W[j]` reads `X[src]` at the
window position `j` spells (its digits by the strides, each worked out from `j`'s linear
form, the rest of each digit proven within its stride by the loop extents), and

    if cond(first corner) and cond(last corner):  rest, every W[j] read as X[src at j]
    else:                                          W = allocate ... as before

Each value read is the same element, so the sums are the same in the same order (outputs
bit-identical).  In the window's version, a reduction loop whose variable every read
spells as one window variable (a filter row's tap) runs its body only where the guard's
atoms of that variable hold (`_skip_outside`): the taps that read padding rows alone are
skipped, as MLAS shortens its kernel there (products with 0: the sums are the same but for
the sign of a zero sum and a non-finite weight's NaN).  Measured: conv_tile_pad.py.

A window the rewrite cannot read so (a read of W it cannot spell, a condition not of
that form) stays as it was.  Spans: each statement and load made keeps the `loc` of the
one it copies (the window's source load for the loads of X).
"""

from __future__ import annotations

from dataclasses import replace

from ..te import expr as te
from ..te.arith import bounds, expr_key, simplify
from .loopnest import Allocate, For, IfThenElse, Prefetch, PrimFunc, Seq, Stmt, Store, seq
from .loopnest import walk as walk_stmts

SKIP_OUTSIDE_TAPS = True  # the window's filter rows that read only padding are skipped (`_skip_outside`)


def read_inside(func: PrimFunc) -> PrimFunc:
    """`func` with every padded window of the module doc's form read in place where it
    lies inside its input."""
    body = _rewrite(func.body, {})
    return func if body is func.body else replace(func, body=body)


def _rewrite(s: Stmt, extents: dict[int, int]) -> Stmt:
    """`s` with its windows rewritten; `extents`: the loop variables around `s`."""
    if isinstance(s, For):
        inner = {**extents, id(s.var): s.extent}
        body = _rewrite(s.body, inner)
        return s if body is s.body else replace(s, body=body)
    if isinstance(s, Allocate):
        made = _versioned(s, extents)
        if made is not None:
            return made
        body = _rewrite(s.body, extents)
        return s if body is s.body else replace(s, body=body)
    if isinstance(s, Seq):
        stmts = tuple(_rewrite(t, extents) for t in s.stmts)
        return s if all(a is b for a, b in zip(stmts, s.stmts)) else replace(s, stmts=stmts)
    if isinstance(s, IfThenElse):
        then = _rewrite(s.then_case, extents)
        other = None if s.else_case is None else _rewrite(s.else_case, extents)
        return s if then is s.then_case and other is s.else_case else replace(s, then_case=then, else_case=other)
    return s


def _versioned(alloc: Allocate, extents: dict[int, int]) -> Stmt | None:
    """The module doc's `if` for the window `alloc` makes, or None when it is not one."""
    if not isinstance(alloc.body, Seq) or len(alloc.body.stmts) < 2:
        return None
    window, *rest = alloc.body.stmts
    loops, store = [], window
    while isinstance(store, For):
        loops.append(store)
        store = store.body
    if not loops or not isinstance(store, Store) or store.buffer is not alloc.buffer:
        return None
    value = store.value
    if not (isinstance(value, te.Select) and isinstance(value.a, te.BufferLoad)
            and isinstance(value.b, te.Const) and value.b.value == 0):
        return None
    digits = _strides(store.index, loops)
    if digits is None:
        return None
    inside = _inside(value.cond, loops)
    if inside is None:
        return None
    source = value.a
    if any(isinstance(n, te.BufferLoad) and n.buffer is alloc.buffer for n in te.nodes(value)):
        return None
    spelled: list[dict] = []
    direct = [_read_source(t, alloc.buffer, source, digits, extents, spelled) for t in rest]
    if any(t is None for t in direct):
        return None
    if SKIP_OUTSIDE_TAPS:
        alloc = _skip_outside(alloc, loops, value.cond, spelled)
    return IfThenElse(inside, seq(*direct), alloc, loc=alloc.loc)


def _skip_outside(alloc: Allocate, loops: list[For], cond: te.PrimExpr, spelled: list[dict]) -> Allocate:
    """The window `alloc` with the iterations of a reduction loop that read only its
    padding skipped: for a window variable that every read spells as one loop's variable
    (a filter row's tap), that loop's body under `if` the guard's atoms of that variable
    hold at it, when the body only accumulates products of window reads (MLAS shortens
    its kernel so at the padded rows).  A skipped term is a product with 0 (a finite
    weight's is ±0), which leaves a sum as it was but for the sign of a zero sum."""
    window = {id(f.var) for f in loops}
    rest = list(alloc.body.stmts[1:])
    for f in loops:
        digits = {id(at[id(f.var)]) for at in spelled}
        tap = spelled[0][id(f.var)] if spelled else None
        if not isinstance(tap, te.Var) or digits != {id(tap)}:
            continue
        atoms = [a for a in _atoms(cond) if _window_vars(a, window) == {id(f.var)}]
        if not atoms:
            continue
        guard = _substitute(_conjunction(atoms), {id(f.var): tap})
        rest = [_guarded(t, tap, guard, alloc.buffer) for t in rest]
    if all(a is b for a, b in zip(rest, alloc.body.stmts[1:])):
        return alloc
    return replace(alloc, body=seq(alloc.body.stmts[0], *rest))


def _window_vars(e: te.PrimExpr, window: set[int]) -> set[int]:
    return {id(n) for n in te.nodes(e) if isinstance(n, te.Var) and id(n) in window}


def _conjunction(atoms: list[te.PrimExpr]) -> te.PrimExpr:
    out = atoms[0]
    for a in atoms[1:]:
        out = te.binary("and", out, a)
    return out


def _guarded(s: Stmt, tap: te.Var, guard: te.PrimExpr, window: te.Buffer) -> Stmt:
    """`s` with the body of the loop over `tap` under `if guard`, when that body only
    accumulates products of window reads (`_accumulates`); else `s`."""
    if isinstance(s, For):
        if s.var is tap:
            return replace(s, body=IfThenElse(guard, s.body, loc=s.loc)) if _accumulates(s.body, window) else s
        body = _guarded(s.body, tap, guard, window)
        return s if body is s.body else replace(s, body=body)
    if isinstance(s, (Allocate,)):
        body = _guarded(s.body, tap, guard, window)
        return s if body is s.body else replace(s, body=body)
    if isinstance(s, Seq):
        stmts = tuple(_guarded(t, tap, guard, window) for t in s.stmts)
        return s if all(a is b for a, b in zip(stmts, s.stmts)) else replace(s, stmts=stmts)
    if isinstance(s, IfThenElse):
        then = _guarded(s.then_case, tap, guard, window)
        other = None if s.else_case is None else _guarded(s.else_case, tap, guard, window)
        return s if then is s.then_case and other is s.else_case else replace(s, then_case=then, else_case=other)
    return s


def _accumulates(s: Stmt, window: te.Buffer) -> bool:
    """Whether every store under `s` is `b[i] = b[i] + x * y` with a read of `window` a
    factor, and nothing but loops and such stores is there."""
    for t in walk_stmts(s):
        if isinstance(t, (For, Seq)):
            continue
        if not isinstance(t, Store):
            return False
        v = t.value
        if not (isinstance(v, te.Binary) and v.op == "add" and isinstance(v.a, te.BufferLoad)
                and v.a.buffer is t.buffer and expr_key(v.a.index) == expr_key(t.index)
                and isinstance(v.b, te.Binary) and v.b.op == "mul"
                and any(isinstance(x, te.BufferLoad) and x.buffer is window for x in (v.b.a, v.b.b))):
            return False
    return True


def _strides(index: te.PrimExpr, loops: list[For]) -> list[tuple[For, int]] | None:
    """The window's loops with the stride of each in the store's index, largest first,
    when the index enumerates the buffer row-major (no constant, each stride the product
    of the extents of the loops of smaller strides); else None."""
    found = _linear(index)
    if found is None:
        return None
    form = found[0]
    if form.get(None, 0) != 0 or set(form) - {None} != {id(f.var) for f in loops}:
        return None
    ordered = sorted(loops, key=lambda f: form[id(f.var)])
    expected = 1
    for f in ordered:
        if form[id(f.var)] != expected:
            return None
        expected *= f.extent
    return [(f, form[id(f.var)]) for f in reversed(ordered)]


def _inside(cond: te.PrimExpr, loops: list[For]) -> te.PrimExpr | None:
    """`cond` at the window's first and last corners, when that is its truth over the
    whole window (module doc), else None."""
    window = {id(f.var) for f in loops}
    for atom in _atoms(cond):
        if not (isinstance(atom, te.Binary) and atom.op in ("lt", "le", "gt", "ge")):
            return None
        found = _linear(atom.a - atom.b)
        if found is None:
            return None
        form = found[0]
        signs = {form[k] > 0 for k in form if k in window and form[k] != 0}
        if len(signs) > 1:
            return None
    first = _substitute(cond, {id(f.var): te.const(0, te.INDEX) for f in loops})
    last = _substitute(cond, {id(f.var): te.const(f.extent - 1, te.INDEX) for f in loops})
    return simplify(te.binary("and", first, last))


def _atoms(cond: te.PrimExpr) -> list[te.PrimExpr]:
    if isinstance(cond, te.Binary) and cond.op == "and":
        return _atoms(cond.a) + _atoms(cond.b)
    return [cond]


def _read_source(s: Stmt, window: te.Buffer, source: te.BufferLoad, digits: list[tuple[For, int]],
                 extents: dict[int, int], spelled: list[dict]) -> Stmt | None:
    """`s` with every read of `window` read from `source` at the position it spells
    (each position appended to `spelled`), or None when a read cannot be spelled or `s`
    writes the window."""
    failed = False

    def expr(e: te.PrimExpr, known: dict[int, int]) -> te.PrimExpr:
        nonlocal failed

        def fold(n: te.PrimExpr) -> te.PrimExpr | None:
            nonlocal failed
            if not (isinstance(n, te.BufferLoad) and n.buffer is window):
                return None
            at = _spelled(n.index, digits, known)
            if at is None:
                failed = True
                return None
            spelled.append(at)
            return te.BufferLoad(source.buffer, _in_place(source.index, at, known), source.dtype, loc=source.loc)
        return te.transform(e, fold)

    def stmt(t: Stmt, known: dict[int, int]) -> Stmt:
        nonlocal failed
        if isinstance(t, For):
            return replace(t, body=stmt(t.body, {**known, id(t.var): t.extent}))
        if isinstance(t, Store):
            if t.buffer is window:
                failed = True
                return t
            return replace(t, index=expr(t.index, known), value=expr(t.value, known))
        if isinstance(t, IfThenElse):
            return replace(t, cond=expr(t.cond, known), then_case=stmt(t.then_case, known),
                           else_case=None if t.else_case is None else stmt(t.else_case, known))
        if isinstance(t, Allocate):
            return replace(t, body=stmt(t.body, known))
        if isinstance(t, Seq):
            return replace(t, stmts=tuple(stmt(u, known) for u in t.stmts))
        if isinstance(t, Prefetch):
            if t.buffer is window:  # a line of the window, which this version does not make
                failed = True
                return t
            return replace(t, index=expr(t.index, known))
        failed = True
        return t

    made = stmt(s, dict(extents))
    return None if failed else made


def _spelled(index: te.PrimExpr, digits: list[tuple[For, int]], known: dict[int, int]) -> dict | None:
    """The window position that the flat `index` reads, as {window variable id: its
    digit}: each digit the terms of the index's linear form whose coefficients its stride
    divides (over that stride), the rest proven within [0, stride) by `known` (loop
    variable id -> extent) and left for the smaller strides; None when not so."""
    found = _linear(index)
    if found is None:
        return None
    form, variables = found
    at: dict[int, te.PrimExpr] = {}
    for f, stride in digits:
        high = {k: c // stride for k, c in form.items() if k is not None and c % stride == 0}
        low = {k: c for k, c in form.items() if k is not None and c % stride != 0}
        high[None], low[None] = divmod(form.get(None, 0), stride)
        rest = _expr(low, variables)
        span = bounds(rest, known)
        if span is None or span[0] < 0 or span[1] >= stride:
            return None
        digit = _expr(high, variables)
        span = bounds(digit, known)
        if span is None or span[0] < 0 or span[1] >= f.extent:
            return None
        at[id(f.var)] = digit
        form = low
    return at


def _linear(e: te.PrimExpr) -> tuple[dict, dict[int, te.PrimExpr]] | None:
    """`e` as ({term id: coefficient, None: constant}, {term id: term}): a sum of integer
    multiples of terms and a constant, each term a variable or an index expression that is
    no sum, difference or product by a constant (`i // 7`, taken whole); None for an
    expression that is not an index."""
    if isinstance(e, te.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {None: e.value}, {}
    if isinstance(e, te.Var) or not (isinstance(e, te.Binary) and e.op in ("add", "sub", "mul")):
        return ({id(e): 1, None: 0}, {id(e): e}) if e.dtype == te.INDEX else None  # a term of its own
    a, b = _linear(e.a), _linear(e.b)
    if a is None or b is None:
        return None
    (fa, va), (fb, vb) = a, b
    if e.op == "mul":
        if not va:
            scale, (form, variables) = fa[None], b
        elif not vb:
            scale, (form, variables) = fb[None], a
        else:
            return {id(e): 1, None: 0}, {id(e): e}
        return {k: c * scale for k, c in form.items() if k is None or c * scale != 0}, variables
    sign = 1 if e.op == "add" else -1
    out = dict(fa)
    for k, c in fb.items():
        out[k] = out.get(k, 0) + sign * c
    return {k: c for k, c in out.items() if k is None or c != 0}, {**va, **vb}


def _expr(form: dict, variables: dict[int, te.PrimExpr]) -> te.PrimExpr:
    """The index expression of a linear form (`_linear`'s first)."""
    out: te.PrimExpr = te.const(form.get(None, 0), te.INDEX)
    for k, c in form.items():
        if k is None or c == 0:
            continue
        out = out + (variables[k] if c == 1 else variables[k] * c)
    return simplify(out)


def _in_place(index: te.PrimExpr, at: dict[int, te.PrimExpr], known: dict[int, int]) -> te.PrimExpr:
    """The source's `index` at the window position `at` (`_spelled`), as
    `max(origin, 0) + inner`: `origin` the index at the window's first corner (made once
    a tile; never negative where the window lies inside, so `max` changes no value but
    tells the loop extents' bounds so, and the code generator's no-wrap flags follow),
    `inner` what the position adds, its terms in the order of their loops (`known`,
    outermost first) and its constant last, so each read is one address a tile plus a
    constant.  Read as written instead (`-1` rows and columns inside the sum), LLVM kept
    an address a read, spilled: 126 stack reads in the 256 FMAs of a filter tap, 1.09x
    the time of the window."""
    found = _linear(index)
    if found is None or any(found[0].get(v, 0) < 0 for v in at) or any(
            not isinstance(t, te.Var) and any(id(n) in at for n in te.nodes(t)) for t in found[1].values()):
        return simplify(_substitute(index, at))  # not a sum of the window's variables' multiples
    form, _ = found
    origin = simplify(_substitute(index, {v: te.const(0, te.INDEX) for v in at}))
    inner: dict = {None: 0}
    variables: dict[int, te.PrimExpr] = {}
    for v, digit in at.items():
        k = form.get(v, 0)
        if k == 0:
            continue
        part = _linear(digit)
        if part is None:
            return simplify(_substitute(index, at))
        for key, c in part[0].items():
            inner[key] = inner.get(key, 0) + k * c
        variables.update(part[1])
    depth = {key: d for d, key in enumerate(known)}
    out: te.PrimExpr = te.maximum(origin, te.const(0, te.INDEX))
    for key in sorted((key for key in inner if key is not None and inner[key]), key=lambda key: depth.get(key, -1)):
        c = inner[key]
        out = out + (variables[key] if c == 1 else variables[key] * c)
    return out + inner[None] if inner[None] else out


def _substitute(e: te.PrimExpr, values: dict[int, te.PrimExpr]) -> te.PrimExpr:
    return te.transform(e, lambda n: values.get(id(n)) if isinstance(n, te.Var) else None)
