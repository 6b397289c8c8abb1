"""Schedules: how the computes of a fused function become loops, recorded step by step.

In the spirit of TVM's `te.create_schedule`: every computed tensor reachable from the
outputs has a `Stage` (placeholders have none) whose loops start as its data axes, then its
reduction axes.  Primitives change the loops of a stage or where it is computed:

    sch = Schedule([relu], [x, w], "fused_conv")
    co, ci = sch.split(conv, sch[conv].axes[1], 16)      # a guard `if` when 16 does not divide
    sch.reorder(conv, co, *sch[conv].reduce_axes, ci)
    sch.vectorize(conv, ci)
    sch.compute_inline(pad)                              # pad's body read in place
    sch.compute_at(conv, relu, sch[relu].axes[1])        # conv's needed region, per iteration
    func = sch.lower()                                   # a loopnest.PrimFunc

`split`, `tile`, `reorder`, `fuse`, `vectorize`, `parallel` and `unroll` work on the
current loops (`sch[t].leaf_axes`); an axis that was split or fused is gone, its results
replace it.  `compute_inline`, `compute_at` and `cache_write` (TVM's, scope local) change
where a stage is computed.  Each primitive appends a `Step` to `schedule.record`: its
arguments in words and the loop nest after it, printed when first read (step 0 is the
schedule as created).  A primitive that fails raises `ScheduleError` and leaves the
schedule as it was.

Lowering.  Parameters are the input buffers, then one buffer per output, named after the
tensors (made unique).  A stage at the root is one loop nest over its whole domain, in
dependency order; an intermediate one writes a local buffer allocated around the function
body.  Loops of extent 1 disappear (their variable is 0).  A split whose factor does not
divide the extent guards the body with `if parent < extent` just inside the innermost loop
the condition uses.  A reduction stores its initial value before its first reduction loop
(inside the data loops that enclose it, repeated over the data loops inside it, named
`<axis>.init`), then accumulates; argmax/argmin keep the best value in a local buffer next
to the index in the output and take the first position on ties (and the first NaN, as
numpy), comparing indices as well when the reduction loops were reordered.

`compute_at(producer, consumer, axis)`: the producer is computed inside the consumer's loop
over `axis`, for the region the consumer's inner loops read, into a local buffer of that
region's size allocated there (so a parallel consumer loop gets one per iteration).  The
region comes from interval arithmetic on the consumer's indices: an index that is affine in
the inner loop variables (plus anything of the outer ones, a division or remainder by a
constant) gives a window of constant extent, clamped into the producer's shape so that no
guard is needed; any other index makes that dimension whole.  The consumer must be the only
stage that reads the producer, and the producer cannot be an output.  Every stage's loads,
stores and loops carry `loc`, the span of its compute.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..errors import LoweringError
from ..te import expr as te
from . import loopnest
from .loopnest import Allocate, For, IfThenElse, PrimFunc, Stmt, Store, flat_index, seq, simplify


class ScheduleError(LoweringError):
    """A primitive used where it does not apply; the message names the stage and axis."""


@dataclass(eq=False)
class Axis:
    """A loop of a stage: a root axis (data or reduction) or the result of split/fuse.
    `extent` is over the stage's whole domain."""

    name: str
    extent: int
    reduce: bool
    stage: "Stage" = field(repr=False)

    def __repr__(self) -> str:
        return f"<axis {self.stage.name}.{self.name} extent={self.extent}{' reduce' if self.reduce else ''}>"


@dataclass(eq=False)
class _Split:
    parent: Axis
    outer: Axis
    inner: Axis
    factor: int


@dataclass(eq=False)
class _Fuse:
    axes: tuple[Axis, ...]
    fused: Axis


@dataclass
class Step:
    """One primitive applied: its name, its arguments in words, and `snapshot`, the loop
    nest after it (printed when first read: recording costs no lowering)."""

    primitive: str
    args: str
    _render: Any = field(default=None, repr=False)
    _text: str | None = field(default=None, repr=False)

    @property
    def snapshot(self) -> str:
        if self._text is None:
            self._text, self._render = self._render(), None
        return self._text


