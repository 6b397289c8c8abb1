"""Contiguous runs of an injective stage's inner loop: where a reshape after a transpose
reads its input a block at a time.

An injective stage's inner loop is vectorized whole (defaults.py).  When its output is a
reshape of a transpose, as GPT-2's heads merged back ((12, 128, 64) -> (1, 128, 768)), each
element of the inner loop j reads its input at `j // c` and `j % c` (c = 64: a head's
vector), contiguous within a run of c and a jump between runs; the loop vectoriser sees
an index that is not affine in j and gathers every lane.  `run_length` finds that c;
the stage's schedule then splits j by it, so the inner loop reads `j.inner` contiguously
(`(j.outer * c + j.inner) // c` is j.outer by te/arith.py's `tidy`).  Measured (1 thread,
CPU time, the kernel alone, alternated in one process, Zen 5, load 13): GPT-2's heads
merged 30.1 -> 9.1 us (onnxruntime's Transpose node 19 us in the model).
"""

from __future__ import annotations

from ..te import expr as te
from ..te.arith import tidy
from .primitives import Schedule, Stage


def run_length(sch: Schedule, stage: Stage, k: int, vw: int) -> int | None:
    """c when every read of `stage` uses its k-th axis only as `axis // c` and `axis % c`,
    the same c throughout, a multiple of `vw` that divides the axis's extent and is
    shorter than it; else None."""
    op = stage.tensor.op
    loops = {a: te.Var(a.name) for a in op.axes}  # loop variables, which `tidy` bounds by their extents
    v = loops[op.axes[k]]
    extents = {id(loops[a]): n for a, n in zip(op.axes, stage.tensor.shape)}
    found: set[int] = set()
    body = te.substitute(sch.effective_body(stage), loops)
    for ld in (n for n in te.nodes(body) if isinstance(n, te.Load)):
        for index in ld.indices:
            if not _only_divided(tidy(index, extents), v, found):
                return None
    if len(found) != 1:
        return None
    (c,) = found
    extent = stage.tensor.shape[k]
    return c if c % vw == 0 and extent % c == 0 and c < extent else None


def _only_divided(e: te.PrimExpr, v, found: set[int]) -> bool:
    """Whether `v` appears in `e` only as the whole numerator of `// c` or `% c`
    (recording each c in `found`)."""
    if e is v:
        return False
    if isinstance(e, te.Binary) and e.op in ("floordiv", "floormod") and e.a is v:
        if isinstance(e.b, te.Const) and e.b.value > 0:
            found.add(e.b.value)
            return True
        return False
    return all(_only_divided(k, v, found) for k in te.children(e))
