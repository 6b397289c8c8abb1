"""The loop-nest builder: a schedule as it stands → a `loopnest.PrimFunc`.

Parameters are the input buffers, then one buffer per output, named after the tensors
(made unique).  A stage at the root is one loop nest over its whole domain, in dependency
order; an intermediate one writes a local buffer allocated around the function body.
Loops of extent 1 disappear (their variable is 0).  A split whose factor does not divide
the extent guards the body with `if parent < extent` just inside the innermost loop the
condition uses, unless it has a tail: then the nest is made for the whole tiles and again
for the remainder, the two merged in the loops outside the split (`_merge`); a stage
computed at one of those loops is computed there once, for the region both nests read
(`_computed_once`: the stage's only tail, on one of its own data axes).  A reduction stores its initial value before its first reduction loop
(inside the data loops that enclose it, repeated over the data loops inside it, named
`<axis>.init`), then accumulates; argmax/argmin keep the best value in a local buffer next
to the index in the output and take the first position on ties (and the first NaN, as
numpy), comparing indices as well when the reduction loops were reordered.  With
`cache_accumulator` at a reduction loop, the data loops inside it index a local buffer
(`<name>.acc`) loaded from the stage's buffer just before that loop and stored back just
after it, and the accumulation inside goes there; with its `into`, the load is the
identity in the first iteration of the reduction loops outside (`if` they are all 0), the
store back the epilogue's store in the last (the epilogue's body reading the local
buffer), the epilogue's nest stops at the loop the stage is computed at, and without such
loops the stage's own buffer is not allocated.  A `prefetch` at a loop is a `Prefetch`
first in that loop's body, its index with the loops inside at 0.

A stage computed at a consumer's loop over `axis` (`compute_at`) is computed inside that
loop, for the region the consumer's inner loops read, into a local buffer of that region's
size allocated there (so a parallel consumer loop gets one per iteration).  The region
comes from interval arithmetic on the consumer's indices (te/arith.py): an index that is
affine in the inner loop variables (plus anything of the outer ones, a division or
remainder by a constant) gives a window of constant extent, clamped into the producer's
shape so that no guard is needed; any other index makes that dimension whole.  Every
stage's loads, stores and loops carry `loc`, the span of its compute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..te import expr as te
from ..te.arith import Interval, bounds, expr_key, flat_index, interval, minus, simplify, tidy
from .loopnest import Allocate, For, IfThenElse, Prefetch, PrimFunc, Seq, Stmt, Store, seq
from .stage import Axis, ScheduleError, Split, Stage, readers, split_extents, unique

if TYPE_CHECKING:  # for annotations only: primitives.py imports this module
    from .primitives import Schedule


def build_loop_nest(sch: Schedule) -> PrimFunc:
    """The loop nest of `sch` as it stands."""
    return _Lowering(sch).run()


_Loop = tuple[te.Var, int, str]  # variable, extent, kind
_Attached = list[tuple[te.Buffer, Stmt, Any]]  # buffer, its nest, its span


class _Lowering:
    """One build of a schedule's loop nest: the names, buffers and loop extents made so far."""

    def __init__(self, sch: Schedule) -> None:
        self.sch = sch
        self.bodies = sch.bodies()
        self.readers = readers(sch.stages, self.bodies)
        self.var_names: set[str] = set()
        self.buf_names: set[str] = set()
        # tensor id -> (buffer, per-dimension start of the region it holds or None: whole)
        self.buffers: dict[int, tuple[te.Buffer, tuple[te.PrimExpr | None, ...]]] = {}
        self.hints: dict[int, tuple[te.Var, list[Stmt]]] = {}  # loop variable id -> it, its prefetches
        self.attached: dict[int, list[Stage]] = {}
        self.extents: dict[int, int] = {}  # loop variable id -> extent
        self.shared: set[int] = set()  # tensors computed at a loop for several readers inside it
        # stage id -> the stage whose tile ends in it (cache_accumulator's `into`)
        self.ends = {id(s.accumulate_into): s for s in sch.stages if s.accumulate_into is not None}
        self.unused: set[int] = set()  # buffers of such stages summed in one iteration (no allocation)

    def run(self) -> PrimFunc:
        sch = self.sch
        for stage in sch.stages:
            if stage.inlined or stage.attach is None:
                continue
            target, axis = stage.attach
            reading = self.readers.get(id(stage.tensor), [])
            if stage.shared and target in reading and all(_inside(r, target, axis) for r in reading):
                self.shared.add(id(stage.tensor))
            elif reading != [target]:
                names = ", ".join(r.name for r in reading) or "nothing"
                raise ScheduleError(f"{stage.name} is computed at {target.name} but read by {names}; "
                                    f"compute_at needs its consumer to be the only reader")
            self.attached.setdefault(id(axis), []).append(stage)
        params = [self._buffer(t, "param") for t in sch.inputs + sch.outputs]
        roots = [s for s in sch.stages if not s.inlined and s.attach is None]
        temps = [(self._buffer(s.tensor, "local"), s) for s in roots if not sch.is_output(s)]
        body = seq(*(self.nest(s, None) for s in roots))
        for buf, stage in reversed(temps):
            body = Allocate(buf, body, loc=stage.tensor.op.span)
        return PrimFunc(sch.name, tuple(params), body, num_outputs=len(sch.outputs))

    # ---- names and buffers

    def _buffer(self, t: te.Tensor, scope: str) -> te.Buffer:
        buf = te.Buffer(unique(t.name, self.buf_names), t.shape, t.dtype, scope)
        self.buffers[id(t)] = (buf, (None,) * t.ndim)
        return buf

    def load(self, e: te.PrimExpr) -> te.PrimExpr:
        """`e` with every tensor read turned into a buffer read."""
        def convert(n: te.PrimExpr) -> te.PrimExpr | None:
            if isinstance(n, te.Load):
                buf, starts = self.buffers[id(n.tensor)]
                idx = tuple(i if s is None else minus(self.tidy(i), self.tidy(s)) for i, s in zip(n.indices, starts))
                if id(n.tensor) in self.shared:
                    self._check_inside(n.tensor, buf, idx, starts)
                return te.BufferLoad(buf, self.tidy(flat_index(buf.shape, idx)), n.dtype, loc=n.loc)
            if isinstance(n, te.Select) and isinstance(n.cond, te.Binary) and n.cond.op in ("eq", "lt") \
                    and n.cond.a.dtype == te.INDEX:
                # a position picked by an index (te/topi/winograd.py's y % m of a split y): tidied,
                # an unrolled loop's constant makes it constant, and code generation takes one side
                cond = self.tidy(n.cond)
                if cond is n.cond or (n.cond.op == "lt" and _divisions(cond) >= _divisions(n.cond)):
                    return None  # a `<` only where a division goes (a modulo gone alone: det's concat, LLVM scalarised it)
                return te.select(cond, n.a, n.b)
            return None

        return te.transform(simplify(e), convert)

    def _check_inside(self, t: te.Tensor, buf: te.Buffer, idx: tuple, starts: tuple) -> None:
        """A read of a shared stage (compute_at ..., shared=True) must fall in its region."""
        for i, s, n in zip(idx, starts, buf.shape):
            if s is None:
                continue
            known = bounds(self.tidy(i), self.extents)
            if known is None or known[0] < 0 or known[1] >= n:
                raise ScheduleError(f"{t.name} is computed for several readers at one loop, but a read of it "
                                    f"({i}) may fall outside the region computed there")

    def tidy(self, e: te.PrimExpr) -> te.PrimExpr:
        """`e` simplified with what the extents of the loops made so far tell."""
        return tidy(e, self.extents)

    # ---- one stage

    def nest(self, stage: Stage, domain: list[tuple[te.PrimExpr | None, int]] | None,
             parts: dict[int, bool] | None = None, share: tuple[Split, dict, dict | None] | None = None) -> Stmt:
        """The loops of `stage` over `domain` (per data axis: start or None, extent; None:
        the whole tensor), with the stages computed at its loops inside them.  A split with
        a tail that does not divide makes the nest twice (`parts`: per such split, whether
        this nest is its remainder), the two merged down to that split's outer loop (`share`:
        the split, the loop variables the two nests share outside it, and, when the stages
        computed at those loops are computed once for both nests (`_computed_once`), what
        the first nest made of them, for the second to take)."""
        t, loc = stage.tensor, stage.tensor.op.span
        body = self.bodies[id(t)]
        red = body if isinstance(body, te.Reduce) else None
        ext: dict[Axis, int] = {}
        starts: list[te.PrimExpr | None] = []
        for k, ax in enumerate(stage.axes):
            start, n = domain[k] if domain is not None else (None, ax.extent)
            ext[ax] = n
            starts.append(start)
        for ax in stage.reduce_axes:
            ext[ax] = ax.extent
        inexact: list[Axis] = []
        fixed: dict[Axis, int] = {}  # a remainder's outer loop: its one value
        parts = parts or {}
        for rel in stage.relations:
            if isinstance(rel, Split):
                ext[rel.outer], ext[rel.inner] = split_extents(ext[rel.parent], rel.factor)
                if ext[rel.outer] * ext[rel.inner] == ext[rel.parent]:
                    continue
                if not rel.tail:
                    inexact.append(rel.parent)
                elif id(rel) not in parts:
                    shared: dict[int, Any] = {}
                    share = (rel, shared, {} if _computed_once(stage, rel) else None)
                    return _merge(self.nest(stage, domain, {**parts, id(rel): False}, share),
                                  self.nest(stage, domain, {**parts, id(rel): True}, share))
                elif parts[id(rel)]:
                    fixed[rel.outer] = ext[rel.parent] // ext[rel.inner]
                    ext[rel.outer], ext[rel.inner] = 1, ext[rel.parent] % ext[rel.inner]
                else:
                    ext[rel.outer] = ext[rel.parent] // ext[rel.inner]
            else:
                n = 1
                for a in rel.axes:
                    n *= ext[a]
                ext[rel.fused] = n

        leaves = stage.leaves
        value: dict[Axis, te.PrimExpr] = {}
        loops: list[_Loop | None] = []
        outside = _outside(share, leaves, inexact, self.attached)
        for p, ax in enumerate(leaves):
            if ext[ax] == 1:
                value[ax] = te.const(fixed.get(ax, 0), te.INDEX)
                loops.append(None)
            else:
                v = share[1].get(id(ax)) if p < outside else None
                if v is None or self.extents.get(id(v)) != ext[ax]:
                    v = te.Var(unique(ax.name, self.var_names))
                    if p < outside:
                        share[1][id(ax)] = v
                self.extents[id(v)] = ext[ax]
                value[ax] = v
                loops.append((v, ext[ax], stage.kind(ax)))
        _pass_up(stage.relations, value, ext)

        iv_map: dict[te.IterVar, te.PrimExpr] = {}
        for iv, ax, start in zip(t.op.axes, stage.axes, starts):
            iv_map[iv] = value[ax] if start is None else simplify(start + value[ax])
        for iv, ax in zip(red.axes if red is not None else (), stage.reduce_axes):
            iv_map[iv] = value[ax]
        bound = te.substitute(body, iv_map)
        self.prefetches(stage, iv_map, loops)

        position = {id(lp[0]): p for p, lp in enumerate(loops) if lp is not None}

        def depth(e: te.PrimExpr) -> int:
            return max((position[id(n)] for n in te.nodes(e) if id(n) in position), default=-1)

        guards: dict[int, list[te.PrimExpr]] = {}
        data_guards: dict[int, list[te.PrimExpr]] = {}
        for parent in inexact:
            cond = self.tidy(te.lt(value[parent], ext[parent]))
            guards.setdefault(depth(cond), []).append(cond)
            if not parent.reduce:
                data_guards.setdefault(depth(cond), []).append(cond)

        attached: dict[int, _Attached] = {}
        once = share[2] if share is not None and outside > 0 else None
        for p, ax in enumerate(leaves):
            if once is not None and p < outside and id(ax) in once:  # the first nest made them
                attached[p] = once[id(ax)]
                continue
            for producer in self.attached.get(id(ax), []):
                inner = {id(lp[0]): lp[1] for lp in loops[p + 1:] if lp is not None}
                read = bound
                if once is not None and p < outside:  # for both nests: the split's whole parent
                    read, whole = _whole_parent(stage, share[0], iv_map, body, starts, ext)
                    inner[id(whole)] = ext[share[0].parent]
                region = _region(read, producer.tensor, inner, self.extents)
                buf = te.Buffer(unique(producer.name, self.buf_names),
                                tuple(n for _, n in region), producer.tensor.dtype, "local")
                self.buffers[id(producer.tensor)] = (buf, tuple(s for s, _ in region))
                attached.setdefault(p, []).append((buf, self.nest(producer, region), producer.tensor.op.span))
            if once is not None and p < outside and p in attached:
                once[id(ax)] = attached[p]

        own, _ = self.buffers[id(t)]
        out_idx = self.tidy(flat_index(own.shape, tuple(value[ax] for ax in stage.axes)))
        n = len(leaves)
        ending = self.ends.get(id(stage))
        if ending is not None:  # the tile computed at `at` stores what this stage would
            if ending.attach is None or ending.attach[0] is not stage:
                raise ScheduleError(f"{ending.name}'s tile ends in {stage.name} (cache_accumulator) but is not "
                                    f"computed at it")
            at = leaves.index(ending.attach[1])
            if any(d > at for d, conds in guards.items() if conds) or any(d > at for d in attached):
                raise ScheduleError(f"{stage.name}: {ending.name}'s tile ends in it (cache_accumulator), so no "
                                    f"stage may be computed, and no split guard needed, inside {leaves[at].name}")
            stmt = self.wrap(seq(), loops, 0, at + 1, guards, attached, loc)
        elif red is None:
            stmt = self.wrap(Store(own, out_idx, self.load(bound), loc=loc), loops, 0, n,
                             guards, attached, loc)
        else:
            stmt = self.reduction(stage, red, bound, iv_map, own, out_idx, value, ext, loops,
                                  guards, data_guards, attached)
        if guards.get(-1):
            stmt = IfThenElse(te.all_of(*guards[-1]), stmt, loc=loc)
        return stmt

    def prefetches(self, stage: Stage, iv_map: dict, loops: list[_Loop | None]) -> None:
        """The `Prefetch`es of `stage`'s loops, kept for `wrap` by loop variable."""
        for axis, source, index, write in stage.prefetches:
            if axis not in stage.leaves:
                raise ScheduleError(f"{stage.name}: prefetch's loop {axis.name} is no longer a loop")
            p = stage.leaves.index(axis)
            if loops[p] is None:
                continue
            start = {lp[0]: te.const(0, te.INDEX) for lp in loops[p + 1:] if lp is not None}
            at = self.tidy(te.substitute(te.substitute(index, iv_map), start))
            var = loops[p][0]
            buf, starts = self.buffers.get(id(source), (None, ()))
            if buf is None or any(s is not None for s in starts):  # inlined or computed at a loop since
                raise ScheduleError(f"{stage.name}: prefetch's {source.name} is no longer computed whole")
            self.hints.setdefault(id(var), (var, []))[1].append(Prefetch(buf, at, write, loc=stage.tensor.op.span))

    def reduction(self, stage, red, bound, iv_map, own, out_idx, value, ext, loops, guards,
                  data_guards, attached) -> Stmt:
        """Initial value before the first reduction loop, then the accumulation."""
        t, loc = stage.tensor, stage.tensor.op.span
        leaves, n = stage.leaves, len(stage.leaves)
        r = next(p for p, ax in enumerate(leaves) if ax.reduce)
        init_pos = [p for p in range(r + 1, n) if not leaves[p].reduce]
        init_loops: list[_Loop | None] = [None] * n
        rename: dict[te.Var, te.PrimExpr] = {}
        for p in init_pos:
            if loops[p] is not None:
                v, m, kind = loops[p]
                init_loops[p] = (te.Var(unique(f"{v.name}.init", self.var_names)), m, kind)
                self.extents[id(init_loops[p][0])] = m
                rename[v] = init_loops[p][0]

        def at_init(e: te.PrimExpr) -> te.PrimExpr:
            return self.tidy(te.substitute(e, rename))

        init_guards = {d: [at_init(c) for c in cs] for d, cs in data_guards.items() if d > r}
        src = self.load(bound.source)
        combiner = red.combiner
        acc = None
        if combiner in ("argmax", "argmin"):
            shape = tuple(ext[leaves[p]] for p in init_pos) or (1,)
            acc = te.Buffer(unique(f"{t.name}.value", self.buf_names), shape, src.dtype, "local")
            acc_idx = self.tidy(flat_index(shape, tuple(value[leaves[p]] for p in init_pos)))
            index = self.load(bound.index)
            at_zero = dict(iv_map)
            at_zero.update({iv: te.const(0, te.INDEX) for iv in red.axes})
            first = self.load(te.substitute(red.index, at_zero))
            init = seq(Store(own, at_init(out_idx), at_init(first), loc=loc),
                       Store(acc, at_init(acc_idx), _identity(combiner, src.dtype), loc=loc))
            update = IfThenElse(_better(combiner, src, te.BufferLoad(acc, acc_idx, src.dtype),
                                        index, te.BufferLoad(own, out_idx, own.dtype),
                                        stage.reduce_reordered),
                                seq(Store(own, out_idx, index, loc=loc), Store(acc, acc_idx, src, loc=loc)),
                                loc=loc)
        else:
            init = Store(own, at_init(out_idx), _identity(combiner, own.dtype), loc=loc)
            current = te.BufferLoad(own, out_idx, own.dtype)
            update = Store(own, out_idx, _combine(combiner, current, src), loc=loc)
        if stage.accumulate_at is not None and acc is None:
            accumulated = self.accumulated(stage, src, own, out_idx, iv_map, value, ext, loops, guards, attached)
            starts = None if stage.accumulate_into is not None else \
                self.wrap(init, init_loops, r + 1, n, init_guards, {}, loc)  # with `into` the tile starts itself
            inner = seq(starts, self.wrap(accumulated, loops, r, leaves.index(stage.accumulate_at), guards, attached,
                                          loc))
            return self.wrap(inner, loops, 0, r, guards, attached, loc)
        inner = seq(self.wrap(init, init_loops, r + 1, n, init_guards, {}, loc),
                    self.wrap(update, loops, r, n, guards, attached, loc))
        if acc is not None:
            inner = Allocate(acc, inner, loc=loc)
        return self.wrap(inner, loops, 0, r, guards, attached, loc)

    def accumulated(self, stage, src, own, out_idx, iv_map, value, ext, loops, guards, attached) -> Stmt:
        """The loops from `cache_accumulator`'s axis inward, accumulating in a local buffer
        over the data loops inside it: loaded from `own` before, stored back after; with
        `into`, from the identity in the first iteration of the reduction loops outside the
        axis and through `into`'s body into its buffer in their last (`ending`)."""
        t, loc, leaves, n = stage.tensor, stage.tensor.op.span, stage.leaves, len(stage.leaves)
        axis = stage.accumulate_at
        if axis not in leaves:
            raise ScheduleError(f"{t.name}: cache_accumulator's loop {axis.name} is no longer a loop")
        p = leaves.index(axis)
        if any(d >= p for d, conds in guards.items() if conds) or any(d >= p for d in attached):
            raise ScheduleError(f"{t.name}: cache_accumulator at {axis.name} needs every split inside it "
                                f"to divide its loop and no stage computed inside it")
        tile = [q for q in range(p + 1, n) if not leaves[q].reduce]
        shape = tuple(ext[leaves[q]] for q in tile) or (1,)
        acc = te.Buffer(unique(f"{t.name}.acc", self.buf_names), shape, own.dtype, "local")
        acc_idx = self.tidy(flat_index(shape, tuple(value[leaves[q]] for q in tile) or (te.const(0, te.INDEX),)))

        def copy(suffix: str, make) -> Stmt:
            fresh: list[_Loop | None] = [None] * n
            rename: dict[te.Var, te.PrimExpr] = {}
            for q in tile:
                if loops[q] is not None:
                    v, m, kind = loops[q]
                    fresh[q] = (te.Var(unique(f"{v.name}.{suffix}", self.var_names)), m, kind)
                    self.extents[id(fresh[q][0])] = m
                    rename[v] = fresh[q][0]
            at = lambda e: self.tidy(te.substitute(e, rename))  # noqa: E731
            return self.wrap(make(at(out_idx), at(acc_idx), at), fresh, p + 1, n, {}, {}, loc)

        load = copy("load", lambda o, a, _: Store(acc, a, te.BufferLoad(own, o, own.dtype), loc=loc))
        current = te.BufferLoad(acc, acc_idx, acc.dtype)
        update = Store(acc, acc_idx, _combine(stage.body.combiner, current, src), loc=loc)
        back = copy("store", lambda o, a, _: Store(own, o, te.BufferLoad(acc, a, acc.dtype), loc=loc))
        if stage.accumulate_into is not None:
            chunks = [loops[q] for q in range(p) if leaves[q].reduce and loops[q] is not None]
            first = te.all_of(*(te.eq(v, 0) for v, _, _ in chunks)) if chunks else None
            last = te.all_of(*(te.eq(v, m - 1) for v, m, _ in chunks)) if chunks else None
            start = copy("start", lambda _, a, __: Store(acc, a, _identity(stage.body.combiner, acc.dtype), loc=loc))
            end = copy("end", lambda _, a, at: self.ending(stage, acc, a, iv_map, at))
            load = start if first is None else IfThenElse(first, start, load, loc=loc)
            back = end if last is None else IfThenElse(last, end, back, loc=loc)
            if not chunks:
                self.unused.add(id(own))
        return Allocate(acc, seq(load, self.wrap(update, loops, p, n, {}, {}, loc), back), loc=loc)

    def ending(self, stage: Stage, acc: te.Buffer, acc_idx: te.PrimExpr, iv_map: dict, at) -> Stmt:
        """The store of `stage.accumulate_into` (cache_accumulator's `into`) at `stage`'s
        own positions (`iv_map`, renamed by `at` to a copy's loops), its reads of `stage`
        read from the tile `acc` at `acc_idx` instead."""
        into, t = stage.accumulate_into, stage.tensor
        buf, starts = self.buffers[id(into.tensor)]
        position = tuple(iv_map[iv] for iv in t.op.axes)
        if any(s is not None for s in starts):
            raise ScheduleError(f"{t.name}: cache_accumulator's `into` {into.name} must be computed whole")
        body = te.substitute(self.bodies[id(into.tensor)], dict(zip(into.tensor.op.axes, position)))
        body = te.transform(body, lambda e: te.BufferLoad(acc, acc_idx, acc.dtype)
                            if isinstance(e, te.Load) and e.tensor is t else None)
        return Store(buf, at(flat_index(buf.shape, position)), at(self.load(body)), loc=into.tensor.op.span)

    def wrap(self, body: Stmt, loops: Sequence[_Loop | None], lo: int, hi: int,
             guards: dict[int, list[te.PrimExpr]], attached: dict[int, _Attached], loc: Any) -> Stmt:
        """`body` inside loops hi-1 .. lo; at each depth (inside that loop) the producers
        computed there, then inside the guards that need that loop."""
        for d in range(hi - 1, lo - 1, -1):
            items = attached.get(d)
            if items:
                body = seq(*(s for _, s, _ in items), body)
                for buf, _, span in reversed(items):
                    body = body if id(buf) in self.unused else Allocate(buf, body, loc=span)
            conds = guards.get(d)
            if conds:
                body = IfThenElse(te.all_of(*conds), body, loc=loc)
            if loops[d] is not None:
                v, m, kind = loops[d]
                var, hints = self.hints.get(id(v), (v, []))
                body = For(v, m, seq(*hints, body) if var is v else body, kind, loc=loc)
        return body


