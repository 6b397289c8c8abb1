"""Compute rules register onto the op they compute (TVM's `register_compute`).

A rule is called like the op's numpy reference, with tensors for arrays:

    @register_compute("nn.relu")
    def _(data: te.Tensor, attrs: OpAttrs, out_type: TensorType) -> te.Tensor:
        return te.compute(data.shape, lambda *i: te.maximum(data[i], 0), "T_relu")

The decorator stores the rule on the op's `OpDef.compute` (ops/registry.py), so the op's
schema, relation, pattern, reference and compute rule are one definition and
`get_op(name).compute` is the one lookup; importing this package (`lower.te.topi`)
registers every rule.  A name the op library does not define, or a second rule for one
op, is a bug in the library and fails at import.

`args` arrive one per op input (a tuple argument, as for `concatenate`, arrives as a
Python tuple of tensors); a 0-d tensor is a scalar (`x[()]`).  `out_type` is the call's
inferred type, fully static (a TupleType for ops with several results, which then return
a tuple of tensors).  A rule raises `te.LoweringError` for what it cannot do (a layout, an
attribute value), naming it; the driver adds where.
"""

from __future__ import annotations

from typing import Callable

from ....ops import all_ops, get_op

Rule = Callable[..., object]


def register_compute(*names: str) -> Callable[[Rule], Rule]:
    """Make the decorated function the compute rule of each op in `names`."""

    def register(fn: Rule) -> Rule:
        for name in names:
            opdef = get_op(name)
            if opdef is None:
                raise ValueError(f"a compute rule for {name}, which the op library does not define")
            if opdef.compute is not None:
                raise ValueError(f"two compute rules for {name}")
            opdef.compute = fn
        return fn

    return register


def lowered_ops() -> list[str]:
    """The names of the ops that have a compute rule."""
    return [opdef.name for opdef in all_ops() if opdef.compute is not None]
