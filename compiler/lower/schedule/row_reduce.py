"""Reductions along a row, computed in vector lanes (softmax's max and sum, layer_norm's
mean and variance).

A sum, max or min over one axis k that every tensor it reads along k reads as its last,
contiguous index (`x[..., k]`, k nowhere else) was a scalar loop: one chain of dependent
adds or maxes, k long (a float reduction is not reassociated by LLVM, so it is not
vectorised).  When k is a multiple of the vector width vw and at least MIN_STEPS vectors
long, it is rewritten before the schedule is made, as TVM's rfactor would:

    T.rf[..., kl] = reduce over ko of source(k = ko * vw + kl)     vw partial results
    T[...]        = reduce over kl of T.rf[..., kl]                 their total

T, the total, takes the reduction's place in every reader.  Scheduled (`schedule_rows`):
T's data axes fused into one loop (parallel when the work is large), the vw lanes of T
added inside it (unrolled: the code generator combines them by halves, 16 → 8 → 4 → 2
→ 1, codegen/lane_total.py); T.rf computed at that loop, ko outside, kl vectorized: each
step one vector load and one vector add or max into an accumulator LLVM keeps in
registers (vw = 16 float32 lanes: two independent chains on AVX2).  A max or min gives
the same value as the scalar loop; a sum adds in another order (pairwise by lanes), the
error no larger than the scalar chain's.

When the whole function is row-local (softmax: max, exp, sum, divide along the last axis)
it is computed a row at a time (`schedule_row_group`): the totals, their lane parts and
the exponentials computed inside the output's loop over the rows (the exponentials for
both their readers, `compute_at(..., shared=True)`), so a row is read from memory once and
its exponentials stay in L1: softmax over 1x12x128x128 0.47-0.48 ms → 0.40, the two
alternating in one process (onnxruntime's node 0.15: the exponential is most of what
is left).  Rows are computed several at a time (`rows_together`: the most, a power of
two dividing the last axis but one, whose row accumulators fit in a quarter of the
vector registers, at most TOGETHER_BYTES of them): every stage covers the group, a row
reduction's step updates each row of the group in turn (its lanes' accumulators,
independent chains where there was one) and the totals and the divisions follow one
another, so the core overlaps one row's dependent steps (the lane totals, the division
by the sum) with the others'.  A row's 16 lanes are one register with AVX-512 (8 rows
together), two with AVX2 (2 rows).  Measured (1 thread, CPU time, alternated in one
run, the kernel called directly; softmax_exp in all): AVX2 (Zen 3, load 5-7),
1x12x128x128 0.975x the time a row at a time with 2 rows, 0.98x with 4; AVX-512 (Zen 5,
load 4-5), against 2 rows: 4 rows 0.89x, 8 rows 0.855x, 16 rows 0.99x (onnxruntime's
node 0.72x).  The row-shaped stages (the exponentials) take the same order: a vector of
each row of the group in turn, the row's vectors outside, so the group's exponentials
are independent chains side by side (where each row's were a loop of its own): 0.968x
the time on Zen 5 (8 rows, load 11; a vector of 2 or 4 rows' lanes 0.969x, 0.989x).

Products (conv, dense, matmul) and pools have schedules of their own (defaults.py) and are
left alone.  Measured (1 thread, CPU time, each kernel alone, load 3-4 from other work):
softmax over 1x12x128x128 from 0.81-0.91 ms to 0.40-0.47; GPT-2's layer_norm statistics
over 128 x 768, the mean from 0.13 to 0.04 ms, the variance from 0.19 to 0.055.
"""

from __future__ import annotations

from ..te import expr as te
from .in_place import claim_rows_over
from .primitives import Schedule, Stage
from .vector_unit import VectorUnit, host_unit

MIN_STEPS = 2  # the fewest vectors per row worth splitting into lanes
TOGETHER_BYTES = 16384  # the most bytes of output rows computed together: half of L1
COMBINERS = ("sum", "max", "max_nnan", "min")
LEFT_ALONE = ("conv", "dense", "matmul", "pool")  # tags whose reductions have their own schedule