def _divisions(e: te.PrimExpr) -> int:
    """The floordivs in `e` (a `<` condition is tidied only where that takes one away)."""
    return sum(1 for n in te.nodes(e) if isinstance(n, te.Binary) and n.op == "floordiv")


def _outside(share: tuple[Split, dict, dict | None] | None, leaves: list[Axis], inexact: list[Axis],
             attached: dict[int, list[Stage]]) -> int:
    """How many leading loops the two nests of a split with a tail share (see `nest`):
    those outside the split's outer loop, up to the first with a stage computed at it
    unless such stages are computed once for both (`_computed_once`); none when another
    split needs a guard."""
    if share is None or inexact or share[0].outer not in leaves:
        return 0
    limit = leaves.index(share[0].outer)
    if share[2] is not None:
        return limit
    return next((p for p in range(limit) if attached.get(id(leaves[p]))), limit)


def _computed_once(stage: Stage, split: Split) -> bool:
    """Whether the stages computed at the loops outside `split`'s outer loop can be
    computed once for both of its nests (the whole tiles and the remainder), for the
    region the two read together: that of the split's parent whole.  So when the parent
    is a data axis of the stage's own, the split's two loops are loops (split or fused no
    further), and no other split of the stage has a tail, so the two nests differ only
    there and share every loop outside."""
    tails = [r for r in stage.relations if isinstance(r, Split) and r.tail]
    return (split.parent in stage.axes and split.outer in stage.leaves and split.inner in stage.leaves
            and tails == [split])


