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
where a stage is computed; `cache_accumulator` (ours) keeps a reduction's running sums in
a local buffer inside one of its reduction loops, so that an outer reduction loop can
run over a whole tile of outputs (a block of input channels at a time), and, given the
epilogue it is computed at, starts the tile from zero and ends it in that epilogue's
output (MLAS's NCHWc order); `prefetch` (TVM's
in spirit, with an explicit index) asks for an input's cache line at the start of a loop's
iterations (or an output's, to be written).  Each primitive appends a `Step` to `schedule.record`: its
arguments in words and the loop nest after it, printed when first read (step 0 is the
schedule as created).  A primitive that fails raises `ScheduleError` and leaves the
schedule as it was.

Stages, axes and their relations are in stage.py; `lower()` builds the loop nest with
builder.py.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from ..te import expr as te
from . import loopnest
from .builder import build_loop_nest
from .loopnest import PrimFunc
from .stage import Axis, Fuse, ScheduleError, Split, Stage, readers, split_extents, unique


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
        self.writes_over: int | None = None  # the input the output may be written over (in_place.py)
        self.rewrites: list[Callable[[PrimFunc], PrimFunc]] = []  # of the built loop nest, in order (`rewrite`)
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
        return self.bodies()[id(self[tensor].tensor)]

    def bodies(self) -> dict[int, te.PrimExpr]:
        if self._bodies_cache is None:
            self._bodies_cache = _effective_bodies(self)
        return self._bodies_cache

    # ------------------------------------------------------------------ primitives

    def split(self, tensor, axis: Axis, factor: int, tail: bool = False) -> tuple[Axis, Axis]:
        """Split `axis` into `outer` (extent ceil(n / factor)) and `inner` (factor).  When
        `factor` does not divide the extent, the body is guarded, or with `tail` (a data
        axis only) the loops from `outer` inward are made twice instead: over the whole
        tiles (outer floor(n / factor)), then over the rest (outer fixed at that, inner
        n % factor), neither guarded, inside the loops outside `outer` (up to a loop a
        stage is computed at; the whole nest twice when another split needs a guard): a
        register tile keeps its shape, and the remainder gets a smaller one (MLAS's
        remainder columns)."""
        stage = self._loops_of(tensor, "split")
        if tail and axis.reduce:
            raise ScheduleError(f"split: {stage.name}.{axis.name} is a reduction axis; only a data axis "
                                f"may be split with a tail (each nest starts its own sums)")
        with self._step("split") as step:
            outer, inner = self._split(stage, axis, factor)
            stage.relations[-1].tail = tail
            step.args = (f"{stage.name}: {axis.name} by {factor}{' with a tail' if tail else ''} -> "
                         f"{outer.name}, {inner.name}")
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

    def compute_at(self, tensor, consumer, axis: Axis, shared: bool = False) -> None:
        """Compute the tensor inside `consumer`'s loop over `axis`, for the region the
        loops inside it read.  `shared`: other stages read it too, each computed inside
        that same loop (compute_at there, or at a stage computed there): they read the
        region the consumer reads, which lowering checks (an index it cannot prove
        inside the region is a ScheduleError)."""
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
        reading = readers(self.stages, self.bodies()).get(id(stage.tensor), [])
        if target not in reading:
            raise ScheduleError(f"{where}: {target.name} does not read {stage.name}")
        if len(reading) > 1 and not shared:
            others = ", ".join(r.name for r in reading if r is not target)
            raise ScheduleError(f"{where}: {stage.name} is also read by {others}")
        with self._step("compute_at") as step:
            stage.attach, stage.shared = (target, axis), shared
            step.args = f"{stage.name} at {target.name}.{axis.name}" + (" (shared)" if shared else "")

    def cache_accumulator(self, tensor, axis: Axis, into=None) -> None:
        """Inside the reduction loop `axis`, accumulate into a local buffer over the data
        loops inside `axis` (their extents its shape): loaded from the stage's buffer just
        before the loop, stored back just after.  With the data loops inside unrolled and
        vectorized the buffer is a register tile, while the loops outside `axis`, reduction
        loops among them, may visit many such tiles: the reduction split into blocks, each
        block summed into every tile before the next.  The sums are the same, in the same
        order.  Not for argmax/argmin; no stage may be computed, and no split guard
        needed, inside `axis` (the builder checks).

        `into`: the stage this one is computed at (compute_at first), which alone reads it,
        at its own positions (an epilogue: bias, residual add, relu).  The tile then starts
        from the reduction's identity in the first iteration of the reduction loops outside
        `axis` (no initial store, no load) and, in their last, goes through `into`'s body
        straight into `into`'s buffer instead of back (MLAS's NCHWc kernels end so): `into`
        makes no loops of its own inside the loop this stage is computed at."""
        stage = self._loops_of(tensor, "cache_accumulator")
        self._check_leaf(stage, axis, "cache_accumulator")
        if not axis.reduce:
            raise ScheduleError(f"cache_accumulator: {stage.name}.{axis.name} is not a reduction loop")
        if stage.body.combiner not in ("sum", "prod", "max", "max_nnan", "min"):
            raise ScheduleError(f"cache_accumulator: {stage.name} is a {stage.body.combiner} reduction; "
                                f"only sum, prod, max and min keep a single running value")
        target = None if into is None else self[into]
        if target is not None:
            self._check_into(stage, target)
        with self._step("cache_accumulator") as step:
            stage.accumulate_at, stage.accumulate_into = axis, target
            step.args = f"{stage.name} at {axis.name}" + (f" into {target.name}" if target is not None else "")

    def _check_into(self, stage: Stage, target: Stage) -> None:
        """cache_accumulator's `into`: computed at, a stage without a reduction that reads
        `stage` only at its own positions."""
        where = f"cache_accumulator: {stage.name} cannot end in {target.name}"
        if stage.attach is None or stage.attach[0] is not target:
            raise ScheduleError(f"{where}: it is not computed at {target.name} (compute_at first)")
        if target.inlined or target.is_reduction:
            raise ScheduleError(f"{where}: {target.name} is {'inlined' if target.inlined else 'a reduction'}")
        t, own = stage.tensor, tuple(target.tensor.op.axes)
        reads = [n for n in te.nodes(self.effective_body(target)) if isinstance(n, te.Load) and n.tensor is t]

        def at_own(i: te.PrimExpr, a: te.IterVar) -> bool:  # the axis itself, or 0 along an axis of 1
            return i is a or a.extent == 1 and isinstance(i, te.Const) and i.value == 0

        if tuple(t.shape) != tuple(target.tensor.shape) or not all(
                len(ld.indices) == len(own) and all(map(at_own, ld.indices, own)) for ld in reads):
            raise ScheduleError(f"{where}: {target.name} must read it at its own positions, of its own shape")

    def prefetch(self, tensor, axis: Axis, source: te.Tensor, index: te.PrimExpr, write: bool = False) -> None:
        """At the start of every iteration of the loop `axis`, prefetch the cache line of
        `source[index]`: `source` an input of the schedule or an operand of the stage
        computed whole before it (neither inlined nor at another's loop: a padded copy),
        or with `write`, for a line to be written, an output too (PREFETCHW); `index` a
        flat element index written in the stage's own IterVars (its compute's axes and
        reduction axes), taken where the loops inside `axis` start (at 0).  A hint for data read later (the next
        tile's weights, say): no value changes, and an index past `source` is allowed (it
        reads nothing).  A loop of one iteration has no body of its own and gets none."""
        stage = self._loops_of(tensor, "prefetch")
        self._check_leaf(stage, axis, "prefetch")
        if not (any(source is t for t in (*self.inputs, *(self.outputs if write else ())))
                or not write and self._computed_whole_operand(stage, source)):
            what = (f"an input or output of {self.name}" if write
                    else f"an input of {self.name} nor an operand of {stage.name} computed whole")
            raise ScheduleError(f"prefetch: {getattr(source, 'name', source)!r} is not {what}")
        body = stage.body
        own = {id(iv) for iv in (*stage.tensor.op.axes, *(body.axes if isinstance(body, te.Reduce) else ()))}
        for n in te.nodes(index):
            if isinstance(n, te.IterVar) and id(n) not in own:
                raise ScheduleError(f"prefetch: the index uses {n.name}, which is not an axis of {stage.name}")
            if isinstance(n, te.Load):
                raise ScheduleError("prefetch: the index reads a tensor; it must be arithmetic on the axes")
        with self._step("prefetch") as step:
            stage.prefetches.append((axis, source, index, write))
            step.args = f"{source.name}{' for writing' if write else ''} at {stage.name}.{axis.name}"

    def _computed_whole_operand(self, stage: Stage, source: te.Tensor) -> bool:
        """Whether `stage` reads `source`, a stage of the schedule computed whole (its own
        buffer, allocated at the root: neither inlined nor computed at another's loop)."""
        other = self._by_tensor.get(id(source))
        if other is None or other is stage or other.inlined or other.attach is not None:
            return False
        return any(isinstance(n, te.Load) and n.tensor is source for n in te.nodes(self.effective_body(stage)))

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

    def rewrite(self, fn: Callable[[PrimFunc], PrimFunc], what: str) -> None:
        """Rewrite the built loop nest with `fn` (a pure function of it that keeps every
        value computed), `what` it does in words; rewrites apply in the order given."""
        with self._step("rewrite") as step:
            self.rewrites.append(fn)
            step.args = what

    def lower(self) -> PrimFunc:
        """The loop nest of the schedule as it stands (with its rewrites)."""
        func = build_loop_nest(self)
        for fn in self.rewrites:
            func = fn(func)
        return func

    def record_text(self) -> str:
        """Every step with the loop nest after it (what "Show Schedule" displays)."""
        parts = [f"# step {k}: {s.primitive}({s.args})\n{s.snapshot}" for k, s in enumerate(self.record)]
        return "\n".join(parts)

    # ------------------------------------------------------------------ internals

    def _fresh(self, name: str) -> str:
        return unique(name, self._taken)

    def _save(self) -> tuple:
        return (list(self.stages), dict(self._by_tensor), set(self._taken),
                [s._state() for s in self.stages], list(self.rewrites))

    def _load(self, saved: tuple) -> None:
        self.stages, self._by_tensor, self._taken = list(saved[0]), dict(saved[1]), set(saved[2])
        self._bodies_cache = None
        for s, state in zip(self.stages, saved[3]):
            s._restore(state)
        self.rewrites = list(saved[4])

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
        if stage.accumulate_at is axis:
            raise ScheduleError(f"split: {stage.name} accumulates at {axis.name} (cache_accumulator)")
        no, ni = split_extents(axis.extent, factor)
        outer = Axis(self._fresh(f"{axis.name}.outer"), no, axis.reduce, stage)
        inner = Axis(self._fresh(f"{axis.name}.inner"), ni, axis.reduce, stage)
        k = stage.leaves.index(axis)
        stage.leaves[k:k + 1] = [outer, inner]
        stage.relations.append(Split(axis, outer, inner, factor))
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
            if stage.accumulate_at is a:
                raise ScheduleError(f"fuse: {stage.name} accumulates at {a.name} (cache_accumulator)")
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
        stage.relations.append(Fuse(tuple(axes), fused))
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
