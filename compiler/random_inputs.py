"""Random values for the parameters of @main, drawn from a seed: what `relaylens run` and
`relaylens profile` use when given no inputs, and what the editor's Profile command runs on.

    values, notes = draw_inputs(main.params, seed=0)    # notes: "%x: Tensor[(1, 3), float32]" each

Drawn in parameter order from numpy's default_rng(seed): normal for floats, integers in
[0, 10) for ints (safe as indices and shapes), fair coins for bools; tuples field by field.
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

INT_RANGE = (0, 10)  # random integers are drawn from [0, 10): safe as indices and shapes


class InputError(ValueError):
    def __init__(self, message: str, param: str, given: bool = False) -> None:
        super().__init__(message)
        self.param = param
        self.given = given  # a value given by the user (an .npy) would do


def draw_inputs(params: Sequence[Var], seed: int) -> tuple[list[Value], list[str]]:
    """A random value per parameter of `params`, drawn in order; and a line per parameter."""
    rng = np.random.default_rng(seed)
    values: list[Value] = []
    notes: list[str] = []
    for param in params:
        ty = param.type_annotation
        if ty is None:
            raise InputError(f"cannot make a random input for %{param.name}: it has no type annotation",
                             param.name, given=True)
        try:
            values.append(_random(rng, ty, param))
        except MemoryError:
            raise InputError(f"cannot make a random input for %{param.name}: {type_text(ty)} does not fit "
                             f"in memory", param.name) from None
        notes.append(f"%{param.name}: {type_text(ty)}")
    return values, notes


def _random(rng: np.random.Generator, ty: Type, param: Var) -> Value:
    if isinstance(ty, TupleType):
        return tuple(_random(rng, t, param) for t in ty.fields)
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
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(*INT_RANGE, size=shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    raise InputError(f"cannot make a random input for %{param.name} of dtype {ty.dtype}", param.name)