def _whole_parent(stage: Stage, split: Split, iv_map: dict, body: te.PrimExpr, starts: list,
                  ext: dict[Axis, int]) -> tuple[te.PrimExpr, te.Var]:
    """`body` with the split's parent axis an index of its own over the parent's whole
    extent (where the nest has it as outer * factor + inner over part of it), and that
    index: what a stage computed outside the split's loops is read at by both nests."""
    k = stage.axes.index(split.parent)
    iv = stage.tensor.op.axes[k]
    whole = te.Var(f"{split.parent.name}.whole")
    at = whole if starts[k] is None else simplify(starts[k] + whole)
    return te.substitute(body, {**iv_map, iv: at}), whole


def _merge(a: Stmt, b: Stmt) -> Stmt:
    """`a` then `b` (the two nests of a split with a tail), in the loops they share: a loop
    of the same variable in both holds both bodies, a buffer allocated in both (a stage
    computed once for both) is allocated once, the same statement in both is itself, and
    sequences of as many statements are merged pairwise (the nests write different
    elements, so running a piece of `b` before the rest of `a` changes nothing)."""
    if a is b:
        return a
    if isinstance(a, For) and isinstance(b, For) and a.var is b.var:
        return For(a.var, a.extent, _merge(a.body, b.body), a.kind, loc=a.loc)
    if isinstance(a, Allocate) and isinstance(b, Allocate) and a.buffer is b.buffer:
        return Allocate(a.buffer, _merge(a.body, b.body), loc=a.loc)
    if isinstance(a, Seq) and isinstance(b, Seq) and len(a.stmts) == len(b.stmts):
        return seq(*(_merge(x, y) for x, y in zip(a.stmts, b.stmts)))
    return seq(a, b)