def split_extents(extent: int, factor: int) -> tuple[int, int]:
    """(outer, inner) loop extents of splitting `extent` by `factor`; a factor beyond the
    extent gives one outer iteration of exactly `extent`."""
    inner = min(factor, max(extent, 1))
    return -(-extent // inner), inner


class Stage:
    """The schedule of one computed tensor: its root axes, current loops (`leaf_axes`),
    loop kinds and where it is computed (root, inlined or at a consumer's loop)."""

    def __init__(self, tensor: te.Tensor, fresh) -> None:
        self.tensor = tensor
        self.body = body = tensor.op.body  # in the compute's IterVars; cache_write replaces it
        self.axes = tuple(Axis(fresh(iv.name), iv.extent, False, self) for iv in tensor.op.axes)
        reduce_ivs = body.axes if isinstance(body, te.Reduce) else ()
        self.reduce_axes = tuple(Axis(fresh(iv.name), iv.extent, True, self) for iv in reduce_ivs)
        self.leaves: list[Axis] = [*self.axes, *self.reduce_axes]
        self.relations: list[_Split | _Fuse] = []
        self.kinds: dict[Axis, str] = {}
        self.inlined = False
        self.attach: tuple[Stage, Axis] | None = None
        self.reduce_reordered = False
        own = {id(iv) for iv in (*tensor.op.axes, *reduce_ivs)}
        for n in _walk(body):
            if isinstance(n, te.IterVar) and id(n) not in own:
                raise ScheduleError(f"{tensor.name}: its body uses {n.name}, which is not one of its axes")
            if isinstance(n, te.Reduce) and n is not body:
                raise ScheduleError(f"{tensor.name}: a reduction must be the whole body of its compute")

    @property
    def name(self) -> str:
        return self.tensor.name

    @property
    def leaf_axes(self) -> tuple[Axis, ...]:
        return tuple(self.leaves)

    @property
    def is_reduction(self) -> bool:
        return isinstance(self.body, te.Reduce)

    def kind(self, axis: Axis) -> str:
        return self.kinds.get(axis, "serial")

    def _state(self) -> tuple:
        return (list(self.leaves), list(self.relations), dict(self.kinds), self.inlined,
                self.attach, self.reduce_reordered, self.body, self.reduce_axes)

    def _restore(self, state: tuple) -> None:
        (self.leaves, self.relations, self.kinds, self.inlined, self.attach,
         self.reduce_reordered, self.body, self.reduce_axes) = state

    def __repr__(self) -> str:
        return f"<stage {self.name}: {', '.join(a.name for a in self.leaves)}>"


class Schedule:
    """The schedule of the computes between `inputs` (placeholders, the first parameters)
    and `outputs` (distinct computed tensors, the last parameters) of function `name`."""

    def __init__(self, outputs: Sequence[te.Tensor], inputs: Sequence[te.Tensor], name: str) -> None:
        self.name = name
        self.outputs = list(outputs)
        self.inputs = list(inputs)
        if not self.outputs:
            raise ScheduleError(f"{name}: a schedule needs at least one output")
        for k, t in enumerate(self.outputs):
            if t.op is None:
                raise ScheduleError(f"{name}: output {t.name} is a placeholder; copy it with a compute first")
            if any(t is u for u in self.outputs[:k]):
                raise ScheduleError(f"{name}: {t.name} is output twice; copy it with a compute first")
        order = te.post_order(self.outputs)
        given = {id(t) for t in self.inputs}
        for t in order:
            if t.op is None and id(t) not in given:
                raise ScheduleError(f"{name}: placeholder {t.name} is read but not among the inputs")
        self._taken: set[str] = set()
        made = {id(t): Stage(t, self._fresh) for t in reversed(order) if t.op is not None}
        self.stages: list[Stage] = [made[id(t)] for t in order if t.op is not None]
        self._by_tensor = made
        self._output_ids = {id(t) for t in self.outputs}
        self.record: list[Step] = []
        self._bodies_cache: dict[int, te.PrimExpr] | None = None
        with self._step("create_schedule") as step:
            step.args = (f"{name}: outputs {', '.join(t.name for t in self.outputs)}; "
                         f"inputs {', '.join(t.name for t in self.inputs) or '-'}")

    # ------------------------------------------------------------------ lookup

    def __getitem__(self, tensor: te.Tensor | Stage) -> Stage:
        if isinstance(tensor, Stage):
            if self._by_tensor.get(id(tensor.tensor)) is not tensor:
                raise ScheduleError(f"stage {tensor.name} is not part of schedule {self.name}")
            return tensor
        if not isinstance(tensor, te.Tensor):
            raise ScheduleError(f"expected a tensor of schedule {self.name}, got {tensor!r}")
        stage = self._by_tensor.get(id(tensor))
        if stage is None:
            if tensor.op is None:
                raise ScheduleError(f"{tensor.name} is an input (placeholder): it has no stage to schedule")
            raise ScheduleError(f"{tensor.name} is not computed in schedule {self.name}")
        return stage

    def is_output(self, tensor: te.Tensor | Stage) -> bool:
        return id(self[tensor].tensor) in self._output_ids

    def effective_body(self, tensor: te.Tensor | Stage) -> te.PrimExpr:
        """The body of `tensor`'s compute with every inlined producer substituted."""
        return self._bodies()[id(self[tensor].tensor)]

    def _bodies(self) -> dict[int, te.PrimExpr]:
        if self._bodies_cache is None:
            self._bodies_cache = _effective_bodies(self)
        return self._bodies_cache

    # ------------------------------------------------------------------ primitives

    def split(self, tensor, axis: Axis, factor: int) -> tuple[Axis, Axis]:
        """Split `axis` into `outer` (extent ceil(n / factor)) and `inner` (factor)."""
        stage = self._loops_of(tensor, "split")
        with self._step("split") as step:
            outer, inner = self._split(stage, axis, factor)
            step.args = f"{stage.name}: {axis.name} by {factor} -> {outer.name}, {inner.name}"
        return outer, inner

    def tile(self, tensor, x: Axis, y: Axis, x_factor: int, y_factor: int) -> tuple[Axis, Axis, Axis, Axis]:
        """Split `x` and `y` and order the results outer, outer, inner, inner."""
        stage = self._loops_of(tensor, "tile")
        with self._step("tile") as step:
            xo, xi = self._split(stage, x, x_factor)
            yo, yi = self._split(stage, y, y_factor)
            self._reorder(stage, (xo, yo, xi, yi))
            step.args = (f"{stage.name}: {x.name}, {y.name} by {x_factor}, {y_factor} -> "
                         f"{xo.name}, {yo.name}, {xi.name}, {yi.name}")
        return xo, yo, xi, yi

    def reorder(self, tensor, *axes: Axis) -> None:
        """Put `axes` in this order, in the positions they occupy together."""
        stage = self._loops_of(tensor, "reorder")
        with self._step("reorder") as step:
            self._reorder(stage, axes)
            step.args = f"{stage.name}: {', '.join(a.name for a in axes)}"
            if len(axes) < len(stage.leaves):
                step.args += f" (loops now {', '.join(a.name for a in stage.leaves)})"

    def fuse(self, tensor, *axes: Axis) -> Axis:
        """One loop over consecutive loops `axes` (outer first), extent their product."""
        stage = self._loops_of(tensor, "fuse")
        with self._step("fuse") as step:
            fused = self._fuse(stage, axes)
            step.args = f"{stage.name}: {', '.join(a.name for a in axes)} -> {fused.name}"
        return fused

    def vectorize(self, tensor, axis: Axis) -> None:
        self._annotate(tensor, axis, "vectorized", "vectorize")

    def parallel(self, tensor, axis: Axis) -> None:
        self._annotate(tensor, axis, "parallel", "parallel")

    def unroll(self, tensor, axis: Axis) -> None:
        self._annotate(tensor, axis, "unrolled", "unroll")

    def compute_inline(self, tensor) -> None:
        """Read the tensor's body in place in its consumers instead of storing it."""
        stage = self[tensor]
        if stage.is_reduction:
            raise ScheduleError(f"cannot inline {stage.name}: it is a reduction "
                                f"(only stages without te.Reduce can be inlined)")
        if self.is_output(stage):
            raise ScheduleError(f"cannot inline {stage.name}: it is an output of {self.name}")
        self._check_no_attached(stage, f"cannot inline {stage.name}")
        with self._step("compute_inline") as step:
            stage.inlined, stage.attach = True, None
            step.args = stage.name

    def compute_at(self, tensor, consumer, axis: Axis) -> None:
        """Compute the tensor inside `consumer`'s loop over `axis`, for the region the
        loops inside it read."""
        stage, target = self[tensor], self[consumer]
        where = f"cannot compute {stage.name} at {target.name}"
        if stage is target:
            raise ScheduleError(f"{where}: a stage cannot be computed at itself")
        if stage.inlined:
            raise ScheduleError(f"{where}: {stage.name} is inlined")
        if target.inlined:
            raise ScheduleError(f"{where}: {target.name} is inlined")
        if self.is_output(stage):
            raise ScheduleError(f"{where}: {stage.name} is an output (it must be computed whole)")
        self._check_leaf(target, axis, "compute_at")
        readers = _readers(self, self._bodies()).get(id(stage.tensor), [])
        if target not in readers:
            raise ScheduleError(f"{where}: {target.name} does not read {stage.name}")
        if len(readers) > 1:
            others = ", ".join(r.name for r in readers if r is not target)
            raise ScheduleError(f"{where}: {stage.name} is also read by {others}")
        with self._step("compute_at") as step:
            stage.attach = (target, axis)
            step.args = f"{stage.name} at {target.name}.{axis.name}"

    def cache_write(self, tensor) -> te.Tensor:
        """Compute the tensor in a new stage `<name>.local` (returned, scheduled like any
        other) and make the tensor's stage a copy of it.  A reduction computed at the copy's
        loop then accumulates in a small local buffer (registers) instead of its output.
        Call it before any other primitive on the tensor."""
        stage = self._loops_of(tensor, "cache_write")
        if stage.relations or stage.kinds or stage.attach is not None or \
                stage.leaves != [*stage.axes, *stage.reduce_axes]:
            raise ScheduleError(f"cache_write: {stage.name} is already scheduled; cache_write it first")
        self._check_no_attached(stage, f"cache_write: cannot cache {stage.name}")
        with self._step("cache_write") as step:
            t = stage.tensor
            ivs = tuple(te.IterVar(iv.name, iv.extent) for iv in t.op.axes)
            body = te.substitute(stage.body, dict(zip(t.op.axes, ivs)))
            cache = te.Tensor(f"{t.name}.local", t.shape, t.dtype, te.ComputeOp(ivs, body, t.op.tag, t.op.span))
            self._taken.difference_update(a.name for a in stage.reduce_axes)
            cached = Stage(cache, self._fresh)
            stage.body = te.Load(cache, tuple(t.op.axes), t.dtype, loc=t.op.span)
            stage.reduce_axes, stage.leaves = (), list(stage.axes)
            self.stages.insert(self.stages.index(stage), cached)
            self._by_tensor[id(cache)] = cached
            step.args = f"{t.name} -> {cache.name}"
        return cache

    # ------------------------------------------------------------------ lowering and record

    def lower(self) -> PrimFunc:
        """The loop nest of the schedule as it stands."""
        return _Lowering(self).run()

    def record_text(self) -> str:
        """Every step with the loop nest after it (what "Show Schedule" displays)."""
        parts = [f"# step {k}: {s.primitive}({s.args})\n{s.snapshot}" for k, s in enumerate(self.record)]
        return "\n".join(parts)

    # ------------------------------------------------------------------ internals

    def _fresh(self, name: str) -> str:
        return _unique(name, self._taken)

    def _save(self) -> tuple:
        return (list(self.stages), dict(self._by_tensor), set(self._taken),
                [s._state() for s in self.stages])

    def _load(self, saved: tuple) -> None:
        self.stages, self._by_tensor, self._taken = list(saved[0]), dict(saved[1]), set(saved[2])
        self._bodies_cache = None
        for s, state in zip(self.stages, saved[3]):
            s._restore(state)

    def _lower_at(self, saved: tuple) -> str:
        """The printed loop nest of the schedule as it was when `saved`."""
        current = self._save()
        self._load(saved)
        try:
            return loopnest.print_func(self.lower())
        finally:
            self._load(current)

    @contextlib.contextmanager
    def _step(self, primitive: str) -> Iterator[Step]:
        """Run a primitive: undone if it raises, else recorded."""
        saved = self._save()
        step = Step(primitive, "")
        try:
            yield step
        except BaseException:
            self._load(saved)
            raise
        self._bodies_cache = None
        after = self._save()
        step._render = lambda: self._lower_at(after)
        self.record.append(step)

    def _loops_of(self, tensor, primitive: str) -> Stage:
        stage = self[tensor]
        if stage.inlined:
            raise ScheduleError(f"{primitive}: {stage.name} is inlined; it has no loops")
        return stage

    def _check_leaf(self, stage: Stage, axis: Any, primitive: str) -> None:
        if isinstance(axis, te.IterVar):
            raise ScheduleError(f"{primitive}: {axis.name} is a te.IterVar; use the schedule's "
                                f"axes (sch[{stage.name}].axes, .reduce_axes, .leaf_axes)")
        if not isinstance(axis, Axis):
            raise ScheduleError(f"{primitive}: expected an axis of {stage.name}, got {axis!r}")
        if axis.stage is not stage:
            owner = "another schedule" if axis.stage.tensor is stage.tensor else f"stage {axis.stage.name}"
            raise ScheduleError(f"{primitive}: axis {axis.name} belongs to {owner}, not {stage.name}")
        if axis not in stage.leaves:
            current = ", ".join(a.name for a in stage.leaves)
            raise ScheduleError(f"{primitive}: axis {axis.name} of {stage.name} is no longer a loop "
                                f"(it was split or fused); current loops: {current}")

    def _check_no_attached(self, stage: Stage, what: str, axis: Axis | None = None) -> None:
        for s in self.stages:
            if s.attach is not None and s.attach[0] is stage and (axis is None or s.attach[1] is axis):
                raise ScheduleError(f"{what}: {s.name} is computed at {stage.name}.{s.attach[1].name} "
                                    f"(compute_at)")

    def _split(self, stage: Stage, axis: Axis, factor: int) -> tuple[Axis, Axis]:
        self._check_leaf(stage, axis, "split")
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise ScheduleError(f"split: the factor must be a positive integer, got {factor!r}")
        self._check_no_attached(stage, f"split: cannot split {stage.name}.{axis.name}", axis)
        no, ni = split_extents(axis.extent, factor)
        outer = Axis(self._fresh(f"{axis.name}.outer"), no, axis.reduce, stage)
        inner = Axis(self._fresh(f"{axis.name}.inner"), ni, axis.reduce, stage)
        k = stage.leaves.index(axis)
        stage.leaves[k:k + 1] = [outer, inner]
        stage.relations.append(_Split(axis, outer, inner, factor))
        stage.kinds.pop(axis, None)
        return outer, inner

    def _reorder(self, stage: Stage, axes: Sequence[Axis]) -> None:
        for a in axes:
            self._check_leaf(stage, a, "reorder")
        if len({id(a) for a in axes}) != len(axes):
            raise ScheduleError(f"reorder: an axis of {stage.name} is given twice")
        before = [a for a in stage.leaves if a.reduce]
        slots = sorted(stage.leaves.index(a) for a in axes)
        for slot, a in zip(slots, axes):
            stage.leaves[slot] = a
        if [a for a in stage.leaves if a.reduce] != before:
            stage.reduce_reordered = True

    def _fuse(self, stage: Stage, axes: Sequence[Axis]) -> Axis:
        if len(axes) < 2:
            raise ScheduleError(f"fuse: give at least two axes of {stage.name}")
        for a in axes:
            self._check_leaf(stage, a, "fuse")
            self._check_no_attached(stage, f"fuse: cannot fuse {stage.name}.{a.name}", a)
        first = stage.leaves.index(axes[0])
        if [stage.leaves.index(a) for a in axes] != list(range(first, first + len(axes))):
            raise ScheduleError(f"fuse: {', '.join(a.name for a in axes)} are not consecutive loops "
                                f"of {stage.name} in that order (loops: "
                                f"{', '.join(a.name for a in stage.leaves)})")
        if len({a.reduce for a in axes}) > 1:
            raise ScheduleError(f"fuse: cannot fuse data and reduction axes of {stage.name}")
        extent = 1
        for a in axes:
            extent *= a.extent
        fused = Axis(self._fresh(".".join(a.name for a in axes) + ".fused"), extent, axes[0].reduce, stage)
        stage.leaves[first:first + len(axes)] = [fused]
        stage.relations.append(_Fuse(tuple(axes), fused))
        for a in axes:
            stage.kinds.pop(a, None)
        return fused

    def _annotate(self, tensor, axis: Axis, kind: str, primitive: str) -> None:
        stage = self._loops_of(tensor, primitive)
        self._check_leaf(stage, axis, primitive)
        if axis.reduce and kind in ("parallel", "vectorized"):
            raise ScheduleError(f"{primitive}: {stage.name}.{axis.name} is a reduction axis; its "
                                f"iterations depend on each other")
        with self._step(primitive) as step:
            stage.kinds[axis] = kind
            step.args = f"{stage.name}: {axis.name}"


# ---------------------------------------------------------------------- dataflow helpers


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_1`, `name_2`... the first not taken (then taken)."""
    base, k = name, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _effective_bodies(sch: Schedule) -> dict[int, te.PrimExpr]:
    """Each stage's body with inlined producers substituted (producers first)."""
    bodies: dict[int, te.PrimExpr] = {}
    for stage in sch.stages:
        def inline(n: te.PrimExpr) -> te.PrimExpr | None:
            if isinstance(n, te.Load) and n.tensor.op is not None and sch[n.tensor].inlined:
                return te.substitute(bodies[id(n.tensor)], dict(zip(n.tensor.op.axes, n.indices)))
            return None

        bodies[id(stage.tensor)] = te.transform(stage.body, inline)
    return bodies


def _walk(e: te.PrimExpr) -> Iterator[te.PrimExpr]:
    seen: set[int] = set()
    stack = [e]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(te.children(n))


def _readers(sch: Schedule, bodies: dict[int, te.PrimExpr]) -> dict[int, list[Stage]]:
    """For each tensor, the stages not inlined whose (effective) body reads it."""
    result: dict[int, list[Stage]] = {}
    for stage in sch.stages:
        if stage.inlined:
            continue
        read = {id(n.tensor) for n in _walk(bodies[id(stage.tensor)]) if isinstance(n, te.Load)}
        for key in read:
            result.setdefault(key, []).append(stage)
    return result


# ---------------------------------------------------------------------- regions (compute_at)

Interval = tuple[te.PrimExpr | None, int, int]  # values in [base + lo, base + hi]; base None = 0


def _key(e: te.PrimExpr) -> Any:
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
    return (type(e).__name__, tag, e.dtype, tuple(_key(k) for k in te.children(e)))


def _interval(e: te.PrimExpr, inner: dict[int, int]) -> Interval | None:
    """Where `e` ranges while the variables in `inner` (id -> extent) take all their values
    and every other variable is fixed; None when not bounded this way."""
    nodes = list(_walk(e))
    if not any(id(n) in inner for n in nodes):
        if any(isinstance(n, (te.Load, te.BufferLoad)) for n in nodes):
            return None
        return (None, e.value, e.value) if isinstance(e, te.Const) else (e, 0, 0)
    if id(e) in inner:
        return None, 0, inner[id(e)] - 1
    if not isinstance(e, te.Binary) or e.dtype != te.INDEX:
        return None
    a, b = _interval(e.a, inner), _interval(e.b, inner)
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
    quotient, rest = (None, ba) if ba is None else _divide_terms(ba, c)
    if e.op == "floordiv":
        if rest is None:  # floor((c*q + v) / c) = q + floor(v / c)
            return quotient, la // c, ha // c
        # floor((x + d) / c) - floor(x / c) <= d // c + 1 for any x
        return (ba + la if la else ba) // c, 0, (ha - la) // c + 1
    if e.op == "floormod":
        return (None, la, ha) if rest is None and 0 <= la and ha < c else (None, 0, c - 1)
    return None


def _divide_terms(e: te.PrimExpr, c: int) -> tuple[te.PrimExpr | None, te.PrimExpr | None]:
    """`e` as `c * quotient + rest`, taking out of the sum `e` the terms that are multiples
    of `c` (a constant, or a product with a constant factor that c divides); None stands
    for no quotient (0) or no rest (0)."""
    terms, stack = [], [e]
    while stack:
        t = stack.pop()
        if isinstance(t, te.Binary) and t.op == "add" and t.dtype == te.INDEX:
            stack += [t.b, t.a]
        else:
            terms.append(t)
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


# ---------------------------------------------------------------------- lowering

_Loop = tuple[te.Var, int, str]  # variable, extent, kind
_Attached = list[tuple[te.Buffer, Stmt, Any]]  # buffer, its nest, its span


class _Lowering:
    def __init__(self, sch: Schedule) -> None:
        self.sch = sch
        self.bodies = sch._bodies()
        self.readers = _readers(sch, self.bodies)
        self.var_names: set[str] = set()
        self.buf_names: set[str] = set()
        # tensor id -> (buffer, per-dimension start of the region it holds or None: whole)
        self.buffers: dict[int, tuple[te.Buffer, tuple[te.PrimExpr | None, ...]]] = {}
        self.attached: dict[int, list[Stage]] = {}
        self.extents: dict[int, int] = {}  # loop variable id -> extent

    def run(self) -> PrimFunc:
        sch = self.sch
        for stage in sch.stages:
            if stage.inlined or stage.attach is None:
                continue
            target, axis = stage.attach
            readers = self.readers.get(id(stage.tensor), [])
            if readers != [target]:
                names = ", ".join(r.name for r in readers) or "nothing"
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
        buf = te.Buffer(_unique(t.name, self.buf_names), t.shape, t.dtype, scope)
        self.buffers[id(t)] = (buf, (None,) * t.ndim)
        return buf

    def load(self, e: te.PrimExpr) -> te.PrimExpr:
        """`e` with every tensor read turned into a buffer read."""
        def convert(n: te.PrimExpr) -> te.PrimExpr | None:
            if isinstance(n, te.Load):
                buf, starts = self.buffers[id(n.tensor)]
                idx = tuple(i if s is None else _minus(self.tidy(i), self.tidy(s)) for i, s in zip(n.indices, starts))
                return te.BufferLoad(buf, self.tidy(flat_index(buf.shape, idx)), n.dtype, loc=n.loc)
            return None

        return te.transform(simplify(e), convert)

    def tidy(self, e: te.PrimExpr) -> te.PrimExpr:
        """`e` simplified with what the loop extents tell: `x // c` is 0 and `x % c` is x
        for x in [0, c), a min or max whose sides' ranges do not overlap is one side; and
        `x // c * c + x % c` (a fused loop flattened again) is x; terms that are multiples
        of c come out of `// c` and `% c` (a split loop read through a blocked layout)."""
        def fold(n: te.PrimExpr) -> te.PrimExpr | None:
            if not isinstance(n, te.Binary) or n.dtype != te.INDEX:
                return None
            if n.op == "add":
                return _undivide(n)
            if n.op not in ("floordiv", "floormod", "min", "max"):
                return None
            if n.op in ("floordiv", "floormod") and isinstance(n.b, te.Const) and n.b.value > 0:
                quotient, rest = _divide_terms(n.a, n.b.value)
                if quotient is not None:  # (c*q + r) // c = q + r // c; (c*q + r) % c = r % c
                    part = None if rest is None else te.binary(n.op, rest, n.b)
                    if part is not None:
                        folded = fold(part)
                        part = part if folded is None else folded
                    if n.op == "floormod":
                        return part if part is not None else te.const(0, te.INDEX)
                    return quotient if part is None else simplify(quotient + part)
            a, b = _bounds(n.a, self.extents), _bounds(n.b, self.extents)
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

        return simplify(te.transform(e, fold))

    # ---- one stage

    def nest(self, stage: Stage, domain: list[tuple[te.PrimExpr | None, int]] | None) -> Stmt:
        """The loops of `stage` over `domain` (per data axis: start or None, extent; None:
        the whole tensor), with the stages computed at its loops inside them."""
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
        for rel in stage.relations:
            if isinstance(rel, _Split):
                ext[rel.outer], ext[rel.inner] = split_extents(ext[rel.parent], rel.factor)
                if ext[rel.outer] * ext[rel.inner] != ext[rel.parent]:
                    inexact.append(rel.parent)
            else:
                n = 1
                for a in rel.axes:
                    n *= ext[a]
                ext[rel.fused] = n

        leaves = stage.leaves
        value: dict[Axis, te.PrimExpr] = {}
        loops: list[_Loop | None] = []
        for ax in leaves:
            if ext[ax] == 1:
                value[ax] = te.const(0, te.INDEX)
                loops.append(None)
            else:
                v = te.Var(_unique(ax.name, self.var_names))
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

        position = {id(lp[0]): p for p, lp in enumerate(loops) if lp is not None}

        def depth(e: te.PrimExpr) -> int:
            return max((position[id(n)] for n in _walk(e) if id(n) in position), default=-1)

        guards: dict[int, list[te.PrimExpr]] = {}
        data_guards: dict[int, list[te.PrimExpr]] = {}
        for parent in inexact:
            cond = self.tidy(te.lt(value[parent], ext[parent]))
            guards.setdefault(depth(cond), []).append(cond)
            if not parent.reduce:
                data_guards.setdefault(depth(cond), []).append(cond)

        attached: dict[int, _Attached] = {}
        for p, ax in enumerate(leaves):
            for producer in self.attached.get(id(ax), []):
                inner = {id(lp[0]): lp[1] for lp in loops[p + 1:] if lp is not None}
                region = _region(bound, producer.tensor, inner, self.extents)
                buf = te.Buffer(_unique(producer.name, self.buf_names),
                                tuple(n for _, n in region), producer.tensor.dtype, "local")
                self.buffers[id(producer.tensor)] = (buf, tuple(s for s, _ in region))
                attached.setdefault(p, []).append((buf, self.nest(producer, region), producer.tensor.op.span))

        own, _ = self.buffers[id(t)]
        out_idx = self.tidy(flat_index(own.shape, tuple(value[ax] for ax in stage.axes)))
        n = len(leaves)
        if red is None:
            stmt = self.wrap(Store(own, out_idx, self.load(bound), loc=loc), loops, 0, n,
                             guards, attached, loc)
        else:
            stmt = self.reduction(stage, red, bound, iv_map, own, out_idx, value, ext, loops,
                                  guards, data_guards, attached)
        if guards.get(-1):
            stmt = IfThenElse(te.all_of(*guards[-1]), stmt, loc=loc)
        return stmt

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
                init_loops[p] = (te.Var(_unique(f"{v.name}.init", self.var_names)), m, kind)
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
            acc = te.Buffer(_unique(f"{t.name}.value", self.buf_names), shape, src.dtype, "local")
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
        inner = seq(self.wrap(init, init_loops, r + 1, n, init_guards, {}, loc),
                    self.wrap(update, loops, r, n, guards, attached, loc))
        if acc is not None:
            inner = Allocate(acc, inner, loc=loc)
        return self.wrap(inner, loops, 0, r, guards, attached, loc)

    def wrap(self, body: Stmt, loops: Sequence[_Loop | None], lo: int, hi: int,
             guards: dict[int, list[te.PrimExpr]], attached: dict[int, _Attached], loc: Any) -> Stmt:
        """`body` inside loops hi-1 .. lo; at each depth (inside that loop) the producers
        computed there, then inside the guards that need that loop."""
        for d in range(hi - 1, lo - 1, -1):
            items = attached.get(d)
            if items:
                body = seq(*(s for _, s, _ in items), body)
                for buf, _, span in reversed(items):
                    body = Allocate(buf, body, loc=span)
            conds = guards.get(d)
            if conds:
                body = IfThenElse(te.all_of(*conds), body, loc=loc)
            if loops[d] is not None:
                v, m, kind = loops[d]
                body = For(v, m, body, kind, loc=loc)
        return body


def _pass_up(relations: list, value: dict[Axis, te.PrimExpr], ext: dict[Axis, int]) -> None:
    """The values of split and fused axes from the loops made of them."""
    for rel in reversed(relations):
        if isinstance(rel, _Split):
            value[rel.parent] = simplify(value[rel.outer] * ext[rel.inner] + value[rel.inner])
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
    loads = [n for n in _walk(expr) if isinstance(n, te.Load) and n.tensor is producer]
    region: list[tuple[te.PrimExpr | None, int]] = []
    for d, full in enumerate(producer.shape):
        acc: Interval | None = None
        for ld in loads:
            iv = _interval(ld.indices[d], inner)
            if iv is None:
                acc = None
                break
            if acc is None:
                acc = iv
            elif (acc[0] is None) == (iv[0] is None) and (acc[0] is None or _key(acc[0]) == _key(iv[0])):
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
        known = _bounds(start, extents)
        if known is None or known[0] < 0:
            start = te.maximum(start, 0)
        if known is None or known[1] > full - n:
            start = te.minimum(start, full - n)
        region.append((simplify(start), n))
    return region


def _bounds(e: te.PrimExpr, extents: dict[int, int]) -> tuple[int, int] | None:
    """The least and greatest value of index expression `e` given loop extents, or None."""
    if isinstance(e, te.Const):
        return e.value, e.value
    if isinstance(e, te.Var):
        n = extents.get(id(e))
        return None if n is None else (0, n - 1)
    if not isinstance(e, te.Binary) or e.op not in ("add", "sub", "mul", "floordiv", "floormod", "min", "max"):
        return None
    a, b = _bounds(e.a, extents), _bounds(e.b, extents)
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


def _undivide(n: te.Binary) -> te.PrimExpr | None:
    """x for `x // c * c + x % c`, else None."""
    a, b = n.a, n.b
    if not (isinstance(a, te.Binary) and a.op == "mul" and isinstance(b, te.Binary) and b.op == "floormod"):
        return None
    q, c = a.a, a.b
    if not (isinstance(q, te.Binary) and q.op == "floordiv" and isinstance(c, te.Const)):
        return None
    same_c = isinstance(q.b, te.Const) and q.b.value == c.value and _key(b.b) == _key(c)
    return q.a if same_c and _key(q.a) == _key(b.a) else None


def _minus(i: te.PrimExpr, start: te.PrimExpr) -> te.PrimExpr:
    """`i - start`, cancelling `start` when `i` is it or starts with it."""
    if _key(i) == _key(start):
        return te.const(0, te.INDEX)
    if isinstance(i, te.Binary) and i.op == "add" and _key(i.a) == _key(start):
        return i.b
    return simplify(i - start)


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
    op = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}[combiner]
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
