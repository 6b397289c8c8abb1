"""einsum as one tensor expression: the product of one element of each operand, summed
over the labels the result does not name (ops/einsum_geometry.py reads the equation).

Each output axis is a label's (or one of the axes under `...`); each summed label is a
reduce axis, in the order of `EinsumPlan.reduced` (TVM's: sorted, `...` first).  An
operand reads a label's index where its own extent is the label's, and 0 where it is 1
and the label's is not (broadcast); a label twice in one operand reads the diagonal.
Products are summed as nn_conv.py sums them (float16 in float32, then cast back).
"""

from __future__ import annotations

from ....ops.einsum_geometry import ELLIPSIS, einsum_plan
from .. import expr as te
from .nn_conv import acc_dtype, finish
from .registry import register_compute


@register_compute("einsum")
def _(xs: tuple[te.Tensor, ...], attrs, out_type) -> te.Tensor:
    plan = einsum_plan(attrs.equation, [x.shape for x in xs])
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
        for x, axes in zip(xs, plan.operand_axes):
            full = [plan.ellipsis[a] if isinstance(a, int) else plan.extents[a] for a in axes]
            at = tuple(0 if n == 1 and f != 1 else index[a] for a, n, f in zip(axes, x.shape, full))
            term = te.cast(x[at], acc)
            product = term if product is None else product * term
        return te.sum(product, axis=list(rvars.values())) if rvars else product

    return finish(te.compute(out_type.shape, body, "T_einsum", tag="einsum"), dtype)