def _inside(reader: Stage, target: Stage, axis: Axis) -> bool:
    """Whether `reader` is `target` or computed inside target's loop over `axis` (at it,
    or at a stage computed there, and so on)."""
    if reader is target:
        return True
    stage = reader
    while stage.attach is not None:
        at, loop = stage.attach
        if at is target:
            return loop is axis
        stage = at
    return False


def _pass_up(relations: list, value: dict[Axis, te.PrimExpr], ext: dict[Axis, int]) -> None:
    """The values of split and fused axes from the loops made of them."""
    for rel in reversed(relations):
        if isinstance(rel, Split):  # the factor, not the inner extent: a remainder's is less
            factor = min(rel.factor, max(ext[rel.parent], 1))
            value[rel.parent] = simplify(value[rel.outer] * factor + value[rel.inner])
            continue
        fused = value[rel.fused]
        if ext[rel.fused] == 0:
            for a in rel.axes:
                value[a] = te.const(0, te.INDEX)
            continue
        quotient = fused
        for k in range(len(rel.axes) - 1, -1, -1):
            a = rel.axes[k]
            value[a] = quotient if k == 0 else simplify(quotient % ext[a])
            quotient = simplify(quotient // ext[a])


def _region(expr: te.PrimExpr, producer: te.Tensor, inner: dict[int, int],
            extents: dict[int, int]) -> list[tuple[te.PrimExpr | None, int]]:
    """Per dimension of `producer`, the window (start or None for whole, extent) that
    covers every read of it in `expr` while the `inner` loop variables vary; the start
    is clamped into the tensor unless the loop `extents` keep it inside."""
    loads = [n for n in te.nodes(expr) if isinstance(n, te.Load) and n.tensor is producer]
    region: list[tuple[te.PrimExpr | None, int]] = []
    for d, full in enumerate(producer.shape):
        acc: Interval | None = None
        for ld in loads:
            iv = interval(ld.indices[d], inner)
            if iv is None:
                acc = None
                break
            if acc is None:
                acc = iv
            elif (acc[0] is None) == (iv[0] is None) and (acc[0] is None or expr_key(acc[0]) == expr_key(iv[0])):
                acc = (acc[0], min(acc[1], iv[1]), max(acc[2], iv[2]))
            else:
                acc = None
                break
        if acc is None or acc[2] - acc[1] + 1 >= full:
            region.append((None, full))
            continue
        base, lo, hi = acc
        n = hi - lo + 1
        if base is None:
            region.append((te.const(min(max(lo, 0), full - n), te.INDEX), n))
            continue
        start = base + lo if lo else base
        known = bounds(start, extents)
        if known is None or known[0] < 0:
            start = te.maximum(start, 0)
        if known is None or known[1] > full - n:
            start = te.minimum(start, full - n)
        region.append((simplify(start), n))
    return region


def _extreme(dtype: str, highest: bool) -> te.Const:
    if te.is_float(dtype):
        return te.const(float("inf") if highest else float("-inf"), dtype)
    if dtype == "bool":
        return te.const(highest, dtype)
    b = te.bits(dtype)
    if te.is_signed(dtype):
        return te.const(2 ** (b - 1) - 1 if highest else -(2 ** (b - 1)), dtype)
    return te.const(2 ** b - 1 if highest else 0, dtype)


def _identity(combiner: str, dtype: str) -> te.Const:
    if combiner == "sum":
        return te.const(0, dtype)
    if combiner == "prod":
        return te.const(1, dtype)
    return _extreme(dtype, highest=combiner in ("min", "argmin"))


def _combine(combiner: str, acc: te.PrimExpr, value: te.PrimExpr) -> te.PrimExpr:
    op = {"sum": "add", "prod": "mul", "max": "max", "max_nnan": "max_nnan", "min": "min"}[combiner]
    return te.binary(op, acc, value)


def _better(combiner: str, value, best, index, best_index, reordered: bool) -> te.PrimExpr:
    """Whether `value` at `index` replaces `best` at `best_index`: strictly better, or the
    first NaN (numpy's arg reductions); with reordered loops also equal at an earlier index."""
    cond = (te.gt if combiner == "argmax" else te.lt)(value, best)
    is_float = te.is_float(value.dtype)
    if is_float:
        nan_v, nan_b = te.intrinsic("isnan", value), te.intrinsic("isnan", best)
        cond = te.logical_or(cond, te.logical_and(nan_v, te.intrinsic("not", nan_b)))
    if reordered:
        earlier = te.lt(index, best_index)
        tie = te.eq(value, best)
        if is_float:
            tie = te.logical_or(tie, te.logical_and(nan_v, nan_b))
        cond = te.logical_or(cond, te.logical_and(tie, earlier))
    return cond
