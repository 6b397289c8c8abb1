"""What a schedule is made of: a `Stage` per computed tensor, its axes, and their relations.

A stage's loops start as its data axes, then its reduction axes (`Axis`, each with its
extent over the stage's whole domain).  `split` and `fuse` replace loops by new axes and
record how they relate (`Split`, `Fuse`), so the loop-nest builder can compute the value
of every original axis from the loops that remain.  A stage also records the kind of each
loop (serial, parallel, vectorized, unrolled), where it is computed (at the root,
inlined, or at a consumer's loop) and, for a reduction, the loop inside which its running
sums stay in a local buffer (`cache_accumulator`), and the inputs it prefetches at its loops
(`prefetch`).  `readers` gives the dataflow between stages.  The
primitives that change all this are in primitives.py; builder.py reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..errors import LoweringError
from ..te import expr as te


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
class Split:
    """`parent` = `outer` * factor + `inner`.  `tail`: when the factor does not divide the
    extent, the builder makes the loops from `outer` inward twice, the whole tiles and then
    the remainder, instead of guarding the body."""

    parent: Axis
    outer: Axis
    inner: Axis
    factor: int
    tail: bool = False


@dataclass(eq=False)
class Fuse:
    axes: tuple[Axis, ...]
    fused: Axis


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
        self.relations: list[Split | Fuse] = []
        self.kinds: dict[Axis, str] = {}
        self.inlined = False
        self.attach: tuple[Stage, Axis] | None = None
        self.shared = False  # computed at (attach) for that consumer and stages computed inside it
        self.reduce_reordered = False
        self.accumulate_at: Axis | None = None  # cache_accumulator's loop
        self.accumulate_into: Stage | None = None  # cache_accumulator's `into`: the stage its last sums go through
        self.prefetches: list[tuple[Axis, te.Tensor, te.PrimExpr, bool]] = []  # prefetch's (loop, tensor, index, write)
        own = {id(iv) for iv in (*tensor.op.axes, *reduce_ivs)}
        for n in te.nodes(body):
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
                self.attach, self.reduce_reordered, self.body, self.reduce_axes, self.shared,
                self.accumulate_at, self.accumulate_into, list(self.prefetches))

    def _restore(self, state: tuple) -> None:
        (self.leaves, self.relations, self.kinds, self.inlined, self.attach,
         self.reduce_reordered, self.body, self.reduce_axes, self.shared, self.accumulate_at,
         self.accumulate_into, self.prefetches) = state

    def __repr__(self) -> str:
        return f"<stage {self.name}: {', '.join(a.name for a in self.leaves)}>"


def unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_1`, `name_2`... the first not taken (then taken)."""
    base, k = name, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def readers(stages: Sequence[Stage], bodies: dict[int, te.PrimExpr]) -> dict[int, list[Stage]]:
    """For each tensor, the stages not inlined whose (effective) body reads it."""
    result: dict[int, list[Stage]] = {}
    for stage in stages:
        if stage.inlined:
            continue
        read = {id(n.tensor) for n in te.nodes(bodies[id(stage.tensor)]) if isinstance(n, te.Load)}
        for key in read:
            result.setdefault(key, []).append(stage)
    return result
