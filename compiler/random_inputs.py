"""Random values for the parameters of @main, drawn from a seed: what `relaylens run` and
`relaylens profile` use when given no inputs, and what the editor's Profile command runs on.

    values, notes = draw_inputs(main.params, seed=0, roles=find_roles(module))
    # notes: "%x: Tensor[(1, 3), float32]" each, and the role when it has one

Drawn in parameter order from numpy's default_rng(seed), each by its role (random_data.py:
variances positive near 1, weights scaled by fan-in, indices below the axis they index,
plain data normal(0, 1), integers in [0, 10), fair coins for bools); tuples field by field.
A parameter without a type annotation, with dimensions known only at run time, or of a
type that is not tensors raises `InputError` (`given` says whether a value given from a
file would do instead).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .interpreter.values import Value, static_shape, type_text
from .ir.expr import Var
from .ir.types import TensorType, TupleType, Type
from .random_data import DATA, Role, draw


class InputError(ValueError):
    def __init__(self, message: str, param: str, given: bool = False) -> None:
        super().__init__(message)
        self.param = param
        self.given = given  # a value given by the user (an .npy) would do


def draw_inputs(params: Sequence[Var], seed: int,
                roles: dict[object, Role] | None = None) -> tuple[list[Value], list[str]]:
    """A random value per parameter of `params`, drawn in order by its role in `roles`
    (random_data.find_roles; a parameter without one is plain data); and a line per
    parameter naming its type and, when it has one, its role."""
    rng = np.random.default_rng(seed)
    roles = roles or {}
    values: list[Value] = []
    notes: list[str] = []
    for param in params:
        ty = param.type_annotation
        if ty is None:
            raise InputError(f"cannot make a random input for %{param.name}: it has no type annotation",
                             param.name, given=True)
        role = roles.get(param, DATA)
        try:
            values.append(_random(rng, ty, param, role))
        except MemoryError:
            raise InputError(f"cannot make a random input for %{param.name}: {type_text(ty)} does not fit "
                             f"in memory", param.name) from None
        notes.append(f"%{param.name}: {type_text(ty)}" + (f"  {role.describe()}" if role is not DATA else ""))
    return values, notes


def _random(rng: np.random.Generator, ty: Type, param: Var, role: Role) -> Value:
    if isinstance(ty, TupleType):
        return tuple(_random(rng, t, param, DATA) for t in ty.fields)
    if not isinstance(ty, TensorType):
        raise InputError(f"cannot make a random input for %{param.name} of type {type_text(ty)}: "
                         f"only tensors (and tuples of tensors) can be generated", param.name)
    shape = static_shape(ty)
    if shape is None:
        raise InputError(f"cannot make a random input for %{param.name}: {type_text(ty)} has dimensions "
                         f"known only at run time", param.name, given=True)
    try:
        dtype = np.dtype(ty.dtype)
    except TypeError:
        raise InputError(f"cannot make a random input for %{param.name}: numpy has no dtype "
                         f"{ty.dtype}", param.name) from None
    if dtype.kind not in "fiub":
        raise InputError(f"cannot make a random input for %{param.name} of dtype {ty.dtype}", param.name)
    return draw(rng, ty, role)
