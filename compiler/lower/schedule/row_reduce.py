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
added inside it (unrolled); T.rf computed at that loop, ko outside, kl vectorized: each
step one vector load and one vector add or max into an accumulator LLVM keeps in
registers (vw = 16 float32 lanes: two independent chains on AVX2).  A max or min gives
the same value as the scalar loop; a sum adds in another order (pairwise by lanes), the
error no larger than the scalar chain's.

Products (conv, dense, matmul) and pools have schedules of their own (defaults.py) and are
left alone.  Measured (1 thread, CPU time, each kernel alone, load 3-4 from other work):
softmax over 1x12x128x128 from 0.81-0.91 ms to 0.40-0.47; GPT-2's layer_norm statistics
over 128 x 768, the mean from 0.13 to 0.04 ms, the variance from 0.19 to 0.055.
"""

from __future__ import annotations

from ..te import expr as te
from .primitives import Schedule, Stage

MIN_STEPS = 2  # the fewest vectors per row worth splitting into lanes
COMBINERS = ("sum", "max", "min")
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
