"""What an einsum equation means for shapes: the one reading of `equation` that the type
relation (ops/einsum.py) and the compute rule (lower/te/topi/einsum.py) share.

    plan = einsum_plan("bqhd,bkhd->bhqk", [(1, 16, 4, 8), (1, 16, 4, 8)])
    plan.out_shape          (1, 4, 16, 16)
    plan.reduced            ('d',): labels summed over, sorted (the ellipsis, `.`, first)

The equation is TVM's (topi/einsum.cc) and numpy's: operands' subscripts separated by
commas, letters a-z and A-Z as labels, at most one `...` per subscript standing for the
axes no label names, spaces ignored, and `->` followed by the result's subscript.  Without
`->` (implicit mode) the result is `...` (when any operand has one) followed by the labels
that occur exactly once in the whole equation, in character order (upper case first).  A
label repeated within one operand reads its diagonal.

A label's extent is the same in every operand that names it, or 1 there (broadcast); the
axes under `...` broadcast right-aligned as numpy broadcasts shapes.  Labels of the
operands that the result does not name are summed over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..ir.types import ANY
from .registry import OpTypeError
from .shapes import BroadcastError, Dim, broadcast, known

ELLIPSIS = "."  # one label standing for the axes under `...`


@dataclass(frozen=True)
class Equation:
    inputs: tuple[tuple[str, ...], ...]  # each operand's labels, ELLIPSIS for `...`
    output: tuple[str, ...]


def parse_equation(equation: str) -> Equation:
    """The labels of each operand and of the result, the implicit result made explicit."""
    text = equation.replace(" ", "")
    left, arrow, right = text.partition("->")
    if any(c in left + right for c in "->"):
        raise OpTypeError(f"einsum: equation {equation!r}: '->' may appear once, before the result's subscript")
    inputs = tuple(_subscript(part, equation) for part in left.split(","))
    if arrow:
        output = _subscript(right, equation)
        if "," in right:
            raise OpTypeError(f"einsum: equation {equation!r}: the result has one subscript")
    else:
        counts: dict[str, int] = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        output = tuple(sorted(label for label, n in counts.items() if label == ELLIPSIS or n == 1))
    named = {label for labels in inputs for label in labels}
    for label in output:
        if label not in named:
            raise OpTypeError(f"einsum: equation {equation!r}: the result's label {_shown(label)} "
                              f"names no axis of an operand")
        if output.count(label) > 1:
            raise OpTypeError(f"einsum: equation {equation!r}: the result names {_shown(label)} twice")
    return Equation(inputs, output)


def _subscript(part: str, equation: str) -> tuple[str, ...]:
    labels: list[str] = []
    i = 0
    while i < len(part):
        c = part[i]
        if part.startswith("...", i):
            if ELLIPSIS in labels:
                raise OpTypeError(f"einsum: equation {equation!r}: '...' appears twice in {part!r}")
            labels.append(ELLIPSIS)
            i += 3
            continue
        if not (c.isascii() and c.isalpha()):
            raise OpTypeError(f"einsum: equation {equation!r}: {c!r} is not a label "
                              f"(labels are the letters a-z and A-Z; '...' stands for the other axes)")
        labels.append(c)
        i += 1
    return tuple(labels)


def _shown(label: str) -> str:
    return "'...'" if label == ELLIPSIS else repr(label)


@dataclass(frozen=True)
class EinsumPlan:
    equation: Equation
    extents: dict[str, Dim]  # each label's extent, broadcast over the operands
    ellipsis: tuple[Dim, ...]  # the broadcast shape under `...` (() without one)
    operand_axes: tuple[tuple[str | int, ...], ...]  # per operand axis: its label, or its
    #                                                   position in `ellipsis` (an int)

    @property
    def out_shape(self) -> tuple[Dim, ...]:
        return self.shape_of(self.equation.output)

    @property
    def reduced(self) -> tuple[str, ...]:
        """The labels summed over, sorted, the ellipsis first (TVM's order of reduce axes)."""
        named = {label for labels in self.equation.inputs for label in labels}
        return tuple(sorted(named - set(self.equation.output)))

    def shape_of(self, labels: Sequence[str]) -> tuple[Dim, ...]:
        shape: list[Dim] = []
        for label in labels:
            shape.extend(self.ellipsis if label == ELLIPSIS else (self.extents[label],))
        return tuple(shape)


def einsum_plan(equation: str, shapes: Sequence[Sequence[Dim]]) -> EinsumPlan:
    """The plan of `equation` over operands of `shapes`, or an OpTypeError saying which
    operand and axis do not fit."""
    eq = parse_equation(equation)
    if len(eq.inputs) != len(shapes):
        raise OpTypeError(f"einsum: equation {equation!r} has {len(eq.inputs)} operand(s) but "
                          f"{len(shapes)} tensor(s) are given", 0)
    extents: dict[str, Dim] = {}
    under: list[tuple[Dim, ...]] = []
    operand_axes: list[tuple[str | int, ...]] = []
    for k, (labels, shape) in enumerate(zip(eq.inputs, shapes)):
        shape = tuple(shape)
        named = len(labels) - (ELLIPSIS in labels)
        if len(shape) < named or (ELLIPSIS not in labels and len(shape) != named):
            raise OpTypeError(f"einsum: operand {k} has rank {len(shape)} but its subscript "
                              f"{''.join(labels).replace(ELLIPSIS, '...')!r} names {named} "
                              f"ax{'i' if named == 1 else 'e'}s", 0)
        axes: list[str | int] = []
        pos = 0
        for label in labels:
            if label == ELLIPSIS:
                n = len(shape) - named
                under.append(shape[pos:pos + n])
                axes.extend(-n + j for j in range(n))  # right-aligned: fixed up below
                pos += n
                continue
            extent = shape[pos]
            axes.append(label)
            pos += 1
            seen = extents.get(label)
            if seen is None or seen == 1 or (not known(seen) and known(extent) and extent != 1):
                extents[label] = extent
            elif extent != 1 and known(seen, extent) and seen != extent:
                raise OpTypeError(f"einsum: label {label!r} has extent {seen} in one operand and {extent} "
                                  f"in operand {k} (axis {pos - 1}); extents must match or be 1", 0)
        operand_axes.append(tuple(axes))
    ellipsis: tuple[Dim, ...] = ()
    for shape in under:
        try:
            ellipsis = broadcast(ellipsis, shape)
        except BroadcastError:
            raise OpTypeError(f"einsum: the axes under '...' do not broadcast: "
                              f"{', '.join(_text(s) for s in under)}", 0) from None
    n = len(ellipsis)
    fixed = tuple(tuple(a + n if isinstance(a, int) else a for a in axes) for axes in operand_axes)
    return EinsumPlan(eq, extents, ellipsis, fixed)


def _text(shape: tuple[Dim, ...]) -> str:
    return "(" + ", ".join("?" if d is ANY else str(d) for d in shape) + ")"