def wants_lanes(t: te.Tensor, body: te.PrimExpr, vw: int) -> bool:
    """Whether `t` (its body `body`) is a row reduction to split into `vw` lanes (see the
    module doc)."""
    if not (isinstance(body, te.Reduce) and body.combiner in COMBINERS and body.index is None
            and len(body.axes) == 1 and t.shape and t.dtype == "float32"
            and not any(w in t.op.tag for w in LEFT_ALONE)):
        return False
    k = body.axes[0]
    if k.extent % vw or k.extent < MIN_STEPS * vw:
        return False
    along = [e for e in te.nodes(body.source) if isinstance(e, te.Load)
             and any(n is k for i in e.indices for n in te.nodes(i))]
    return bool(along) and all(e.indices[-1] is k and not any(n is k for i in e.indices[:-1] for n in te.nodes(i))
                               for e in along)


def split_lanes(t: te.Tensor, body: te.Reduce, vw: int) -> tuple[te.Tensor, te.Tensor]:
    """(`T.rf`, `T`) of the module doc for the row reduction `t`, both carrying `t`'s span,
    the total named as `t` and tagged as it."""
    k, span, combiner = body.axes[0], t.op.span, body.combiner
    ko, kl = te.reduce_axis(k.extent // vw, f"{k.name}.outer"), te.reduce_axis(vw, f"{k.name}.lane")

    def lane_part(*axes: te.IterVar) -> te.PrimExpr:
        mapping: dict = dict(zip(t.op.axes, axes[:-1]))
        mapping[k] = ko * vw + axes[-1]
        return te.with_loc(te.Reduce(combiner, te.substitute(body.source, mapping), (ko,), body.dtype), span)

    lanes = te.compute((*t.shape, vw), lane_part, f"{t.name}.rf", tag=t.op.tag)
    total = te.compute(t.shape, lambda *axes: te.with_loc(
        te.Reduce(combiner, lanes[(*axes, kl)], (kl,), body.dtype), span), t.name, tag=t.op.tag)
    lanes.op.span = total.op.span = span
    return lanes, total


def schedule_rows(sch: Schedule, lanes: Stage, total: Stage, parallel_min: int) -> None:
    """The total's data axes fused (parallel when the row reductions do at least
    `parallel_min` element steps), its lanes added unrolled inside; the lane parts computed
    at that loop, the row's vectors outside, the lanes vectorized."""
    t, s = total.tensor, lanes.tensor
    loop = sch.fuse(t, *total.axes) if len(total.axes) > 1 else total.axes[0]
    sch.unroll(t, total.reduce_axes[0])
    work = 1
    for d in s.shape:
        work *= d
    work *= lanes.reduce_axes[0].extent
    if loop.extent > 1 and work >= parallel_min:
        sch.parallel(t, loop)
    *data, lane = lanes.axes
    sch.reorder(s, *data, *lanes.reduce_axes, lane)
    sch.vectorize(s, lane)
    sch.compute_at(s, t, loop)


def schedule_row_group(sch: Schedule, rows: dict[int, te.Tensor], parallel_min: int) -> set[int]:
    """A function that is row-local throughout (softmax: max, exp, sum, divide along the
    last axis) computed a row at a time: every stage inside the output's loop over the
    rows, so a row is read from memory once and its exponentials never leave L1 (see
    `_row_group` for what qualifies).  The ids of the stages scheduled (none when the
    function does not qualify)."""
    group = _row_group(sch, rows)
    if group is None:
        return set()
    out, totals, lanes, wide = group
    t = out.tensor
    *lead, last = out.axes
    together = rows_together(t)
    if together > 1:  # the output's rows in groups: the loop over a group's rows innermost but one
        lead[-1], within = sch.split(t, lead[-1], together)
        sch.unroll(t, within)
    loop = sch.fuse(t, *lead) if len(lead) > 1 else lead[0]
    sch.vectorize(t, last)
    size = 1
    for d in t.shape:
        size *= d
    if loop.extent > 1 and size >= parallel_min:
        sch.parallel(t, loop)
    by_tensor = {id(s.tensor): s for s in (*totals, *lanes, *wide)}
    readers_of = {id(s.tensor): [r for r in (out, *totals, *lanes, *wide)
                                 if any(ld.tensor is s.tensor for ld in _loads(sch.effective_body(r)))]
                  for s in by_tensor.values()}
    groups = {}  # id(stage) -> the loop over its groups of rows (one group where it is computed)
    for stage in (*totals, *wide):
        if together > 1:
            *_, rows_of, _ = stage.axes if stage in wide else (*stage.axes, None)
            groups[id(stage)], within = sch.split(stage.tensor, rows_of, together)
            sch.unroll(stage.tensor, within)
    for stage in lanes:
        total = sch[rows[id(stage.tensor)]]
        *data, lane = stage.axes
        if together > 1:  # the group's rows side by side in each step: independent chains
            sch.reorder(stage.tensor, *data[:-1], *stage.reduce_axes, data[-1], lane)
            sch.unroll(stage.tensor, data[-1])
        else:
            sch.reorder(stage.tensor, *data, *stage.reduce_axes, lane)
        sch.vectorize(stage.tensor, lane)
        sch.compute_at(stage.tensor, total.tensor, groups.get(id(total), total.axes[-1]))
    for total in totals:
        sch.unroll(total.tensor, total.reduce_axes[0])
        (reader,) = readers_of[id(total.tensor)]
        if reader is out:
            at = loop
        elif together > 1:
            at = groups[id(reader)]
        else:
            at = reader.axes[-2] if len(reader.axes) > 1 else reader.axes[-1]
        sch.compute_at(total.tensor, reader.tensor, at)
    vw = lanes[0].axes[-1].extent if lanes else 0
    for stage in wide:  # the exponentials: vectors along the row, for every reader inside the row loop
        *before, within, last = stage.leaf_axes
        if together > 1 and vw and last.extent % vw == 0:  # the group's rows side by side in each step
            jo, ji = sch.split(stage.tensor, last, vw)
            sch.reorder(stage.tensor, *before, jo, within, ji)
            last = ji
        sch.vectorize(stage.tensor, last)
        sch.compute_at(stage.tensor, t, loop, shared=len(readers_of[id(stage.tensor)]) > 1)
    claim_rows_over(sch, out, [out, *totals, *lanes, *wide])  # in_place.py: the output over the input
    return {id(s) for s in (out, *totals, *lanes, *wide)}


def rows_together(t: te.Tensor, unit: VectorUnit | None = None) -> int:
    """How many rows of the row group's output `t` are computed together (module doc): the
    most, a power of two, that divides its last axis but one, keeps a row accumulator of
    16 float32 lanes each (`unit.registers_for`) within a quarter of `unit`'s registers
    (the host's by default) and fits in TOGETHER_BYTES; 1 when none does."""
    if t.ndim < 2:
        return 1
    unit = unit or host_unit()
    row = t.shape[-1] * max(1, te.bits(t.dtype) // 8)
    most = unit.registers // 4 // unit.registers_for(16)
    together = 1
    while (2 * together <= most and t.shape[-2] % (2 * together) == 0
           and 2 * together * row <= TOGETHER_BYTES):
        together *= 2
    return together


def _loads(e: te.PrimExpr) -> list[te.Load]:
    return [n for n in te.nodes(e) if isinstance(n, te.Load)]


def _row_group(sch: Schedule, rows: dict[int, te.Tensor]):
    """(output, totals, lane parts, row-shaped stages) when the function's one output is
    an injective (..., L) stage and every other stage kept is a row total of
    row_reduce's, its lane parts, or an injective (..., L) stage read by at least one
    other stage, each read by one of these only at its own row, the totals each read by
    one stage; else None."""
    if len(sch.outputs) != 1:
        return None
    out = sch[sch.outputs[0]]
    if out.is_reduction or len(out.axes) < 2 or out.relations or out.kinds:
        return None
    lead = tuple(out.tensor.shape[:-1])
    totals = [sch[t] for t in rows.values() if id(t) in {id(s.tensor) for s in sch.stages}]
    lane_ids = set(rows)
    if not totals:
        return None
    lanes, wide = [], []
    for s in sch.stages:
        if s.inlined or s is out or s in totals:
            continue
        if id(s.tensor) in lane_ids:
            lanes.append(s)
        elif not s.is_reduction and tuple(s.tensor.shape) == tuple(out.tensor.shape):
            wide.append(s)
        else:
            return None
    if any(s.relations or s.kinds or s.attach for s in (*totals, *lanes, *wide)):
        return None
    if any(tuple(s.tensor.shape) != lead for s in totals):
        return None
    group = {id(s.tensor) for s in (out, *totals, *lanes, *wide)}
    n = len(lead)
    for s in (out, *totals, *lanes, *wide):
        own = s.tensor.op.axes[:n]
        for ld in _loads(sch.effective_body(s)):
            if id(ld.tensor) in group and not all(i is a for i, a in zip(ld.indices[:n], own)):
                return None
    for s in totals:
        reading = [r for r in (out, *totals, *lanes, *wide)
                   if any(ld.tensor is s.tensor for ld in _loads(sch.effective_body(r)))]
        if len(reading) != 1:
            return None
    return out, totals, lanes, wide
