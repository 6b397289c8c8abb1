"""einsum (TVM's `relay.einsum`, src/relay/op/tensor/math.cc): a tuple of tensors summed
over the labels of `equation` that the result does not name, products of one element of
each operand, as numpy's `einsum` computes them.

    einsum((%q, %k), equation="bqhd,bkhd->bhqk")

What the equation means (implicit results, `...`, diagonals, extents of 1 that broadcast)
is einsum_geometry.py.  Every operand has the first one's dtype, and so has the result.
Pattern Injective, as TVM registers it (not a reduction: FuseOps fuses it as TVM does).
"""

from __future__ import annotations

from ..lazy_modules import numpy as np
from ..ir.types import TensorType
from .attrs import STR, Attr
from .einsum_geometry import einsum_plan
from .registry import INJECTIVE, OpTypeError, define
from .shapes import dims, tensors_of_tuple, type_text

einsum = define(
    "einsum", ("data",), INJECTIVE, tuple_input=True,
    attrs=(Attr("equation", STR, doc="the operands' subscripts and the result's, e.g. \"ij,jk->ik\""),),
    doc="Einstein summation over a tuple of tensors, as numpy.einsum: the labels of the "
        "operands that the result's subscript does not name are summed over.")


@einsum.relation
def _(data, attrs):
    fields = tensors_of_tuple(data, "einsum: data", 0)
    if not fields:
        raise OpTypeError("einsum: the tuple of tensors is empty", 0)
    first = fields[0]
    for k, f in enumerate(fields[1:], 1):
        if f.dtype != first.dtype:
            raise OpTypeError(f"einsum: operand {k} has dtype {f.dtype} but operand 0 has {first.dtype} "
                              f"({type_text(f)} and {type_text(first)}); every operand has one dtype", 0)
    plan = einsum_plan(attrs.equation, [dims(f) for f in fields])
    return TensorType(plan.out_shape, first.dtype)


@einsum.reference
def _(xs, attrs):
    return np.asarray(np.einsum(attrs.equation.replace(" ", ""), *xs), dtype=xs[0].dtype)
