"""The size budget of type relations: no shape the type checker makes is absurd.

A type relation computes a result type from numbers the text writes: `expand_dims`
inserts `num_newaxis` axes, `split` makes `indices_or_sections` fields, a `shape` tensor
of length n gives a rank-n result.  Built without a bound, a 100-byte text makes the
type checker allocate gigabytes (a rank of 10^8 is a tuple of 10^8 dimensions) before
any error shows.  So every relation's result is held to:

* MAX_RANK = 64 dimensions: NumPy's own limit (NPY_MAXDIMS in NumPy 2), which the
  interpreter, constant folding and the tests' reference results all run on; TVM's
  runtime has no higher practical one (DLPack shapes of real models stay under 10);
* MAX_ELEMENTS = 2^40 elements for a tensor with a static shape: 4 TiB of float32,
  beyond any host or accelerator memory, while element counts and byte offsets
  (x 8 bytes = 2^43) stay far inside int64, the index type of lowered code;
* MAX_FIELDS = 2^16 fields for a tuple an op makes from a number (`split`): each part
  needs its own projection to be used, so no real model comes near.

A relation that makes a rank or a field count from a number asks `rank_problem` /
`fields_problem` before building anything; `OpDef.relation` checks every result with
`result_problem` (registry.py), so the rule holds for every op, in the type checker,
the interpreter and the passes alike.  A refusal is an `OpTypeError`: a diagnostic at
the call.
"""

from __future__ import annotations

from ..ir.types import TensorType, TupleType

MAX_RANK = 64
MAX_ELEMENTS = 1 << 40
MAX_FIELDS = 1 << 16


def rank_problem(rank: int, what: str) -> str | None:
    """Why a result of this rank is refused, or None."""
    if rank > MAX_RANK:
        return f"{what} would have rank {rank}, more than the {MAX_RANK} dimensions RelayLens allows"
    return None


def fields_problem(count: int, what: str) -> str | None:
    """Why a tuple result of this many fields is refused, or None."""
    if count > MAX_FIELDS:
        return f"{what} would have {count} fields, more than the {MAX_FIELDS} RelayLens allows"
    return None


def elements(ty: TensorType) -> int | None:
    """The element count of a static tensor type (None when a dimension is unknown)."""
    count = 1
    for d in ty.shape:
        if not isinstance(d, int) or isinstance(d, bool):
            return None
        count *= d
    return count


def result_problem(ty: object, what: str = "the result") -> str | None:
    """Why a relation's result type is refused (its rank, element count or field count,
    the first field at fault for a tuple), or None."""
    if isinstance(ty, TensorType):
        problem = rank_problem(ty.ndim, what)
        if problem is not None:
            return problem
        count = elements(ty)
        if count is not None and count > MAX_ELEMENTS:
            return (f"{what} would have {count:.3g} elements, more than the 2^40 "
                    "RelayLens allows in one tensor")
        return None
    if isinstance(ty, TupleType):
        problem = fields_problem(len(ty.fields), what)
        for i, field in enumerate(ty.fields):
            if problem is not None:
                break
            problem = result_problem(field, f"field {i} of {what}")
        return problem
    return None
