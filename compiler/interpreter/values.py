"""Runtime values of the reference interpreter.

    tensor        a numpy array (0-d for scalars), never a numpy scalar
    tuple         a Python tuple of values (an op taking a tuple gets it as such)
    Closure       a function with the frame it was created in (globals have none)
    ConstructorValue   an ADT value: `Cons(1f, Nil)`
    RefValue      a mutable cell (`ref`, `ref_read`, `ref_write`)
    Op / Constructor   an operator or a constructor used as a value (not yet applied)

`value_text` describes a value in messages (a type for tensors and tuples, a short
form for the rest); `type_mismatch` checks a value against a declared type, as far as
a type can be checked without inference (tensor shapes and dtypes, tuple arity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from ..ir.attrs import IntImm
from ..ir.expr import Constructor, Function, Op
from ..ir.types import AnyDim, FuncType, RefType, TensorType, TupleType, Type, TypeCall

if TYPE_CHECKING:
    from .interpreter import Frame


@dataclass(eq=False, slots=True)
class Closure:
    """A function value.  `env` is the frame the `fn` was evaluated in (its captured
    variables are looked up there), None for a global; `name` is `@f` for a global."""

    func: Function
    env: "Frame | None" = None
    name: str | None = None

    def __repr__(self) -> str:
        return f"Closure({self.name or 'fn'}, {len(self.func.params)} params)"


@dataclass(eq=False, slots=True)
class ConstructorValue:
    """A value built by an ADT constructor: `Cons(%h, %t)`."""

    constructor: Constructor
    fields: tuple["Value", ...] = ()

    def __repr__(self) -> str:
        return value_text(self)


@dataclass(eq=False, slots=True)
class RefValue:
    """A mutable reference cell."""

    value: "Value"

    def __repr__(self) -> str:
        return f"RefValue({value_text(self.value)})"


Value = Union[np.ndarray, tuple, Closure, ConstructorValue, RefValue, Op, Constructor]


def as_tensor(value: Any) -> np.ndarray:
    """A numpy result as an array (a numpy scalar becomes a 0-d array)."""
    return value if isinstance(value, np.ndarray) else np.asarray(value)


def tensor_type(array: np.ndarray) -> TensorType:
    return TensorType(tuple(int(d) for d in array.shape), dtype_name(array.dtype))


def dtype_name(dtype: np.dtype) -> str:
    """`dtype.name`, which numpy computes in Python on every read."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


_DTYPE_NAMES: dict[np.dtype, str] = {}


def value_type(value: Value) -> Type | None:
    """The type of a value as far as it shows without inference: tensors, tuples and refs
    of known types, closures whose parameters and result are all annotated; else None."""
    if isinstance(value, np.ndarray):
        return tensor_type(value)
    if isinstance(value, tuple):
        fields = [value_type(v) for v in value]
        if any(f is None for f in fields):
            return None
        return TupleType(tuple(fields))  # type: ignore[arg-type]
    if isinstance(value, RefValue):
        inner = value_type(value.value)
        return RefType(inner) if inner is not None else None
    if isinstance(value, Closure):
        func = value.func
        params = tuple(p.type_annotation for p in func.params)
        if func.ret_type is None or any(p is None for p in params):
            return None
        return FuncType(params, func.ret_type, func.type_params)  # type: ignore[arg-type]
    return None


def type_text(ty: Type) -> str:
    from ..printer import print_type  # the printer owns type text

    return print_type(ty)


def value_text(value: Value, depth: int = 3) -> str:
    """A short description for messages: `Tensor[(2, 3), float32]`, `Cons(float32, …)`."""
    if isinstance(value, np.ndarray):
        return type_text(tensor_type(value))
    if isinstance(value, tuple):
        if depth <= 0:
            return "(…)"
        inner = ", ".join(value_text(v, depth - 1) for v in value[:8])
        more = ", …" if len(value) > 8 else ("," if len(value) == 1 else "")
        return f"({inner}{more})"
    if isinstance(value, ConstructorValue):
        name = value.constructor.name
        if not value.fields:
            return name
        if depth <= 0:
            return f"{name}(…)"
        return f"{name}({', '.join(value_text(v, depth - 1) for v in value.fields)})"
    if isinstance(value, Closure):
        return f"the function {value.name}" if value.name else "a closure"
    if isinstance(value, RefValue):
        return "a reference" if depth <= 0 else f"ref({value_text(value.value, depth - 1)})"
    if isinstance(value, Op):
        return f"the operator {value.name}"
    if isinstance(value, Constructor):
        return f"the constructor {value.name}"
    return type(value).__name__


def _dim(d: object) -> int | None:
    """An annotated dimension as an int, None when only known at run time."""
    if isinstance(d, bool):
        return None
    if isinstance(d, int):
        return d
    if isinstance(d, IntImm):
        return d.value
    return None  # ANY, a symbolic (meta) dimension


def static_shape(ty: TensorType) -> tuple[int, ...] | None:
    shape = tuple(_dim(d) for d in ty.shape)
    return None if any(d is None for d in shape) else shape  # type: ignore[return-value]


def type_mismatch(value: Value, ty: Type | None) -> str | None:
    """Why `value` cannot have type `ty` (a short text), or None when it fits or the type
    says too little to check (type variables, incomplete types)."""
    if ty is None:
        return None
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray):
            return f"expected {type_text(ty)}, found {value_text(value)}"
        if dtype_name(value.dtype) != ty.dtype or value.ndim != len(ty.shape) or any(
            _dim(d) is not None and _dim(d) != n and not isinstance(d, AnyDim)
            for d, n in zip(ty.shape, value.shape)
        ):
            return f"expected {type_text(ty)}, found {value_text(value)}"
        return None
    if isinstance(ty, TupleType):
        if not isinstance(value, tuple) or len(value) != len(ty.fields):
            return f"expected {type_text(ty)}, found {value_text(value)}"
        for v, t in zip(value, ty.fields):
            if type_mismatch(v, t) is not None:
                return f"expected {type_text(ty)}, found {value_text(value)}"
        return None
    if isinstance(ty, FuncType):
        if not isinstance(value, (Closure, Op, Constructor)):
            return f"expected a function {type_text(ty)}, found {value_text(value)}"
        return None
    if isinstance(ty, RefType):
        if not isinstance(value, RefValue):
            return f"expected {type_text(ty)}, found {value_text(value)}"
        return None
    if isinstance(ty, TypeCall):
        if not isinstance(value, ConstructorValue) or value.constructor.belongs_to is not ty.func:
            if isinstance(value, ConstructorValue) and value.constructor.belongs_to.name == ty.func.name:
                return None
            return f"expected a value of type {type_text(ty)}, found {value_text(value)}"
        return None
    return None  # a type variable, an incomplete type, a global type name: nothing to check
