"""einsum as one tensor expression: the product of one element of each operand, summed
over the labels the result does not name (ops/einsum_geometry.py reads the equation).

Each output axis is a label's (or one of the axes under `...`); each summed label is a
reduce axis, in the order of `EinsumPlan.reduced` (TVM's: sorted, `...` first).  An
operand reads a label's index where its own extent is the label's, and 0 where it is 1
and the label's is not (broadcast); a label twice in one operand reads the diagonal.
Products are summed as nn_conv.py sums them (float16 in float32, then cast back).

A product of two operands over one summed label k whose output runs along a label j
that one operand holds before its last axis k (attention's scores `bqhd,bkhd->bhqk`: j = k
of the keys, k = d) reads that operand through a copy with j moved last
(`T_einsum_operand`, `_along_output`): the product then reads it along the output's
vectors, and schedule/batch_matmul.py takes it (a register tile of rows of the other
operand by a strip of j), where it read both operands along k and summed each output's
16 lanes (defaults.py's lane sums, 15 scalar adds an output).  schedule/transpose.py
schedules the copy.  Attention's scores, 12 heads of 128 x 64 (bench/onnx_ops.py's
`einsum`), 1 thread, `relaylens profile`: 354-362 us (69-71 GFLOP/s) before, 116 us
(217 GFLOP/s) with the copy, which is in it; onnxruntime's Einsum node 373-393.
"""

from __future__ import annotations

from ....ops.einsum_geometry import ELLIPSIS, einsum_plan
from .. import expr as te
from .nn_conv import acc_dtype, finish
from .registry import register_compute


COPY_MIN = 16  # the shortest output axis j an operand is copied for (a vector of float32 on AVX-512)
ROWS_MIN = 16  # the fewest rows of the other operand a copy is made for (`_along_output`)


def _along_output(plan, xs: tuple[te.Tensor, ...]) -> int | None:
    """The operand to read through a copy with the output's last label moved last (the
    module doc), or None: two operands, one summed label k, the output's last label j (at
    least COPY_MIN long, a multiple of it) held by one operand alone, whose last axis is
    k, its extents the labels' (no broadcast, no diagonal); the other holds k, not j, and
    labels of its own (the tile's rows), at least ROWS_MIN elements of them: the copy is
    read once a row, and for a vector times a matrix it would move the matrix twice
    where the lane sums read it once."""
    out, reduced = plan.equation.output, plan.reduced
    if len(xs) != 2 or len(reduced) != 1 or ELLIPSIS in reduced or not out or out[-1] == ELLIPSIS:
        return None
    j, k = out[-1], reduced[0]
    extent = plan.extents[j]
    if not isinstance(extent, int) or extent < COPY_MIN or extent % COPY_MIN:
        return None
    holders = [n for n, axes in enumerate(plan.operand_axes) if j in axes]
    if len(holders) != 1:
        return None
    n = holders[0]
    axes, other = plan.operand_axes[n], plan.operand_axes[1 - n]
    if (axes[-1] != k or k not in other or len(set(axes)) != len(axes)
            or any(isinstance(a, int) or xs[n].shape[m] != plan.extents[a] for m, a in enumerate(axes))):
        return None
    rows = 1
    for a in set(other) - set(axes):
        rows *= plan.extents[a] if not isinstance(a, int) else plan.ellipsis[a]
    return n if isinstance(rows, int) and rows >= ROWS_MIN else None


@register_compute("einsum")
def _(xs: tuple[te.Tensor, ...], attrs, out_type) -> te.Tensor:
    plan = einsum_plan(attrs.equation, [x.shape for x in xs])
    operand_axes = list(plan.operand_axes)
    copied = _along_output(plan, xs)
    if copied is not None:  # the operand with the output's last label moved last
        x, axes = xs[copied], operand_axes[copied]
        j = axes.index(plan.equation.output[-1])
        order = [m for m in range(len(axes)) if m != j] + [j]
        back = [order.index(m) for m in range(len(axes))]
        moved = te.compute([x.shape[m] for m in order], lambda *ax: x[tuple(ax[back[m]] for m in range(len(axes)))],
                           "T_einsum_operand")
        xs = xs[:copied] + (moved,) + xs[copied + 1:]
        operand_axes[copied] = tuple(axes[m] for m in order)
    dtype = out_type.dtype
    acc = acc_dtype(dtype, *(x.dtype for x in xs))
    rvars: dict[str | int, te.IterVar] = {}
    for label in plan.reduced:
        if label == ELLIPSIS:
            for j, extent in enumerate(plan.ellipsis):
                rvars[j] = te.reduce_axis(extent, f"k{j}")
        else:
            rvars[label] = te.reduce_axis(plan.extents[label], f"r{label}")

    def body(*out):
        index: dict[str | int, te.PrimExpr] = dict(rvars)
        pos = 0
        for label in plan.equation.output:
            if label == ELLIPSIS:
                for j in range(len(plan.ellipsis)):
                    index[j] = out[pos]
                    pos += 1
            else:
                index[label] = out[pos]
                pos += 1
        product = None
        for x, axes in zip(xs, operand_axes):
            full = [plan.ellipsis[a] if isinstance(a, int) else plan.extents[a] for a in axes]
            at = tuple(0 if n == 1 and f != 1 else index[a] for a, n, f in zip(axes, x.shape, full))
            term = te.cast(x[at], acc)
            product = term if product is None else product * term
        return te.sum(product, axis=list(rvars.values())) if rvars else product

    return finish(te.compute(out_type.shape, body, "T_einsum", tag="einsum"), dtype)
