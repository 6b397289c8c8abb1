"""Transposes: an injective stage whose last axis reads an input far apart while the axis
before reads it contiguously (attention's `transpose(k, [0, 2, 3, 1])`: out[h, d, t] =
x[t, h*64 + d], t 768 floats apart).

The default injective schedule runs the last axis whole as one vector loop, so each
output row gathers one element from each of T input rows, and the next row (d + 1)
gathers again from the same T cache lines; with T = 128 rows 3 KiB apart those lines
fall into a handful of L1 sets and are evicted before the next row comes back to them.
Here the last axis is cut into blocks of `lanes` (vector width) and the axis before runs
inside the block loop:

    for (..., t.outer)   fused, parallel when large
      for d              the next element of the same `lanes` input rows
        for t.inner      vectorized: one gather of `lanes` elements

so a block reads `lanes` input rows once, along them.  Measured (1 thread, CPU time,
each alone, the two alternating, load 3-5): GPT-2's key transpose (1x128x768 to
12x64x128) from 0.21-0.28 ms to 0.10-0.12 (onnxruntime's Transpose node: 0.07).
"""

from __future__ import annotations

from ..te import expr as te
from ..te.arith import flat_index, simplify
from .primitives import Schedule, Stage

FAR = 16  # elements apart along the last axis from which a read counts as a gather
MIN_EXTENT = 2  # blocks of the last axis at least


def _strides(load: te.Load, axes: list[te.IterVar]) -> list[int] | None:
    """How far apart (elements) `load` reads for a step of each of `axes`, the others at 0;
    None when the offset is not a constant difference (not affine)."""
    flat = flat_index(load.tensor.shape, load.indices)

    def at(values: dict) -> int | None:
        v = simplify(te.substitute(flat, {a: te.const(values.get(id(a), 0), te.INDEX) for a in axes}))
        return v.value if isinstance(v, te.Const) else None

    base = at({})
    if base is None:
        return None
    strides = []
    for a in axes:
        one, two = at({id(a): 1}), at({id(a): 2}) if a.extent > 2 else None
        if one is None or (a.extent > 2 and (two is None or two - base != 2 * (one - base))):
            return None
        strides.append(one - base)
    return strides


def is_transpose(sch: Schedule, stage: Stage, lanes: int) -> bool:
    """Whether `stage` reads some input FAR apart along its last axis and contiguously
    along the one before (see the module doc), the last axis a multiple of `lanes`."""
    axes = list(stage.tensor.op.axes)
    if len(axes) < 2 or axes[-1].extent % lanes or axes[-1].extent < MIN_EXTENT * lanes \
            or axes[-2].extent < 2:
        return False
    loads = [n for n in te.nodes(sch.effective_body(stage)) if isinstance(n, te.Load)]
    for ld in loads:
        strides = _strides(ld, axes)
        if strides is not None and abs(strides[-1]) >= FAR and strides[-2] == 1:
            return True
    return False


def schedule_transpose(sch: Schedule, stage: Stage, lanes: int, parallel_min: int) -> None:
    """The blocked loops of the module doc."""
    t = stage.tensor
    *lead, row, last = stage.axes
    lo, li = sch.split(t, last, lanes)
    sch.reorder(t, *lead, lo, row, li)
    outer = sch.fuse(t, *lead, lo) if lead else lo
    sch.vectorize(t, li)
    size = 1
    for d in t.shape:
        size *= d
    if size >= parallel_min and outer.extent > 1:
        sch.parallel(t, outer)
